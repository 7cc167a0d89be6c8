"""Drives `walden serve` with SQLAlchemy 2 over psycopg 3: run by
crates/walden-server/tests/psycopg.rs.

Usage: sqlalchemy_client.py SOCKET_DIR PORT (the server's Unix socket, with trust). Prints
one line per check and exits non-zero at the first one that fails.
"""

import sys

from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

SOCKET_DIR = sys.argv[1]
PORT = int(sys.argv[2])
# The first connect probes for hstore inside a SAVEPOINT (psycopg's TypeInfo fetch).
engine = create_engine(f"postgresql+psycopg://postgres@/walden?host={SOCKET_DIR}&port={PORT}")


def check(name):
    print("ok", name, flush=True)


# DDL in a transaction block is refused yet: the table is made outside one.
with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
    conn.execute(text("create table sa_rows (a int primary key, b text)"))

with engine.connect() as conn:
    conn.execute(text("insert into sa_rows select g, 'v' || g from generate_series(1, 3000) g"))
    conn.commit()

    # stream_results: a server-side cursor read a buffer at a time.
    streamed = conn.execution_options(stream_results=True, max_row_buffer=100)
    res = streamed.execute(text("select a, b from sa_rows where a > :x"), {"x": 1000})
    first = res.fetchone()
    cursors = conn.execute(text("select count(*) from pg_cursors")).scalar()
    assert cursors == 1, cursors
    rows = [first.a] + [r.a for r in res]
    assert rows == list(range(1001, 3001)), len(rows)
    check("stream_results reads through a cursor")

    n = 0
    for part in streamed.execute(text("select a from sa_rows")).partitions(50):
        assert 0 < len(part) <= 50, len(part)
        n += len(part)
    assert n == 3000, n
    check("partitions of a streamed result")
    conn.commit()

# (execution_options set stream_results on that connection itself: a new one.)
with engine.connect() as conn:
    # begin_nested: a SAVEPOINT; its failure is taken back and the outer work stays.
    conn.execute(text("insert into sa_rows values (5001, 'outer')"))
    nested = conn.begin_nested()
    conn.execute(text("insert into sa_rows values (5002, 'inner')"))
    nested.rollback()
    try:
        with conn.begin_nested():
            conn.execute(text("insert into sa_rows values (5003, 'inner')"))
            conn.execute(text("insert into sa_rows values (1, 'duplicate')"))
        raise AssertionError("a duplicate key was inserted")
    except IntegrityError:
        pass
    with conn.begin_nested():
        conn.execute(text("insert into sa_rows values (5004, 'kept')"))
    conn.commit()
    got = conn.execute(text("select a from sa_rows where a > 5000 order by a")).scalars().all()
    assert got == [5001, 5004], got
    check("begin_nested: savepoints rolled back and released")

print("all checks passed")
