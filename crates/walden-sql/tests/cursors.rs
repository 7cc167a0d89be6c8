//! Cursors (DECLARE, FETCH, MOVE, CLOSE) against PostgreSQL 15's answers to the same
//! statements: scrolling both ways, WITH HOLD across COMMIT, FETCH past the end, CLOSE
//! ALL, an error inside a cursor, a cursor's view of a table changed meanwhile, and a
//! held snapshot that vacuum must respect.
#![allow(clippy::unwrap_used)]

use walden::TableKind;
use walden_sql::Session;

mod support;
use support::{db, outcome, q, session_of};

const SETUP: [(&str, &str); 2] = [
    ("create table cur (a int, b text)", ""),
    (
        "insert into cur select g, 'r' || g from generate_series(1, 10) g",
        "",
    ),
];

#[test]
fn scrolling_both_ways_as_postgresql() {
    let mut cases: Vec<(&str, &str)> = SETUP.to_vec();
    cases.extend([
        ("begin", ""),
        (
            "declare c scroll cursor for select * from cur where a > 2",
            "",
        ),
        ("fetch 2 from c", "3|r3\n4|r4"),
        ("fetch next c", "5|r5"),
        ("fetch prior from c", "4|r4"),
        ("fetch absolute 1 in c", "3|r3"),
        ("fetch last from c", "10|r10"),
        ("fetch next from c", ""),
        ("fetch next from c", ""),
        ("fetch backward 3 from c", "10|r10\n9|r9\n8|r8"),
        ("fetch relative -2 from c", "6|r6"),
        ("fetch relative 0 from c", "6|r6"),
        ("fetch 0 from c", "6|r6"),
        ("fetch forward 0 from c", "6|r6"),
        ("move forward all in c", ""),
        ("fetch -2 from c", "10|r10\n9|r9"),
        ("fetch first from c", "3|r3"),
        ("fetch absolute -3 from c", "8|r8"),
        ("fetch absolute 0 from c", ""),
        ("fetch relative 0 from c", ""),
        ("fetch next from c", "3|r3"),
        ("fetch absolute 20 from c", ""),
        ("fetch prior from c", "10|r10"),
        (
            "fetch backward all from c",
            "9|r9\n8|r8\n7|r7\n6|r6\n5|r5\n4|r4\n3|r3",
        ),
        ("fetch prior from c", ""),
        ("fetch forward 2 from c", "3|r3\n4|r4"),
        ("move backward 5 in c", ""),
        ("fetch c", "3|r3"),
        ("move relative 3 in c", ""),
        ("fetch relative 1 from c", "7|r7"),
        // A default cursor over a few rows moves back too.
        ("declare d cursor for select a from cur order by a desc", ""),
        ("fetch 3 from d", "10\n9\n8"),
        ("fetch backward 1 from d", "9"),
        // NO SCROLL: forward only.
        ("declare n no scroll cursor for select a from cur", ""),
        ("fetch 2 from n", "1\n2"),
        ("fetch absolute 4 from n", "4"),
        (
            "fetch prior from n",
            "ERROR 55000: cursor can only scan forward",
        ),
        ("rollback", ""),
    ]);
    support::check_on_both("cursor_scroll", &cases);
}

