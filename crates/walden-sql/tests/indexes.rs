//! Indexes in SQL: the DDL (CREATE/DROP INDEX, UNIQUE and PRIMARY KEY constraints, ALTER
//! TABLE, REINDEX) with PostgreSQL's errors, and the planner's use of them, which EXPLAIN
//! shows. What could go wrong: a statement read through an index returning other rows
//! than a scan (the differential test checks that at random; here the shapes the planner
//! takes apart), or DDL that half-happens.
#![allow(clippy::unwrap_used)]

use walden_sql::Session;

mod support;
use support::{db, outcome_with_detail, q};

fn err(s: &mut Session, sql: &str) -> (String, String) {
    let e = s.execute(sql).unwrap_err();
    (e.code.to_string(), e.message.clone())
}

fn plan(s: &mut Session, sql: &str) -> String {
    q(s, &format!("explain {sql}"))
}

fn filled(s: &mut Session) {
    q(
        s,
        "create table t (id int primary key, v int, name text unique);
         insert into t select g, g % 10, 'n' || g from generate_series(1, 3000) g;
         insert into t values (5000, null, null);
         create index t_v on t (v, id);",
    );
}

#[test]
fn queries_read_through_indexes() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    filled(&mut s);
    let cases = [
        // (query, the plan's scan line, the rows)
        (
            "select * from t where id = 5",
            "Index Scan using t_pkey on t",
            "5|5|n5",
        ),
        (
            "select id from t where id in (7, 3, null, 3) order by id",
            "Index Scan using t_pkey on t",
            "3\n7",
        ),
        (
            "select id from t where id between 10 and 13 order by id desc",
            "Index Scan Backward using t_pkey on t",
            "13\n12\n11\n10",
        ),
        (
            "select id from t where v = 3 and id > 2980",
            "Index Scan using t_v on t",
            "2983\n2993",
        ),
        (
            "select id from t where v = 3 order by id desc limit 2",
            "Index Scan Backward using t_v on t",
            "2993\n2983",
        ),
        (
            "select id from t order by id desc limit 2",
            "Index Scan Backward using t_pkey on t",
            "5000\n3000",
        ),
        // NULLs sort last ascending, first descending, as ORDER BY's defaults.
        (
            "select id from t order by v desc, id desc limit 2",
            "Index Scan Backward using t_v on t",
            "5000\n2999",
        ),
        ("select min(id) from t", "Index Scan using t_pkey on t", "1"),
        (
            "select max(v) from t",
            "Index Scan Backward using t_v on t",
            "9",
        ),
        (
            "select id from t where name = 'n42'",
            "Index Scan using t_name_key on t",
            "42",
        ),
        (
            "select count(*) from t where id < 10.5",
            "Seq Scan on t",
            "10",
        ),
        (
            "select count(*) from t where v + 0 = 3",
            "Seq Scan on t",
            "300",
        ),
    ];
    for (sql, scan, rows) in cases {
        let p = plan(&mut s, sql);
        assert!(p.contains(scan), "{sql}: {p}");
        assert_eq!(q(&mut s, sql), rows, "{sql}");
    }
    // The conditions the index read uses, as PostgreSQL writes them.
    let conds = [
        ("select * from t where id = 5", "Index Cond: (id = 5)"),
        (
            "select id from t where id in (7, 3, null, 3)",
            "Index Cond: (id = ANY ('{3,7}'))",
        ),
        (
            "select id from t where v = 3 and id > 2980",
            "Index Cond: (v = 3) AND (id > 2980)",
        ),
        (
            "select id from t where name = 'n42'",
            "Index Cond: (name = 'n42'::text)",
        ),
        (
            "delete from t where id between 1 and 4",
            "Index Cond: (id >= 1) AND (id <= 4)",
        ),
    ];
    for (sql, cond) in conds {
        let p = plan(&mut s, sql);
        assert!(p.contains(cond), "{sql}: {p}");
    }
    // UPDATE and DELETE find their rows through the index too; a changed key moves
    // the row's entry.
    assert!(plan(&mut s, "update t set v = 1 where id = 7").contains("Index Scan using t_pkey"));
    assert!(plan(&mut s, "delete from t where name = 'n8'").contains("Index Scan using t_name_key"));
    q(&mut s, "update t set id = id + 10000 where id < 5");
    assert_eq!(
        q(&mut s, "select id from t where id > 9999 order by id"),
        "10001\n10002\n10003\n10004"
    );
    q(&mut s, "delete from t where name in ('n8', 'n9')");
    assert_eq!(q(&mut s, "select count(*) from t where id in (8, 9)"), "0");
    assert_eq!(q(&mut s, "select count(*) from t"), "2999");
}

