"""Drives `walden serve` with psycopg 3: run by crates/walden-server/tests/psycopg.rs.

Usage: psycopg_client.py SOCKET_DIR PORT (the server's Unix socket, with trust). Prints one line per check and exits non-zero at the
first one that fails (an AssertionError or a driver error).
"""

import sys
import threading
import time
import uuid

import psycopg
from psycopg import errors

SOCKET_DIR = sys.argv[1]
PORT = int(sys.argv[2])
DSN = psycopg.conninfo.make_conninfo(host=SOCKET_DIR, port=PORT, user="postgres", dbname="walden")


def check(name):
    print("ok", name, flush=True)


def connect(**kw):
    return psycopg.connect(DSN, **kw)


with connect(autocommit=True) as c:
    # Simple query protocol (no parameters) and the server's version.
    c.execute("create table kinds (id int primary key, big bigint, t text, u uuid, b bool, f float8, n numeric(10,2))")
    row = c.execute("select version()").fetchone()
    assert row[0].startswith("PostgreSQL 15.0 (Walden"), row
    check("simple query and version()")

    # Extended protocol with typed parameters, NULLs, and values read back natively.
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    c.execute(
        "insert into kinds values (%s, %s, %s, %s, %s, %s, %s)",
        (1, 2**40, "héllo", u, True, 1.5, None),
    )
    c.execute(
        "insert into kinds values (%s, %s, %s, %s, %s, %s, %s)",
        (2, None, None, None, False, -0.25, "12.34"),
    )
    rows = c.execute("select id, big, t, u, b, f, n from kinds order by id").fetchall()
    assert rows[0][:6] == (1, 2**40, "héllo", u, True, 1.5), rows
    assert rows[0][6] is None
    assert rows[1][:6] == (2, None, None, None, False, -0.25), rows
    assert str(rows[1][6]) == "12.34", rows
    got = c.execute("select t from kinds where id = %s and b = %s", (1, True)).fetchone()
    assert got == ("héllo",), got
    check("extended protocol, typed parameters and NULLs (text format)")

    # Binary format both ways.
    with c.cursor(binary=True) as cur:
        cur.execute("select id, big, u, b, f from kinds where id = %b", (1,))
        assert cur.fetchone() == (1, 2**40, u, True, 1.5)
    check("binary parameters and results")

    # Prepared statements, run many times.
    for i in range(3, 53):
        c.execute("insert into kinds (id, big) values (%s, %s)", (i, i * 10), prepare=True)
    n = c.execute("select count(*), sum(big) from kinds where id >= %s", (3,), prepare=True).fetchone()
    assert n == (50, sum(i * 10 for i in range(3, 53))), n
    check("prepared statements")

    # Errors carry their SQLSTATE.
    try:
        c.execute("insert into kinds (id) values (%s)", (1,))
        raise AssertionError("duplicate key accepted")
    except errors.UniqueViolation as e:
        assert e.sqlstate == "23505"
    try:
        c.execute("select nosuch from kinds")
        raise AssertionError("unknown column accepted")
    except errors.UndefinedColumn as e:
        assert e.sqlstate == "42703"
    try:
        c.execute("select 1/0")
        raise AssertionError("division by zero")
    except errors.DivisionByZero:
        pass
    check("errors with SQLSTATE")

# Transactions: commit, rollback, a failed block; DDL inside a block is taken back by
# its rollback.
with connect(autocommit=True) as c:
    c.execute("create table acct (id int primary key, balance bigint)")
with connect() as c:
    c.execute("create table inside (a int)")
    c.rollback()
    try:
        c.execute("select * from inside")
        raise AssertionError("a table made in a rolled-back block is still there")
    except errors.UndefinedTable:
        c.rollback()
    c.execute("insert into acct values (1, 100)")
    c.rollback()
    assert c.execute("select count(*) from acct").fetchone() == (0,)
    # A transaction() block nested in the implicit one is a savepoint.
    c.execute("insert into acct values (100, 5)")
    try:
        with c.transaction():
            c.execute("insert into acct values (101, 5)")
            c.execute("insert into acct values (100, 5)")
    except errors.UniqueViolation:
        pass
    # The inner block's rows are gone, the outer's stay, and the block goes on.
    assert c.execute("select id from acct order by id").fetchall() == [(100,)]
    with c.transaction():
        c.execute("delete from acct where id = 100")
        with c.transaction():
            c.execute("insert into acct select g, 1000 from generate_series(1, 8) g")
    assert c.execute("select sum(balance) from acct").fetchone() == (8000,)
    c.commit()
    try:
        with c.transaction():
            c.execute("update acct set balance = balance - 1 where id = 1")
            c.execute("select 1/0")
    except errors.DivisionByZero:
        pass
    assert c.execute("select balance from acct where id = 1").fetchone() == (1000,)
    c.commit()
