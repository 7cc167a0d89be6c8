//! Isolation levels in SQL, against what PostgreSQL 15 does: the settings and
//! statements that choose a level, what each statement of a block sees, and writes that
//! race: under READ COMMITTED (the default) an UPDATE or DELETE that meets a row a
//! concurrent transaction changed goes on with its newest version — judged again
//! against its WHERE, its SET computed from it — and never fails with 40001; under
//! REPEATABLE READ it fails. What could go wrong: a lost update, a row changed that no
//! longer matches, a deleted row brought back, a statement that misses a commit before
//! it or sees one after, RETURNING or a foreign key acting on a version left behind.
//! Each race runs on Walden (both table kinds) and, when PostgreSQL 15 is installed, on
//! PostgreSQL too, and both must give the outcomes written here.
#![allow(clippy::unwrap_used)]

use std::thread;
use std::time::Duration;

use walden::TableKind;
use walden_sql::{value, Session};

mod support;
use support::{check_cases, db, pg, session_of};

/// One side of a race: a Walden session or a PostgreSQL connection.
trait Side: Send {
    /// A statement's outcome: its rows (`|` between values, a line per row), or `ok n`
    /// for a command (n: the rows it changed, 0 for others), or `ERROR code`.
    fn run(&mut self, sql: &str) -> String;
}

impl Side for Session {
    fn run(&mut self, sql: &str) -> String {
        match self.execute(sql) {
            Err(e) => format!("ERROR {}", e.code),
            Ok(r) => {
                let last = r.last().unwrap();
                if last.columns.is_empty() {
                    let n = last.tag.rsplit(' ').next().unwrap_or("");
                    format!("ok {}", n.parse::<u64>().unwrap_or(0))
                } else {
                    rows_text(
                        last.rows
                            .iter()
                            .map(|row| row.iter().map(value::display).collect()),
                    )
                }
            }
        }
    }
}

impl Side for postgres::Client {
    fn run(&mut self, sql: &str) -> String {
        match self.simple_query(sql) {
            Err(e) => format!("ERROR {}", e.as_db_error().unwrap().code().code()),
            Ok(messages) => {
                let query = messages
                    .iter()
                    .any(|m| matches!(m, postgres::SimpleQueryMessage::RowDescription(_)));
                if query {
                    rows_text(messages.iter().filter_map(|m| {
                        match m {
                            postgres::SimpleQueryMessage::Row(r) => Some(
                                (0..r.len())
                                    .map(|i| r.get(i).unwrap_or("").to_string())
                                    .collect(),
                            ),
                            _ => None,
                        }
                    }))
                } else {
                    let n = messages.iter().find_map(|m| match m {
                        postgres::SimpleQueryMessage::CommandComplete(n) => Some(*n),
                        _ => None,
                    });
                    format!("ok {}", n.unwrap_or(0))
                }
            }
        }
    }
}

fn rows_text(rows: impl Iterator<Item = Vec<String>>) -> String {
    rows.map(|r| r.join("|")).collect::<Vec<_>>().join("\n")
}

