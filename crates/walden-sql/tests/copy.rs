//! COPY in and out, byte for byte as PostgreSQL 15: what could go wrong is data read
//! differently from PostgreSQL (an escape, a quote, a NULL, a line ending), a row lost
//! or half-inserted after an error, an error with another SQLSTATE or CONTEXT, data
//! split across chunks read differently from whole, or a COPY breaking its
//! transaction's rules.
#![allow(clippy::unwrap_used)]

mod support;
use support::{db, q};
use walden_sql::{CopyStart, Session, SqlError};

/// A COPY of data into a fresh table `t` (made by `setup`), and what PostgreSQL 15
/// answers: `COPY n` then the table as `COPY t TO STDOUT` writes it, or the error
/// (code, message, detail, hint, context) then the table.
struct Case {
    setup: &'static str,
    copy: &'static str,
    data: &'static [u8],
    want: &'static str,
}

const T3: &str = "drop table if exists t; create table t(a int, b text, c varchar(3))";
const TYPES: &str = "drop table if exists t; create table t(i int2, n numeric(5,2), f float8, b bool, d date, ts timestamp, tz timestamptz, u uuid, j jsonb, y bytea, ch char(4), iv interval)";
const KEYED: &str =
    "drop table if exists t; create table t(id int primary key, v text not null, n int check (n > 0))";
const DEFAULTS: &str = "drop table if exists t; create table t(id serial, a int default 7, b text)";

