//! SQL text through parsing, binding and planning (a prepared statement described, as
//! a server's Parse and Describe do, over a database with tables of every column type,
//! an index, a view and a sequence): an error, never a panic, and no row read or written.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use walden_sql::{Prepared, Session};

fn session() -> &'static Mutex<Session> {
    static S: OnceLock<Mutex<Session>> = OnceLock::new();
    S.get_or_init(|| {
        walden_fuzz::session_with(
            "create table t (a int primary key, b bigint, c text, d numeric(10,2), e float8,
                         f bool, g date, h timestamptz, i interval, j bytea, k jsonb,
                         l uuid, m varchar(5), n char(3), o smallint);
         create index t_c on t (c);
         create table u (id serial, t_a int references t (a), v text);
         create view w as select a, c from t;
         create sequence s;",
        )
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut s = session().lock().unwrap_or_else(|e| e.into_inner());
    if let Ok(p) = Prepared::new(text, Vec::new()) {
        let _ = s.describe(&p);
    }
    // An error in describing aborts no block: none is open; end any a statement began.
    let _ = s.execute("rollback");
});
