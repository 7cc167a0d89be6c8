-- Roles and privileges, PostgreSQL 15's (README.md, "Roles and privileges").
-- Run as the superuser: walden sql -f examples/privileges.sql (or psql -f against
-- walden serve or PostgreSQL 15: the same answers).
create role app_owner;
create role reader login password 'r';
create role staff;
grant create on schema public to app_owner;
grant staff to reader;
set session authorization app_owner;
create table accounts (id serial primary key, owner text, balance int);
create view balances as select owner, balance from accounts;
grant select on balances to staff;
alter default privileges grant select on tables to staff;
set session authorization reader;
select * from balances;
select * from accounts;
insert into accounts (owner) values ('me');
select current_user, session_user;
reset session authorization;
select relacl from pg_class where relname = 'balances';
select has_table_privilege('reader', 'balances', 'select');
drop role app_owner;
