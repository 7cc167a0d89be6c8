"""Drives `walden serve` with SQLAlchemy 2 over psycopg 3: run by
crates/walden-server/tests/psycopg.rs.

Usage: sqlalchemy_client.py SOCKET_DIR PORT (the server's Unix socket, with trust). Prints
one line per check and exits non-zero at the first one that fails.
"""

import sys

from sqlalchemy import create_engine, text

SOCKET_DIR = sys.argv[1]
PORT = int(sys.argv[2])
# psycopg's hstore probe runs in a SAVEPOINT, which Walden lacks yet: it is turned off.
engine = create_engine(
    f"postgresql+psycopg://postgres@/walden?host={SOCKET_DIR}&port={PORT}",
    use_native_hstore=False,
)


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

print("all checks passed")
