//! Settings read and changed from SQL — SET, SET LOCAL, RESET, SHOW, `current_setting`,
//! `set_config` and `pg_settings` — against what PostgreSQL 15 does: what could go wrong
//! is a SET LOCAL (or `set_config(…, true)`) outliving its transaction, a rolled-back
//! SET kept, a value `set_config` wrote that SHOW does not see (or the other way), or
//! an unknown setting answered otherwise than with PostgreSQL's error. The shared cases
//! run on Walden and, when PostgreSQL 15 is installed, on PostgreSQL too, and both must
//! give the outcomes written here.
#![allow(clippy::unwrap_used)]

use walden_sql::Session;

mod support;
use support::{check_cases, db, outcome, q};

fn on_both(name: &str, cases: &[(&str, &str)]) {
    support::check_on_both(name, cases)
}

const UNKNOWN: &str = "ERROR 42704: unrecognized configuration parameter \"nope\"";

#[test]
fn current_setting_reads_what_show_shows() {
    on_both(
        "current_setting",
        &[
            ("set work_mem = '4MB'", ""),
            ("select current_setting('work_mem'), current_setting('WORK_MEM')", "4MB|4MB"),
            ("select current_setting('block_size'), current_setting('max_index_keys')", "8192|32"),
            ("select current_setting('DateStyle'), current_setting('search_path')", "ISO, MDY|\"$user\", public"),
            (
                "select current_setting('transaction_isolation'), current_setting('default_transaction_isolation')",
                "read committed|read committed",
            ),
            ("select current_setting('statement_timeout'), current_setting('client_encoding')", "0|UTF8"),
            (
                "select current_setting('standard_conforming_strings'), current_setting('integer_datetimes')",
                "on|on",
            ),
            ("select current_setting('max_connections'), current_setting('server_encoding')", "100|UTF8"),
            ("set application_name = 'settings test'", ""),
            ("select current_setting('application_name')", "settings test"),
            ("set statement_timeout = '2min'", ""),
            ("select current_setting('statement_timeout')", "2min"),
            ("set statement_timeout = 0", ""),
            ("begin isolation level repeatable read", ""),
            ("select current_setting('transaction_isolation')", "repeatable read"),
            ("commit", ""),
            ("select current_setting('nope')", UNKNOWN),
            ("select current_setting('nope', false)", UNKNOWN),
            ("select current_setting('nope', true) is null", "t"),
            ("select current_setting('work_mem', true)", "4MB"),
            // Strict: a NULL argument gives NULL.
            ("select current_setting(null) is null, current_setting('work_mem', null) is null", "t|t"),
            // Custom settings (PostgreSQL's placeholder variables).
            ("select current_setting('myapp.user_id')", "ERROR 42704: unrecognized configuration parameter \"myapp.user_id\""),
            ("select current_setting('myapp.user_id', true) is null", "t"),
            ("set myapp.user_id = 42", ""),
            ("select current_setting('myapp.user_id'), current_setting('MyApp.User_Id')", "42|42"),
            ("show myapp.user_id", "42"),
            ("set \"MyApp.Other\" = 'q'", ""),
            ("select current_setting('myapp.other')", "q"),
        ],
    );
    // Walden's own values where PostgreSQL's are its build's.
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    for name in [
        "server_version",
        "server_version_num",
        "TimeZone",
        "page_size",
        "default_table_kind",
        "synchronous_commit",
        "undo_limit",
        "wal_compression",
    ] {
        assert_eq!(
            q(&mut s, &format!("select current_setting('{name}')")),
            q(&mut s, &format!("show {name}")),
            "{name}"
        );
    }
    assert_eq!(
        q(
            &mut s,
            "select current_setting('server_version_num'), current_setting('timezone')"
        ),
        "150000|UTC"
    );
}

