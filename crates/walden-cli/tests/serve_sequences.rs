//! Sequence values through the `walden serve` binary killed with SIGKILL between
//! statements: every value a client was told of (an insert's RETURNING id, a rolled-back
//! insert's, a `select nextval`) is never told again after the restart. What could go
//! wrong: the batch a sequence logs ahead lost with the process, so that the restarted
//! server hands out values from before it again.
#![allow(clippy::unwrap_used)]

mod support;

use support::wire::{serve, Client};

fn one(c: &mut Client, sql: &str) -> i64 {
    let rows = c.query(sql).unwrap();
    rows[0].parse().unwrap()
}

#[test]
fn a_killed_server_never_gives_a_told_value_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut told = Vec::new();
    for round in 0..4 {
        let mut server = serve(dir.path(), 5, 60);
        let mut c = Client::connect(&server.socket).unwrap();
        if round == 0 {
            c.query("create table t (id bigserial primary key, v int)")
                .unwrap();
        }
        for _ in 0..10 {
            told.push(one(&mut c, "insert into t (v) values (1) returning id"));
        }
        c.query("begin").unwrap();
        told.push(one(&mut c, "insert into t (v) values (2) returning id"));
        c.query("rollback").unwrap();
        // Past the 32 values the last record logged ahead.
        told.push(one(
            &mut c,
            "select max(nextval('t_id_seq')) from generate_series(1, 50)",
        ));
        server.child.kill().unwrap();
        server.child.wait().unwrap();
    }
    assert!(told.windows(2).all(|w| w[0] < w[1]), "{told:?}");
    let server = serve(dir.path(), 5, 60);
    let mut c = Client::connect(&server.socket).unwrap();
    assert_eq!(c.query("select count(*) from t").unwrap(), ["40"]);
    let next = one(&mut c, "select nextval('t_id_seq')");
    assert!(next > *told.last().unwrap(), "{next} after {told:?}");
}
