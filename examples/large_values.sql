-- Values larger than a page: a 10 MiB text stored out of line (TOAST), an update of
-- another column that neither copies nor logs it, an update of the value, a delete and
-- a vacuum. Run with `walden sql --wal -f examples/large_values.sql` to see what each
-- statement wrote.
create table docs (id int primary key, n int, body text);
-- 10 MiB of hex digits (md5 of consecutive numbers), which zstd takes to about half.
insert into docs select 1, 0, string_agg(md5(i::text), '') from generate_series(1, 327680) i;
update docs set n = n + 1;
select n, length(body) from docs;
update docs set body = body || 'x';
delete from docs;
vacuum docs;
