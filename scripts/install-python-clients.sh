#!/usr/bin/env bash
# A Python virtual environment with psycopg 3 (from PyPI), for the test that drives
# `walden serve` with a driver of another ecosystem (crates/walden-server/tests/psycopg.rs).
# Idempotent: an environment that already imports psycopg is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${WALDEN_PY_VENV:-target/pyclients}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import psycopg' 2>/dev/null; then
    echo "psycopg is in $venv"
    exit 0
fi
if ! python3 -m venv --help >/dev/null 2>&1; then
    apt-get install -y python3-venv >/dev/null
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check 'psycopg[binary]>=3.1,<4'
"$venv/bin/python" -c 'import psycopg; print("psycopg", psycopg.__version__, "in '"$venv"'")'