#[test]
fn index_ddl_behaves_as_in_postgresql() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    filled(&mut s);
    // A unique index over repeated values is refused and leaves nothing behind.
    let (code, msg) = err(&mut s, "create unique index t_v_u on t (v)");
    assert_eq!(code, "23505", "{msg}");
    q(&mut s, "create unique index t_v_u on t (id, v)");
    let (code, _) = err(&mut s, "create index t_v_u on t (v)");
    assert_eq!(code, "42P07");
    let r = s
        .execute_one("create index if not exists t_v_u on t (v)")
        .unwrap();
    assert!(r.notices[0].contains("already exists, skipping"), "{r:?}");
    q(&mut s, "drop index t_v_u");
    let r = s.execute_one("drop index if exists t_v_u").unwrap();
    assert!(r.notices[0].contains("does not exist, skipping"), "{r:?}");
    assert_eq!(err(&mut s, "drop index t_v_u").0, "42704");
    // The primary key's index goes with its constraint only.
    assert_eq!(err(&mut s, "drop index t_pkey").0, "2BP01");
    assert_eq!(err(&mut s, "alter table t add primary key (v)").0, "42P16");
    q(&mut s, "alter table t drop constraint t_pkey");
    // A primary key holds no NULL (the row with v NULL refuses it).
    assert_eq!(
        err(&mut s, "alter table t add primary key (v, id)").0,
        "23502"
    );
    q(&mut s, "alter table t add primary key (id)");
    assert_eq!(
        err(&mut s, "insert into t values (null, 1, 'x')").0,
        "23502"
    );
    assert_eq!(err(&mut s, "insert into t values (1, 1, 'x')").0, "23505");
    // UNIQUE constraints: named as PostgreSQL names them, enforced.
    q(
        &mut s,
        "create table u (a int unique, b text, c int, constraint u_bc unique (b, c))",
    );
    q(
        &mut s,
        "insert into u values (1, 'x', 1), (2, 'x', 2), (null, 'y', null), (null, 'y', null)",
    );
    let (code, msg) = err(&mut s, "insert into u values (1, 'z', 5)");
    assert_eq!(
        (code.as_str(), msg.as_str()),
        (
            "23505",
            "duplicate key value violates unique constraint \"u_a_key\""
        )
    );
    assert_eq!(err(&mut s, "insert into u values (3, 'x', 2)").0, "23505");
    // A CREATE TABLE whose constraint cannot be made leaves no table.
    assert_eq!(
        err(&mut s, "create table w (a int unique, b int unique (a))").0,
        "42601"
    );
    assert_eq!(err(&mut s, "create table w (a int, unique (z))").0, "42703");
    assert_eq!(err(&mut s, "select * from w").0, "42P01");
    // An index made inside a transaction block goes with its ROLLBACK.
    q(&mut s, "begin");
    q(&mut s, "create index u_c on u (c)");
    assert_eq!(
        q(
            &mut s,
            "select count(*) from pg_class where relname = 'u_c'"
        ),
        "1"
    );
    q(&mut s, "rollback");
    assert_eq!(
        q(
            &mut s,
            "select count(*) from pg_class where relname = 'u_c'"
        ),
        "0"
    );
    // REINDEX rebuilds, and queries read the same rows through the new tree.
    q(&mut s, "reindex table t; reindex index u_a_key");
    assert_eq!(q(&mut s, "select count(*) from t where v = 3"), "300");
    assert_eq!(q(&mut s, "select b, c from u where a = 2"), "x|2");
    assert_eq!(err(&mut s, "reindex index nope").0, "42704");
    assert_eq!(err(&mut s, "reindex database x").0, "0A000");
    // Index kinds and options Walden lacks are named.
    assert_eq!(err(&mut s, "create index on t using hash (v)").0, "42704");
    assert_eq!(err(&mut s, "create index on t (v int4_ops)").0, "0A000");
    assert_eq!(
        err(&mut s, "alter table t add unique (v desc)"),
        (
            "0A000".into(),
            "DESC or NULLS FIRST/LAST in a unique constraint is not supported".into()
        )
    );
    assert_eq!(err(&mut s, "create index on t ((v + 1))").0, "0A000");
    assert_eq!(err(&mut s, "create index on t (nope)").0, "42703");
}