const CASES: &[Case] = &[
    // Text format: fields, NULLs, empty strings.
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\n2\t\\N\t\n\\N\t\t\\N\n", want: "COPY 3\n1\tx\ty\n2\t\\N\t\n\\N\t\t\\N\n" },
    // Escapes, and a NULL only as written.
    Case { setup: T3, copy: "copy t (b) from stdin", data: b"a\\tb\\\\c\\101\\x41\\x4g\\q\\z\\\t\n\\b\\f\\n\\r\\v\n\\\\N\nN\n\\303\\251\\xe2\\x82\\xac\n", want: "COPY 5\n\\N\ta\\tb\\\\cAA\u{4}gqz\\t\t\\N\n\\N\t\\b\\f\\n\\r\\v\t\\N\n\\N\t\\\\N\t\\N\n\\N\tN\t\\N\n\\N\té€\t\\N\n" },
    // Line endings: \r\n, \r, none at the end.
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\r\n2\tz\tw\r\n", want: "COPY 2\n1\tx\ty\n2\tz\tw\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\r2\tz\tw\r", want: "COPY 2\n1\tx\ty\n2\tz\tw\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\n2\tz\tw", want: "COPY 2\n1\tx\ty\n2\tz\tw\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"", want: "COPY 0\n" },
    // The end marker, and what follows it.
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\n\\.\n2\tjunk\n", want: "COPY 1\n1\tx\ty\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\tab\\.\n2\tjunk\n", want: "COPY 1\n1\tx\tab\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ta\\.b\n", want: "ERROR 22P04: end-of-copy marker corrupt\nCONTEXT: COPY t, line 1\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\r\n\\.\n", want: "ERROR 22P04: end-of-copy marker does not match previous newline style\nCONTEXT: COPY t, line 2\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\n\\.", want: "ERROR 22P04: end-of-copy marker corrupt\nCONTEXT: COPY t, line 2\n" },
    // An escaped newline is data; a trailing backslash at the end is dropped.
    Case { setup: T3, copy: "copy t (b) from stdin", data: b"a\\\nb\nlast\\", want: "COPY 2\n\\N\ta\\nb\t\\N\n\\N\tlast\t\\N\n" },
    // Stray line endings.
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\n2\tx\ty\r\n", want: "ERROR 22P04: literal carriage return found in data\nHINT: Use \"\\r\" to represent carriage return.\nCONTEXT: COPY t, line 2\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\r\n2\tx\ty\n", want: "ERROR 22P04: literal newline found in data\nHINT: Use \"\\n\" to represent newline.\nCONTEXT: COPY t, line 2\n" },
    // Too few and too many fields; bad values.
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\n2\tx\n", want: "ERROR 22P04: missing data for column \"c\"\nCONTEXT: COPY t, line 2: \"2\tx\"\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\tz\n", want: "ERROR 22P04: extra data after last expected column\nCONTEXT: COPY t, line 1: \"1\tx\ty\tz\"\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"x\tx\ty\n", want: "ERROR 22P02: invalid input syntax for type integer: \"x\"\nCONTEXT: COPY t, line 1, column a: \"x\"\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"\n", want: "ERROR 22P02: invalid input syntax for type integer: \"\"\nCONTEXT: COPY t, line 1, column a: \"\"\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\tyyyy\n", want: "ERROR 22001: value too long for type character varying(3)\nCONTEXT: COPY t, line 1, column c: \"yyyy\"\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\tyyy   \n", want: "COPY 1\n1\tx\tyyy\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"99999999999\tx\ty\n", want: "ERROR 22003: value \"99999999999\" is out of range for type integer\nCONTEXT: COPY t, line 1, column a: \"99999999999\"\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\n2\txxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\tzz\tw\n", want: "ERROR 22P04: extra data after last expected column\nCONTEXT: COPY t, line 2: \"2\txxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\"\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\tyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\xc3\xa9\n", want: "ERROR 22001: value too long for type character varying(3)\nCONTEXT: COPY t, line 1, column c: \"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy...\"\n" },
    // Bytes that are not UTF-8, raw or made by an escape.
    Case { setup: T3, copy: "copy t from stdin", data: b"1\ta\\377b\tc\n", want: "ERROR 22021: invalid byte sequence for encoding \"UTF8\": 0xff\nCONTEXT: COPY t, line 1: \"1\ta\\377b\tc\"\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\ta\\0b\tc\n", want: "ERROR 22021: invalid byte sequence for encoding \"UTF8\": 0x00\nCONTEXT: COPY t, line 1: \"1\ta\\0b\tc\"\n" },
    Case { setup: T3, copy: "copy t from stdin", data: b"1\tx\ty\n2\ta\xffb\tc\n", want: "ERROR 22021: invalid byte sequence for encoding \"UTF8\": 0xff\nCONTEXT: COPY t, line 2\n" },
    // Other delimiters and NULL strings; a header.
    Case { setup: T3, copy: "copy t from stdin with delimiter '|' null 'NULL'", data: b"1|NULL|\\N\n2|a\\|b|\n", want: "COPY 2\n1\t\\N\tN\n2\ta|b\t\n" },
    Case { setup: T3, copy: "copy t from stdin (header)", data: b"a\tb\tc\n1\tx\ty\n", want: "COPY 1\n1\tx\ty\n" },
    Case { setup: T3, copy: "copy t from stdin (header, null '')", data: b"whatever\n1\t\tz\n", want: "COPY 1\n1\t\\N\tz\n" },
    // Every type's input, char(n) padded.
    Case { setup: TYPES, copy: "copy t from stdin", data: b"7\t1.005\t1e300\tyes\t2020-02-29\t2020-01-02 03:04:05.678\t2020-01-02 03:04:05+02\ta0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\t{\"b\": 1, \"a\": [1, 2]}\t\\\\x0102ff\tab\t1 day 02:00\n\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n", want: "COPY 2\n7\t1.01\t1e+300\tt\t2020-02-29\t2020-01-02 03:04:05.678\t2020-01-02 01:04:05+00\ta0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\t{\"a\": [1, 2], \"b\": 1}\t\\\\x0102ff\tab  \t1 day 02:00:00\n\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n" },
    Case { setup: TYPES, copy: "copy t (n) from stdin", data: b"1000\n", want: "ERROR 22003: numeric field overflow\nDETAIL: A field with precision 5, scale 2 must round to an absolute value less than 10^3.\nCONTEXT: COPY t, line 1, column n: \"1000\"\n" },
    Case { setup: TYPES, copy: "copy t (d) from stdin", data: b"2020-13-01\n", want: "ERROR 22008: date/time field value out of range: \"2020-13-01\"\nHINT: Perhaps you need a different \"datestyle\" setting.\nCONTEXT: COPY t, line 1, column d: \"2020-13-01\"\n" },
    Case { setup: TYPES, copy: "copy t (b) from stdin", data: b"maybe\n", want: "ERROR 22P02: invalid input syntax for type boolean: \"maybe\"\nCONTEXT: COPY t, line 1, column b: \"maybe\"\n" },
    Case { setup: TYPES, copy: "copy t (ch) from stdin", data: b"abcde\n", want: "ERROR 22001: value too long for type character(4)\nCONTEXT: COPY t, line 1, column ch: \"abcde\"\n" },
    Case { setup: TYPES, copy: "copy t (d) from stdin", data: b"2020-02-30\n", want: "ERROR 22008: date/time field value out of range: \"2020-02-30\"\nCONTEXT: COPY t, line 1, column d: \"2020-02-30\"\n" },
    // Constraints, defaults and serial columns.
    Case { setup: KEYED, copy: "copy t from stdin", data: b"1\tx\t1\n2\t\\N\t1\n", want: "ERROR 23502: null value in column \"v\" of relation \"t\" violates not-null constraint\nDETAIL: Failing row contains (2, null, 1).\nCONTEXT: COPY t, line 2: \"2\t\\N\t1\"\n" },
    Case { setup: KEYED, copy: "copy t from stdin", data: b"1\tx\t1\n2\ty\t0\n", want: "ERROR 23514: new row for relation \"t\" violates check constraint \"t_n_check\"\nDETAIL: Failing row contains (2, y, 0).\nCONTEXT: COPY t, line 2: \"2\ty\t0\"\n" },
    Case { setup: KEYED, copy: "copy t from stdin", data: b"1\tx\t1\n2\ty\t2\n1\tz\t3\n", want: "ERROR 23505: duplicate key value violates unique constraint \"t_pkey\"\nDETAIL: Key (id)=(1) already exists.\nCONTEXT: COPY t, line 3\n" },
    Case { setup: KEYED, copy: "copy t from stdin", data: b"\\N\tx\t1\n", want: "ERROR 23502: null value in column \"id\" of relation \"t\" violates not-null constraint\nDETAIL: Failing row contains (null, x, 1).\nCONTEXT: COPY t, line 1: \"\\N\tx\t1\"\n" },
    Case { setup: DEFAULTS, copy: "copy t (b) from stdin", data: b"x\ny\n", want: "COPY 2\n1\t7\tx\n2\t7\ty\n" },
    Case { setup: DEFAULTS, copy: "copy t (id, b) from stdin", data: b"10\tx\n", want: "COPY 1\n10\t7\tx\n" },
    // CSV: quotes, doubled quotes, newlines inside quotes, NULL as an unquoted empty field.
    Case { setup: T3, copy: "copy t from stdin csv", data: b"1,x,y\n\"2\",,\n3,\"\",\"\"\n4,\"a\"\"b\",\"c,d\"\n5,\"l1\nl2\",q\n", want: "COPY 5\n1\tx\ty\n2\t\\N\t\\N\n3\t\t\n4\ta\"b\tc,d\n5\tl1\\nl2\tq\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv)", data: b"1,a\"b,c\"d\n", want: "ERROR 22P04: missing data for column \"c\"\nCONTEXT: COPY t, line 1: \"1,a\"b,c\"d\"\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv)", data: b"1,\"x\n", want: "ERROR 22P04: unterminated CSV quoted field\nCONTEXT: COPY t, line 1: \"1,\"x\n\"\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv)", data: b"1,\"x\n\\.\n", want: "ERROR 22P04: unterminated CSV quoted field\nCONTEXT: COPY t, line 1: \"1,\"x\n\\.\n\"\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv)", data: b"1,x,y\n\\.\n2,z,w\n", want: "COPY 1\n1\tx\ty\n" },
    Case { setup: T3, copy: "copy t (b) from stdin (format csv)", data: b"\\.x\n\"\\.\"\n", want: "COPY 2\n\\N\t\\\\.x\t\\N\n\\N\t\\\\.\t\\N\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv)", data: b"1,x,y\r\n2,\"a\r\nb\",z\r\n", want: "COPY 2\n1\tx\ty\n2\ta\\r\\nb\tz\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv)", data: b"1,x,y\n2,x,y\r\n", want: "ERROR 22P04: unquoted carriage return found in data\nHINT: Use quoted CSV field to represent carriage return.\nCONTEXT: COPY t, line 2\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv)", data: b"1,x\n", want: "ERROR 22P04: missing data for column \"c\"\nCONTEXT: COPY t, line 1: \"1,x\"\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv)", data: b"0\n1,\"a\nb\",c\n2,\"\n", want: "ERROR 22P04: missing data for column \"b\"\nCONTEXT: COPY t, line 1: \"0\"\n" },
    // CSV options.
    Case { setup: T3, copy: "copy t from stdin (format csv, header true, delimiter ';', null 'NULL')", data: b"a;b;c\n1;NULL;\"NULL\"\n", want: "ERROR 22001: value too long for type character varying(3)\nCONTEXT: COPY t, line 2, column c: \"NULL\"\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv, quote '''', escape '\\')", data: b"1,'a\\'b\\\\c\\d',x\n", want: "COPY 1\n1\ta'b\\\\c\\\\d\tx\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv, force_not_null (b, c))", data: b"1,,\n", want: "COPY 1\n1\t\t\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv, force_null (b))", data: b"1,\"\",\"\"\n", want: "COPY 1\n1\t\\N\t\n" },
    Case { setup: T3, copy: "copy t from stdin csv header force not null c", data: b"h\n1,,\n", want: "COPY 1\n1\t\\N\t\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv, header match)", data: b"a,b,c\n1,x,y\n", want: "COPY 1\n1\tx\ty\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv, header match)", data: b"a,c,b\n1,x,y\n", want: "ERROR 22P04: column name mismatch in header line field 2: got \"c\", expected \"b\"\nCONTEXT: COPY t, line 1: \"a,c,b\"\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv, header match)", data: b"a,b\n1,x,y\n", want: "ERROR 22P04: wrong number of fields in header line: got 2, expected 3\nCONTEXT: COPY t, line 1: \"a,b\"\n" },
    Case { setup: T3, copy: "copy t (c, a) from stdin (format csv, header match)", data: b"c,a\nx,1\n", want: "COPY 1\n1\t\\N\tx\n" },
    Case { setup: T3, copy: "copy t from stdin (format csv, header match)", data: b"a,,c\n", want: "ERROR 22P04: column name mismatch in header line field 2: got null value (\"\"), expected \"b\"\nCONTEXT: COPY t, line 1: \"a,,c\"\n" },
    // Statement errors, before any data.
    Case { setup: T3, copy: "copy nosuch from stdin", data: b"", want: "ERROR 42P01: relation \"nosuch\" does not exist\n" },
    Case { setup: T3, copy: "copy t (a, zz) from stdin", data: b"", want: "ERROR 42703: column \"zz\" of relation \"t\" does not exist\n" },
    Case { setup: T3, copy: "copy t (a, a) from stdin", data: b"", want: "ERROR 42701: column \"a\" specified more than once\n" },
    Case { setup: T3, copy: "copy t (a) from stdin (format csv, force_not_null (b))", data: b"", want: "ERROR 42P10: FORCE_NOT_NULL column \"b\" not referenced by COPY\n" },
    Case { setup: T3, copy: "copy t (a) from stdin (format csv, force_null (zz))", data: b"", want: "ERROR 42703: column \"zz\" of relation \"t\" does not exist\n" },
    Case { setup: "drop view if exists v; drop table if exists t; create table t(a int); create view v as select a from t", copy: "copy v from stdin", data: b"", want: "ERROR 42809: cannot copy to view \"v\"\nHINT: To enable copying to a view, provide an INSTEAD OF INSERT trigger.\n" },
];

