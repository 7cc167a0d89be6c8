//! Set-returning functions in a select list (`generate_series`,
//! `information_schema._pg_expandarray`), the records they give and their fields, and
//! the catalog's vectors (`int2vector` keys, subscripted from 0), against what
//! PostgreSQL 15 does: what could go wrong is a row too many or too few (functions of
//! different lengths run in lockstep, NULL past the shorter's end; an input row for
//! which they give nothing gives no row), a field read from the wrong place, or a key
//! position off by one. The cases run on Walden and, when PostgreSQL 15 is installed,
//! on PostgreSQL too, and both must give the outcomes written here.
#![allow(clippy::unwrap_used)]

mod support;
use support::check_on_both;

#[test]
fn set_returning_functions_in_a_select_list_run_in_lockstep() {
    check_on_both(
        "srf_lockstep",
        &[
            ("select generate_series(1, 3)", "1\n2\n3"),
            ("select generate_series(1, 2), generate_series(1, 3)", "1|1\n2|2\n|3"),
            ("select generate_series(1, 0), 5", ""),
            ("select generate_series(5, 1, -2)", "5\n3\n1"),
            ("select generate_series(1, null)", ""),
            (
                "select generate_series(1, 2, 0)",
                "ERROR 22023: step size cannot equal zero",
            ),
            ("select generate_series(1, 3) + 1 as g order by g desc", "4\n3\n2"),
            ("select generate_series(1, 3) limit 2", "1\n2"),
            (
                "select x, generate_series(1, x) from (values (1), (3), (0)) v(x) order by 1, 2",
                "1|1\n3|1\n3|2\n3|3",
            ),
            (
                "select distinct generate_series(1, 3) % 2 as m order by m",
                "0\n1",
            ),
            (
                "select count(*), sum(g) from (select generate_series(1, 100000) g) s",
                "100000|5000050000",
            ),
            (
                "select 1 where generate_series(1, 2) > 1",
                "ERROR 0A000: set-returning functions are not allowed in WHERE",
            ),
            (
                "select 1 from (values (1)) a(x) join (values (1)) b(y) on generate_series(1, 2) = x",
                "ERROR 0A000: set-returning functions are not allowed in JOIN conditions",
            ),
        ],
    );
}

#[test]
fn pg_expandarray_gives_records_whose_fields_are_named() {
    check_on_both(
        "srf_records",
        &[
            (
                "select (information_schema._pg_expandarray('{a,b}'::text[])).x, \
                 information_schema._pg_expandarray('{a,b}'::text[])",
                "a|(a,1)\nb|(b,2)",
            ),
            (
                "select information_schema._pg_expandarray('{\"p q\",NULL,\"\",\"r,s\"}'::text[])",
                "(\"p q\",1)\n(,2)\n(\"\",3)\n(\"r,s\",4)",
            ),
            (
                "select (r).n, (r).x from (select information_schema._pg_expandarray('{p,q}'::text[]) as r) s \
                 where (r).x = 'q'",
                "2|q",
            ),
            ("select information_schema._pg_expandarray(null::text[])", ""),
            ("select information_schema._pg_expandarray('{}'::text[])", ""),
            (
                "create table ctr as select information_schema._pg_expandarray('{a}'::text[]) r",
                "ERROR 42P16: column \"r\" has pseudo-type record",
            ),
            (
                "create view vr as select information_schema._pg_expandarray('{a}'::text[]) r",
                "ERROR 42P16: column \"r\" has pseudo-type record",
            ),
            (
                "select (1).x",
                "ERROR 42809: column notation .x applied to type integer, which is not a composite type",
            ),
            (
                "select (information_schema._pg_expandarray('{a}'::text[])).z",
                "ERROR 42703: could not identify column \"z\" in record data type",
            ),
        ],
    );
}

#[test]
fn index_keys_expand_in_their_order_and_subscript_from_zero() {
    check_on_both(
        "srf_index_keys",
        &[
            ("create table k (a int, b int, c int, primary key (c, a))", ""),
            ("create index k_b on k (b desc, a)", ""),
            (
                "select ci.relname, (information_schema._pg_expandarray(i.indkey)).n, \
                 information_schema._pg_expandarray(i.indkey) \
                 from pg_index i join pg_class ci on ci.oid = i.indexrelid \
                 join pg_class ct on ct.oid = i.indrelid where ct.relname = 'k' order by 1, 2",
                "k_b|1|(2,1)\nk_b|2|(1,2)\nk_pkey|1|(3,1)\nk_pkey|2|(1,2)",
            ),
            // The key columns by name, as pgjdbc's getPrimaryKeys finds them.
            (
                "select a.attname, r.key_seq from pg_attribute a, \
                 (select (information_schema._pg_expandarray(i.indkey)).n as key_seq, \
                 information_schema._pg_expandarray(i.indkey) as keys, i.indrelid from pg_index i \
                 join pg_class ci on ci.oid = i.indexrelid where ci.relname = 'k_pkey') r \
                 where a.attrelid = r.indrelid and a.attnum = (r.keys).x order by 2",
                "c|1\na|2",
            ),
            // int2vector subscripts start at 0; a key's order is bit 0 of indoption.
            (
                "select i.indkey[0], i.indkey[1], i.indkey[2] is null, i.indoption[0] & 1::smallint, \
                 i.indoption[1] & 1::smallint from pg_index i join pg_class ci on ci.oid = i.indexrelid \
                 where ci.relname = 'k_b'",
                "2|1|t|1|0",
            ),
        ],
    );
}
