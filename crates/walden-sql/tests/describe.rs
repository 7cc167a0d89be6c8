//! Describing prepared statements (`Session::describe`) and the parameter types it infers
//! from context, against PostgreSQL 15. What could go wrong: described columns other
//! than those a run returns; a parameter typed otherwise than PostgreSQL types it (a
//! client would send its value in the wrong type); a run with values of the described
//! types, or NULLs, that fails or gives other rows than the values written in as
//! literals; an error where PostgreSQL gives another, or none; a describe that writes.
#![allow(clippy::unwrap_used)]

use walden::{Database, Value};
use walden_sql::{value, Prepared, Session, SqlType};

mod support;
use support::{db, q};

/// The tables every case runs over, in Walden and in PostgreSQL.
const SCHEMA: &str = "
create table t (id int8 primary key, a int4, b int2, name text, f float8, n numeric,
  flag bool, u uuid, d date, ts timestamp, tz timestamptz, iv interval, bin bytea, j jsonb);
create table c (id int4 primary key, name text, region int4);
create table o (id int4 primary key, cid int4, amount int4, note text);
create table w (id int4 primary key, s varchar(5), r real);
insert into t values
  (1, 10, 1, 'one', 1.5, 2.25, true, '0e4f7c56-1b1a-4b6e-9a51-3f4b3d0a9c11', '2024-01-02',
   '2024-01-02 03:04:05', '2024-01-02 03:04:05+00', '1 day', '\\x0102', '{\"a\": 1, \"b\": [1, 2]}'),
  (2, 20, 2, 'two', -0.5, 10, false, '1e4f7c56-1b1a-4b6e-9a51-3f4b3d0a9c11', '2023-05-06',
   '2023-05-06 07:08:09', '2023-05-06 07:08:09+00', '2 hours', '\\x', '[1, \"x\"]'),
  (3, null, null, null, null, null, null, null, null, null, null, null, null, null);
insert into c select g, 'c' || g, g % 3 from generate_series(1, 10) g;
insert into o select g, g % 12 + 1, g * 7 % 50, case when g % 4 = 0 then null else 'n' || g end
  from generate_series(1, 40) g;
";

