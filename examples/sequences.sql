-- Sequences, serial and identity columns (README "Sequences, serial and identity columns").
create sequence order_no as integer start with 1000 increment by 10 cache 20;
select nextval('order_no'), nextval('order_no'), currval('order_no');
select setval('order_no', 5000), nextval('order_no');
create table orders (id bigserial primary key, no int default nextval('order_no'), what text);
insert into orders (what) values ('tea') returning id, no;
create table events (id int generated always as identity (start with 100), e text);
insert into events (e) values ('boot') returning id;
insert into events (id, e) values (7, 'x');
select pg_get_serial_sequence('orders', 'id');
select sequencename, last_value from pg_sequences order by sequencename;