#[test]
fn indexes_survive_reopening() {
    use std::sync::Arc;
    let vfs = Arc::new(walden::vfs::SimVfs::new(1));
    let opts = || walden::Options {
        vfs: vfs.clone(),
        background: false,
        ..walden::Options::default()
    };
    {
        let db = walden::Database::create("db", opts()).unwrap();
        let mut s = Session::with_seed(&db, 1);
        filled(&mut s);
        q(&mut s, "reindex index t_v");
        drop(s);
        db.close().unwrap();
    }
    let db = walden::Database::open("db", opts()).unwrap();
    let mut s = Session::with_seed(&db, 1);
    assert!(plan(&mut s, "select * from t where v = 2").contains("t_v"));
    assert_eq!(q(&mut s, "select count(*) from t where v = 2"), "300");
    assert_eq!(err(&mut s, "insert into t values (3, 1, 'q')").0, "23505");
}

/// The rows of `o` (an index on b DESC, one on (a, b DESC)) and `p` (the same rows, no
/// index), with NULLs in a and b.
fn ordered_tables(s: &mut Session) {
    q(
        s,
        "create table o (id int primary key, a int, b int, c text);
         insert into o select g, case when g % 13 = 0 then null else g % 7 end,
           case when g % 11 = 0 then null else (g * 37) % 101 - 50 end, 'c' || (g % 5)
           from generate_series(1, 2000) g;
         create table p (id int, a int, b int, c text);
         insert into p select * from o;
         create index o_b on o (b desc);
         create index o_ab on o (a, b desc);",
    );
}

/// Indexes with DESC and NULLS FIRST/LAST columns read the rows a scan reads, for every
/// kind of condition on a descending column and on a mixed (a, b DESC) index; they
/// serve an ORDER BY forward when it matches their declared orders and backward when it
/// is their exact opposite (NULLs placement included), and a sort otherwise, as
/// PostgreSQL's plans do.
#[test]
fn declared_orders_read_and_order_as_in_postgresql() {
    for kind in [walden::TableKind::Heap, walden::TableKind::Undo] {
        let db = db();
        let mut s = support::session_of(&db, kind, 1);
        ordered_tables(&mut s);
        let conds = [
            ("b = 7", "o_b"),
            ("b < -10", "o_b"),
            ("b <= -10", "o_b"),
            ("b > 20", "o_b"),
            ("b >= 20 and b <= 30", "o_b"),
            ("b between -5 and 5", "o_b"),
            ("b > 5 and b < 5", "o_b"),
            ("b in (3, -3, 40, null)", "o_b"),
            ("a = 3 and b > 10", "o_ab"),
            ("a = 3 and b <= -10", "o_ab"),
            ("a = 3 and b < 0 and b >= -40", "o_ab"),
            ("a in (1, 4) and b between -20 and 20", "o_ab"),
            ("a in (2, 5) and b in (1, -1, 30, -46)", "o_ab"),
            ("a > 4", "o_ab"),
            ("a = 6", "o_ab"),
        ];
        for (cond, index) in conds {
            let on = |t: &str| format!("select id, a, b from {t} where {cond} order by id");
            let p = plan(&mut s, &on("o"));
            assert!(p.contains(&format!("using {index} on o")), "{cond}: {p}");
            let (got, want) = (q(&mut s, &on("o")), q(&mut s, &on("p")));
            assert!(!want.is_empty() || cond.contains("b < 5"), "{cond}");
            assert_eq!(got, want, "{kind}: {cond}");
        }
        // (ORDER BY, its columns, the plan's scan or None for a sort over the read).
        let orders = [
            ("b desc", "b", Some("Index Scan using o_b on o")),
            ("b desc nulls first", "b", Some("Index Scan using o_b on o")),
            ("b", "b", Some("Index Scan Backward using o_b on o")),
            (
                "b asc nulls last",
                "b",
                Some("Index Scan Backward using o_b on o"),
            ),
            ("b desc nulls last", "b", None),
            ("b nulls first", "b", None),
            ("a, b desc", "a, b", Some("Index Scan using o_ab on o")),
            (
                "a desc, b",
                "a, b",
                Some("Index Scan Backward using o_ab on o"),
            ),
            ("a, b", "a, b", None),
            ("a desc nulls last, b", "a, b", None),
        ];
        for (order, cols, scan) in orders {
            // Rows tied on the ORDER BY may come in any order: only its columns show.
            let on = |t: &str| format!("select {cols} from {t} order by {order}, id limit 30");
            let sql = format!("select {cols} from o order by {order} limit 30");
            let p = q(&mut s, &format!("explain (costs off) {sql}"));
            match scan {
                Some(scan) => {
                    assert!(!p.contains("Sort"), "{order}: {p}");
                    assert!(p.contains(scan), "{order}: {p}");
                }
                None => assert!(p.contains("Sort"), "{order}: {p}"),
            }
            // The first rows in ORDER BY order.
            let got = q(&mut s, &sql);
            let want = q(&mut s, &on("p"));
            assert_eq!(got, want, "{kind}: order by {order}");
        }
        // NULLs where the order puts them: first for b DESC, last for b ASC.
        assert_eq!(q(&mut s, "select b from o order by b desc limit 2"), "\n");
        assert_eq!(q(&mut s, "select b from o order by b limit 1"), "-50");
        assert_eq!(
            q(
                &mut s,
                "select b from o where b is not null order by b desc limit 2"
            ),
            "50\n50"
        );
        // With the first column fixed, the rest of the key gives the order.
        let sql = "select b from o where a = 3 order by b desc limit 3";
        let p = q(&mut s, &format!("explain (costs off) {sql}"));
        assert!(
            p.contains("Index Scan using o_ab on o") && !p.contains("Sort"),
            "{p}"
        );
        assert_eq!(
            q(&mut s, sql),
            q(
                &mut s,
                "select b from p where a = 3 order by b desc nulls first limit 3"
            )
        );
        let sql = "select b from o where a = 3 order by b limit 3";
        let p = q(&mut s, &format!("explain (costs off) {sql}"));
        assert!(p.contains("Index Scan Backward using o_ab on o"), "{p}");
        assert_eq!(
            q(&mut s, sql),
            q(&mut s, "select b from p where a = 3 order by b limit 3")
        );
        // min and max read one end of the index, past its NULLs.
        for (sql, scan, want) in [
            ("select max(b) from o", "Index Scan using o_b on o", "50"),
            (
                "select min(b) from o",
                "Index Scan Backward using o_b on o",
                "-50",
            ),
        ] {
            assert!(plan(&mut s, sql).contains(scan), "{sql}");
            assert_eq!(q(&mut s, sql), want, "{sql}");
        }
    }
}

