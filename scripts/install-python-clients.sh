#!/usr/bin/env bash
# A Python virtual environment with psycopg 3 and SQLAlchemy 2 (from PyPI), for the tests
# that drive `walden serve` with a driver and a toolkit of another ecosystem
# (crates/walden-server/tests/psycopg.rs). Idempotent: an environment that already
# imports both is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${WALDEN_PY_VENV:-target/pyclients}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import psycopg, sqlalchemy' 2>/dev/null; then
    echo "psycopg and SQLAlchemy are in $venv"
    exit 0
fi
if ! python3 -m venv --help >/dev/null 2>&1; then
    apt-get install -y python3-venv >/dev/null
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check 'psycopg[binary]>=3.1,<4' 'SQLAlchemy>=2.0,<2.2'
"$venv/bin/python" -c 'import psycopg, sqlalchemy; print("psycopg", psycopg.__version__, "and SQLAlchemy", sqlalchemy.__version__, "in '"$venv"'")'