/// A step of a race between sessions 1 and 2.
enum Step {
    /// Session 1 runs it.
    One(&'static str),
    /// Session 2 runs it.
    Two(&'static str),
    /// Session 2 starts it and is expected to block (on a row session 1 holds); the
    /// race goes on without it.
    TwoBlocks(&'static str),
    /// The statement session 2 started ends: its outcome.
    Joined,
}

use Step::{Joined, One, Two, TwoBlocks};

/// Plays a race, returning each step's outcome (`Joined` gives the blocked statement's;
/// `TwoBlocks` gives `blocked`, or what it gave if it did not block).
fn play(mut one: Box<dyn Side>, two: Box<dyn Side>, steps: &[Step]) -> Vec<String> {
    let mut two = Some(two);
    let mut running: Option<thread::JoinHandle<(Box<dyn Side>, String)>> = None;
    let mut out = Vec::new();
    for step in steps {
        match step {
            One(sql) => out.push(one.run(sql)),
            Two(sql) => out.push(two.as_mut().unwrap().run(sql)),
            TwoBlocks(sql) => {
                let mut side = two.take().unwrap();
                let sql = sql.to_string();
                let h = thread::spawn(move || {
                    let r = side.run(&sql);
                    (side, r)
                });
                thread::sleep(Duration::from_millis(300));
                out.push(
                    if h.is_finished() {
                        "did not block"
                    } else {
                        "blocked"
                    }
                    .into(),
                );
                running = Some(h);
            }
            Joined => {
                let (side, r) = running.take().unwrap().join().unwrap();
                two = Some(side);
                out.push(r);
            }
        }
    }
    out
}

/// Plays `steps` after `setup` on Walden with each table kind, and on PostgreSQL 15 if
/// it is installed; each must give `want`, step by step.
fn race(name: &str, setup: &str, steps: &[Step], want: &[&str]) {
    assert_eq!(steps.len(), want.len(), "{name}: one outcome per step");
    let mut runs: Vec<(String, Vec<String>)> = Vec::new();
    for kind in [TableKind::Heap, TableKind::Undo] {
        let db = db();
        let mut one = session_of(&db, kind, 1);
        one.execute(setup).unwrap();
        let two = session_of(&db, kind, 2);
        runs.push((
            format!("walden {kind}"),
            play(Box::new(one), Box::new(two), steps),
        ));
    }
    if let Some(cluster) = pg::cluster() {
        let mut one = pg::fresh_database(&cluster, name);
        one.batch_execute(setup).unwrap();
        let two = pg::connect(&cluster, name);
        runs.push(("postgres".into(), play(Box::new(one), Box::new(two), steps)));
    } else {
        eprintln!("{name}: {}", pg::SKIPPED);
    }
    // RETURNING's rows come in no order SQL promises (PostgreSQL gives a row judged
    // again where it met it, Walden after the others): lines are compared as sets.
    let lines = |text: &str| {
        let mut v: Vec<&str> = text.lines().collect();
        v.sort_unstable();
        v.join("\n")
    };
    for (who, got) in runs {
        let wrong: Vec<String> = (0..steps.len())
            .filter(|&i| lines(&got[i]) != lines(want[i]))
            .map(|i| format!("step {i}: want {:?}, got {:?}", want[i], got[i]))
            .collect();
        assert!(wrong.is_empty(), "{name} on {who}:\n{}", wrong.join("\n"));
    }
}

const ACCOUNTS: &str = "create table t (id int primary key, x int, y int); \
                        insert into t values (1, 1, 0), (2, 1, 0), (3, 1, 0)";

#[test]
fn a_concurrent_increment_builds_on_the_committed_one() {
    race(
        "rc_increment",
        ACCOUNTS,
        &[
            One("begin"),
            One("update t set y = y + 1 where id = 1"),
            TwoBlocks("update t set y = y + 10 where id = 1 returning y"),
            One("commit"),
            Joined,
            One("select id, y from t order by id"),
        ],
        &["ok 0", "ok 1", "blocked", "ok 0", "11", "1|11\n2|0\n3|0"],
    );
}

/// The classic race: `UPDATE … WHERE x = 1` waits for a transaction that sets x = 2 on
/// one of its rows, then finds that row no longer matches and leaves it.
#[test]
fn a_row_that_stops_matching_is_left() {
    race(
        "rc_stops_matching",
        ACCOUNTS,
        &[
            One("begin"),
            One("update t set x = 2 where id = 2"),
            TwoBlocks("update t set y = y + 1 where x = 1 returning id"),
            One("commit"),
            Joined,
            One("select id, x, y from t order by id"),
        ],
        &[
            "ok 0",
            "ok 1",
            "blocked",
            "ok 0",
            "1\n3",
            "1|1|1\n2|2|0\n3|1|1",
        ],
    );
}

#[test]
fn an_update_skips_a_row_deleted_meanwhile_and_a_delete_takes_the_newest_version() {
    race(
        "rc_delete_update",
        ACCOUNTS,
        &[
            One("begin"),
            One("delete from t where id = 1"),
            TwoBlocks("update t set y = y + 1 where id = 1"),
            One("commit"),
            Joined,
            One("begin"),
            One("update t set y = 5 where id = 2"),
            TwoBlocks("delete from t where id = 2 returning y"),
            One("commit"),
            Joined,
            One("select id, y from t order by id"),
        ],
        &[
            "ok 0", "ok 1", "blocked", "ok 0", "ok 0", "ok 0", "ok 1", "blocked", "ok 0", "5",
            "3|0",
        ],
    );
}

/// Through the scan, not the primary key: the same, with a table that has no index.
#[test]
fn a_scan_update_judges_the_newest_version_too() {
    race(
        "rc_scan",
        "create table s (id int, x int, y int); insert into s values (1, 1, 0), (2, 1, 0)",
        &[
            One("begin"),
            One("update s set y = y + 1, x = 3 where id = 1"),
            TwoBlocks("update s set y = y + 10 where x = 1 or id = 1 returning id, x, y"),
            One("commit"),
            Joined,
        ],
        &["ok 0", "ok 1", "blocked", "ok 0", "2|1|10\n1|3|11"],
    );
}

#[test]
fn update_from_judges_the_newest_target_row_with_its_joined_row() {
    race(
        "rc_update_from",
        "create table t (id int primary key, x int, y int); \
         insert into t values (1, 1, 0), (2, 1, 0); \
         create table d (id int, add int); insert into d values (1, 5), (2, 7)",
        &[
            One("begin"),
            One("update t set y = 100, x = 2 where id = 1"),
            TwoBlocks(
                "update t set y = t.y + d.add from d where d.id = t.id and t.x < 3 \
                 returning t.id, t.y, d.add",
            ),
            One("commit"),
            Joined,
            One("begin"),
            One("update t set x = 9 where id = 2"),
            TwoBlocks("update t set y = 0 from d where d.id = t.id and t.x < 3 returning t.id"),
            One("commit"),
            Joined,
            One("select id, x, y from t order by id"),
        ],
        &[
            "ok 0",
            "ok 1",
            "blocked",
            "ok 0",
            "2|7|7\n1|105|5",
            "ok 0",
            "ok 1",
            "blocked",
            "ok 0",
            "1",
            "1|2|0\n2|9|7",
        ],
    );
}

#[test]
fn repeatable_read_fails_where_read_committed_goes_on() {
    race(
        "rr_fails",
        ACCOUNTS,
        &[
            Two("begin isolation level repeatable read"),
            Two("select count(*) from t"),
            One("update t set y = 1 where id = 1"),
            Two("update t set y = y + 1 where id = 1"),
            Two("rollback"),
            Two("begin isolation level repeatable read"),
            Two("select count(*) from t"),
            One("begin"),
            One("delete from t where id = 2"),
            TwoBlocks("update t set y = 7 where id = 2"),
            One("commit"),
            Joined,
            Two("rollback"),
            // A READ COMMITTED block: the same goes on.
            Two("begin"),
            Two("select count(*) from t"),
            One("update t set y = 3 where id = 3"),
            Two("update t set y = y + 1 where id = 3 returning y"),
            Two("commit"),
        ],
        &[
            "ok 0",
            "3",
            "ok 1",
            "ERROR 40001",
            "ok 0",
            "ok 0",
            "3",
            "ok 0",
            "ok 1",
            "blocked",
            "ok 0",
            "ERROR 40001",
            "ok 0",
            "ok 0",
            "2",
            "ok 1",
            "4",
            "ok 0",
        ],
    );
}

/// Each statement of a READ COMMITTED block sees what committed before it; a REPEATABLE
/// READ block sees what committed before its first statement (not before BEGIN).
#[test]
fn statements_see_commits_as_their_level_says() {
    race(
        "snapshots",
        ACCOUNTS,
        &[
            Two("begin"),
            Two("select count(*) from t"),
            One("insert into t values (4, 1, 0)"),
            Two("select count(*) from t"),
            Two("commit"),
            Two("begin isolation level repeatable read"),
            One("insert into t values (5, 1, 0)"),
            Two("select count(*) from t"),
            One("insert into t values (6, 1, 0)"),
            Two("select count(*) from t"),
            Two("insert into t values (7, 1, 0)"),
            Two("select count(*) from t"),
            Two("commit"),
        ],
        &[
            "ok 0", "3", "ok 1", "4", "ok 0", "ok 0", "ok 1", "5", "ok 1", "5", "ok 1", "6", "ok 0",
        ],
    );
}

#[test]
fn upserts_of_a_key_inserted_meanwhile_update_or_skip_it() {
    race(
        "rc_upsert",
        "create table k (id int primary key, v int)",
        &[
            One("begin"),
            One("insert into k values (1, 1)"),
            TwoBlocks(
                "insert into k values (1, 10), (2, 20) on conflict (id) \
                 do update set v = k.v + excluded.v returning id, v",
            ),
            One("commit"),
            Joined,
            One("begin"),
            One("insert into k values (3, 3)"),
            TwoBlocks("insert into k values (3, 30), (4, 40) on conflict do nothing"),
            One("commit"),
            Joined,
            One("begin"),
            One("update k set v = 100 where id = 2"),
            TwoBlocks("insert into k values (2, 1) on conflict (id) do update set v = k.v + 1 returning v"),
            One("commit"),
            Joined,
            One("select id, v from k order by id"),
        ],
        &[
            "ok 0",
            "ok 1",
            "blocked",
            "ok 0",
            "1|11\n2|20",
            "ok 0",
            "ok 1",
            "blocked",
            "ok 0",
            "ok 1",
            "ok 0",
            "ok 1",
            "blocked",
            "ok 0",
            "101",
            "1|11\n2|101\n3|3\n4|40",
        ],
    );
}

#[test]
fn a_cascade_meets_a_child_changed_meanwhile() {
    race(
        "rc_cascade",
        "create table p (id int primary key); insert into p values (1), (2); \
         create table c (n int primary key, p_id int references p on delete cascade); \
         insert into c values (1, 1), (2, 1), (3, 2)",
        &[
            One("begin"),
            One("update c set p_id = 2 where n = 2"),
            TwoBlocks("delete from p where id = 1"),
            One("commit"),
            Joined,
            One("select n, p_id from c order by n"),
        ],
        &["ok 0", "ok 1", "blocked", "ok 0", "ok 1", "2|2\n3|2"],
    );
}

/// What PostgreSQL 15 answers to the statements that choose a level (checked by hand
/// against it: 25001 after a query, a warning outside a block, SHOW's values).
#[test]
fn levels_are_chosen_as_in_postgresql() {
    let db = db();
    let mut s = session_of(&db, TableKind::Heap, 1);
    check_cases(
        &mut s,
        &[
            ("show transaction_isolation", "read committed"),
            ("show default_transaction_isolation", "read committed"),
            ("begin; show transaction_isolation", "read committed"),
            (
                "set transaction isolation level repeatable read; show transaction_isolation",
                "repeatable read",
            ),
            ("select 1", "1"),
            (
                "set transaction isolation level read committed",
                "ERROR 25001: SET TRANSACTION ISOLATION LEVEL must be called before any query",
            ),
            ("rollback", ""),
            ("begin; select 1", "1"),
            (
                "set transaction_isolation = 'repeatable read'",
                "ERROR 25001: SET TRANSACTION ISOLATION LEVEL must be called before any query",
            ),
            ("rollback", ""),
            ("begin; select 1; set transaction isolation level read committed", ""),
            ("rollback", ""),
            (
                "begin isolation level repeatable read; set transaction isolation level repeatable read; show transaction_isolation",
                "repeatable read",
            ),
            ("rollback", ""),
            ("begin; prepare p1 as select 1", ""),
            (
                "set transaction isolation level repeatable read",
                "ERROR 25001: SET TRANSACTION ISOLATION LEVEL must be called before any query",
            ),
            ("rollback", ""),
            (
                "start transaction isolation level read uncommitted, read write; show transaction_isolation",
                "read uncommitted",
            ),
            ("commit", ""),
            (
                "set default_transaction_isolation = 'REPEATABLE READ'; show transaction_isolation",
                "repeatable read",
            ),
            ("begin; show transaction_isolation", "repeatable read"),
            ("commit", ""),
            (
                "set default_transaction_isolation = 'bogus'",
                "ERROR 22023: invalid value for parameter \"default_transaction_isolation\": \"bogus\"",
            ),
            (
                "set session characteristics as transaction isolation level read committed; show default_transaction_isolation",
                "read committed",
            ),
            ("set default_transaction_isolation = default; show default_transaction_isolation", "read committed"),
            (
                "set transaction_isolation = 'repeatable read'; show transaction_isolation",
                "read committed",
            ),
            (
                "begin isolation level serializable",
                "ERROR 0A000: isolation level SERIALIZABLE is not supported",
            ),
            (
                "set default_transaction_isolation = 'serializable'",
                "ERROR 0A000: isolation level SERIALIZABLE is not supported",
            ),
            // (READ ONLY blocks: tests/read_only.rs.)
            ("begin read only", ""),
            ("rollback", ""),
        ],
    );
    let r = s
        .execute("set transaction isolation level repeatable read")
        .unwrap();
    assert_eq!(
        r[0].notices,
        vec!["WARNING:  SET TRANSACTION can only be used in transaction blocks".to_string()]
    );
}

/// Many sessions add to one counter at once, in autocommit statements and in blocks,
/// through the primary key and through a scan: under READ COMMITTED none fails and the
/// counter counts every one.
#[test]
fn concurrent_increments_in_sql_lose_nothing_and_never_fail() {
    const SESSIONS: u64 = 8;
    const EACH: u64 = 60;
    for kind in [TableKind::Heap, TableKind::Undo] {
        let db = db();
        let mut s = session_of(&db, kind, 1);
        s.execute(
            "create table c (id int primary key, n int); insert into c values (1, 0), (2, 0); \
             create table u (id int, n int); insert into u values (1, 0)",
        )
        .unwrap();
        let handles: Vec<_> = (0..SESSIONS)
            .map(|i| {
                let db = db.clone();
                thread::spawn(move || {
                    let mut s = session_of(&db, kind, 10 + i);
                    for j in 0..EACH {
                        let sql = match (i + j) % 3 {
                            0 => "update c set n = n + 1 where id = 1; update u set n = n + 1",
                            1 => {
                                "begin; update c set n = n + 1 where id = 1; \
                                  update u set n = n + 1 where id = 1; commit"
                            }
                            _ => {
                                "update c set n = n + 1 where id = 1 returning n; \
                                  update u set n = n + 1 returning n"
                            }
                        };
                        if let Err(e) = s.execute(sql) {
                            panic!("{kind}: {sql}: {} {}", e.code, e.message);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let total = (SESSIONS * EACH).to_string();
        assert_eq!(
            support::q(&mut s, "select n from c order by id"),
            format!("{total}\n0"),
            "{kind}"
        );
        assert_eq!(support::q(&mut s, "select n from u"), total, "{kind}");
    }
}
