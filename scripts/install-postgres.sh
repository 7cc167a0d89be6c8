#!/bin/sh
# Installs the PostgreSQL server binaries that `walden bench seed` runs a throwaway cluster
# with (Debian/Ubuntu), and makes sure no system cluster is left running or starting at boot:
# the benchmark never uses one. Does nothing when a server is already installed.
set -eu

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

# The chart of `walden bench seed` draws its text with DejaVu Sans.
if [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y fonts-dejavu-core ||
        echo "install-postgres: fonts-dejavu-core not installed; bench seed will skip its chart"
fi

if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    echo "install-postgres: already installed:" /usr/lib/postgresql/*/bin/postgres
    exit 0
fi

apt_get() {
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "$@"
}

# The package lists are refreshed only when the first attempt fails (e.g. stale lists).
if ! apt_get install -y postgresql; then
    apt_get update
    apt_get install -y postgresql
fi

# Debian creates and may start a "main" cluster; stop it and keep it from starting again.
# Best effort: in a container there may be no init system, and nothing may have started.
if command -v pg_lsclusters >/dev/null 2>&1; then
    pg_lsclusters -h 2>/dev/null | while read -r version name _rest; do
        $SUDO pg_ctlcluster "$version" "$name" stop 2>/dev/null || true
        if [ -f "/etc/postgresql/$version/$name/start.conf" ]; then
            echo manual | $SUDO tee "/etc/postgresql/$version/$name/start.conf" >/dev/null || true
        fi
    done
fi
$SUDO service postgresql stop >/dev/null 2>&1 || true
$SUDO systemctl disable postgresql >/dev/null 2>&1 || true
$SUDO update-rc.d postgresql disable >/dev/null 2>&1 || true

echo "install-postgres: installed:" /usr/lib/postgresql/*/bin/postgres
