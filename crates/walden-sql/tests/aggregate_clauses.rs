//! FILTER and ORDER BY inside aggregate calls against PostgreSQL 15's results: what
//! could go wrong is a FILTER that is ignored (or applied to the whole row, dropping
//! other aggregates' rows), a string_agg that keeps input order instead of its ORDER BY
//! (or sorts NULLs on the wrong end), a window aggregate that ignores its FILTER, or
//! PostgreSQL's errors for the forms it refuses run anyway.
#![allow(clippy::unwrap_used)]

use walden::TableKind;
use walden_sql::Session;

mod support;
use support::{db, q, session_of};

fn with_table(kind: TableKind) -> (walden::Database, Session) {
    let db = db();
    let mut s = session_of(&db, kind, 1);
    s.execute(
        "create table s (g int, x int, t text);
         insert into s values (1, 3, 'c'), (1, 1, 'a'), (1, 2, 'b'), (2, 5, 'e'),
             (2, null, null), (2, 4, 'd'), (3, null, 'z');",
    )
    .unwrap();
    (db, s)
}

#[test]
fn filter_and_order_by_inside_aggregates() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let (_db, mut s) = with_table(kind);
        for (sql, want) in [
            (
                "select g, count(*) filter (where x > 1), sum(x) filter (where x % 2 = 1),
                     string_agg(t, ',' order by x desc),
                     string_agg(t, '' order by t) filter (where x is not null)
                 from s group by g order by g",
                "1|2|4|c,b,a|abc\n2|2|5|e,d|de\n3|0||z|",
            ),
            (
                "select count(*) filter (where x > 100), sum(x) filter (where false),
                     string_agg(t, ',' order by g desc, x)
                 from s",
                "0||z,d,e,a,b,c",
            ),
            (
                "select string_agg(distinct t, ',' order by t desc) from s",
                "z,e,d,c,b,a",
            ),
            (
                "select string_agg(t, ',' order by x nulls first) from s",
                "z,a,b,c,d,e",
            ),
            ("select max(x order by g) from s", "5"),
            (
                "select g, x, sum(x) filter (where x > 2) over (order by g, x)
                 from s where x is not null order by g, x",
                "1|1|\n1|2|\n1|3|3\n2|4|7\n2|5|12",
            ),
        ] {
            assert_eq!(q(&mut s, sql), want, "{kind:?}: {sql}");
        }
    }
}

/// A prepared statement's cached plan fills its parameters into FILTER and the
/// delimiter too.
#[test]
fn parameters_in_filter_and_delimiter_of_a_prepared_statement() {
    let (_db, mut s) = with_table(TableKind::Undo);
    s.execute(
        "prepare p(int, text) as
             select count(*) filter (where x > $1), string_agg(t, $2 order by x desc)
             from s where g = 1",
    )
    .unwrap();
    assert_eq!(q(&mut s, "execute p(1, '-')"), "2|c-b-a");
    assert_eq!(q(&mut s, "execute p(2, '+')"), "1|c+b+a");
}

#[test]
fn forms_postgresql_refuses() {
    let (_db, mut s) = with_table(TableKind::Heap);
    for (sql, code, message) in [
        (
            "select count(*) filter (where x) from s",
            "42804",
            "argument of FILTER must be type boolean, not type integer",
        ),
        (
            "select lower(t order by x) from s",
            "42809",
            "ORDER BY specified, but lower is not an aggregate function",
        ),
        (
            "select string_agg(t, ',' order by x) over () from s",
            "0A000",
            "aggregate ORDER BY is not implemented for window functions",
        ),
        (
            "select row_number() filter (where x > 1) over () from s",
            "0A000",
            "FILTER is not implemented for non-aggregate window functions",
        ),
        (
            "select sum(x) filter (where sum(x) > 1) from s",
            "42803",
            "aggregate functions are not allowed in FILTER",
        ),
        (
            "select string_agg(distinct t, ',' order by x) from s",
            "42P10",
            "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
        ),
    ] {
        let e = s.execute(sql).expect_err(sql);
        assert_eq!((e.code, e.message.as_str()), (code, message), "{sql}");
    }
}

/// GROUP BY a name that is no column of the FROM clause names an output column, as in
/// PostgreSQL; a column of that name wins, and two output columns of it are ambiguous.
/// Expected outcomes are PostgreSQL 15's.
#[test]
fn group_by_names_an_output_column() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute(
        "create table t (a int, b text);
         insert into t select g, 'x' || (g % 3) from generate_series(1, 20) g",
    )
    .unwrap();
    support::check_cases(
        &mut s,
        &[
            (
                "select a % 4 as m, count(*) from t group by m order by m",
                "0|5\n1|5\n2|5\n3|5",
            ),
            (
                "select upper(b) as u, count(*) from t group by u order by u",
                "X0|6\nX1|7\nX2|7",
            ),
            (
                "select a % 3 as m from t group by m having count(*) > 6 order by m",
                "1\n2",
            ),
            (
                "select a % 2 as m, a % 3 as m, count(*) from t group by m",
                "ERROR 42702: GROUP BY \"m\" is ambiguous",
            ),
            // The table's column `a`, not the output column named a.
            (
                "select b as a, count(*) from t group by a order by 1 limit 3",
                "ERROR 42803: column \"b\" must appear in the GROUP BY clause or be used in an aggregate function",
            ),
        ],
    );
}