#[test]
fn set_config_sets_as_set_does() {
    on_both(
        "set_config",
        &[
            ("set work_mem = '4MB'", ""),
            // The new value, as SHOW gives it.
            (
                "select set_config('work_mem', '2048', false), current_setting('work_mem')",
                "2MB|2MB",
            ),
            ("show work_mem", "2MB"),
            (
                "select set_config('statement_timeout', '1500', false)",
                "1500ms",
            ),
            ("select set_config('statement_timeout', '0', false)", "0"),
            ("select set_config('DateStyle', 'dmy', false)", "ISO, DMY"),
            (
                "select set_config('search_path', 'a, b', false), current_setting('search_path')",
                "a, b|a, b",
            ),
            // A NULL value is RESET, a NULL is_local false.
            ("set statement_timeout = '5s'", ""),
            ("select set_config('statement_timeout', null, false)", "0"),
            ("select set_config('work_mem', '1MB', null)", "1MB"),
            ("show work_mem", "1MB"),
            (
                "select set_config(null, 'x', false)",
                "ERROR 22004: SET requires parameter name",
            ),
            ("select set_config('nope', 'x', false)", UNKNOWN),
            (
                "select set_config('server_version', '1', false)",
                "ERROR 55P02: parameter \"server_version\" cannot be changed",
            ),
            (
                "select set_config('work_mem', 'lots', false)",
                "ERROR 22023: invalid value for parameter \"work_mem\": \"lots\"",
            ),
            (
                "select set_config('a..b', 'x', false)",
                "ERROR 42602: invalid configuration parameter name \"a..b\"",
            ),
            (
                "select set_config('app.x', 'y', false), current_setting('app.x')",
                "y|y",
            ),
            // The statement's snapshot is taken: the level may only stay as it is.
            (
                "select set_config('transaction_isolation', 'read committed', false)",
                "read committed",
            ),
            ("begin", ""),
            (
                "select set_config('transaction_isolation', 'repeatable read', false)",
                "ERROR 25001: SET TRANSACTION ISOLATION LEVEL must be called before any query",
            ),
            ("rollback", ""),
            ("show work_mem", "1MB"),
        ],
    );
}

#[test]
fn set_local_lasts_until_the_transaction_ends_and_rollback_undoes_set() {
    on_both(
        "set_local",
        &[
            ("set work_mem = '4MB'", ""),
            // Outside a block, SET LOCAL warns and lasts for its own statement.
            ("set local work_mem = '8MB'", ""),
            ("show work_mem", "4MB"),
            ("begin", ""),
            ("set local work_mem = '8MB'", ""),
            ("show work_mem", "8MB"),
            ("commit", ""),
            ("show work_mem", "4MB"),
            // ROLLBACK undoes SET; so does an error that aborts the block.
            ("begin", ""),
            ("set work_mem = '9MB'", ""),
            ("rollback", ""),
            ("show work_mem", "4MB"),
            ("begin", ""),
            ("set work_mem = '9MB'", ""),
            ("select 1/0", "ERROR 22012: division by zero"),
            ("rollback", ""),
            ("show work_mem", "4MB"),
            // COMMIT keeps the last SET, not the SET LOCALs around it.
            ("begin", ""),
            ("set local work_mem = '1MB'", ""),
            ("set work_mem = '2MB'", ""),
            ("set local work_mem = '3MB'", ""),
            ("show work_mem", "3MB"),
            ("commit", ""),
            ("show work_mem", "2MB"),
            // set_config(…, true) is SET LOCAL.
            ("begin", ""),
            ("select set_config('work_mem', '5MB', true)", "5MB"),
            ("show work_mem", "5MB"),
            ("commit", ""),
            ("show work_mem", "2MB"),
            // Outside a block its statement is its transaction.
            (
                "select set_config('work_mem', '6MB', true), current_setting('work_mem')",
                "6MB|6MB",
            ),
            ("show work_mem", "2MB"),
            // A statement that fails sets nothing.
            (
                "select set_config('work_mem', '7MB', false), 1/0",
                "ERROR 22012: division by zero",
            ),
            ("show work_mem", "2MB"),
            // SET LOCAL of a client's setting.
            ("begin", ""),
            ("set local application_name = 'inner'", ""),
            ("show application_name", "inner"),
            ("rollback", ""),
            ("show application_name", ""),
            // A custom setting once made stays, empty, after its transaction.
            ("begin", ""),
            ("set local myapp.tenant = 't1'", ""),
            ("select current_setting('myapp.tenant')", "t1"),
            ("commit", ""),
            ("select current_setting('myapp.tenant')", ""),
        ],
    );
}

#[test]
fn reset_goes_back_to_the_session_start() {
    on_both(
        "reset",
        &[
            ("set application_name = 'a'", ""),
            ("set extra_float_digits = 3", ""),
            ("reset application_name", ""),
            ("show application_name", ""),
            ("show extra_float_digits", "3"),
            ("set extra_float_digits to default", ""),
            ("show extra_float_digits", "1"),
            ("set DateStyle = 'ISO, DMY'", ""),
            ("set myapp.x = 'y'", ""),
            ("begin", ""),
            ("reset all", ""),
            ("show DateStyle", "ISO, MDY"),
            ("select current_setting('myapp.x')", ""),
            ("rollback", ""),
            ("show DateStyle", "ISO, DMY"),
            ("reset all", ""),
            ("show DateStyle", "ISO, MDY"),
            ("reset nope", UNKNOWN),
        ],
    );
    // What a server applies at startup is what RESET goes back to.
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.set_setting("application_name", "from startup").unwrap();
    s.execute("set application_name = 'later'").unwrap();
    s.execute("reset application_name").unwrap();
    assert_eq!(q(&mut s, "show application_name"), "from startup");
}

