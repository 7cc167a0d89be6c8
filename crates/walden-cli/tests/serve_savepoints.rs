//! Savepoints and DDL inside transactions through the `walden serve` binary killed with
//! SIGKILL at a random moment while a client runs transactions that create a table,
//! roll back to one savepoint (which took back another table's creation) and release
//! another, on a heap and on an undo table. What could go wrong after the restart: a
//! committed transaction's rows or table lost, a row (or an update, or a table) of a
//! savepoint rolled back to come back, or half of a transaction the kill interrupted (its
//! table without its rows, or the reverse).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use support::wire::{serve, Client};
use walden::rng::SimRng;

const ROUNDS: u64 = 6;

/// One transaction `i` on `table`: key 3i kept, 3i+1 and an update of 3i under a
/// savepoint rolled back to, 3i+2 under a savepoint released.
fn transaction(c: &mut Client, table: &str, i: i64) -> Result<(), (String, String)> {
    let (a, gone, b) = (3 * i, 3 * i + 1, 3 * i + 2);
    c.query("begin")?;
    c.query(&format!("insert into {table} values ({a}, {i}, 'a')"))?;
    c.query(&format!("create table d_{table}_{i} (x int primary key)"))?;
    c.query(&format!("insert into d_{table}_{i} values ({i})"))?;
    c.query("savepoint s")?;
    c.query(&format!("insert into {table} values ({gone}, {i}, 'gone')"))?;
    c.query(&format!("update {table} set part = 'gone' where k = {a}"))?;
    c.query(&format!("create table gone_{table}_{i} (x int)"))?;
    c.query(&format!("drop table d_{table}_{i}"))?;
    c.query("rollback to savepoint s")?;
    c.query("savepoint s2")?;
    c.query(&format!("insert into {table} values ({b}, {i}, 'b')"))?;
    c.query("release savepoint s2")?;
    c.query("commit")?;
    Ok(())
}

#[test]
fn a_killed_server_keeps_committed_savepoint_work_and_nothing_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SimRng::new(0x5a5e);
    let mut acked: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    let mut next = 1i64;
    for round in 0..ROUNDS {
        let server = serve(dir.path(), 5, 60);
        let mut c = Client::connect(&server.socket).unwrap();
        if round == 0 {
            c.query("create table th (k int primary key, txn int, part text)")
                .unwrap();
            c.query("set default_table_access_method = undo").unwrap();
            c.query("create table tu (k int primary key, txn int, part text)")
                .unwrap();
        }
        // The kill comes from another thread while the client works.
        let pid = server.child.id();
        let delay = Duration::from_millis(50 + rng.below(400));
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        });
        'work: loop {
            for table in ["th", "tu"] {
                match transaction(&mut c, table, next) {
                    Ok(()) => acked.entry(table).or_default().push(next),
                    Err(_) => break 'work,
                }
            }
            next += 1;
        }
        next += 1;
        killer.join().unwrap();
        drop(server);
    }
    let server = serve(dir.path(), 5, 60);
    let mut c = Client::connect(&server.socket).unwrap();
    for table in ["th", "tu"] {
        let acks = acked.get(table).cloned().unwrap_or_default();
        assert!(!acks.is_empty(), "{table}: nothing acknowledged");
        let rows = c
            .query(&format!(
                "select k || ':' || txn || ':' || part from {table} order by k"
            ))
            .unwrap();
        let mut by_txn: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        for r in &rows {
            let parts: Vec<&str> = r.split(':').collect();
            let txn: i64 = parts[1].parse().unwrap();
            by_txn.entry(txn).or_default().push(r.clone());
        }
        for (txn, rows) in &by_txn {
            let want = vec![
                format!("{}:{txn}:a", 3 * txn),
                format!("{}:{txn}:b", 3 * txn + 2),
            ];
            assert_eq!(rows, &want, "{table}: transaction {txn}");
        }
        for i in &acks {
            assert!(by_txn.contains_key(i), "{table}: acknowledged {i} lost");
        }
        // Each transaction's table is there exactly when its rows are, with its row.
        let made = c
            .query(&format!(
                "select relname from pg_class where relname like 'd\\_{table}\\_%' and relkind = 'r'"
            ))
            .unwrap();
        let mut made: Vec<i64> = made
            .iter()
            .map(|n| n.rsplit('_').next().unwrap().parse().unwrap())
            .collect();
        made.sort_unstable();
        let found: Vec<i64> = by_txn.keys().copied().collect();
        assert_eq!(made, found, "{table}: tables made and transactions found");
        for i in &made {
            let x = c.query(&format!("select x from d_{table}_{i}")).unwrap();
            assert_eq!(
                x,
                vec![i.to_string()],
                "{table}: the table of transaction {i}"
            );
        }
        let gone = c
            .query(&format!(
                "select count(*) from pg_class where relname like 'gone\\_{table}\\_%'"
            ))
            .unwrap();
        assert_eq!(
            gone,
            vec!["0".to_string()],
            "{table}: a table rolled back to came back"
        );
        eprintln!(
            "{table}: {} acknowledged, {} transactions found after {ROUNDS} kills",
            acks.len(),
            by_txn.len()
        );
    }
}
