//! COPY FROM input, text and CSV: any bytes give rows or PostgreSQL's error, never a
//! panic. The rows go into a table of every column type, in a transaction rolled back.
#![no_main]

use std::sync::{Arc, Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use walden::vfs::SimVfs;
use walden::{Database, Options};
use walden_sql::copy::CopyStart;
use walden_sql::Session;

fn session() -> &'static Mutex<Session> {
    static S: OnceLock<Mutex<Session>> = OnceLock::new();
    S.get_or_init(|| {
        let db = Database::create(
            "db",
            Options {
                vfs: Arc::new(SimVfs::new(1)),
                background: false,
                ..Options::default()
            },
        )
        .expect("database");
        let mut s = Session::with_seed(&db, 1);
        s.execute(
            "create table t (a int, b text, c numeric, d date, e bytea, f jsonb, g bool, h float8)",
        )
        .expect("table");
        Mutex::new(s)
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
