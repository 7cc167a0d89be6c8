//! Sequences through SQL, beside PostgreSQL 15: CREATE/ALTER/DROP SEQUENCE, nextval,
//! currval, lastval and setval with their errors, serial and identity columns, and many
//! sessions sharing one counter. What could go wrong: two sessions given one value, a
//! value handed out again after a rollback or a crash, a session's currval showing
//! another's, a serial default that pg_dump's output cannot restore, or an option
//! PostgreSQL takes refused (or one it refuses taken).
#![allow(clippy::unwrap_used)]

mod support;
use support::{check_on_both, q};

use walden_sql::Session;

/// The functions and the statements, each outcome as PostgreSQL 15 gave it.
#[test]
fn functions_and_statements_as_postgres() {
    check_on_both(
        "sequences_functions",
        &[
            (r#"create sequence s"#, r#""#),
            (
                r#"select nextval('s'), nextval('s'), currval('s')"#,
                r#"1|2|2"#,
            ),
            (r#"select lastval()"#, r#"2"#),
            (r#"select setval('s', 10)"#, r#"10"#),
            (r#"select nextval('s')"#, r#"11"#),
            (r#"select setval('s', 20, false), nextval('s')"#, r#"20|20"#),
            (r#"select currval('s'), lastval()"#, r#"20|20"#),
            (r#"select nextval('s'::regclass)"#, r#"21"#),
            (r#"select nextval('S')"#, r#"22"#),
            (
                r#"select nextval('"S"')"#,
                r#"ERROR 42P01: relation "S" does not exist"#,
            ),
            (r#"select nextval('public.s')"#, r#"23"#),
            (
                r#"select nextval('other.s')"#,
                r#"ERROR 3F000: schema "other" does not exist"#,
            ),
            (
                r#"create sequence s"#,
                r#"ERROR 42P07: relation "s" already exists"#,
            ),
            (r#"create sequence if not exists s"#, r#""#),
            (
                r#"create sequence down increment by -2 minvalue -5 maxvalue -1 start -1"#,
                r#""#,
            ),
            (
                r#"select nextval('down'), nextval('down'), nextval('down')"#,
                r#"-1|-3|-5"#,
            ),
            (
                r#"select nextval('down')"#,
                r#"ERROR 2200H: nextval: reached minimum value of sequence "down" (-5)"#,
            ),
            (
                r#"create sequence c as smallint maxvalue 3 cycle cache 2"#,
                r#""#,
            ),
            (
                r#"select nextval('c'), nextval('c'), nextval('c'), nextval('c'), nextval('c')"#,
                r#"1|2|3|1|2"#,
            ),
            (r#"create sequence fresh"#, r#""#),
            (
                r#"select currval('fresh')"#,
                r#"ERROR 55000: currval of sequence "fresh" is not yet defined in this session"#,
            ),
            (
                r#"select setval('fresh', 0)"#,
                r#"ERROR 22003: setval: value 0 is out of bounds for sequence "fresh" (1..9223372036854775807)"#,
            ),
            (
                r#"select setval('fresh', 5, true), currval('fresh')"#,
                r#"5|5"#,
            ),
            (r#"create table t (a int)"#, r#""#),
            (
                r#"select nextval('t')"#,
                r#"ERROR 42809: "t" is not a sequence"#,
            ),
            (
                r#"select nextval('nope')"#,
                r#"ERROR 42P01: relation "nope" does not exist"#,
            ),
            (
                r#"drop sequence t"#,
                r#"ERROR 42809: "t" is not a sequence"#,
            ),
            (r#"alter sequence s restart with 100"#, r#""#),
            (r#"select nextval('s')"#, r#"100"#),
            (r#"alter sequence s increment by 5 maxvalue 120"#, r#""#),
            (r#"select nextval('s'), nextval('s')"#, r#"105|110"#),
            (
                r#"alter sequence s maxvalue 50"#,
                r#"ERROR 22023: RESTART value (110) cannot be greater than MAXVALUE (50)"#,
            ),
            (r#"alter sequence s rename to s2"#, r#""#),
            (r#"select nextval('s2')"#, r#"115"#),
            (r#"select nextval('s2')"#, r#"120"#),
            (
                r#"select sequencename, data_type, start_value, min_value, max_value, increment_by, cycle, cache_size, last_value from pg_sequences order by sequencename"#,
                r#"c|smallint|1|1|3|1|t|2|2
down|bigint|-1|-5|-1|-2|f|1|-5
fresh|bigint|1|1|9223372036854775807|1|f|1|5
s2|bigint|1|1|120|5|f|1|120"#,
            ),
            (
                r#"select relname, relkind from pg_class where relkind = 'S' order by relname"#,
                r#"c|S
down|S
fresh|S
s2|S"#,
            ),
            (
                r#"drop sequence nope"#,
                r#"ERROR 42P01: sequence "nope" does not exist"#,
            ),
            (r#"drop sequence if exists nope, fresh"#, r#""#),
            (
                r#"select count(*) from pg_class where relname = 'fresh'"#,
                r#"0"#,
            ),
            (
                r#"create sequence bad increment 0"#,
                r#"ERROR 22023: INCREMENT must not be zero"#,
            ),
            (
                r#"create sequence bad as text"#,
                r#"ERROR 22023: sequence type must be smallint, integer, or bigint"#,
            ),
            (
                r#"create sequence bad minvalue 10 start 5"#,
                r#"ERROR 22023: START value (5) cannot be less than MINVALUE (10)"#,
            ),
            (
                r#"create sequence bad as smallint maxvalue 100000"#,
                r#"ERROR 22023: MAXVALUE (100000) is out of range for sequence data type smallint"#,
            ),
            (
                r#"create sequence bad cache 0"#,
                r#"ERROR 22023: CACHE (0) must be greater than zero"#,
            ),
            (r#"create sequence i4 as integer start 2147483647"#, r#""#),
            (r#"select nextval('i4')"#, r#"2147483647"#),
            (
                r#"select nextval('i4')"#,
                r#"ERROR 2200H: nextval: reached maximum value of sequence "i4" (2147483647)"#,
            ),
        ],
    );
}
