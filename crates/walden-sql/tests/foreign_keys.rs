//! Foreign keys (REFERENCES, FOREIGN KEY, ON DELETE / ON UPDATE actions) on both table
//! kinds: each statement's result against what PostgreSQL 15 gave for the same
//! statements in the same order; the constraint surviving a crash and a checkpoint; and
//! two transactions racing on one referenced key. What could go wrong: a referencing
//! row left pointing at nothing (a check missed, a cascade that stops part way, a
//! delete and an insert that both commit), a wrong message, a constraint lost at
//! recovery.
#![allow(clippy::unwrap_used)]

mod support;

use support::{db, q, session_of};
use walden::TableKind;
use walden_sql::{value, Session};

/// One statement's result: the rows of a query, else the command tag; an error as
/// `ERROR code: message / detail`.
fn run(s: &mut Session, sql: &str) -> String {
    match s.execute(sql) {
        Err(e) => {
            let mut out = format!("ERROR {}: {}", e.code, e.message);
            if let Some(d) = &e.detail {
                out.push_str(&format!(" / {d}"));
            }
            out
        }
        Ok(results) => {
            let r = results.last().unwrap();
            if r.columns.is_empty() {
                r.tag.clone()
            } else {
                r.rows
                    .iter()
                    .map(|row| row.iter().map(value::display).collect::<Vec<_>>().join("|"))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }
    }
}

/// Statements and what PostgreSQL 15 gave for them, in order (`psql -A -t`, errors
/// with VERBOSITY verbose for their SQLSTATE, the DETAIL after a slash).
const STEPS: &[(&str, &str)] = &[
    (r#"create table p (id int primary key, v text)"#, r#"CREATE TABLE"#),
    (r#"create table c (cid int, p_id int references p)"#, r#"CREATE TABLE"#),
    (r#"insert into c values (1, 5)"#, r#"ERROR 23503: insert or update on table "c" violates foreign key constraint "c_p_id_fkey" / Key (p_id)=(5) is not present in table "p"."#),
    (r#"insert into p values (1, 'a'), (2, 'b'), (3, 'c')"#, r#"INSERT 0 3"#),
    (r#"insert into c values (1, 1), (2, null), (3, 3)"#, r#"INSERT 0 3"#),
    (r#"delete from p where id = 1"#, r#"ERROR 23503: update or delete on table "p" violates foreign key constraint "c_p_id_fkey" on table "c" / Key (id)=(1) is still referenced from table "c"."#),
    (r#"update p set id = 10 where id = 1"#, r#"ERROR 23503: update or delete on table "p" violates foreign key constraint "c_p_id_fkey" on table "c" / Key (id)=(1) is still referenced from table "c"."#),
    (r#"update p set v = 'z' where id = 1"#, r#"UPDATE 1"#),
    (r#"delete from p where id = 2"#, r#"DELETE 1"#),
    (r#"update c set p_id = 7 where cid = 1"#, r#"ERROR 23503: insert or update on table "c" violates foreign key constraint "c_p_id_fkey" / Key (p_id)=(7) is not present in table "p"."#),
    (r#"update c set p_id = 3 where cid = 1"#, r#"UPDATE 1"#),
    (r#"delete from p where id = 1"#, r#"DELETE 1"#),
    (r#"insert into c select g, g from generate_series(5, 6) g"#, r#"ERROR 23503: insert or update on table "c" violates foreign key constraint "c_p_id_fkey" / Key (p_id)=(5) is not present in table "p"."#),
    (r#"drop table p"#, r#"ERROR 2BP01: cannot drop table p because other objects depend on it / constraint c_p_id_fkey on table c depends on table p"#),
    (r#"truncate p"#, r#"ERROR 0A000: cannot truncate a table referenced in a foreign key constraint / Table "c" references "p"."#),
    (r#"drop table p cascade"#, r#"DROP TABLE"#),
    (r#"insert into c values (9, 99)"#, r#"INSERT 0 1"#),
    (r#"select * from c order by cid"#, r#"1|3
2|
3|3
9|99"#),
    (r#"create table r (id int primary key)"#, r#"CREATE TABLE"#),
    (r#"create table rc (id int references r on delete restrict)"#, r#"CREATE TABLE"#),
    (r#"insert into r values (1), (2)"#, r#"INSERT 0 2"#),
    (r#"insert into rc values (1)"#, r#"INSERT 0 1"#),
    (r#"delete from r where id = 1"#, r#"ERROR 23503: update or delete on table "r" violates foreign key constraint "rc_id_fkey" on table "rc" / Key (id)=(1) is still referenced from table "rc"."#),
    (r#"delete from r where id = 2"#, r#"DELETE 1"#),
    (r#"truncate r cascade"#, r#"TRUNCATE TABLE"#),
    (r#"select count(*) from rc"#, r#"0"#),
    (r#"create table gp (id int primary key)"#, r#"CREATE TABLE"#),
    (r#"create table pa (id int primary key, gp_id int references gp on delete cascade on update cascade)"#, r#"CREATE TABLE"#),
    (r#"create table ch (id int primary key, pa_id int references pa on delete cascade)"#, r#"CREATE TABLE"#),
    (r#"insert into gp values (1), (2)"#, r#"INSERT 0 2"#),
    (r#"insert into pa values (10, 1), (11, 1), (20, 2)"#, r#"INSERT 0 3"#),
    (r#"insert into ch values (100, 10), (101, 11), (200, 20)"#, r#"INSERT 0 3"#),
    (r#"update gp set id = 3 where id = 2"#, r#"UPDATE 1"#),
    (r#"select * from pa order by id"#, r#"10|1
11|1
20|3"#),
    (r#"delete from gp where id = 1"#, r#"DELETE 1"#),
    (r#"select * from pa order by id"#, r#"20|3"#),
    (r#"select * from ch order by id"#, r#"200|20"#),
    (r#"create table q (a int, b text, unique (a, b))"#, r#"CREATE TABLE"#),
    (r#"create table d (x int, y text, foreign key (x, y) references q (a, b) on delete set null on update set null)"#, r#"CREATE TABLE"#),
    (r#"insert into q values (1, 'x'), (2, 'y')"#, r#"INSERT 0 2"#),
    (r#"insert into d values (1, 'y')"#, r#"ERROR 23503: insert or update on table "d" violates foreign key constraint "d_x_y_fkey" / Key (x, y)=(1, y) is not present in table "q"."#),
    (r#"insert into d values (1, 'x'), (2, 'y'), (5, null), (null, 'zz')"#, r#"INSERT 0 4"#),
    (r#"delete from q where a = 1"#, r#"DELETE 1"#),
    (r#"update q set b = 'w' where a = 2"#, r#"UPDATE 1"#),
    (r#"select * from d order by x, y"#, r#"5|
|zz
|
|"#),
    (r#"create table sd (id int primary key)"#, r#"CREATE TABLE"#),
    (r#"insert into sd values (0), (1)"#, r#"INSERT 0 2"#),
    (r#"create table sdc (n int, sd_id int default 0 references sd on delete set default)"#, r#"CREATE TABLE"#),
    (r#"insert into sdc values (1, 1)"#, r#"INSERT 0 1"#),
    (r#"delete from sd where id = 1"#, r#"DELETE 1"#),
    (r#"select * from sdc"#, r#"1|0"#),
    (r#"delete from sd where id = 0"#, r#"ERROR 23503: update or delete on table "sd" violates foreign key constraint "sdc_sd_id_fkey" on table "sdc" / Key (id)=(0) is still referenced from table "sdc"."#),
    (r#"create table nn (n int, p_id int not null references gp on delete set null)"#, r#"CREATE TABLE"#),
    (r#"insert into nn values (1, 3)"#, r#"INSERT 0 1"#),
    (r#"delete from gp where id = 3"#, r#"ERROR 23502: null value in column "p_id" of relation "nn" violates not-null constraint / Failing row contains (1, null)."#),
    (r#"create table emp (id int primary key, boss int references emp on delete cascade)"#, r#"CREATE TABLE"#),
    (r#"insert into emp values (1, null), (2, 1), (3, 2), (4, 4)"#, r#"INSERT 0 4"#),
    (r#"insert into emp values (5, 6)"#, r#"ERROR 23503: insert or update on table "emp" violates foreign key constraint "emp_boss_fkey" / Key (boss)=(6) is not present in table "emp"."#),
    (r#"delete from emp where id = 1"#, r#"DELETE 1"#),
    (r#"select * from emp order by id"#, r#"4|4"#),
    (r#"create table v (x int)"#, r#"CREATE TABLE"#),
    (r#"insert into v values (1), (9)"#, r#"INSERT 0 2"#),
    (r#"create table vp (id int primary key)"#, r#"CREATE TABLE"#),
    (r#"insert into vp values (1)"#, r#"INSERT 0 1"#),
    (r#"alter table v add constraint v_fk foreign key (x) references vp"#, r#"ERROR 23503: insert or update on table "v" violates foreign key constraint "v_fk" / Key (x)=(9) is not present in table "vp"."#),
    (r#"delete from v where x = 9"#, r#"DELETE 1"#),
    (r#"alter table v add constraint v_fk foreign key (x) references vp"#, r#"ALTER TABLE"#),
    (r#"insert into v values (8)"#, r#"ERROR 23503: insert or update on table "v" violates foreign key constraint "v_fk" / Key (x)=(8) is not present in table "vp"."#),
    (r#"alter table v drop constraint v_fk"#, r#"ALTER TABLE"#),
    (r#"insert into v values (8)"#, r#"INSERT 0 1"#),
    (r#"create table e1 (x text references vp)"#, r#"ERROR 42804: foreign key constraint "e1_x_fkey" cannot be implemented / Key columns "x" and "id" are of incompatible types: text and integer."#),
    (r#"create table e2 (x int references q (a))"#, r#"ERROR 42830: there is no unique constraint matching given keys for referenced table "q""#),
    (r#"create table e3 (x int references q)"#, r#"ERROR 42704: there is no primary key for referenced table "q""#),
    (r#"create table e4 (x int, y int, foreign key (x, y) references q (a))"#, r#"ERROR 42830: there is no unique constraint matching given keys for referenced table "q""#),
    (r#"create table e5 (x int references nope)"#, r#"ERROR 42P01: relation "nope" does not exist"#),
    (r#"create table e6 (x int, foreign key (zz) references vp)"#, r#"ERROR 42703: column "zz" referenced in foreign key constraint does not exist"#),
    (r#"create table e7 (x int, foreign key (x) references vp (zz))"#, r#"ERROR 42703: column "zz" referenced in foreign key constraint does not exist"#),
    (r#"create table e8 (x bigint references vp on update cascade)"#, r#"CREATE TABLE"#),
    (r#"insert into e8 values (1)"#, r#"INSERT 0 1"#),
    (r#"update vp set id = 2"#, r#"UPDATE 1"#),
    (r#"select * from e8"#, r#"2"#),
    (r#"create table e9 (a int, b int, constraint two foreign key (b) references vp, foreign key (a) references vp)"#, r#"CREATE TABLE"#),
    (r#"select conname from pg_constraint where conrelid = 'e9'::regclass and contype = 'f' order by conname"#, r#"e9_a_fkey
two"#),
    (r#"select conname, contype, conrelid::regclass, confrelid::regclass, conkey, confkey, confupdtype, confdeltype, confmatchtype, pg_get_constraintdef(oid, true) from pg_constraint where contype = 'f' order by conname"#, r#"ch_pa_id_fkey|f|ch|pa|{2}|{1}|a|c|s|FOREIGN KEY (pa_id) REFERENCES pa(id) ON DELETE CASCADE
d_x_y_fkey|f|d|q|{1,2}|{1,2}|n|n|s|FOREIGN KEY (x, y) REFERENCES q(a, b) ON UPDATE SET NULL ON DELETE SET NULL
e8_x_fkey|f|e8|vp|{1}|{1}|c|a|s|FOREIGN KEY (x) REFERENCES vp(id) ON UPDATE CASCADE
e9_a_fkey|f|e9|vp|{1}|{1}|a|a|s|FOREIGN KEY (a) REFERENCES vp(id)
emp_boss_fkey|f|emp|emp|{2}|{1}|a|c|s|FOREIGN KEY (boss) REFERENCES emp(id) ON DELETE CASCADE
nn_p_id_fkey|f|nn|gp|{2}|{1}|a|n|s|FOREIGN KEY (p_id) REFERENCES gp(id) ON DELETE SET NULL
pa_gp_id_fkey|f|pa|gp|{2}|{1}|c|c|s|FOREIGN KEY (gp_id) REFERENCES gp(id) ON UPDATE CASCADE ON DELETE CASCADE
rc_id_fkey|f|rc|r|{1}|{1}|a|r|s|FOREIGN KEY (id) REFERENCES r(id) ON DELETE RESTRICT
sdc_sd_id_fkey|f|sdc|sd|{2}|{1}|a|d|s|FOREIGN KEY (sd_id) REFERENCES sd(id) ON DELETE SET DEFAULT
two|f|e9|vp|{2}|{1}|a|a|s|FOREIGN KEY (b) REFERENCES vp(id)"#),
    (r#"SELECT conname, conrelid::pg_catalog.regclass AS ontable, pg_catalog.pg_get_constraintdef(oid, true) AS condef FROM pg_catalog.pg_constraint c WHERE confrelid IN (SELECT pg_catalog.pg_partition_ancestors('vp') UNION ALL VALUES ('vp'::pg_catalog.regclass)) AND contype = 'f' AND conparentid = 0 ORDER BY conname"#, r#"e8_x_fkey|e8|FOREIGN KEY (x) REFERENCES vp(id) ON UPDATE CASCADE
e9_a_fkey|e9|FOREIGN KEY (a) REFERENCES vp(id)
two|e9|FOREIGN KEY (b) REFERENCES vp(id)"#),
];

fn kinds() -> [TableKind; 2] {
    [TableKind::Heap, TableKind::Undo]
}

#[test]
fn statements_give_what_postgresql_gives() {
    for kind in kinds() {
        let db = db();
        let mut s = session_of(&db, kind, 1);
        for (sql, want) in STEPS {
            assert_eq!(run(&mut s, sql), *want, "{kind}: {sql}");
        }
    }
}