/// Statements and how Walden describes them: `params(types) columns(name:type, ...)`
/// with PostgreSQL's type names, or `ERROR code`. PostgreSQL 15 describes each the same
/// (checked when it is installed).
const CASES: &[(&str, &str)] = &[
    (
        r#"select * from t"#,
        r#"params() columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select id, a, b, name, f, n, flag, u, d, ts, tz, iv, bin, j from t where id = 1"#,
        r#"params() columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (r#"select 1"#, r#"params() columns(?column?:int4)"#),
    (r#"select null"#, r#"params() columns(?column?:text)"#),
    (
        r#"select 1 + 1, 'x', 1.5, true"#,
        r#"params() columns(?column?:int4, ?column?:text, ?column?:numeric, ?column?:bool)"#,
    ),
    (
        r#"select a + 1 as plus, -f, n * 2, a / 2, b + a from t"#,
        r#"params() columns(plus:int4, ?column?:float8, ?column?:numeric, ?column?:int4, ?column?:int4)"#,
    ),
    (
        r#"select count(*), sum(a), sum(id), avg(a), min(name), max(d), bool_and(flag) from t"#,
        r#"params() columns(count:int8, sum:int8, sum:numeric, avg:numeric, min:text, max:date, bool_and:bool)"#,
    ),
    (
        r#"select a, count(*) from t group by a having count(*) > 0 order by a"#,
        r#"params() columns(a:int4, count:int8)"#,
    ),
    (
        r#"select c.name, o.amount from c join o on o.cid = c.id where o.amount > 10"#,
        r#"params() columns(name:text, amount:int4)"#,
    ),
    (
        r#"select c.id, o.id from c left join o on o.cid = c.id"#,
        r#"params() columns(id:int4, id:int4)"#,
    ),
    (
        r#"select * from c join o on o.cid = c.id"#,
        r#"params() columns(id:int4, name:text, region:int4, id:int4, cid:int4, amount:int4, note:text)"#,
    ),
    (
        r#"select id, row_number() over (order by id), rank() over (partition by region order by id), sum(id) over (order by id) from c"#,
        r#"params() columns(id:int4, row_number:int8, rank:int8, sum:int8)"#,
    ),
    (
        r#"select id, lag(name) over (order by id), lead(id, 2) over (order by id) from c"#,
        r#"params() columns(id:int4, lag:text, lead:int4)"#,
    ),
    (
        r#"with x as (select id, name from c where id < 5) select * from x"#,
        r#"params() columns(id:int4, name:text)"#,
    ),
    (
        r#"with recursive r(n) as (select 1 union all select n + 1 from r where n < 5) select n from r"#,
        r#"params() columns(n:int4)"#,
    ),
    (
        r#"select id from c union select id from o"#,
        r#"params() columns(id:int4)"#,
    ),
    (
        r#"select id, name from c except select id, note from o"#,
        r#"params() columns(id:int4, name:text)"#,
    ),
    (
        r#"select name from c intersect all select note from o"#,
        r#"params() columns(name:text)"#,
    ),
    (
        r#"values (1, 'a'), (2, 'b')"#,
        r#"params() columns(column1:int4, column2:text)"#,
    ),
    (
        r#"select exists (select 1 from o where o.cid = c.id) from c"#,
        r#"params() columns(exists:bool)"#,
    ),
    (
        r#"select (select max(amount) from o where o.cid = c.id) as top from c"#,
        r#"params() columns(top:int4)"#,
    ),
    (
        r#"select upper(name), length(name), substr(name, 2), coalesce(name, 'none'), date_trunc('day', ts) from t"#,
        r#"params() columns(upper:text, length:int4, substr:text, coalesce:text, date_trunc:timestamp)"#,
    ),
    (
        r#"select j -> 'a', j ->> 'a', j @> '{"a": 1}' from t"#,
        r#"params() columns(?column?:jsonb, ?column?:text, ?column?:bool)"#,
    ),
    (
        r#"select now(), current_date"#,
        r#"params() columns(now:timestamptz, current_date:date)"#,
    ),
    (
        r#"select * from t where id = $1"#,
        r#"params(int8) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where a = $1 and name = $2"#,
        r#"params(int4,text) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where u = $1"#,
        r#"params(uuid) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where d = $1 or ts < $2 or tz > $3"#,
        r#"params(date,timestamp,timestamptz) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where iv = $1 or bin = $2 or j = $3 or flag = $4 or f = $5 or n = $6 or b = $7"#,
        r#"params(interval,bytea,jsonb,bool,float8,numeric,int2) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"insert into t (id, a, name) values ($1, $2, $3)"#,
        r#"params(int8,int4,text) columns()"#,
    ),
    (
        r#"insert into t values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"#,
        r#"params(int8,int4,int2,text,float8,numeric,bool,uuid,date,timestamp,timestamptz,interval,bytea,jsonb) columns()"#,
    ),
    (
        r#"insert into t (id, name) values ($1, $2) returning id, name, a"#,
        r#"params(int8,text) columns(id:int8, name:text, a:int4)"#,
    ),
    (
        r#"insert into c (id, name) select $1, $2"#,
        r#"params(int4,text) columns()"#,
    ),
    (
        r#"insert into c (id, name) values ($1, $2) on conflict (id) do update set name = excluded.name returning *"#,
        r#"params(int4,text) columns(id:int4, name:text, region:int4)"#,
    ),
    (
        r#"insert into c (id, name) values ($1, $2) on conflict do nothing"#,
        r#"params(int4,text) columns()"#,
    ),
    (
        r#"update t set a = $1 where id = $2"#,
        r#"params(int4,int8) columns()"#,
    ),
    (
        r#"update t set a = $1, name = $2 where id = $3 returning *"#,
        r#"params(int4,text,int8) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"update c set name = $1 from o where o.cid = c.id and o.amount = $2"#,
        r#"params(text,int4) columns()"#,
    ),
    (
        r#"update c set name = $1 from o where o.cid = c.id and o.amount = $2 returning c.id, o.amount"#,
        r#"params(text,int4) columns(id:int4, amount:int4)"#,
    ),
    (
        r#"delete from t where id = $1"#,
        r#"params(int8) columns()"#,
    ),
    (
        r#"delete from t where name = $1 returning id"#,
        r#"params(text) columns(id:int8)"#,
    ),
    (
        r#"delete from c using o where o.cid = c.id and o.note = $1 returning c.*"#,
        r#"params(text) columns(id:int4, name:text, region:int4)"#,
    ),
    (
        r#"select * from c limit $1"#,
        r#"params(int8) columns(id:int4, name:text, region:int4)"#,
    ),
    (
        r#"select * from c limit $1 offset $2"#,
        r#"params(int8,int8) columns(id:int4, name:text, region:int4)"#,
    ),
    (
        r#"select * from c order by id offset $1"#,
        r#"params(int8) columns(id:int4, name:text, region:int4)"#,
    ),
    (r#"select $1 + 1"#, r#"params(int4) columns(?column?:int4)"#),
    (r#"select 1 + $1"#, r#"params(int4) columns(?column?:int4)"#),
    (
        r#"select a + $1 from t"#,
        r#"params(int4) columns(?column?:int4)"#,
    ),
    (
        r#"select f * $1 from t"#,
        r#"params(float8) columns(?column?:float8)"#,
    ),
    (
        r#"select n - $1 from t"#,
        r#"params(numeric) columns(?column?:numeric)"#,
    ),
    (
        r#"select b + $1 from t"#,
        r#"params(int2) columns(?column?:int2)"#,
    ),
    (
        r#"select id + $1 from t"#,
        r#"params(int8) columns(?column?:int8)"#,
    ),
    (
        r#"select * from t where a between $1 and $2"#,
        r#"params(int4,int4) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where a not between $1 and $2"#,
        r#"params(int4,int4) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where a in ($1, $2, 3)"#,
        r#"params(int4,int4) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where name in ($1, $2)"#,
        r#"params(text,text) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where name not in ($1)"#,
        r#"params(text) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select coalesce(a, $1) from t"#,
        r#"params(int4) columns(coalesce:int4)"#,
    ),
    (
        r#"select coalesce($1, a) from t"#,
        r#"params(int4) columns(coalesce:int4)"#,
    ),
    (
        r#"select coalesce($1, $2)"#,
        r#"params(text,text) columns(coalesce:text)"#,
    ),
    (
        r#"select case when a > 1 then $1 else 'x' end from t"#,
        r#"params(text) columns(case:text)"#,
    ),
    (
        r#"select case when $1 then a else 0 end from t"#,
        r#"params(bool) columns(case:int4)"#,
    ),
    (
        r#"select case when a > 1 then $1 else a end from t"#,
        r#"params(int4) columns(a:int4)"#,
    ),
    (
        r#"select case a when $1 then 'one' else 'other' end from t"#,
        r#"params(int4) columns(case:text)"#,
    ),
    (
        r#"select substr(name, $1) from t"#,
        r#"params(int4) columns(substr:text)"#,
    ),
    (
        r#"select substr(name, $1, $2) from t"#,
        r#"params(int4,int4) columns(substr:text)"#,
    ),
    (
        r#"select substr($1, 2)"#,
        r#"params(text) columns(substr:text)"#,
    ),
    (r#"select $1::int"#, r#"params(int4) columns(int4:int4)"#),
    (
        r#"select $1::int8, $2::text, $3::numeric, $4::date"#,
        r#"params(int8,text,numeric,date) columns(int8:int8, text:text, numeric:numeric, date:date)"#,
    ),
    (
        r#"select cast($1 as bigint)"#,
        r#"params(int8) columns(int8:int8)"#,
    ),
    (r#"select $1"#, r#"params(text) columns(?column?:text)"#),
    (
        r#"select $1, $2"#,
        r#"params(text,text) columns(?column?:text, ?column?:text)"#,
    ),
    (
        r#"select $1 = $2"#,
        r#"params(text,text) columns(?column?:bool)"#,
    ),
    (
        r#"select $1 from t group by 1"#,
        r#"params(text) columns(?column?:text)"#,
    ),
    (
        r#"select $1 || 'x'"#,
        r#"params(text) columns(?column?:text)"#,
    ),
    (
        r#"select name || $1 from t"#,
        r#"params(text) columns(?column?:text)"#,
    ),
    (r#"select upper($1)"#, r#"params(text) columns(upper:text)"#),
    (
        r#"select length($1)"#,
        r#"params(text) columns(length:int4)"#,
    ),
    (
        r#"select * from t where name like $1"#,
        r#"params(text) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where name ilike $1"#,
        r#"params(text) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where name ~ $1"#,
        r#"params(text) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select ts + $1 from t"#,
        r#"params(interval) columns(?column?:timestamp)"#,
    ),
    (
        r#"select ts - $1 from t"#,
        r#"params(timestamp) columns(?column?:interval)"#,
    ),
    (
        r#"select tz - $1 from t"#,
        r#"params(timestamptz) columns(?column?:interval)"#,
    ),
    (
        r#"select d - $1 from t"#,
        r#"params(date) columns(?column?:int4)"#,
    ),
    (r#"select d + $1 from t"#, r#"ERROR 42725"#),
    (
        r#"select now() - $1"#,
        r#"params(timestamptz) columns(?column?:interval)"#,
    ),
    (
        r#"select iv * $1 from t"#,
        r#"params(float8) columns(?column?:interval)"#,
    ),
    (
        r#"select j -> $1 from t"#,
        r#"params(text) columns(?column?:jsonb)"#,
    ),
    (
        r#"select j ->> $1 from t"#,
        r#"params(text) columns(?column?:text)"#,
    ),
    (
        r#"select j @> $1 from t"#,
        r#"params(jsonb) columns(?column?:bool)"#,
    ),
    (r#"select not $1"#, r#"params(bool) columns(?column?:bool)"#),
    (
        r#"select $1 and true"#,
        r#"params(bool) columns(?column?:bool)"#,
    ),
    (
        r#"select * from t where flag = $1 or $2"#,
        r#"params(bool,bool) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (r#"select $1 > 3"#, r#"params(int4) columns(?column?:bool)"#),
    (r#"select 3 < $1"#, r#"params(int4) columns(?column?:bool)"#),
    (
        r#"select count(*) from t having count(*) > $1"#,
        r#"params(int8) columns(count:int8)"#,
    ),
    (
        r#"select a, count(*) from t group by a having count(*) > $1"#,
        r#"params(int8) columns(a:int4, count:int8)"#,
    ),
    (r#"select max($1)"#, r#"params(text) columns(max:text)"#),
    (
        r#"select min(name) from t where name > $1"#,
        r#"params(text) columns(min:text)"#,
    ),
    (r#"select count($1)"#, r#"ERROR 42P18"#),
    (r#"select $1 = ($1::int)::text"#, r#"ERROR 42P08"#),
    (r#"select $1 is null"#, r#"ERROR 42P18"#),
    (
        r#"select * from t where $1 is null or id = $1"#,
        r#"ERROR 42P08"#,
    ),
    (
        r#"select * from t where id = $1 or $1 is null"#,
        r#"params(int8) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (r#"select $1 + $2"#, r#"ERROR 42725"#),
    (r#"select -$1"#, r#"ERROR 42725"#),
    (r#"select sum($1)"#, r#"ERROR 42725"#),
    (r#"select abs($1)"#, r#"params(float8) columns(abs:float8)"#),
    (
        r#"select round($1)"#,
        r#"params(float8) columns(round:float8)"#,
    ),
    (
        r#"select round($1, 2)"#,
        r#"params(numeric) columns(round:numeric)"#,
    ),
    (r#"select mod($1, 3)"#, r#"params(int4) columns(mod:int4)"#),
    (
        r#"select repeat($1, $2)"#,
        r#"params(text,int4) columns(repeat:text)"#,
    ),
    (
        r#"select lpad($1, $2)"#,
        r#"params(text,int4) columns(lpad:text)"#,
    ),
    (r#"select md5($1)"#, r#"params(text) columns(md5:text)"#),
    (
        r#"select to_char(ts, $1) from t"#,
        r#"params(text) columns(to_char:text)"#,
    ),
    (
        r#"select id, lag(a, $1) over (order by id) from t"#,
        r#"params(int4) columns(id:int8, lag:int4)"#,
    ),
    (
        r#"select id, ntile($1) over (order by id) from t"#,
        r#"params(int4) columns(id:int8, ntile:int4)"#,
    ),
    (
        r#"select exists (select 1 from t where id = $1)"#,
        r#"params(int8) columns(exists:bool)"#,
    ),
    (
        r#"select * from c where id in (select cid from o where amount = $1)"#,
        r#"params(int4) columns(id:int4, name:text, region:int4)"#,
    ),
    (
        r#"select (select $1)"#,
        r#"params(text) columns(?column?:text)"#,
    ),
    (
        r#"select * from generate_series(1, $1)"#,
        r#"params(int4) columns(generate_series:int4)"#,
    ),
    (
        r#"select * from c order by $1"#,
        r#"params(text) columns(id:int4, name:text, region:int4)"#,
    ),
    (
        r#"with x as (select * from c where region = $1) select * from x where id > $2"#,
        r#"params(int4,int4) columns(id:int4, name:text, region:int4)"#,
    ),
    (
        r#"select id from c where id = $1 union select id from o where amount = $2"#,
        r#"params(int4,int4) columns(id:int4)"#,
    ),
    (
        r#"select $1 union select 1"#,
        r#"params(int4) columns(?column?:int4)"#,
    ),
    (
        r#"select 1 union select $1"#,
        r#"params(int4) columns(?column?:int4)"#,
    ),
    (
        r#"select $1 union select $2"#,
        r#"params(text,text) columns(?column?:text)"#,
    ),
    (
        r#"select * from (values ($1, 1), (2, $2)) v(x, y)"#,
        r#"params(int4,int4) columns(x:int4, y:int4)"#,
    ),
    (
        r#"select c.name, o.amount from c join o on o.cid = c.id where c.id = $1 and o.amount > $2"#,
        r#"params(int4,int4) columns(name:text, amount:int4)"#,
    ),
    (
        r#"select c.name, o.amount from c left join o on o.cid = c.id and o.note = $1"#,
        r#"params(text) columns(name:text, amount:int4)"#,
    ),
    (
        r#"select string_agg(name, $1) from c"#,
        r#"params(text) columns(string_agg:text)"#,
    ),
    (
        r#"select $1::jsonb -> 'a'"#,
        r#"params(jsonb) columns(?column?:jsonb)"#,
    ),
    (
        r#"select * from t where j ? $1"#,
        r#"params(text) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where id = $1 and $1 > 0"#,
        r#"params(int8) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where a = $1 and b = $1"#,
        r#"params(int4) columns(id:int8, a:int4, b:int2, name:text, f:float8, n:numeric, flag:bool, u:uuid, d:date, ts:timestamp, tz:timestamptz, iv:interval, bin:bytea, j:jsonb)"#,
    ),
    (
        r#"select * from t where name = $1 and id = $1"#,
        r#"ERROR 42883"#,
    ),
    (
        r#"select * from t where tz > $1 - interval '1 day'"#,
        r#"ERROR 42883"#,
    ),
    (r#"select ($1)"#, r#"params(text) columns(?column?:text)"#),
    (r#"select $2"#, r#"ERROR 42P18"#),
    (r#"select nonexistent from t"#, r#"ERROR 42703"#),
    (r#"select * from missing"#, r#"ERROR 42P01"#),
    (r#"select * from t where name = 1"#, r#"ERROR 42883"#),
    (
        r#"values ('1', 1), (2, '2')"#,
        r#"params() columns(column1:int4, column2:int4)"#,
    ),
    (
        r#"select '5' union select 1"#,
        r#"params() columns(?column?:int4)"#,
    ),
    (
        r#"select (select max(amount) from o)"#,
        r#"params() columns(max:int4)"#,
    ),
    (r#"select (select 1)"#, r#"params() columns(?column?:int4)"#),
    (
        r#"select case when true then 1 else a end from t"#,
        r#"params() columns(a:int4)"#,
    ),
    (
        r#"select true, date '2024-01-01', interval '1 day', ceil(f), floor(f), ts at time zone 'UTC' from t"#,
        r#"params() columns(?column?:bool, date:date, interval:interval, ceil:float8, floor:float8, timezone:timestamptz)"#,
    ),
    (
        r#"select sign($1), trunc($2, 2)"#,
        r#"params(float8,numeric) columns(sign:float8, trunc:numeric)"#,
    ),
    (r#"select jsonb_build_object($1, $2)"#, r#"ERROR 42P18"#),
    (r#"select to_jsonb($1)"#, r#"ERROR 42804"#),
    (r#"select '1' + '2'"#, r#"ERROR 42725"#),
    (
        r#"select * from generate_series(1, $1::int8)"#,
        r#"params(int8) columns(generate_series:int8)"#,
    ),
    (
        r#"select * from generate_series($1, 10)"#,
        r#"params(int4) columns(generate_series:int4)"#,
    ),
    (
        r#"select x from generate_series(1, 3) x where x > $1"#,
        r#"params(int4) columns(x:int4)"#,
    ),
    (
        r#"select make_date($1, $2, $3)"#,
        r#"params(int4,int4,int4) columns(make_date:date)"#,
    ),
    (
        r#"select $1 || bin from t"#,
        r#"params(bytea) columns(?column?:bytea)"#,
    ),
    (
        r#"select bin || $1 from t"#,
        r#"params(bytea) columns(?column?:bytea)"#,
    ),
    (
        r#"select a from t where a = $1 limit $2"#,
        r#"params(int4,int8) columns(a:int4)"#,
    ),
    (
        r#"select a, $1 from t order by a"#,
        r#"params(text) columns(a:int4, ?column?:text)"#,
    ),
    (
        r#"select * from c where exists (select 1 from o where o.cid = c.id and o.amount > $1)"#,
        r#"params(int4) columns(id:int4, name:text, region:int4)"#,
    ),
    (
        r#"select * from c where id > all (select cid from o where amount = $1)"#,
        r#"params(int4) columns(id:int4, name:text, region:int4)"#,
    ),
    (
        r#"select count(distinct a) filter (where a > $1) from t"#,
        r#"params(int4) columns(count:int8)"#,
    ),
    (
        r#"select sum(a) over (partition by b order by id rows between 1 preceding and current row) from t where id > $1"#,
        r#"params(int8) columns(sum:int8)"#,
    ),
    (
        r#"select * from c join lateral (select * from o where o.cid = c.id and o.amount > $1) x on true"#,
        r#"params(int4) columns(id:int4, name:text, region:int4, id:int4, cid:int4, amount:int4, note:text)"#,
    ),
    (
        r#"explain select * from t where id = $1"#,
        r#"params(int8) columns(QUERY PLAN:text)"#,
    ),
    (r#"show work_mem"#, r#"params() columns(work_mem:text)"#),
    (
        r#"show all"#,
        r#"params() columns(name:text, setting:text, description:text)"#,
    ),
];

/// Where Walden's description differs from PostgreSQL's: the statement, Walden's,
/// PostgreSQL's, and why.
const DIFFERENCES: &[(&str, &str, &str, &str)] = &[
    (
        r#"select id::text, a::float8, name::varchar, cast(f as numeric) from t"#,
        r#"params() columns(id:text, a:float8, name:text, f:numeric)"#,
        r#"params() columns(id:text, a:float8, name:varchar, f:numeric)"#,
        "varchar is text in Walden",
    ),
    (
        r#"select extract(year from d) from t"#,
        r#"params() columns(extract:float8)"#,
        r#"params() columns(extract:numeric)"#,
        "extract is a float8 in Walden (NOTES-types.md)",
    ),
    (
        r#"select $1 from t where id = $1"#,
        r#"params(int8) columns(?column?:int8)"#,
        r#"ERROR 42P08"#,
        "Walden binds WHERE before the select list, so $1 is already a bigint there",
    ),
    (
        r#"select date_trunc('day', $1)"#,
        r#"params(timestamptz) columns(date_trunc:timestamptz)"#,
        r#"ERROR 42725"#,
        "Walden takes an unknown argument there as a timestamptz, as it takes a string literal",
    ),
    (
        r#"select date_part('year', $1)"#,
        r#"params(timestamptz) columns(date_part:float8)"#,
        r#"ERROR 42725"#,
        "as date_trunc",
    ),
    (
        r#"select extract(year from $1)"#,
        r#"ERROR 42883"#,
        r#"ERROR 42725"#,
        "both refuse it, with other codes",
    ),
    (
        r#"select * from c where id = any($1)"#,
        r#"params(text) columns(id:int4, name:text, region:int4)"#,
        r#"params(int4[]) columns(id:int4, name:text, region:int4)"#,
        "Walden has no array types: an array is its text form",
    ),
    (
        r#"select * from generate_series($1, $2)"#,
        r#"ERROR 0A000"#,
        r#"ERROR 42725"#,
        "both refuse it, with other codes",
    ),
    (
        r#"select array(select id from c where region = $1)"#,
        r#"params(int4) columns(array:text)"#,
        r#"params(int4) columns(array:int4[])"#,
        "no array types",
    ),
    (
        r#"insert into w values ($1, $2, $3)"#,
        r#"params(int4,text,float8) columns()"#,
        r#"params(int4,varchar,float4) columns()"#,
        "varchar is text and real is float8 in Walden",
    ),
    (
        r#"select s, r from w where s = $1 and r > $2"#,
        r#"params(text,float8) columns(s:text, r:float8)"#,
        r#"params(text,float4) columns(s:varchar, r:float4)"#,
        "as above",
    ),
];

/// The OIDs the cases meet, by PostgreSQL's type names.
fn type_name(oid: u32) -> String {
    match oid {
        16 => "bool",
        17 => "bytea",
        20 => "int8",
        21 => "int2",
        23 => "int4",
        25 => "text",
        114 => "json",
        700 => "float4",
        701 => "float8",
        1007 => "int4[]",
        1043 => "varchar",
        1082 => "date",
        1114 => "timestamp",
        1184 => "timestamptz",
        1186 => "interval",
        1700 => "numeric",
        2950 => "uuid",
        3802 => "jsonb",
        _ => return format!("oid {oid}"),
    }
    .into()
}

fn shown(params: &[u32], columns: &[(String, u32)]) -> String {
    let params: Vec<String> = params.iter().map(|o| type_name(*o)).collect();
    let columns: Vec<String> = columns
        .iter()
        .map(|(n, o)| format!("{n}:{}", type_name(*o)))
        .collect();
    format!(
        "params({}) columns({})",
        params.join(","),
        columns.join(", ")
    )
}

/// Walden's description of `sql`, as the cases write it.
fn walden_outcome(s: &mut Session, sql: &str) -> String {
    let d = Prepared::new(sql, Vec::new()).and_then(|p| s.describe(&p));
    match d {
        Ok(d) => {
            let params: Vec<u32> = d.params.iter().map(SqlType::oid).collect();
            let columns: Vec<(String, u32)> = d
                .columns
                .iter()
                .map(|(n, t)| (n.clone(), t.oid()))
                .collect();
            shown(&params, &columns)
        }
        Err(e) => format!("ERROR {}", e.code),
    }
}

/// PostgreSQL's description of `sql` (Parse with no parameter types, then Describe).
fn postgres_outcome(client: &mut postgres::Client, sql: &str) -> String {
    match client.prepare(sql) {
        Ok(st) => {
            let params: Vec<u32> = st.params().iter().map(|t| t.oid()).collect();
            let columns: Vec<(String, u32)> = st
                .columns()
                .iter()
                .map(|c| (c.name().to_string(), c.type_().oid()))
                .collect();
            shown(&params, &columns)
        }
        Err(e) => {
            // A failed Parse inside no block leaves nothing to roll back.
            format!("ERROR {}", e.code().map(|c| c.code()).unwrap_or("?????"))
        }
    }
}

fn walden_session() -> (Database, Session) {
    let db = db();
    let mut s = Session::with_seed(&db, 7);
    // now() the same in every statement.
    s.set_clock(std::sync::Arc::new(|| 788_918_400_000_000));
    q(&mut s, SCHEMA);
    (db, s)
}

/// Every case describes in Walden as listed and, where PostgreSQL 15 is installed, as
/// PostgreSQL describes it (Parse with no parameter types, then Describe); each listed
/// difference is what each side gives.
#[test]
fn describe_agrees_with_postgresql() {
    let (_db, mut s) = walden_session();
    let mut wrong = Vec::new();
    for (sql, want) in CASES {
        let got = walden_outcome(&mut s, sql);
        if got != *want {
            wrong.push(format!("{sql}\n  want {want}\n  got  {got}"));
        }
    }
    for (sql, walden, _, why) in DIFFERENCES {
        let got = walden_outcome(&mut s, sql);
        if got != *walden {
            wrong.push(format!("{sql} ({why})\n  want {walden}\n  got  {got}"));
        }
    }
    assert!(wrong.is_empty(), "Walden:\n{}", wrong.join("\n"));
    let Some(cluster) = support::pg::cluster() else {
        eprintln!("{}", support::pg::SKIPPED);
        return;
    };
    let mut client = support::pg::fresh_database(&cluster, "describe");
    client.batch_execute(SCHEMA).unwrap();
    for (sql, want) in CASES {
        let got = postgres_outcome(&mut client, sql);
        if got != *want {
            wrong.push(format!("{sql}\n  want {want}\n  got  {got}"));
        }
    }
    for (sql, _, postgres, why) in DIFFERENCES {
        let got = postgres_outcome(&mut client, sql);
        if got != *postgres {
            wrong.push(format!("{sql} ({why})\n  want {postgres}\n  got  {got}"));
        }
    }
    assert!(wrong.is_empty(), "PostgreSQL:\n{}", wrong.join("\n"));
}

/// A value of each type, from its text: two sets, so that a statement a value of one
/// makes fail (a duplicate key, a month 30) runs with the other.
fn sample(ty: SqlType, set: usize) -> Value {
    let text = match (ty, set) {
        (SqlType::Int2, 0) | (SqlType::Int4, 0) => "3",
        (SqlType::Int2, _) => "30",
        (SqlType::Int4, _) => "300",
        (SqlType::Int8, 0) => "1000",
        (SqlType::Int8, _) => "2",
        (SqlType::Float8, _) => "1.5",
        (SqlType::Numeric, _) => "2.5",
        (SqlType::Bool, _) => "true",
        (SqlType::Text | SqlType::Bpchar | SqlType::Null, 0) => "one",
        (SqlType::Text | SqlType::Bpchar | SqlType::Null, _) => "a",
        (SqlType::Uuid, _) => "0e4f7c56-1b1a-4b6e-9a51-3f4b3d0a9c11",
        (SqlType::Date, _) => "2024-01-02",
        (SqlType::Timestamp, _) => "2024-01-02 03:04:05",
        (SqlType::Timestamptz, _) => "2024-01-02 03:04:05+00",
        (SqlType::Interval, _) => "1 day",
        (SqlType::Bytea, _) => "\\x0102",
        (SqlType::Jsonb, _) => "{\"a\": 1}",
        (SqlType::Record(_), _) => panic!("no parameter is a record"),
    };
    value::parse_text(text, ty).unwrap()
}

/// Statements that are not in the cases (they are not queries or writes, or
/// PostgreSQL's client library does not prepare them), described and run too.
const MORE: &[&str] = &[
    "",
    " ; -- nothing",
    "begin",
    "commit",
    "rollback",
    "show work_mem",
    "show all",
    "set work_mem = '2MB'",
    "explain select * from t where id = $1",
    "explain (costs off) select c.name from c join o on o.cid = c.id where o.amount = $1",
    "explain insert into c values ($1, $2)",
    "explain update t set a = $1 where id = $2",
    "create table x (a int, b text)",
    "create index o_amount on o (amount)",
    "create view cv as select id, name from c",
    "checkpoint",
    "analyze c",
    "truncate o",
    "vacuum c",
    "prepare pq as select $1::int + 1",
    "insert into c (id, name) select $1, $2 where not exists (select 1 from c where name = $2)",
    "insert into t (id, name) values ($1, $2) on conflict (id) do nothing returning id",
    "select * from (values ($1::int, 'x'), (2, $2)) v(n, s)",
    "with up as (select id from c where region = $1) select count(*) from up",
];

/// What a run gives: its columns, or the error's SQLSTATE.
fn run(s: &mut Session, p: &Prepared, values: &[Value]) -> Result<Vec<(String, SqlType)>, String> {
    s.execute_prepared(p, values)
        .map(|r| r.columns)
        .map_err(|e| format!("{} {}", e.code, e.message))
}

/// Runs a statement in a transaction block rolled back after, or on its own where it
/// may not run in a block (DDL, VACUUM, transaction control), putting back what it made.
fn run_and_undo(
    s: &mut Session,
    sql: &str,
    p: &Prepared,
    values: &[Value],
) -> Result<Vec<(String, SqlType)>, String> {
    let head = sql.trim_start().to_lowercase();
    let own = [
        "create",
        "vacuum",
        "begin",
        "commit",
        "rollback",
        "checkpoint",
        "prepare",
    ]
    .iter()
    .any(|w| head.starts_with(w));
    if !own {
        q(s, "begin");
        let r = run(s, p, values);
        q(s, "rollback");
        return r;
    }
    let r = run(s, p, values);
    for undo in [
        "rollback",
        "drop table if exists x",
        "drop index if exists o_amount",
        "drop view if exists cv",
        "deallocate all",
    ] {
        s.execute(undo).unwrap();
    }
    r
}

/// For every statement described without an error, the columns described are those a
/// run returns: with NULL values, with values of the described types (two sets), and
/// again (the second run of a query or write may use its kept plan). A run may fail
/// only on a constraint or on a value out of range (a duplicate key, a NULL key), and
/// each statement runs at least once.
#[test]
fn described_columns_are_the_columns_a_run_returns() {
    let (_db, mut s) = walden_session();
    let statements = CASES
        .iter()
        .map(|c| c.0)
        .chain(DIFFERENCES.iter().map(|c| c.0));
    let mut wrong = Vec::new();
    let mut described = 0;
    for sql in statements.chain(MORE.iter().copied()) {
        let p = Prepared::new(sql, Vec::new()).unwrap();
        let Ok(d) = s.describe(&p) else {
            continue;
        };
        described += 1;
        let nulls = vec![Value::Null; d.params.len()];
        let set = |k| d.params.iter().map(|t| sample(*t, k)).collect::<Vec<_>>();
        let mut ran = false;
        for values in [nulls, set(0), set(1), set(0)] {
            match run_and_undo(&mut s, sql, &p, &values) {
                Ok(columns) => {
                    ran = true;
                    if columns != d.columns {
                        wrong.push(format!(
                            "{sql} with {values:?}\n  described {:?}\n  ran       {columns:?}",
                            d.columns
                        ));
                    }
                }
                Err(e) if ["23502", "23505", "22008"].contains(&&e[..5]) => {}
                // An array is its text form: "one" is none.
                Err(e) if sql.contains("any($1)") && e.starts_with("22P02") => {}
                Err(e) => wrong.push(format!("{sql} with {values:?}: {e}")),
            }
        }
        if !ran {
            wrong.push(format!("{sql}: no run succeeded"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    eprintln!("described and ran {described}");
    assert!(described > 170, "{described}");
}

/// A value as a literal in SQL text: its text cast to its type (a string literal for a
/// text, as one writes it), or a NULL of the type.
fn sql_literal(v: &Value, ty: SqlType) -> String {
    match v {
        Value::Null => format!("cast(null as {})", ty.name()),
        Value::Text(t) => format!("'{}'", t.replace('\'', "''")),
        v => format!(
            "cast('{}' as {})",
            value::display(v).replace('\'', "''"),
            ty.name()
        ),
    }
}

/// The statement with `$n` replaced by `literals[n - 1]` (highest first, so that `$1`
/// does not match the start of `$12`).
fn written(sql: &str, literals: &[String]) -> String {
    let mut out = sql.to_string();
    for (i, l) in literals.iter().enumerate().rev() {
        out = out.replace(&format!("${}", i + 1), l);
    }
    out
}

/// What a statement gave: its tag and rows, and the rows of every table after it, or its
/// error's SQLSTATE.
fn effect(
    s: &mut Session,
    f: &mut dyn FnMut(&mut Session) -> Result<walden_sql::StatementResult, walden_sql::SqlError>,
) -> String {
    q(s, "begin");
    let r = f(s);
    let out = match r {
        Ok(r) if r.tag.starts_with("SELECT") => format!("{} {:?}", r.tag, r.rows),
        Ok(r) => {
            let tables: Vec<String> = ["t", "c", "o"]
                .iter()
                .map(|t| q(s, &format!("select * from {t} order by id")))
                .collect();
            format!("{} {:?} / {}", r.tag, r.rows, tables.join(" / "))
        }
        Err(e) => format!("ERROR {}", e.code),
    };
    q(s, "rollback");
    out
}

/// Every case with parameters, run with values of the described types and with NULLs,
/// gives what the statement gives with those values written in as literals: the same
/// rows, tag and tables after, or the same error.
#[test]
fn typed_values_give_what_literals_give() {
    let (_db, mut s) = walden_session();
    let mut wrong = Vec::new();
    let (mut compared, mut failed) = (0, 0);
    for (sql, _) in CASES {
        let p = Prepared::new(sql, Vec::new()).unwrap();
        let Ok(d) = s.describe(&p) else {
            continue;
        };
        // (EXPLAIN shows conditions as written, values and all.)
        if d.params.is_empty() || sql.starts_with("explain") {
            continue;
        }
        let sets: Vec<Vec<Value>> = vec![
            d.params.iter().map(|t| sample(*t, 0)).collect(),
            d.params.iter().map(|t| sample(*t, 1)).collect(),
            vec![Value::Null; d.params.len()],
        ];
        for values in sets {
            let literals: Vec<String> = values
                .iter()
                .zip(&d.params)
                .map(|(v, t)| sql_literal(v, *t))
                .collect();
            let text = written(sql, &literals);
            let typed = effect(&mut s, &mut |s| s.execute_prepared(&p, &values));
            let literal = effect(&mut s, &mut |s| s.execute_one(&text));
            compared += 1;
            failed += usize::from(typed.starts_with("ERROR"));
            if typed != literal {
                wrong.push(format!(
                    "{sql} with {values:?}\n  typed   {typed}\n  literal {literal} ({text})"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    eprintln!("compared {compared}, failed alike {failed}");
    assert!(
        compared > 250 && failed < compared / 10,
        "{compared} {failed}"
    );
}

/// Types a client declares win over inference: the description gives them, a value is
/// converted to its declared type (or refused as PostgreSQL refuses it), and the run's
/// columns follow; a type left None, or `SqlType::Null`, is inferred; more types than
/// the text uses are parameters still. A statement with declared types keeps its plan.
#[test]
fn declared_types_win() {
    let (_db, mut s) = walden_session();
    let p = Prepared::with_types("select $1 + 1", vec![Some(SqlType::Int8)]).unwrap();
    let d = s.describe(&p).unwrap();
    assert_eq!(d.params, vec![SqlType::Int8]);
    assert_eq!(d.columns, vec![("?column?".to_string(), SqlType::Int8)]);
    for v in [Value::Int8(5), Value::Int4(5), Value::Text("5".into())] {
        let r = s.execute_prepared(&p, &[v]).unwrap();
        assert_eq!(r.rows, vec![vec![Value::Int8(6)]]);
        assert_eq!(r.columns, d.columns);
    }
    let e = s
        .execute_prepared(&p, &[Value::Text("x".into())])
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22P02", "invalid input syntax for type bigint: \"x\"")
    );
    assert!(p.has_cached_plan());

    // Declared int4 for a bigint column, the second inferred, a third unused.
    let ins = Prepared::with_types(
        "insert into t (id, name) values ($1, $2) returning id, name",
        vec![Some(SqlType::Int4), None, Some(SqlType::Bool)],
    )
    .unwrap();
    assert_eq!(ins.params(), 3);
    let d = s.describe(&ins).unwrap();
    assert_eq!(d.params, vec![SqlType::Int4, SqlType::Text, SqlType::Bool]);
    assert_eq!(
        d.columns,
        vec![
            ("id".to_string(), SqlType::Int8),
            ("name".to_string(), SqlType::Text)
        ]
    );
    let r = s
        .execute_prepared(&ins, &[Value::Int4(7), Value::Null, Value::Bool(false)])
        .unwrap();
    assert_eq!(r.rows, vec![vec![Value::Int8(7), Value::Null]]);
    assert_eq!(r.columns, d.columns);

    // varchar(n) declared as text: a text, whatever the value it meets.
    let cat = Prepared::with_types(
        "select $1 || bin from t where id = 1",
        vec![Some(SqlType::Text)],
    )
    .unwrap();
    let d = s.describe(&cat).unwrap();
    assert_eq!(d.columns, vec![("?column?".to_string(), SqlType::Text)]);
    let r = s
        .execute_prepared(&cat, &[Value::Text("x".into())])
        .unwrap();
    assert_eq!(r.rows, vec![vec![Value::Text("x\\x0102".into())]]);
    assert_eq!(r.columns, d.columns);

    // None and Null infer.
    let inferred = Prepared::with_types(
        "select * from c where id = $1 and name = $2",
        vec![None, Some(SqlType::Null)],
    )
    .unwrap();
    assert_eq!(
        s.describe(&inferred).unwrap().params,
        vec![SqlType::Int4, SqlType::Text]
    );
    // SQL's PREPARE with types: the same.
    q(&mut s, "prepare pt (int8, varchar(2)) as select $1, $2");
    let r = s
        .execute("execute pt ('12', 'abc')")
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(
        r.rows,
        vec![vec![Value::Int8(12), Value::Text("ab".into())]]
    );
    assert_eq!(
        r.columns,
        vec![
            ("?column?".to_string(), SqlType::Int8),
            ("?column?".to_string(), SqlType::Text)
        ]
    );
    // Describing `EXECUTE name` describes the prepared statement.
    let d = s
        .describe(&Prepared::new("execute pt (1, 'x')", Vec::new()).unwrap())
        .unwrap();
    assert_eq!(d.columns, r.columns);
}

/// In an aborted transaction block PostgreSQL parses only COMMIT, ROLLBACK and the empty
/// query: describe refuses the rest with 25P02 (and can describe those). A describe that
/// fails aborts the block, as a failed Parse does; outside a block it leaves none. The
/// same on PostgreSQL 15, where installed.
#[test]
fn describe_in_transaction_blocks_as_postgresql_parses() {
    let (_db, mut s) = walden_session();
    let select = Prepared::new("select * from c where id = $1", Vec::new()).unwrap();
    let commit = Prepared::new("commit", Vec::new()).unwrap();
    let rollback = Prepared::new("rollback", Vec::new()).unwrap();
    let empty = Prepared::new("  -- nothing\n;", Vec::new()).unwrap();
    let missing = Prepared::new("select * from missing", Vec::new()).unwrap();
    assert!(empty.is_empty());

    // A failed describe outside a block leaves none; inside one it aborts it.
    let e = s.describe(&missing).unwrap_err();
    assert_eq!((e.code, e.position), ("42P01", Some(15)));
    assert!(!s.in_transaction_block());
    q(&mut s, "begin");
    assert_eq!(s.describe(&select).unwrap().params, vec![SqlType::Int4]);
    assert_eq!(s.describe(&missing).unwrap_err().code, "42P01");
    assert!(s.in_failed_block());
    let e = s.describe(&select).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "25P02",
            "current transaction is aborted, commands ignored until end of transaction block"
        )
    );
    for p in [&commit, &rollback, &empty] {
        let d = s.describe(p).unwrap();
        assert_eq!((d.params.len(), d.columns.len()), (0, 0), "{}", p.text());
    }
    let r = s.execute_prepared(&empty, &[]).unwrap();
    assert_eq!((r.tag.as_str(), r.columns.len(), r.rows.len()), ("", 0, 0));
    assert!(s.in_failed_block());
    let r = s.execute_prepared(&rollback, &[]).unwrap();
    assert_eq!(r.tag, "ROLLBACK");
    assert!(!s.in_transaction_block());

    let Some(cluster) = support::pg::cluster() else {
        eprintln!("{}", support::pg::SKIPPED);
        return;
    };
    let mut client = support::pg::fresh_database(&cluster, "describe_blocks");
    client.batch_execute(SCHEMA).unwrap();
    let code = |r: Result<postgres::Statement, postgres::Error>| match r {
        Ok(_) => "ok".to_string(),
        Err(e) => e.code().map(|c| c.code().to_string()).unwrap_or_default(),
    };
    client.batch_execute("begin").unwrap();
    assert_eq!(code(client.prepare("select * from missing")), "42P01");
    assert_eq!(
        code(client.prepare("select * from c where id = $1")),
        "25P02"
    );
    assert_eq!(code(client.prepare("commit")), "ok");
    assert_eq!(code(client.prepare("rollback")), "ok");
    assert_eq!(code(client.prepare("  -- nothing\n;")), "ok");
    client.batch_execute("rollback").unwrap();
}

/// Describing writes nothing: no WAL, no catalog change, no serial value taken; a
/// statement whose table is then changed is described anew.
#[test]
fn describe_writes_nothing() {
    let (db, mut s) = walden_session();
    q(&mut s, "create table s (id serial primary key, v int2)");
    let generation = db.catalog_generation();
    let before = db.stats();
    let ins = Prepared::new("insert into s (v) values ($1) returning id, v", Vec::new()).unwrap();
    let d = s.describe(&ins).unwrap();
    assert_eq!(d.params, vec![SqlType::Int2]);
    assert_eq!(
        d.columns,
        vec![
            ("id".to_string(), SqlType::Int4),
            ("v".to_string(), SqlType::Int2)
        ]
    );
    for sql in [
        "update t set a = $1 where id = $2 returning *",
        "delete from c using o where o.cid = c.id and o.note = $1 returning c.*",
        "insert into c (id, name) values ($1, $2) on conflict (id) do update set name = excluded.name",
        "truncate o",
        "create table y (a int)",
        "drop table t",
    ] {
        s.describe(&Prepared::new(sql, Vec::new()).unwrap()).unwrap();
    }
    assert_eq!(db.stats().since(&before).wal_records, 0);
    assert_eq!(db.catalog_generation(), generation);
    let r = s.execute_prepared(&ins, &[Value::Int2(4)]).unwrap();
    assert_eq!(r.rows, vec![vec![Value::Int4(1), Value::Int2(4)]]);
    assert_eq!(q(&mut s, "select count(*) from o"), "40");
    // The table made again with another type: described again.
    q(
        &mut s,
        "drop table s; create table s (id serial primary key, v text)",
    );
    assert_eq!(s.describe(&ins).unwrap().params, vec![SqlType::Text]);
}

/// Bad input gives PostgreSQL's SQLSTATEs, never a panic.
#[test]
fn bad_input_is_an_error() {
    let (_db, mut s) = walden_session();
    let e = Prepared::new("select 1; select 2", Vec::new()).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "42601",
            "cannot insert multiple commands into a prepared statement"
        )
    );
    assert_eq!(
        Prepared::new("select $0", Vec::new()).unwrap_err().code,
        "42601"
    );
    let describe = |s: &mut Session, sql: &str| {
        s.describe(&Prepared::new(sql, Vec::new()).unwrap())
            .map_err(|e| {
                (
                    e.code,
                    e.message.clone(),
                    e.detail.clone().map(String::from),
                )
            })
    };
    assert_eq!(
        describe(&mut s, "select $1 is null").unwrap_err(),
        (
            "42P18",
            "could not determine data type of parameter $1".into(),
            None
        )
    );
    assert_eq!(
        describe(&mut s, "select * from t where $1 is null or id = $1").unwrap_err(),
        (
            "42P08",
            "could not determine data type of parameter $1".into(),
            None
        )
    );
    assert_eq!(
        describe(&mut s, "select $1 = ($1::int)::text").unwrap_err(),
        (
            "42P08",
            "inconsistent types deduced for parameter $1".into(),
            Some("integer versus text".into())
        )
    );
    // Parameters no statement binds (DDL, SET) have no type unless declared.
    assert_eq!(
        describe(&mut s, "set work_mem = $1").unwrap_err().0,
        "42P18"
    );
    let set = Prepared::with_types("set work_mem = $1", vec![Some(SqlType::Text)]).unwrap();
    assert_eq!(s.describe(&set).unwrap().params, vec![SqlType::Text]);
    // A position in the statement's text.
    let e = s
        .describe(&Prepared::new("select a, nope from t", Vec::new()).unwrap())
        .unwrap_err();
    assert_eq!((e.code, e.position), ("42703", Some(11)));
    // Values: a wrong count, a value its type refuses.
    let p = Prepared::new("select * from c where id = $1", Vec::new()).unwrap();
    assert_eq!(s.execute_prepared(&p, &[]).unwrap_err().code, "08P01");
    let typed = Prepared::with_types("select $1", vec![Some(SqlType::Uuid)]).unwrap();
    assert_eq!(
        s.execute_prepared(&typed, &[Value::Int4(1)])
            .unwrap_err()
            .code,
        "42846"
    );
    // A statement as deep as the limit allows, and one with many parameters.
    let deep = format!("select {}$1", "1 + ".repeat(20_000));
    let d = describe(&mut s, &deep).unwrap();
    assert_eq!(d.params, vec![SqlType::Int4]);
    let many: Vec<String> = (1..=3000).map(|i| format!("${i}")).collect();
    let d = describe(&mut s, &format!("select {}", many.join(" || "))).unwrap();
    assert_eq!((d.params.len(), d.columns.len()), (3000, 1));
    assert!(d.params.iter().all(|t| *t == SqlType::Text));
    // At most 1,664 result columns, as in PostgreSQL.
    let d = describe(&mut s, &format!("select {}", many[..1664].join(", "))).unwrap();
    assert_eq!(d.columns.len(), 1664);
    let e = describe(&mut s, &format!("select {}", many[..1665].join(", "))).unwrap_err();
    assert_eq!(
        (e.0, e.1.as_str()),
        ("54011", "target lists can have at most 1664 entries")
    );
}

/// Type OIDs and lengths are PostgreSQL's (checked against its pg_type where it is
/// installed); the OIDs of types Walden holds as another map to that one.
#[test]
fn type_oids_are_postgresql_s() {
    let all = [
        SqlType::Int2,
        SqlType::Int4,
        SqlType::Int8,
        SqlType::Float8,
        SqlType::Numeric,
        SqlType::Bool,
        SqlType::Text,
        SqlType::Uuid,
        SqlType::Date,
        SqlType::Timestamp,
        SqlType::Timestamptz,
        SqlType::Interval,
        SqlType::Bytea,
        SqlType::Jsonb,
    ];
    for t in all {
        assert_eq!(SqlType::from_oid(t.oid()), Some(t), "{t:?}");
    }
    assert_eq!((SqlType::Null.oid(), SqlType::Null.typlen()), (25, -1));
    for (oid, t) in [
        (700, SqlType::Float8),
        (1043, SqlType::Text),
        (1042, SqlType::Text),
        (19, SqlType::Text),
        (114, SqlType::Jsonb),
        (26, SqlType::Int8),
    ] {
        assert_eq!(SqlType::from_oid(oid), Some(t), "{oid}");
    }
    for oid in [0, 705, 1007, 1009, 600, 4_000_000_000] {
        assert_eq!(SqlType::from_oid(oid), None, "{oid}");
    }
    let lengths: Vec<(u32, i16)> = all.iter().map(|t| (t.oid(), t.typlen())).collect();
    assert_eq!(
        lengths,
        vec![
            (21, 2),
            (23, 4),
            (20, 8),
            (701, 8),
            (1700, -1),
            (16, 1),
            (25, -1),
            (2950, 16),
            (1082, 4),
            (1114, 8),
            (1184, 8),
            (1186, 16),
            (17, -1),
            (3802, -1)
        ]
    );
    let Some(cluster) = support::pg::cluster() else {
        eprintln!("{}", support::pg::SKIPPED);
        return;
    };
    let mut client = support::pg::connect(&cluster, "postgres");
    for t in all {
        let row = client
            .query_one(
                "select typname::text, typlen from pg_type where oid = $1",
                &[&t.oid()],
            )
            .unwrap();
        let (name, len): (String, i16) = (row.get(0), row.get(1));
        assert_eq!((name.as_str(), len), (t.short_name(), t.typlen()), "{t:?}");
    }
}