check("transactions")

# COPY in and out, text and CSV.
with connect(autocommit=True) as c:
    c.execute("create table copied (a int, b text)")
    with c.cursor() as cur:
        with cur.copy("copy copied (a, b) from stdin") as cp:
            for i in range(1000):
                cp.write_row((i, None if i % 10 == 0 else f"row\t{i}"))
        with cur.copy("copy copied from stdin with (format csv)") as cp:
            cp.write('1000,"quoted, comma"\n1001,\n')
        assert cur.execute("select count(*), count(b) from copied").fetchone() == (1002, 901)
        out = []
        with cur.copy("copy (select a, b from copied where a in (1, 10, 1000) order by a) to stdout") as cp:
            for row in cp.rows():
                out.append(row)
        assert out == [("1", "row\t1"), ("10", None), ("1000", "quoted, comma")], out
check("COPY in and out")

# Cancel: a long statement stopped from another thread.
with connect(autocommit=True) as c:
    timer = threading.Timer(0.3, c.cancel)
    timer.start()
    try:
        c.execute("select count(*) from generate_series(1, 2000000000)")
        raise AssertionError("not canceled")
    except errors.QueryCanceled:
        pass
    timer.join()
    assert c.execute("select 1").fetchone() == (1,)
check("cancel")

# Named (server-side) cursors: DECLARE and FETCH, a batch at a time; scrollable; WITH HOLD.
with connect(autocommit=True) as c:
    c.execute("create table nc (a int primary key, b text)")
    c.execute("insert into nc select g, 'v' || g from generate_series(1, 2500) g")
with connect() as c:
    with c.cursor(name="stream") as cur:
        cur.itersize = 100
        cur.execute("select a, b from nc where a > %s", (500,))
        first = cur.fetchone()
        open_now = c.execute("select name, is_holdable from pg_cursors").fetchall()
        assert open_now == [("stream", False)], open_now
        got = [first[0]] + [r[0] for r in cur]
    assert got == list(range(501, 2501)), (len(got), got[:3])
    with c.cursor(name="sc", scrollable=True) as cur:
        cur.execute("select a from nc where a <= %s order by a", (10,))
        assert cur.fetchmany(3) == [(1,), (2,), (3,)]
        cur.scroll(-2)
        assert cur.fetchone() == (2,)
        cur.scroll(5, mode="absolute")
        assert cur.fetchone() == (6,)
        assert cur.fetchall() == [(i,) for i in range(7, 11)]
    c.commit()
    with c.cursor(name="held", withhold=True) as cur:
        cur.execute("select count(*) from nc")
        c.commit()
        assert cur.fetchone() == (2500,)
check("named cursors: streamed, scrollable, WITH HOLD")

# The money transfer invariant over 8 connections at once.
TRANSFERS = 150
failures = []


def transfer(worker):
    try:
        with connect() as c:
            for k in range(TRANSFERS):
                src = (worker + k) % 8 + 1
                dst = (worker + 3 * k + 1) % 8 + 1
                if src == dst:
                    continue
                while True:
                    try:
                        with c.transaction():
                            c.execute("update acct set balance = balance - %s where id = %s", (7, src))
                            c.execute("update acct set balance = balance + %s where id = %s", (7, dst))
                        break
                    except (errors.SerializationFailure, errors.DeadlockDetected):
                        continue
    except Exception as e:  # reported by the main thread
        failures.append(repr(e))


threads = [threading.Thread(target=transfer, args=(w,)) for w in range(8)]
for t in threads:
    t.start()
with connect(autocommit=True) as watcher:
    while any(t.is_alive() for t in threads):
        total = watcher.execute("select sum(balance) from acct").fetchone()[0]
        assert total == 8000, total
        time.sleep(0.01)
for t in threads:
    t.join()
assert not failures, failures
with connect(autocommit=True) as c:
    assert c.execute("select sum(balance), count(*) from acct").fetchone() == (8000, 8)
check("money transfer invariant over 8 connections")
print("all checks passed")