/// What Walden answers to a case, its data given in chunks of `chunk` bytes.
fn walden_outcome(s: &mut Session, case: &Case, chunk: usize) -> String {
    s.execute(case.setup).unwrap();
    let result = match s.copy_start(case.copy) {
        Err(e) => Err(e),
        Ok(CopyStart::Out(_)) => panic!("{}: a COPY TO", case.copy),
        Ok(CopyStart::In(mut c)) => {
            let mut r = Ok(());
            for piece in case.data.chunks(chunk.max(1)) {
                r = c.data(s, piece);
                if r.is_err() {
                    break;
                }
            }
            match r {
                Ok(()) => c.finish(s).map(|r| r.tag),
                Err(e) => Err(e),
            }
        }
    };
    let head = match result {
        Ok(tag) => tag,
        Err(e) => error_text(&e),
    };
    format!("{head}\n{}", walden_dump(s))
}

fn walden_dump(s: &mut Session) -> String {
    let r = s.execute("copy t to stdout").unwrap();
    r[0].copy_data.clone().unwrap()
}

fn error_text(e: &SqlError) -> String {
    let mut t = format!("ERROR {}: {}", e.code, e.message);
    for (label, part) in [
        ("DETAIL", &e.detail),
        ("HINT", &e.hint),
        ("CONTEXT", &e.context),
    ] {
        if let Some(p) = part {
            t.push_str(&format!("\n{label}: {p}"));
        }
    }
    t
}