#[test]
fn hold_close_and_errors_as_postgresql() {
    let mut cases: Vec<(&str, &str)> = SETUP.to_vec();
    cases.extend([
        (
            "declare x cursor for select 1",
            "ERROR 25P01: DECLARE CURSOR can only be used in transaction blocks",
        ),
        // WITH HOLD outside a block: its rows are read at once.
        ("declare h cursor with hold for select a from cur where a < 4", ""),
        ("fetch all from h", "1\n2\n3"),
        ("fetch absolute 1 from h", "1"),
        ("close h", ""),
        ("fetch h", "ERROR 34000: cursor \"h\" does not exist"),
        // WITH HOLD across COMMIT; the cursor without HOLD closes.
        ("begin", ""),
        ("declare h2 cursor with hold for select a, b from cur where a < 4", ""),
        ("declare w cursor for select a from cur", ""),
        ("fetch 1 from h2", "1|r1"),
        ("fetch 1 from w", "1"),
        (
            "declare w cursor for select 2",
            "ERROR 42P03: cursor \"w\" already exists",
        ),
        ("rollback", ""),
        ("fetch h2", "ERROR 34000: cursor \"h2\" does not exist"),
        ("begin", ""),
        ("declare h2 cursor with hold for select a, b from cur where a < 4", ""),
        ("declare w cursor for select a from cur", ""),
        ("fetch 1 from h2", "1|r1"),
        ("delete from cur where a = 2", ""),
        (
            "select name, statement, is_holdable, is_binary, is_scrollable from pg_cursors order by name",
            "h2|declare h2 cursor with hold for select a, b from cur where a < 4|t|f|t\n\
             w|declare w cursor for select a from cur|f|f|t",
        ),
        (
            "select count(*) from pg_cursors where creation_time > now()",
            "2",
        ),
        ("commit", ""),
        ("select name from pg_cursors", "h2"),
        ("fetch w", "ERROR 34000: cursor \"w\" does not exist"),
        ("fetch all from h2", "2|r2\n3|r3"),
        // A held cursor outlives a later transaction's rollback.
        ("begin", ""),
        ("fetch first from h2", "1|r1"),
        ("rollback", ""),
        ("fetch next from h2", "2|r2"),
        ("close all", ""),
        ("fetch h2", "ERROR 34000: cursor \"h2\" does not exist"),
        // An error inside a cursor's rows aborts the block.
        ("begin", ""),
        ("declare z cursor for select 10 / (a - 5) from cur where a <> 2", ""),
        ("fetch 2 from z", "-2\n-5"),
        ("fetch 2 from z", "ERROR 22012: division by zero"),
        (
            "fetch 1 from z",
            "ERROR 25P02: current transaction is aborted, commands ignored until end of transaction block",
        ),
        ("rollback", ""),
        ("fetch z", "ERROR 34000: cursor \"z\" does not exist"),
        // A cursor over a join and an aggregate.
        ("begin", ""),
        (
            "declare j scroll cursor for select x.a, count(*) from cur x join cur y on y.a <= x.a group by x.a order by x.a",
            "",
        ),
        ("fetch 2 from j", "1|1\n3|2"),
        ("fetch last from j", "10|9"),
        ("fetch absolute -2 from j", "9|8"),
        ("commit", ""),
        ("close nosuch", "ERROR 34000: cursor \"nosuch\" does not exist"),
    ]);
    support::check_on_both("cursor_hold", &cases);
}

/// A cursor reads its table as it stood at DECLARE, whatever its own transaction and
/// others changed since, at both levels (PostgreSQL's answers).
#[test]
fn a_cursor_keeps_its_snapshot_as_postgresql() {
    for level in ["read committed", "repeatable read"] {
        let mut cases: Vec<(&str, &str)> = SETUP.to_vec();
        let begin = format!("begin isolation level {level}");
        cases.extend([
            (begin.as_str(), ""),
            ("declare c cursor for select a, b from cur where a <= 4", ""),
            ("fetch 1 from c", "1|r1"),
            ("update cur set b = 'new' where a <= 4", ""),
            ("insert into cur values (0, 'zero')", ""),
            ("delete from cur where a = 3", ""),
            ("fetch all from c", "2|r2\n3|r3\n4|r4"),
            ("select count(*) from cur where b = 'new'", "3"),
            (
                "declare d cursor for select a, b from cur where a <= 4 order by a",
                "",
            ),
            ("fetch all from d", "0|zero\n1|new\n2|new\n4|new"),
            ("rollback", ""),
            ("select count(*) from cur", "10"),
        ]);
        support::check_on_both("cursor_snapshot", &cases);
    }
}

/// A transaction running at the DECLARE stays unseen by the cursor after it commits,
/// and a vacuum after that keeps the versions the cursor reads: the cursor's
/// transaction's later statements take new snapshots (READ COMMITTED) that no longer
/// need them, which must not let its horizon pass the cursor's.
#[test]
fn a_held_snapshot_holds_back_vacuum() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let db = db();
        let mut a = session_of(&db, kind, 1);
        let mut b = Session::with_seed(&db, 2);
        let mut c = Session::with_seed(&db, 3);
        q(
            &mut a,
            "create table v (a int primary key, b text);
             insert into v select g, 'old' from generate_series(1, 300) g",
        );
        // B runs (its xid below A's) while A declares.
        q(&mut b, "begin");
        q(&mut b, "update v set b = 'new'");
        q(&mut b, "delete from v where a > 200");
        q(&mut a, "begin");
        q(&mut a, "declare c cursor for select a, b from v order by a");
        q(&mut a, "declare s no scroll cursor for select a, b from v");
        assert_eq!(q(&mut a, "fetch 1 from c"), "1|old");
        assert_eq!(q(&mut a, "fetch 1 from s"), "1|old");
        q(&mut b, "commit");
        // A new statement in A's block: a snapshot that sees B's commit.
        assert_eq!(q(&mut a, "select count(*) from v where b = 'new'"), "200");
        q(&mut c, "vacuum v");
        let rest = q(&mut a, "fetch all from s");
        assert_eq!(rest.lines().count(), 299, "{kind:?}");
        assert!(rest.lines().all(|l| l.ends_with("|old")), "{kind:?}");
        assert_eq!(q(&mut a, "fetch absolute 300 from c"), "300|old");
        q(&mut a, "commit");
        assert_eq!(q(&mut a, "select count(*) from v"), "200");
    }
}

