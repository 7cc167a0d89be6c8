//! COPY FROM input, text and CSV: any bytes give rows or PostgreSQL's error, never a
//! panic. The rows go into a table of every column type, in a transaction rolled back.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use walden_sql::copy::CopyStart;
use walden_sql::Session;

fn session() -> &'static Mutex<Session> {
    static S: OnceLock<Mutex<Session>> = OnceLock::new();
    S.get_or_init(|| {
        walden_fuzz::session_with(
            "create table t (a int, b text, c numeric, d date, e bytea, f jsonb, g bool, h float8)",
        )
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    let sql = if mode % 2 == 0 {
        "copy t from stdin"
    } else {
        "copy t from stdin (format csv)"
    };
    let mut s = session().lock().unwrap_or_else(|e| e.into_inner());
    let _ = s.execute("begin");
    if let Ok(CopyStart::In(mut c)) = s.copy_start(sql) {
        if c.data(&mut s, input).is_ok() {
            let _ = c.finish(&mut s);
        }
    }
    let _ = s.execute("rollback");
});