#[test]
fn pg_settings_lists_the_session_s_settings() {
    on_both(
        "pg_settings",
        &[
            ("set work_mem = '4MB'", ""),
            ("set myapp.x = 'y'", ""),
            (
                "select name, setting, unit, context, vartype from pg_settings \
                 where name in ('work_mem', 'statement_timeout', 'block_size', 'max_index_keys', \
                 'DateStyle', 'integer_datetimes', 'myapp.x') order by name",
                "DateStyle|ISO, MDY||user|string\n\
                 block_size|8192||internal|integer\n\
                 integer_datetimes|on||internal|bool\n\
                 max_index_keys|32||internal|integer\n\
                 statement_timeout|0|ms|user|integer\n\
                 work_mem|4096|kB|user|integer",
            ),
            (
                "select setting from pg_catalog.pg_settings where name = 'max_index_keys'",
                "32",
            ),
            ("begin", ""),
            ("set local statement_timeout = '90s'", ""),
            (
                "select setting from pg_settings where name = 'statement_timeout'",
                "90000",
            ),
            ("rollback", ""),
            (
                "select count(*) from pg_settings where name like 'myapp%'",
                "0",
            ),
        ],
    );
    // Every setting SHOW ALL lists, with the value SHOW gives (in their units).
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let all = q(&mut s, "show all");
    let listed = q(&mut s, "select count(*) from pg_settings");
    assert_eq!(all.lines().count().to_string(), listed);
    assert_eq!(
        outcome(
            &mut s,
            "select setting, unit from pg_settings where name = 'work_mem'"
        ),
        "65536|kB"
    );
}

#[test]
fn set_local_of_a_database_setting_is_refused() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    check_cases(
        &mut s,
        &[
            ("begin", ""),
            (
                "set local undo_limit = '1GB'",
                "ERROR 0A000: undo_limit is a database-wide setting: only SET (not SET LOCAL or RESET) changes it",
            ),
            ("rollback", ""),
            (
                "select set_config('wal_compression', 'lz4', true)",
                "ERROR 0A000: wal_compression is a database-wide setting: only SET (not SET LOCAL or RESET) changes it",
            ),
            ("select set_config('wal_compression', 'lz4', false)", "lz4"),
            ("show wal_compression", "lz4"),
            (
                "set page_size = 4096",
                "ERROR 55P02: parameter \"page_size\" cannot be changed",
            ),
            (
                "select set_config('max_connections', '5', false)",
                "ERROR 55P02: parameter \"max_connections\" cannot be changed without restarting the server",
            ),
        ],
    );
}

/// A block that fails while a COPY holds its transaction (a bad row) still has its SETs
/// undone at ROLLBACK, as any other failed block (PostgreSQL shows the old values).
#[test]
fn a_block_failed_by_copy_undoes_its_sets() {
    let db = db();
    let mut s = Session::new(&db);
    q(&mut s, "create table t (v int4)");
    q(&mut s, "set work_mem = '2MB'");
    let script = "begin;\nset local statement_timeout = '1min';\nset work_mem = '8MB';\n\
                  copy t from stdin;\n1\nnot a number\n\\.\n";
    let mut errors = Vec::new();
    s.run_script(script, &mut |o| {
        if let Err(e) = &o.result {
            errors.push(e.code.to_string());
        }
        true
    });
    assert_eq!(errors, vec!["22P02".to_string()], "the COPY fails");
    check_cases(
        &mut s,
        &[
            ("rollback", ""),
            ("show statement_timeout", "0"),
            ("show work_mem", "2MB"),
            ("select count(*) from t", "0"),
        ],
    );
}

/// A set-returning function as another's argument is refused (it was numbered into the
/// wrong list of calls and gave NULL rows).
#[test]
fn a_set_returning_function_inside_another_is_refused() {
    let db = db();
    let mut s = Session::new(&db);
    let got = outcome(&mut s, "select generate_series(1, generate_series(1, 3))");
    assert!(got.starts_with("ERROR 0A000"), "{got}");
}