#[test]
fn copy_from_reads_as_postgres_does_in_any_chunking() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let mut wrong = Vec::new();
    for case in CASES {
        let mut chunks = vec![1, 2, 3, 5, 8, 64];
        chunks.push(case.data.len());
        for chunk in chunks {
            let got = walden_outcome(&mut s, case, chunk);
            if got != case.want {
                wrong.push(format!(
                    "{} (chunks of {chunk}) with {:?}\n  want {:?}\n  got  {:?}",
                    case.copy,
                    String::from_utf8_lossy(case.data),
                    case.want,
                    got
                ));
                break;
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Checks every case's answer against PostgreSQL 15 itself (skipped without it).
#[test]
fn the_answers_are_postgres_answers() {
    let Some(cluster) = support::pg::cluster() else {
        eprintln!("{}", support::pg::SKIPPED);
        return;
    };
    drop(support::pg::fresh_database(&cluster, "copy"));
    let mut wrong = Vec::new();
    // WALDEN_COPY_PRINT_PG=1 prints PostgreSQL's answers (to write new cases' `want`).
    let print = std::env::var_os("WALDEN_COPY_PRINT_PG").is_some();
    for case in CASES {
        let got = pg_outcome(&cluster, case);
        if print {
            eprintln!("{}\n        want: {got:?},", case.copy);
        }
        if got != case.want {
            wrong.push(format!(
                "{} with {:?}\n  want {:?}\n  pg   {:?}",
                case.copy,
                String::from_utf8_lossy(case.data),
                case.want,
                got
            ));
        }
    }
    cluster.stop().unwrap();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// PostgreSQL's answer to a case. A connection for the COPY and one for the table after
/// it: the client is lost after a COPY the server refuses at once.
fn pg_outcome(cluster: &walden_pgcluster::Cluster, case: &Case) -> String {
    use std::io::Write;
    let mut client = support::pg::connect(cluster, "copy");
    client.batch_execute(case.setup).unwrap();
    let result = (|| -> Result<u64, postgres::Error> {
        let mut w = client.copy_in(case.copy)?;
        // An error the server sends midway shows at finish.
        let _ = w.write_all(case.data);
        w.finish()
    })();
    let head = match result {
        Ok(n) => format!("COPY {n}"),
        Err(e) => match e.as_db_error() {
            Some(d) => {
                let mut t = format!("ERROR {}: {}", d.code().code(), d.message());
                for (label, part) in [
                    ("DETAIL", d.detail()),
                    ("HINT", d.hint()),
                    ("CONTEXT", d.where_()),
                ] {
                    if let Some(p) = part {
                        t.push_str(&format!("\n{label}: {p}"));
                    }
                }
                t
            }
            None => format!("ERROR (client): {e}"),
        },
    };
    drop(client);
    let mut client = support::pg::connect(cluster, "copy");
    let mut dump = String::new();
    {
        use std::io::Read;
        let mut r = client.copy_out("copy t to stdout").unwrap();
        r.read_to_string(&mut dump).unwrap();
    }
    format!("{head}\n{dump}")
}

/// A COPY TO STDOUT after `setup`, and what PostgreSQL 15 writes (or its error). (Its
/// tag, which PostgreSQL's client library does not show, is checked apart: the rows
/// written, one line a row.)
struct OutCase {
    setup: &'static str,
    copy: &'static str,
    want: &'static str,
}

const ROWS: &str = "drop view if exists v; drop table if exists t; create table t(a int, b text, c float8, d bool, e timestamp, f bytea, g jsonb, h numeric(6,2), i char(3), j date, k interval, l uuid);
    insert into t values (1, 'plain', 1.5, true, '2020-01-02 03:04:05', '\\x00ff', '{\"k\": [1, \"x\"]}', 3.14, 'ab', '2020-01-02', '1 day 02:03:04', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
        (2, E'tab\\there\\nnl\\\\ bs\\r\\x01|', 0.1, false, null, null, null, null, null, null, null, null),
        (3, '', -1e300, null, null, null, 'null', -0.5, '', null, null, null),
        (null, 'say \"hi\", x', null, null, null, null, null, null, null, null, null, null),
        (5, '\\.', null, null, null, null, null, null, null, null, null, null),
        (6, 'NULL', null, null, null, null, null, null, null, null, null, null)";

const OUT_CASES: &[OutCase] = &[
    OutCase { setup: ROWS, copy: "copy t to stdout", want: "1\tplain\t1.5\tt\t2020-01-02 03:04:05\t\\\\x00ff\t{\"k\": [1, \"x\"]}\t3.14\tab \t2020-01-02\t1 day 02:03:04\ta0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\n2\ttab\\there\\nnl\\\\ bs\\r\u{1}|\t0.1\tf\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n3\t\t-1e+300\t\\N\t\\N\t\\N\tnull\t-0.50\t   \t\\N\t\\N\t\\N\n\\N\tsay \"hi\", x\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n5\t\\\\.\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n6\tNULL\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n" },
    OutCase { setup: ROWS, copy: "copy t (b, a) to stdout with delimiter '|' null 'NULL'", want: "plain|1\ntab\\there\\nnl\\\\ bs\\r\u{1}\\||2\n|3\nsay \"hi\", x|NULL\n\\\\.|5\nNULL|6\n" },
    OutCase { setup: ROWS, copy: "copy t to stdout (format csv, header)", want: "a,b,c,d,e,f,g,h,i,j,k,l\n1,plain,1.5,t,2020-01-02 03:04:05,\\x00ff,\"{\"\"k\"\": [1, \"\"x\"\"]}\",3.14,ab ,2020-01-02,1 day 02:03:04,a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\n2,\"tab\there\nnl\\ bs\r\u{1}|\",0.1,f,,,,,,,,\n3,\"\",-1e+300,,,,null,-0.50,   ,,,\n,\"say \"\"hi\"\", x\",,,,,,,,,,\n5,\\.,,,,,,,,,,\n6,NULL,,,,,,,,,,\n" },
    OutCase { setup: ROWS, copy: "copy t (b) to stdout csv", want: "plain\n\"tab\there\nnl\\ bs\r\u{1}|\"\n\"\"\n\"say \"\"hi\"\", x\"\n\"\\.\"\nNULL\n" },
    OutCase { setup: ROWS, copy: "copy t (a, b) to stdout (format csv, force_quote *, null 'NULL')", want: "\"1\",\"plain\"\n\"2\",\"tab\there\nnl\\ bs\r\u{1}|\"\n\"3\",\"\"\nNULL,\"say \"\"hi\"\", x\"\n\"5\",\"\\.\"\n\"6\",\"NULL\"\n" },
    OutCase { setup: ROWS, copy: "copy t (a, b, c) to stdout (format csv, force_quote (a, c), quote '''', escape '\\', delimiter ';')", want: "'1';plain;'1.5'\n'2';'tab\there\nnl\\\\ bs\r\u{1}|';'0.1'\n'3';'';'-1e+300'\n;say \"hi\", x;\n'5';\\.;\n'6';NULL;\n" },
    OutCase { setup: ROWS, copy: "copy t (a, b) to stdout (header)", want: "a\tb\n1\tplain\n2\ttab\\there\\nnl\\\\ bs\\r\u{1}|\n3\t\n\\N\tsay \"hi\", x\n5\t\\\\.\n6\tNULL\n" },
    OutCase { setup: ROWS, copy: "copy (select a, b || '!' as \"odd,name\", 1 as one from t where a < 3 order by a) to stdout (format csv, header)", want: "a,\"odd,name\",one\n1,plain!,1\n2,\"tab\there\nnl\\ bs\r\u{1}|!\",1\n" },
    OutCase { setup: ROWS, copy: "copy (select b from t order by b) to stdout", want: "\nNULL\n\\\\.\nplain\nsay \"hi\", x\ntab\\there\\nnl\\\\ bs\\r\u{1}|\n" },
    OutCase { setup: ROWS, copy: "copy (values (1, 'x'), (2, null)) to stdout csv header", want: "column1,column2\n1,x\n2,\n" },
    OutCase { setup: ROWS, copy: "copy (select 1) to stdout (format csv, force_quote (z))", want: "ERROR 42703: column \"z\" does not exist" },
    OutCase { setup: ROWS, copy: "copy t (a) to stdout (format csv, force_quote (b))", want: "ERROR 42P10: FORCE_QUOTE column \"b\" not referenced by COPY" },
    OutCase { setup: ROWS, copy: "copy t (zz) to stdout", want: "ERROR 42703: column \"zz\" of relation \"t\" does not exist" },
    OutCase { setup: ROWS, copy: "copy nosuch to stdout", want: "ERROR 42P01: relation \"nosuch\" does not exist" },
    OutCase { setup: "drop view if exists v; drop table if exists t; create table t(a int); create view v as select a from t", copy: "copy v to stdout", want: "ERROR 42809: cannot copy from view \"v\"\nHINT: Try the COPY (SELECT ...) TO variant." },
    OutCase { setup: ROWS, copy: "copy t to stdin", want: "1\tplain\t1.5\tt\t2020-01-02 03:04:05\t\\\\x00ff\t{\"k\": [1, \"x\"]}\t3.14\tab \t2020-01-02\t1 day 02:03:04\ta0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\n2\ttab\\there\\nnl\\\\ bs\\r\u{1}|\t0.1\tf\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n3\t\t-1e+300\t\\N\t\\N\t\\N\tnull\t-0.50\t   \t\\N\t\\N\t\\N\n\\N\tsay \"hi\", x\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n5\t\\\\.\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n6\tNULL\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n" },
    OutCase { setup: ROWS, copy: "copy (select 1/0) to stdout", want: "ERROR 22012: division by zero" },
    OutCase { setup: ROWS, copy: "copy (select relname from pg_class where relname = 't') to stdout", want: "t\n" },
];

/// What Walden writes for a case.
fn walden_out(s: &mut Session, case: &OutCase) -> String {
    s.execute(case.setup).unwrap();
    let started = match s.copy_start(case.copy) {
        Ok(CopyStart::Out(c)) => c,
        Ok(CopyStart::In(_)) => panic!("{}: a COPY FROM", case.copy),
        Err(e) => return error_text(&e),
    };
    let mut out = Vec::new();
    let mut calls = 0;
    let r = started.run(s, &mut |line| {
        calls += 1;
        assert!(line.ends_with(b"\n"), "a row a call");
        out.extend_from_slice(line);
        Ok(())
    });
    match r {
        Ok(r) => {
            let header = case.copy.contains("header") as u64;
            assert_eq!(r.tag, format!("COPY {}", calls - header), "{}", case.copy);
            String::from_utf8(out).unwrap()
        }
        Err(e) => error_text(&e),
    }
}

fn pg_out(cluster: &walden_pgcluster::Cluster, case: &OutCase) -> String {
    use std::io::Read;
    let mut client = support::pg::connect(cluster, "copy");
    client.batch_execute(case.setup).unwrap();
    let mut out = String::new();
    let r = client.copy_out(case.copy).and_then(|mut reader| {
        reader
            .read_to_string(&mut out)
            .map_err(|e| panic!("{e}"))
            .map(|_| ())
    });
    match r {
        Ok(()) => out,
        Err(e) => match e.as_db_error() {
            Some(d) => {
                let mut t = format!("ERROR {}: {}", d.code().code(), d.message());
                for (label, part) in [
                    ("DETAIL", d.detail()),
                    ("HINT", d.hint()),
                    ("CONTEXT", d.where_()),
                ] {
                    if let Some(p) = part {
                        t.push_str(&format!("\n{label}: {p}"));
                    }
                }
                t
            }
            None => format!("ERROR (client): {e}"),
        },
    }
}

#[test]
fn copy_to_writes_as_postgres_does() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let mut wrong = Vec::new();
    for case in OUT_CASES {
        let got = walden_out(&mut s, case);
        if got != case.want {
            wrong.push(format!(
                "{}\n  want {:?}\n  got  {:?}",
                case.copy, case.want, got
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Checks every COPY TO case's answer against PostgreSQL 15 (skipped without it).
#[test]
fn the_output_is_postgres_output() {
    let Some(cluster) = support::pg::cluster() else {
        eprintln!("{}", support::pg::SKIPPED);
        return;
    };
    drop(support::pg::fresh_database(&cluster, "copy"));
    let print = std::env::var_os("WALDEN_COPY_PRINT_PG").is_some();
    let mut wrong = Vec::new();
    for case in OUT_CASES {
        let got = pg_out(&cluster, case);
        if print {
            eprintln!("{}\n        want: {got:?},", case.copy);
        }
        if got != case.want {
            wrong.push(format!(
                "{}\n  want {:?}\n  pg   {:?}",
                case.copy, case.want, got
            ));
        }
    }
    cluster.stop().unwrap();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn copy_in(s: &mut Session, sql: &str) -> walden_sql::CopyIn {
    match s.copy_start(sql) {
        Ok(CopyStart::In(c)) => c,
        Ok(CopyStart::Out(_)) => panic!("{sql}: a COPY TO"),
        Err(e) => panic!("{sql}: {e}"),
    }
}

fn code_of<T>(r: Result<T, SqlError>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => format!("{} {}", e.code, e.message),
    }
}

/// The handles move between threads, as a server's connection tasks do.
#[test]
fn copy_handles_are_send() {
    fn send<T: Send>() {}
    send::<walden_sql::CopyIn>();
    send::<walden_sql::CopyOut>();
}

/// Outside a transaction block a COPY is its own transaction: committed by `finish`,
/// rolled back by an error, by `fail`, or by dropping the handle midway.
#[test]
fn a_copy_outside_a_block_is_its_own_transaction() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let mut other = Session::with_seed(&db, 2);
    s.execute("create table t(a int primary key, b text)")
        .unwrap();
    let mut c = copy_in(&mut s, "copy t from stdin");
    assert_eq!((c.columns(), c.format()), (2, walden_sql::CopyFormat::Text));
    c.data(&mut s, b"1\tone\n2\ttw").unwrap();
    assert_eq!(
        q(&mut other, "select count(*) from t"),
        "0",
        "not committed yet"
    );
    c.data(&mut s, b"o\n").unwrap();
    assert_eq!(c.finish(&mut s).unwrap().tag, "COPY 2");
    assert_eq!(
        q(&mut other, "select string_agg(b, ',' order by a) from t"),
        "one,two"
    );

    // A bad row later on takes every row of the COPY back. (It is found when its batch
    // goes in: here at the end; in a large COPY, by a later `data`, which then fails,
    // as every call after it does.)
    let mut c = copy_in(&mut s, "copy t from stdin");
    c.data(&mut s, b"3\tthree\n4\tfour\n").unwrap();
    c.data(&mut s, b"x\tbad\n").unwrap();
    let e = c.finish(&mut s).unwrap_err();
    assert_eq!(e.code, "22P02");
    let mut c = copy_in(&mut s, "copy t from stdin");
    let mut big = b"x\tbad\n".to_vec();
    big.resize(1 << 20, b'\n');
    let e = c.data(&mut s, &big).unwrap_err();
    assert_eq!(e.code, "22P02");
    assert_eq!(
        c.data(&mut s, b"5\tfive\n").unwrap_err(),
        e,
        "the COPY has ended"
    );
    assert_eq!(c.finish(&mut s).unwrap_err(), e);
    assert_eq!(q(&mut s, "select count(*) from t"), "2");

    // CopyFail.
    let mut c = copy_in(&mut s, "copy t from stdin");
    c.data(&mut s, b"6\tsix\n").unwrap();
    let e = c.fail(&mut s, "client gave up");
    assert_eq!(
        (e.code, e.message.as_str(), e.context.as_deref()),
        (
            "57014",
            "COPY from stdin failed: client gave up",
            Some("COPY t, line 2")
        )
    );
    // A handle dropped midway.
    let mut c = copy_in(&mut s, "copy t from stdin");
    c.data(&mut s, b"7\tseven\n").unwrap();
    drop(c);
    assert_eq!(q(&mut s, "select count(*) from t"), "2");
    assert!(!s.in_transaction_block());
}

/// Inside a block a COPY joins it; an error aborts the block (25P02 until ROLLBACK), a
/// handle dropped midway too.
#[test]
fn a_copy_inside_a_block_joins_it() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t(a int primary key, b text); begin; insert into t values (1, 'one')")
        .unwrap();
    let mut c = copy_in(&mut s, "copy t from stdin (format csv)");
    c.data(&mut s, b"2,two\n3,three\n").unwrap();
    assert_eq!(c.finish(&mut s).unwrap().tag, "COPY 2");
    assert_eq!(
        q(&mut s, "select count(*) from t"),
        "3",
        "the block sees its rows"
    );
    assert_eq!(
        q(&mut Session::with_seed(&db, 2), "select count(*) from t"),
        "0"
    );
    q(&mut s, "commit");
    assert_eq!(
        q(&mut Session::with_seed(&db, 2), "select count(*) from t"),
        "3"
    );

    // An error aborts the block.
    s.execute("begin; insert into t values (4, 'four')")
        .unwrap();
    let mut c = copy_in(&mut s, "copy t from stdin (format csv)");
    let e = c
        .data(&mut s, b"5,five\n1,dup\n")
        .and_then(|()| c.finish(&mut s).map(|_| ()));
    assert_eq!(
        code_of(e),
        "23505 duplicate key value violates unique constraint \"t_pkey\""
    );
    assert!(s.in_failed_block());
    assert_eq!(
        code_of(s.execute("select 1")),
        "25P02 current transaction is aborted, commands ignored until end of transaction block"
    );
    assert_eq!(
        code_of(s.copy_start("copy t from stdin")),
        "25P02 current transaction is aborted, commands ignored until end of transaction block"
    );
    q(&mut s, "rollback");
    assert_eq!(q(&mut s, "select count(*) from t"), "3");

    // A handle dropped midway aborts the block.
    s.execute("begin").unwrap();
    let mut c = copy_in(&mut s, "copy t from stdin");
    c.data(&mut s, b"6\tsix\n").unwrap();
    drop(c);
    assert!(s.in_failed_block());
    q(&mut s, "rollback");
    // CopyFail in a block.
    s.execute("begin").unwrap();
    let c = copy_in(&mut s, "copy t from stdin");
    let e = c.fail(&mut s, "no");
    assert_eq!(e.code, "57014");
    assert!(s.in_failed_block());
    q(&mut s, "rollback");
    // A statement error at the start aborts the block too.
    s.execute("begin").unwrap();
    assert_eq!(
        code_of(s.copy_start("copy nosuch from stdin")),
        "42P01 relation \"nosuch\" does not exist"
    );
    assert!(s.in_failed_block());
    q(&mut s, "rollback");
    assert_eq!(q(&mut s, "select count(*) from t"), "3");
}

/// What `copy_start` refuses: other statements, server files and programs, syntax
/// errors (with their position).
#[test]
fn copy_start_refuses_what_is_not_a_client_copy() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t(a int)").unwrap();
    assert_eq!(
        code_of(s.copy_start("select 1")),
        "0A000 copy_start takes a COPY statement; run other statements with run_script"
    );
    for (sql, what) in [
        ("copy t from '/etc/passwd'", "a file"),
        ("copy t to '/tmp/x'", "a file"),
        ("copy t from program 'ls'", "a program"),
    ] {
        let e = s.copy_start(sql).err().unwrap();
        assert_eq!(
            (e.code, e.message.clone()),
            (
                "0A000",
                format!("COPY to or from {what} on the server is not supported")
            ),
            "{sql}"
        );
        assert!(e.hint.as_ref().unwrap().contains("\\copy"));
    }
    let e = s
        .copy_start("copy t from stdin (freeze maybe")
        .err()
        .unwrap();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("42601", "syntax error at end of input")
    );
    let e = s.copy_start("copy t (a) frm stdin").err().unwrap();
    assert_eq!(
        (e.code, e.message.as_str(), e.position),
        ("42601", "syntax error at or near \"frm\"", Some(12))
    );
    let e = s.copy_start("copy nosuch from stdin").err().unwrap();
    assert_eq!(e.position, Some(6));
    assert!(walden_sql::copy::is_copy("COPY t FROM STDIN"));
}

/// Many batches, in chunks of every size, with a duplicate key far into the data: the
/// COPY names its line (found in its batch) and keeps nothing.
#[test]
fn large_copies_go_in_batches_and_errors_name_their_line() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t(id int primary key, v text, n int)")
        .unwrap();
    let mut data = Vec::new();
    for i in 1..=60_000 {
        data.extend_from_slice(format!("{i}\tvalue {i}\t{}\n", i % 7).as_bytes());
    }
    for chunk in [1usize, 7, 4096, 100_000, data.len()] {
        s.execute("truncate t").unwrap();
        let mut c = copy_in(&mut s, "copy t from stdin");
        let mut at = 0;
        // Chunks of varying sizes around `chunk`.
        let mut k = 0;
        while at < data.len() {
            let size = (chunk + k % 5).min(data.len() - at);
            c.data(&mut s, &data[at..at + size]).unwrap();
            at += size;
            k += 1;
            if chunk == 1 && at > 3000 {
                // One-byte chunks are slow in debug builds: the rest whole.
                c.data(&mut s, &data[at..]).unwrap();
                at = data.len();
            }
        }
        assert_eq!(
            c.finish(&mut s).unwrap().tag,
            "COPY 60000",
            "chunks of {chunk}"
        );
        assert_eq!(
            q(&mut s, "select count(*), sum(id), sum(n), max(v) from t"),
            "60000|1800030000|179997|value 9999"
        );
    }
    // A duplicate of row 40,000 on line 50,001.
    let mut bad = data.clone();
    bad.extend_from_slice(b"40000\tagain\t1\n60001\tlast\t1\n");
    s.execute("truncate t").unwrap();
    let mut dup = data[..data.len()].to_vec();
    let line_50001 = {
        let mut d = Vec::new();
        for (n, line) in data.split(|&b| b == b'\n').enumerate() {
            if n == 50_000 {
                d.extend_from_slice(b"40000\tagain\t1\n");
            }
            if !line.is_empty() {
                d.extend_from_slice(line);
                d.push(b'\n');
            }
        }
        d
    };
    dup.clear();
    dup.extend_from_slice(&line_50001);
    let mut c = copy_in(&mut s, "copy t from stdin");
    let e = c
        .data(&mut s, &dup)
        .and_then(|()| c.finish(&mut s).map(|_| ()));
    let e = e.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str(), e.context.as_deref()),
        (
            "23505",
            "duplicate key value violates unique constraint \"t_pkey\"",
            Some("COPY t, line 50001")
        )
    );
    assert_eq!(q(&mut s, "select count(*) from t"), "0");
    drop(bad);
}

/// Foreign keys are checked once the COPY's rows are in, as PostgreSQL checks them after
/// the statement: a row may reference one later in the same COPY.
#[test]
fn foreign_keys_are_checked_after_the_copy() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute(
        "create table p(id int primary key); insert into p values (1);
         create table c(id int primary key, p int references p, up int references c)",
    )
    .unwrap();
    let mut cp = copy_in(&mut s, "copy c from stdin");
    cp.data(&mut s, b"1\t1\t2\n2\t1\t\\N\n").unwrap();
    assert_eq!(cp.finish(&mut s).unwrap().tag, "COPY 2");
    let mut cp = copy_in(&mut s, "copy c from stdin");
    cp.data(&mut s, b"3\t9\t\\N\n").unwrap();
    let e = cp.finish(&mut s).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "23503",
            "insert or update on table \"c\" violates foreign key constraint \"c_p_fkey\""
        )
    );
    assert_eq!(q(&mut s, "select count(*) from c"), "2");
}

