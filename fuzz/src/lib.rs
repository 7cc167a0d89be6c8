//! What the SQL fuzz targets share: a session on a database in memory (the simulated
//! file layer), made once per process with the given schema.

use std::sync::{Arc, Mutex};

use walden::vfs::SimVfs;
use walden::{Database, Options};
use walden_sql::Session;

/// A new database in memory holding `schema`, and a session on it.
pub fn session_with(schema: &str) -> Mutex<Session> {
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
    s.execute(schema).expect("schema");
    Mutex::new(s)
}