/// CREATE INDEX with each combination of ASC/DESC and NULLS FIRST/LAST: PostgreSQL's
/// definitions (`pg_get_indexdef`, `pg_index.indoption`), a unique DESC index that
/// refuses a repeat, and the orders kept across a crash.
#[test]
fn declared_orders_are_defined_as_in_postgresql() {
    use std::sync::Arc;
    let vfs = Arc::new(walden::vfs::SimVfs::new(3));
    let db = walden::Database::create("db", support::options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    q(
        &mut s,
        "create table t8 (a8 int, b8 int, c8 text, d8 double precision, e8 int);
         create index t8all on t8 (e8 desc, d8 asc, c8 desc nulls last, b8 asc nulls first, a8 desc);
         create unique index t8u on t8 (a8 desc nulls last);
         insert into t8 values (1, 1, 'x', 1.5, 1), (2, null, 'y', -1, null), (null, 3, null, null, 3), (null, 4, 'z', 2, 3);",
    );
    let defs =
        "select pg_get_indexdef(indexrelid), pg_get_indexdef(indexrelid, 3, true), indoption \
                from pg_index where indrelid = 't8'::regclass order by indexrelid";
    let want = "CREATE INDEX t8all ON public.t8 USING btree (e8 DESC, d8, c8 DESC NULLS LAST, b8 NULLS FIRST, a8 DESC)|c8|3 0 1 2 3\n\
                CREATE UNIQUE INDEX t8u ON public.t8 USING btree (a8 DESC NULLS LAST)||1";
    assert_eq!(q(&mut s, defs), want);
    // NULLs are distinct in a unique index; a repeated value is not.
    assert_eq!(
        outcome_with_detail(&mut s, "insert into t8 (a8) values (2)"),
        "ERROR 23505: duplicate key value violates unique constraint \"t8u\" (Key (a8)=(2) already exists.)"
    );
    assert_eq!(
        outcome_with_detail(&mut s, "create unique index t8e on t8 (e8 desc)"),
        "ERROR 23505: could not create unique index \"t8e\" (Key (e8)=(3) is duplicated.)"
    );
    let sql = "select a8, b8 from t8 order by e8 desc, d8 limit 10";
    assert!(plan(&mut s, sql).contains("Index Scan using t8all on t8"));
    assert_eq!(q(&mut s, sql), "2|\n|4\n|3\n1|1");
    // The orders are in the catalog: a crash and recovery keep them.
    drop(s);
    let db = support::crash(db, &vfs);
    let mut s = Session::with_seed(&db, 1);
    assert_eq!(q(&mut s, defs), want);
    assert_eq!(q(&mut s, sql), "2|\n|4\n|3\n1|1");
    assert_eq!(
        q(
            &mut s,
            "select a8 from t8 where a8 > 1 or a8 is null order by a8 desc nulls last"
        ),
        "2\n\n"
    );
}