/// A script holds COPY data as psql reads it from a file: the lines after the
/// statement up to `\.`; the statements after it run after the COPY.
#[test]
fn scripts_carry_copy_data_as_psql_scripts_do() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let r = s
        .execute(
            "create table t(a int, b text);
copy t from stdin; -- data follows
1\tit's
2\t\\N
\\.
copy t from stdin (format csv); select 'same line';
3,\"quoted; multi
line\"
\\.
select count(*) from t;
copy t to stdout (format csv);
copy t from stdin",
        )
        .unwrap();
    let tags: Vec<&str> = r.iter().map(|r| r.tag.as_str()).collect();
    assert_eq!(
        tags,
        [
            "CREATE TABLE",
            "COPY 2",
            "COPY 1",
            "SELECT 1",
            "SELECT 1",
            "COPY 3",
            "COPY 0"
        ]
    );
    assert_eq!(
        r[5].copy_data.as_deref(),
        Some("1,it's\n2,\n3,\"quoted; multi\nline\"\n")
    );
    // Data is not SQL: a quote in it opens no string.
    let e = s
        .execute("copy t from stdin;\n'\n\\.\nselect 1")
        .unwrap_err();
    assert_eq!(
        e.code, "22P02",
        "the data line \"'\" is not an integer: {e}"
    );
    let e = s.execute("select 1; select 'oops").unwrap_err();
    assert_eq!(e.message, "Unterminated string literal");
}

