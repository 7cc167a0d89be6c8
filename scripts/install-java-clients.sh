#!/usr/bin/env bash
# The PostgreSQL JDBC driver (pgjdbc, Debian's libpostgresql-jdbc-java) for the test that
# drives `walden serve` with a driver of the Java ecosystem
# (crates/walden-server/tests/jdbc.rs). Java itself (java and javac, 11 or later) is
# expected on the machine; the script says when it is not. Idempotent: a jar already in
# place is kept.
set -euo pipefail
jar="${WALDEN_PGJDBC_JAR:-/usr/share/java/postgresql.jar}"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
apt_get() {
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "$@"
}

if [ ! -e "$jar" ]; then
    # The package lists are refreshed only when the first attempt fails (stale lists).
    if ! apt_get install -y libpostgresql-jdbc-java >/dev/null; then
        apt_get update >/dev/null
        apt_get install -y libpostgresql-jdbc-java >/dev/null
    fi
fi
if [ ! -e "$jar" ]; then
    echo "install-java-clients: libpostgresql-jdbc-java installed, but $jar is not there" >&2
    exit 1
fi
version=$(dpkg-query -W -f='${Version}' libpostgresql-jdbc-java 2>/dev/null || echo "unknown version")
echo "pgjdbc $version at $jar"
missing=0
for tool in java javac; do
    if command -v "$tool" >/dev/null 2>&1; then
        echo "$tool: $("$tool" -version 2>&1 | head -n 1)"
    else
        echo "install-java-clients: no $tool on PATH (install a JDK, e.g. openjdk-17-jdk-headless)" >&2
        missing=1
    fi
done
exit "$missing"
