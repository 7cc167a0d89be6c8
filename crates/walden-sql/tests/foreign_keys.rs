//! Foreign keys (REFERENCES, FOREIGN KEY, ON DELETE / ON UPDATE actions) on both table
//! kinds: each statement's result against what PostgreSQL 15 gave for the same
//! statements in the same order; the constraint surviving a crash and a checkpoint; and
//! two transactions racing on one referenced key. What could go wrong: a referencing
//! row left pointing at nothing (a check missed, a cascade that stops part way, a
//! delete and an insert that both commit), a wrong message, a constraint lost at
//! recovery.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use support::{crash, db, options, q, session_of};
use walden::vfs::SimVfs;
use walden::{Database, TableKind};
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
    (
        r#"create table p (id int primary key, v text)"#,
        r#"CREATE TABLE"#,
    ),
    (
        r#"create table c (cid int, p_id int references p)"#,
        r#"CREATE TABLE"#,
    ),
    (
        r#"insert into c values (1, 5)"#,
        r#"ERROR 23503: insert or update on table "c" violates foreign key constraint "c_p_id_fkey" / Key (p_id)=(5) is not present in table "p"."#,
    ),
    (
        r#"insert into p values (1, 'a'), (2, 'b'), (3, 'c')"#,
        r#"INSERT 0 3"#,
    ),
    (
        r#"insert into c values (1, 1), (2, null), (3, 3)"#,
        r#"INSERT 0 3"#,
    ),
    (
        r#"delete from p where id = 1"#,
        r#"ERROR 23503: update or delete on table "p" violates foreign key constraint "c_p_id_fkey" on table "c" / Key (id)=(1) is still referenced from table "c"."#,
    ),
    (
        r#"update p set id = 10 where id = 1"#,
        r#"ERROR 23503: update or delete on table "p" violates foreign key constraint "c_p_id_fkey" on table "c" / Key (id)=(1) is still referenced from table "c"."#,
    ),
    (r#"update p set v = 'z' where id = 1"#, r#"UPDATE 1"#),
    (r#"delete from p where id = 2"#, r#"DELETE 1"#),
    (
        r#"update c set p_id = 7 where cid = 1"#,
        r#"ERROR 23503: insert or update on table "c" violates foreign key constraint "c_p_id_fkey" / Key (p_id)=(7) is not present in table "p"."#,
    ),
    (r#"update c set p_id = 3 where cid = 1"#, r#"UPDATE 1"#),
    (r#"delete from p where id = 1"#, r#"DELETE 1"#),
    (
        r#"insert into c select g, g from generate_series(5, 6) g"#,
        r#"ERROR 23503: insert or update on table "c" violates foreign key constraint "c_p_id_fkey" / Key (p_id)=(5) is not present in table "p"."#,
    ),
    (
        r#"drop table p"#,
        r#"ERROR 2BP01: cannot drop table p because other objects depend on it / constraint c_p_id_fkey on table c depends on table p"#,
    ),
    (
        r#"truncate p"#,
        r#"ERROR 0A000: cannot truncate a table referenced in a foreign key constraint / Table "c" references "p"."#,
    ),
    (r#"drop table p cascade"#, r#"DROP TABLE"#),
    (r#"insert into c values (9, 99)"#, r#"INSERT 0 1"#),
    (
        r#"select * from c order by cid"#,
        r#"1|3
2|
3|3
9|99"#,
    ),
    (r#"create table r (id int primary key)"#, r#"CREATE TABLE"#),
    (
        r#"create table rc (id int references r on delete restrict)"#,
        r#"CREATE TABLE"#,
    ),
    (r#"insert into r values (1), (2)"#, r#"INSERT 0 2"#),
    (r#"insert into rc values (1)"#, r#"INSERT 0 1"#),
    (
        r#"delete from r where id = 1"#,
        r#"ERROR 23503: update or delete on table "r" violates foreign key constraint "rc_id_fkey" on table "rc" / Key (id)=(1) is still referenced from table "rc"."#,
    ),
    (r#"delete from r where id = 2"#, r#"DELETE 1"#),
    (r#"truncate r cascade"#, r#"TRUNCATE TABLE"#),
    (r#"select count(*) from rc"#, r#"0"#),
    (r#"create table gp (id int primary key)"#, r#"CREATE TABLE"#),
    (
        r#"create table pa (id int primary key, gp_id int references gp on delete cascade on update cascade)"#,
        r#"CREATE TABLE"#,
    ),
    (
        r#"create table ch (id int primary key, pa_id int references pa on delete cascade)"#,
        r#"CREATE TABLE"#,
    ),
    (r#"insert into gp values (1), (2)"#, r#"INSERT 0 2"#),
    (
        r#"insert into pa values (10, 1), (11, 1), (20, 2)"#,
        r#"INSERT 0 3"#,
    ),
    (
        r#"insert into ch values (100, 10), (101, 11), (200, 20)"#,
        r#"INSERT 0 3"#,
    ),
    (r#"update gp set id = 3 where id = 2"#, r#"UPDATE 1"#),
    (
        r#"select * from pa order by id"#,
        r#"10|1
11|1
20|3"#,
    ),
    (r#"delete from gp where id = 1"#, r#"DELETE 1"#),
    (r#"select * from pa order by id"#, r#"20|3"#),
    (r#"select * from ch order by id"#, r#"200|20"#),
    (
        r#"create table q (a int, b text, unique (a, b))"#,
        r#"CREATE TABLE"#,
    ),
    (
        r#"create table d (x int, y text, foreign key (x, y) references q (a, b) on delete set null on update set null)"#,
        r#"CREATE TABLE"#,
    ),
    (
        r#"insert into q values (1, 'x'), (2, 'y')"#,
        r#"INSERT 0 2"#,
    ),
    (
        r#"insert into d values (1, 'y')"#,
        r#"ERROR 23503: insert or update on table "d" violates foreign key constraint "d_x_y_fkey" / Key (x, y)=(1, y) is not present in table "q"."#,
    ),
    (
        r#"insert into d values (1, 'x'), (2, 'y'), (5, null), (null, 'zz')"#,
        r#"INSERT 0 4"#,
    ),
    (r#"delete from q where a = 1"#, r#"DELETE 1"#),
    (r#"update q set b = 'w' where a = 2"#, r#"UPDATE 1"#),
    (
        r#"select * from d order by x, y"#,
        r#"5|
|zz
|
|"#,
    ),
    (r#"create table sd (id int primary key)"#, r#"CREATE TABLE"#),
    (r#"insert into sd values (0), (1)"#, r#"INSERT 0 2"#),
    (
        r#"create table sdc (n int, sd_id int default 0 references sd on delete set default)"#,
        r#"CREATE TABLE"#,
    ),
    (r#"insert into sdc values (1, 1)"#, r#"INSERT 0 1"#),
    (r#"delete from sd where id = 1"#, r#"DELETE 1"#),
    (r#"select * from sdc"#, r#"1|0"#),
    (
        r#"delete from sd where id = 0"#,
        r#"ERROR 23503: update or delete on table "sd" violates foreign key constraint "sdc_sd_id_fkey" on table "sdc" / Key (id)=(0) is still referenced from table "sdc"."#,
    ),
    (
        r#"create table nn (n int, p_id int not null references gp on delete set null)"#,
        r#"CREATE TABLE"#,
    ),
    (r#"insert into nn values (1, 3)"#, r#"INSERT 0 1"#),
    (
        r#"delete from gp where id = 3"#,
        r#"ERROR 23502: null value in column "p_id" of relation "nn" violates not-null constraint / Failing row contains (1, null)."#,
    ),
    (
        r#"create table emp (id int primary key, boss int references emp on delete cascade)"#,
        r#"CREATE TABLE"#,
    ),
    (
        r#"insert into emp values (1, null), (2, 1), (3, 2), (4, 4)"#,
        r#"INSERT 0 4"#,
    ),
    (
        r#"insert into emp values (5, 6)"#,
        r#"ERROR 23503: insert or update on table "emp" violates foreign key constraint "emp_boss_fkey" / Key (boss)=(6) is not present in table "emp"."#,
    ),
    (r#"delete from emp where id = 1"#, r#"DELETE 1"#),
    (r#"select * from emp order by id"#, r#"4|4"#),
    (r#"create table v (x int)"#, r#"CREATE TABLE"#),
    (r#"insert into v values (1), (9)"#, r#"INSERT 0 2"#),
    (r#"create table vp (id int primary key)"#, r#"CREATE TABLE"#),
    (r#"insert into vp values (1)"#, r#"INSERT 0 1"#),
    (
        r#"alter table v add constraint v_fk foreign key (x) references vp"#,
        r#"ERROR 23503: insert or update on table "v" violates foreign key constraint "v_fk" / Key (x)=(9) is not present in table "vp"."#,
    ),
    (r#"delete from v where x = 9"#, r#"DELETE 1"#),
    (
        r#"alter table v add constraint v_fk foreign key (x) references vp"#,
        r#"ALTER TABLE"#,
    ),
    (
        r#"insert into v values (8)"#,
        r#"ERROR 23503: insert or update on table "v" violates foreign key constraint "v_fk" / Key (x)=(8) is not present in table "vp"."#,
    ),
    (r#"alter table v drop constraint v_fk"#, r#"ALTER TABLE"#),
    (r#"insert into v values (8)"#, r#"INSERT 0 1"#),
    (
        r#"create table e1 (x text references vp)"#,
        r#"ERROR 42804: foreign key constraint "e1_x_fkey" cannot be implemented / Key columns "x" and "id" are of incompatible types: text and integer."#,
    ),
    (
        r#"create table e2 (x int references q (a))"#,
        r#"ERROR 42830: there is no unique constraint matching given keys for referenced table "q""#,
    ),
    (
        r#"create table e3 (x int references q)"#,
        r#"ERROR 42704: there is no primary key for referenced table "q""#,
    ),
    (
        r#"create table e4 (x int, y int, foreign key (x, y) references q (a))"#,
        r#"ERROR 42830: there is no unique constraint matching given keys for referenced table "q""#,
    ),
    (
        r#"create table e5 (x int references nope)"#,
        r#"ERROR 42P01: relation "nope" does not exist"#,
    ),
    (
        r#"create table e6 (x int, foreign key (zz) references vp)"#,
        r#"ERROR 42703: column "zz" referenced in foreign key constraint does not exist"#,
    ),
    (
        r#"create table e7 (x int, foreign key (x) references vp (zz))"#,
        r#"ERROR 42703: column "zz" referenced in foreign key constraint does not exist"#,
    ),
    (
        r#"create table e8 (x bigint references vp on update cascade)"#,
        r#"CREATE TABLE"#,
    ),
    (r#"insert into e8 values (1)"#, r#"INSERT 0 1"#),
    (r#"update vp set id = 2"#, r#"UPDATE 1"#),
    (r#"select * from e8"#, r#"2"#),
    (
        r#"create table e9 (a int, b int, constraint two foreign key (b) references vp, foreign key (a) references vp)"#,
        r#"CREATE TABLE"#,
    ),
    (
        r#"select conname from pg_constraint where conrelid = 'e9'::regclass and contype = 'f' order by conname"#,
        r#"e9_a_fkey
two"#,
    ),
    (
        r#"select conname, contype, conrelid::regclass, confrelid::regclass, conkey, confkey, confupdtype, confdeltype, confmatchtype, pg_get_constraintdef(oid, true) from pg_constraint where contype = 'f' order by conname"#,
        r#"ch_pa_id_fkey|f|ch|pa|{2}|{1}|a|c|s|FOREIGN KEY (pa_id) REFERENCES pa(id) ON DELETE CASCADE
d_x_y_fkey|f|d|q|{1,2}|{1,2}|n|n|s|FOREIGN KEY (x, y) REFERENCES q(a, b) ON UPDATE SET NULL ON DELETE SET NULL
e8_x_fkey|f|e8|vp|{1}|{1}|c|a|s|FOREIGN KEY (x) REFERENCES vp(id) ON UPDATE CASCADE
e9_a_fkey|f|e9|vp|{1}|{1}|a|a|s|FOREIGN KEY (a) REFERENCES vp(id)
emp_boss_fkey|f|emp|emp|{2}|{1}|a|c|s|FOREIGN KEY (boss) REFERENCES emp(id) ON DELETE CASCADE
nn_p_id_fkey|f|nn|gp|{2}|{1}|a|n|s|FOREIGN KEY (p_id) REFERENCES gp(id) ON DELETE SET NULL
pa_gp_id_fkey|f|pa|gp|{2}|{1}|c|c|s|FOREIGN KEY (gp_id) REFERENCES gp(id) ON UPDATE CASCADE ON DELETE CASCADE
rc_id_fkey|f|rc|r|{1}|{1}|a|r|s|FOREIGN KEY (id) REFERENCES r(id) ON DELETE RESTRICT
sdc_sd_id_fkey|f|sdc|sd|{2}|{1}|a|d|s|FOREIGN KEY (sd_id) REFERENCES sd(id) ON DELETE SET DEFAULT
two|f|e9|vp|{2}|{1}|a|a|s|FOREIGN KEY (b) REFERENCES vp(id)"#,
    ),
    (
        r#"SELECT conname, conrelid::pg_catalog.regclass AS ontable, pg_catalog.pg_get_constraintdef(oid, true) AS condef FROM pg_catalog.pg_constraint c WHERE confrelid IN (SELECT pg_catalog.pg_partition_ancestors('vp') UNION ALL VALUES ('vp'::pg_catalog.regclass)) AND contype = 'f' AND conparentid = 0 ORDER BY conname"#,
        r#"e8_x_fkey|e8|FOREIGN KEY (x) REFERENCES vp(id) ON UPDATE CASCADE
e9_a_fkey|e9|FOREIGN KEY (a) REFERENCES vp(id)
two|e9|FOREIGN KEY (b) REFERENCES vp(id)"#,
    ),
    (
        r#"create table up (id int primary key, vp_id int references vp)"#,
        r#"CREATE TABLE"#,
    ),
    (
        r#"insert into up values (1, 2) on conflict (id) do update set vp_id = excluded.vp_id"#,
        r#"INSERT 0 1"#,
    ),
    (
        r#"insert into up values (1, 7) on conflict (id) do update set vp_id = excluded.vp_id"#,
        r#"ERROR 23503: insert or update on table "up" violates foreign key constraint "up_vp_id_fkey" / Key (vp_id)=(7) is not present in table "vp"."#,
    ),
    (
        r#"insert into up values (2, 7) on conflict (id) do nothing"#,
        r#"ERROR 23503: insert or update on table "up" violates foreign key constraint "up_vp_id_fkey" / Key (vp_id)=(7) is not present in table "vp"."#,
    ),
    (
        r#"update up set vp_id = 5 from vp where vp.id = up.vp_id"#,
        r#"ERROR 23503: insert or update on table "up" violates foreign key constraint "up_vp_id_fkey" / Key (vp_id)=(5) is not present in table "vp"."#,
    ),
    (
        r#"delete from vp using up where vp.id = up.vp_id"#,
        r#"ERROR 23503: update or delete on table "vp" violates foreign key constraint "e8_x_fkey" on table "e8" / Key (id)=(2) is still referenced from table "e8"."#,
    ),
    (r#"alter table up drop column vp_id"#, r#"ALTER TABLE"#),
    (
        r#"select count(*) from pg_constraint where contype = 'f' and conrelid = 'up'::regclass"#,
        r#"0"#,
    ),
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

/// What the constraints do after recovery: both ends still checked, the cascade still
/// runs, and the catalog still lists them.
fn enforced(db: &Database, kind: TableKind) -> Vec<String> {
    let mut s = session_of(db, kind, 2);
    let out = [
        "insert into c values (3, 9)",
        "delete from p where id = 1",
        "select conname, pg_get_constraintdef(oid) from pg_constraint where contype = 'f' order by 1",
        "begin; delete from p where id = 2",
        "select count(*) from c2",
        "rollback",
    ]
    .iter()
    .map(|sql| run(&mut s, sql))
    .collect();
    out
}

#[test]
fn constraints_survive_a_crash_and_a_checkpoint() {
    for kind in kinds() {
        for checkpoint in [false, true] {
            let vfs = Arc::new(SimVfs::new(5));
            let db = Database::create("db", options(&vfs)).unwrap();
            let mut s = session_of(&db, kind, 1);
            for sql in [
                "create table p (id int primary key)",
                "create table c (n int, p_id int references p)",
                "create table c2 (n int)",
                "alter table c2 add constraint c2_up foreign key (n) references p on delete cascade",
                "insert into p values (1), (2)",
                "insert into c values (1, 1)",
                "insert into c2 values (2), (2)",
            ] {
                s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            if checkpoint {
                s.execute("checkpoint").unwrap();
            }
            drop(s);
            let want = [
                "ERROR 23503: insert or update on table \"c\" violates foreign key constraint \"c_p_id_fkey\" / Key (p_id)=(9) is not present in table \"p\".",
                "ERROR 23503: update or delete on table \"p\" violates foreign key constraint \"c_p_id_fkey\" on table \"c\" / Key (id)=(1) is still referenced from table \"c\".",
                "c2_up|FOREIGN KEY (n) REFERENCES p(id) ON DELETE CASCADE\nc_p_id_fkey|FOREIGN KEY (p_id) REFERENCES p(id)",
                "DELETE 1",
                "0",
                "ROLLBACK",
            ];
            assert_eq!(enforced(&db, kind), want, "{kind} before the crash");
            let db = crash(db, &vfs);
            assert_eq!(enforced(&db, kind), want, "{kind} checkpoint {checkpoint}");
            assert!(db.check().unwrap().is_clean());
        }
    }
}

/// Runs `sql` in a session on another thread; the handle gives its result.
fn on_thread(
    db: &Database,
    kind: TableKind,
    sql: impl Into<String>,
) -> std::thread::JoinHandle<Result<(), String>> {
    let db = db.clone();
    let sql = sql.into();
    std::thread::spawn(move || {
        let mut s = session_of(&db, kind, 9);
        s.execute(&sql).map(|_| ()).map_err(|e| e.code.to_string())
    })
}

/// Waits a while and says whether the thread is still blocked.
fn blocked<T>(h: &std::thread::JoinHandle<T>) -> bool {
    std::thread::sleep(std::time::Duration::from_millis(300));
    !h.is_finished()
}

fn family(db: &Database, kind: TableKind) -> Session {
    let mut s = session_of(db, kind, 1);
    s.execute(
        "create table p (id int primary key, v text); create table c (n int, p_id int references p); \
         insert into p values (1), (2)",
    )
    .unwrap();
    s
}

/// Sets a session's transactions to REPEATABLE READ (snapshot isolation) before `sql`.
const RR: &str = "set default_transaction_isolation = 'repeatable read';";

/// A child inserted and not yet committed holds its parent's key: a delete of the
/// parent waits for it, and once it commits, fails: under READ COMMITTED with 23503 (it
/// reads the child committed meanwhile), under REPEATABLE READ with a serialization
/// failure (the child committed after the delete's snapshot), as in PostgreSQL.
#[test]
fn a_delete_waits_for_an_uncommitted_child_and_then_fails() {
    for (kind, (prefix, code)) in kinds()
        .into_iter()
        .flat_map(|k| [(k, ("", "23503")), (k, (RR, "40001"))])
    {
        let db = db();
        let mut s1 = family(&db, kind);
        s1.execute("begin; insert into c values (1, 1)").unwrap();
        let sql = format!("{prefix} delete from p where id = 1");
        let h = on_thread(&db, kind, sql);
        assert!(
            blocked(&h),
            "{kind}: the delete waits for the child's transaction"
        );
        s1.execute("commit").unwrap();
        assert_eq!(h.join().unwrap(), Err(code.to_string()), "{kind} {prefix}");
        assert_eq!(q(&mut s1, "select count(*) from p where id = 1"), "1");
        // Afresh, the delete sees the child in its snapshot: the plain 23503.
        let h = on_thread(&db, kind, format!("{prefix} delete from p where id = 1"));
        assert_eq!(h.join().unwrap(), Err("23503".to_string()), "{kind}");
    }
}

/// A parent deleted and not yet committed: an insert of a child waits, and once the
/// delete commits, fails (READ COMMITTED: 23503, REPEATABLE READ: 40001, as in
/// PostgreSQL); when the delete rolls back, the insert goes in.
#[test]
fn a_child_insert_waits_for_an_uncommitted_delete_of_its_parent() {
    for (kind, (prefix, code)) in kinds()
        .into_iter()
        .flat_map(|k| [(k, ("", "23503")), (k, (RR, "40001"))])
    {
        let db = db();
        let mut s1 = family(&db, kind);
        s1.execute("begin; delete from p where id = 1").unwrap();
        let h = on_thread(&db, kind, format!("{prefix} insert into c values (1, 1)"));
        assert!(
            blocked(&h),
            "{kind}: the insert waits for the delete's transaction"
        );
        s1.execute("commit").unwrap();
        assert_eq!(h.join().unwrap(), Err(code.to_string()), "{kind} {prefix}");
        assert_eq!(q(&mut s1, "select count(*) from c"), "0");

        s1.execute("begin; delete from p where id = 2").unwrap();
        let h = on_thread(&db, kind, format!("{prefix} insert into c values (2, 2)"));
        assert!(blocked(&h), "{kind}");
        s1.execute("rollback").unwrap();
        assert_eq!(h.join().unwrap(), Ok(()), "{kind}");
        assert_eq!(q(&mut s1, "select n, p_id from c"), "2|2");
    }
}

/// A REPEATABLE READ transaction whose snapshot predates the parent's delete must not
/// insert a child for it: its snapshot still shows the parent, the check does not.
#[test]
fn a_child_insert_in_an_older_snapshot_sees_the_committed_delete() {
    for kind in kinds() {
        let db = db();
        let mut s1 = family(&db, kind);
        let mut s2 = session_of(&db, kind, 2);
        s1.execute(RR).unwrap();
        s1.execute("begin; select count(*) from p").unwrap();
        s2.execute("delete from p where id = 1").unwrap();
        assert_eq!(q(&mut s1, "select count(*) from p where id = 1"), "1");
        let e = s1.execute("insert into c values (1, 1)").unwrap_err();
        assert_eq!(e.code, "40001", "{kind}: {e}");
        s1.execute("rollback").unwrap();
        // And a delete in an older snapshot sees a child committed since.
        s1.execute("begin; select count(*) from c").unwrap();
        s2.execute("insert into c values (2, 2)").unwrap();
        let e = s1.execute("delete from p where id = 2").unwrap_err();
        assert_eq!(e.code, "40001", "{kind}: {e}");
        s1.execute("rollback").unwrap();
        assert_eq!(q(&mut s2, "select * from c"), "2|2");
    }
}

/// The same under READ COMMITTED: each statement sees the commits before it, so the
/// child insert and the parent delete fail as the rows then committed say (23503).
#[test]
fn read_committed_statements_check_keys_against_what_committed_before_them() {
    for kind in kinds() {
        let db = db();
        let mut s1 = family(&db, kind);
        let mut s2 = session_of(&db, kind, 2);
        s1.execute("begin; select count(*) from p").unwrap();
        s2.execute("delete from p where id = 1").unwrap();
        assert_eq!(q(&mut s1, "select count(*) from p where id = 1"), "0");
        let e = s1.execute("insert into c values (1, 1)").unwrap_err();
        assert_eq!(e.code, "23503", "{kind}: {e}");
        s1.execute("rollback").unwrap();
        s1.execute("begin; select count(*) from c").unwrap();
        s2.execute("insert into c values (2, 2)").unwrap();
        let e = s1.execute("delete from p where id = 2").unwrap_err();
        assert_eq!(e.code, "23503", "{kind}: {e}");
        s1.execute("rollback").unwrap();
        assert_eq!(q(&mut s2, "select * from c"), "2|2");
    }
}

/// Children of one parent do not wait for each other: two transactions insert one each
/// and both commit.
#[test]
fn children_of_one_parent_insert_concurrently() {
    for kind in kinds() {
        let db = db();
        let mut s1 = family(&db, kind);
        let mut s2 = session_of(&db, kind, 2);
        s1.execute("begin; insert into c values (1, 1)").unwrap();
        s2.execute("begin; insert into c values (2, 1)").unwrap();
        s1.execute("commit").unwrap();
        s2.execute("commit").unwrap();
        assert_eq!(q(&mut s1, "select n, p_id from c order by n"), "1|1\n2|1");
    }
}

/// Many threads race inserts of children against deletes of their parents: at the end
/// no child points at a missing parent.
#[test]
fn racing_inserts_and_deletes_leave_no_orphan() {
    for kind in kinds() {
        let db = db();
        let mut s = session_of(&db, kind, 1);
        s.execute(
            "create table p (id int primary key); create table c (n int, p_id int references p on delete restrict); \
             insert into p select g from generate_series(1, 40) g",
        )
        .unwrap();
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || {
                    let mut s = session_of(&db, kind, 10 + t);
                    for i in 0..40u64 {
                        let id = (i * 7 + t * 13) % 40 + 1;
                        let sql = if (i + t) % 3 == 0 {
                            format!("delete from p where id = {id}")
                        } else {
                            format!("begin; insert into c values ({i}, {id}); select 1; commit")
                        };
                        if s.execute(&sql).is_err() && s.in_transaction_block() {
                            s.execute("rollback").unwrap();
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(
            q(
                &mut s,
                "select count(*) from c where p_id not in (select id from p)"
            ),
            "0",
            "{kind}"
        );
        assert_ne!(q(&mut s, "select count(*) from c"), "0", "{kind}");
    }
}

/// What Walden refuses where PostgreSQL goes on: a foreign key kept as text cannot
/// follow a rename, and MATCH FULL and DEFERRABLE are not done.
#[test]
fn what_walden_refuses() {
    for kind in kinds() {
        let db = db();
        let mut s = family(&db, kind);
        for (sql, want) in [
            (
                "alter table p rename to p2",
                "ERROR 0A000: renaming relation \"p\", which foreign key constraint \"c_p_id_fkey\" of relation \"c\" references (Walden keeps a foreign key as text) is not supported",
            ),
            (
                "alter table c rename column p_id to q",
                "ERROR 0A000: renaming column \"p_id\" of relation \"c\", which foreign key constraint \"c_p_id_fkey\" uses (Walden keeps a foreign key as text) is not supported",
            ),
            (
                "alter table p drop column id",
                "ERROR 2BP01: cannot drop column id of table p because other objects depend on it / constraint c_p_id_fkey on table c depends on column id of table p",
            ),
            (
                "create table mf (x int references p match full)",
                "ERROR 0A000: a foreign key with MATCH FULL is not supported",
            ),
            (
                "create table df (x int references p deferrable)",
                "ERROR 0A000: a foreign key that is DEFERRABLE is not supported",
            ),
            ("alter table c rename to c2", "ALTER TABLE"),
            ("insert into c2 values (1, 3)", "ERROR 23503: insert or update on table \"c2\" violates foreign key constraint \"c_p_id_fkey\" / Key (p_id)=(3) is not present in table \"p\"."),
        ] {
            assert_eq!(run(&mut s, sql), want, "{kind}: {sql}");
        }
    }
}
