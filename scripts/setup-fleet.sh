#!/usr/bin/env bash
# What the fleet tests and scripts/fleet-demo.sh need (docs/fleet.md):
#   - a real Prometheus server and promtool: Debian's prometheus package. The
#     tests run the binary themselves, with their own configuration and data
#     folder on loopback; the package's own service is never started (there
#     is no systemd here, and the tests must not depend on one);
#   - Java for Spark: Debian's openjdk-17-jre-headless;
#   - DuckDB and PySpark (pinned) in a virtualenv of their own under target/
#     (never the system site-packages).
# Cheap when everything is there. Root is expected for the Debian packages.
#
#   scripts/setup-fleet.sh        then   target/fleet-venv/bin/python
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/fleet-venv
# Pinned so a new release cannot change a CI run.
DUCKDB=1.5.6
PYSPARK=4.0.5

have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
need=()
for p in prometheus openjdk-17-jre-headless python3-venv; do
    have "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup-fleet: need root to install ${need[*]} (run as root or install them yourself)" >&2
        exit 1
    fi
    echo "setup-fleet: installing Debian packages: ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    # The packages' services must not start: the tests run their own
    # Prometheus on ports of their choosing. policy-rc.d is Debian's switch
    # for that (exit 101: "action forbidden"), removed again on every exit.
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod +x "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
for c in prometheus promtool java; do
    if ! command -v "$c" >/dev/null; then
        echo "setup-fleet: $c is not on PATH after installing its package" >&2
        exit 1
    fi
done

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
py=$venv/bin/python
have_pkg() { [ "$("$py" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p')" = "$2" ]; }
if ! have_pkg duckdb "$DUCKDB" || ! have_pkg pyspark "$PYSPARK"; then
    echo "setup-fleet: installing duckdb $DUCKDB and pyspark $PYSPARK into $venv (pyspark is a large download, once)" >&2
    "$py" -m pip install -q --disable-pip-version-check "duckdb==$DUCKDB" "pyspark==$PYSPARK"
fi