/// MOVE's tag counts the rows it passed; FETCH's the rows it gave.
#[test]
fn move_and_fetch_tags() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    for (sql, _) in SETUP {
        q(&mut s, sql);
    }
    q(&mut s, "begin");
    q(&mut s, "declare c scroll cursor for select a from cur");
    let tag = |s: &mut Session, sql: &str| s.execute(sql).unwrap().pop().unwrap().tag;
    assert_eq!(tag(&mut s, "move 3 in c"), "MOVE 3");
    assert_eq!(tag(&mut s, "move forward all in c"), "MOVE 7");
    assert_eq!(tag(&mut s, "move backward 2 in c"), "MOVE 2");
    assert_eq!(tag(&mut s, "move absolute 4 in c"), "MOVE 1");
    assert_eq!(tag(&mut s, "move absolute 40 in c"), "MOVE 0");
    assert_eq!(tag(&mut s, "fetch backward 20 from c"), "FETCH 10");
    assert_eq!(tag(&mut s, "fetch 0 from c"), "FETCH 0");
    assert_eq!(tag(&mut s, "close c"), "CLOSE CURSOR");
    assert_eq!(tag(&mut s, "close all"), "CLOSE CURSOR ALL");
    assert_eq!(
        outcome(&mut s, "fetch from"),
        "ERROR 42601: syntax error at end of input"
    );
    assert_eq!(
        outcome(&mut s, "fetch 2 from c extra"),
        "ERROR 42601: syntax error at or near \"extra\""
    );
    q(&mut s, "rollback");
}

/// On both table kinds, a cursor reads rows as they stood at its DECLARE after its own
/// transaction updates, inserts and deletes them (an undo table's rows through their
/// undo: the held command's view), and a SCROLL cursor moves back over them at
/// REPEATABLE READ after an update.
#[test]
fn a_cursor_reads_past_its_own_changes_on_both_kinds() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let db = db();
        let mut s = session_of(&db, kind, 1);
        q(
            &mut s,
            "create table cu (a int, b text);
             insert into cu select g, 'r' || g from generate_series(1, 10) g",
        );
        q(&mut s, "begin");
        q(
            &mut s,
            "declare c cursor for select a, b from cu where a <= 4",
        );
        assert_eq!(q(&mut s, "fetch 1 from c"), "1|r1", "{kind:?}");
        q(&mut s, "update cu set b = 'new' where a <= 4");
        q(&mut s, "insert into cu values (0, 'zero')");
        q(&mut s, "delete from cu where a = 3");
        assert_eq!(
            q(&mut s, "fetch all from c"),
            "2|r2\n3|r3\n4|r4",
            "{kind:?}"
        );
        q(&mut s, "rollback");
        q(&mut s, "begin isolation level repeatable read");
        q(
            &mut s,
            "declare e scroll cursor for select a, b from cu where a <= 3",
        );
        assert_eq!(
            q(&mut s, "fetch all from e"),
            "1|r1\n2|r2\n3|r3",
            "{kind:?}"
        );
        q(&mut s, "update cu set b = 'x' where a = 2");
        assert_eq!(
            q(&mut s, "fetch backward all from e"),
            "3|r3\n2|r2\n1|r1",
            "{kind:?}"
        );
        q(&mut s, "commit");
        assert_eq!(q(&mut s, "select b from cu where a = 2"), "x", "{kind:?}");
    }
}

/// DECLARE is checked as the query it reads: an ordinary role without SELECT on the
/// table (or on the columns it reads) is refused at DECLARE, with column privileges
/// enough for the columns it names; a held cursor reads on after the role changes.
#[test]
fn declare_needs_select_as_postgresql() {
    support::check_on_both(
        "cursor_privileges",
        &[
            ("create role curly", ""),
            ("create table priv_cur (a int, b text)", ""),
            ("insert into priv_cur values (1, 'x'), (2, 'y')", ""),
            ("grant select (a) on priv_cur to curly", ""),
            ("set session authorization curly", ""),
            ("begin", ""),
            (
                "declare c1 cursor for select * from priv_cur",
                "ERROR 42501: permission denied for table priv_cur",
            ),
            ("rollback", ""),
            ("begin", ""),
            (
                "declare c2 cursor with hold for select a from priv_cur order by a",
                "",
            ),
            ("fetch 1 from c2", "1"),
            ("commit", ""),
            ("reset session authorization", ""),
            ("revoke select (a) on priv_cur from curly", ""),
            ("fetch 1 from c2", "2"),
            ("close c2", ""),
        ],
    );
}