/// A COPY is canceled as any statement is: 57014, nothing kept.
#[test]
fn a_copy_is_canceled_like_any_statement() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t(a int)").unwrap();
    let cancel = s.cancel_handle();
    let mut c = copy_in(&mut s, "copy t from stdin");
    c.data(&mut s, b"1\n2\n").unwrap();
    cancel.cancel();
    let e = c.data(&mut s, b"3\n").unwrap_err();
    assert_eq!(e.code, "57014");
    assert_eq!(q(&mut s, "select count(*) from t"), "0");
}

/// A server's simple query holding a COPY: `run_script_with_copy` hands the started COPY
/// to the server's handler.
#[test]
fn a_server_runs_copies_of_a_query_string_through_its_handler() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let mut outcomes = Vec::new();
    s.run_script_with_copy(
        "create table t(a int); copy t from stdin; copy t to stdout; select count(*) from t",
        &mut |session, start| match start {
            CopyStart::In(mut c) => {
                c.data(session, b"1\n2\n")?;
                c.finish(session)
            }
            CopyStart::Out(c) => {
                let mut lines = Vec::new();
                let r = c.run(session, &mut |l| {
                    lines.push(l.to_vec());
                    Ok(())
                })?;
                assert_eq!(lines, [b"1\n".to_vec(), b"2\n".to_vec()]);
                Ok(r)
            }
        },
        &mut |o| {
            outcomes.push(o.result.map(|r| r.tag).unwrap());
            true
        },
    );
    assert_eq!(outcomes, ["CREATE TABLE", "COPY 2", "COPY 2", "SELECT 1"]);
}

/// What `pgbench -i` does: TRUNCATE, then COPY ... WITH (FREEZE ON) in one transaction
/// block, its rows ending in an empty char(84) filler.
#[test]
fn pgbench_loads_its_accounts_through_copy() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute(
        "create table pgbench_accounts(aid int not null,bid int,abalance int,filler char(84)) with (fillfactor=100);
         begin; truncate table pgbench_accounts",
    )
    .unwrap();
    let mut c = copy_in(&mut s, "copy pgbench_accounts from stdin with (freeze on)");
    for aid in 1..=20_000 {
        c.data(
            &mut s,
            format!("{aid}\t{}\t0\t\n", (aid - 1) / 100_000 + 1).as_bytes(),
        )
        .unwrap();
    }
    c.data(&mut s, b"\\.\n").unwrap();
    assert_eq!(c.finish(&mut s).unwrap().tag, "COPY 20000");
    q(&mut s, "commit");
    assert_eq!(
        q(
            &mut s,
            "select count(*), sum(aid), min(octet_length(filler)) from pgbench_accounts"
        ),
        "20000|200010000|84"
    );
}
