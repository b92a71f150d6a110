#!/usr/bin/env bash
# Builds the Python binding (python/, PyO3 + maturin) into a wheel and
# installs it, with pytest, in a virtualenv under target/ (never the system
# site-packages). Cheap when nothing changed: the venv and its packages are
# kept, cargo rebuilds nothing, and the wheel is reinstalled only when it is
# newer than the installed one.
#
#   scripts/setup-python.sh          then   target/python-venv/bin/pytest python/tests
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/python-venv
wheels=target/wheels
# Pinned so a new release cannot change a CI run.
MATURIN=1.16.0
PYTEST=8.4.2

if ! command -v python3 >/dev/null; then
    echo "setup-python: python3 not found (Debian: apt-get install python3 python3-venv)" >&2
    exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -m venv "$venv" 2>/dev/null; then
        rm -rf "$venv"
        if [ "$(id -u)" -ne 0 ]; then
            echo "setup-python: python3 cannot make a venv: install python3-venv" >&2
            exit 1
        fi
        echo "setup-python: installing python3-venv" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        python3 -m venv "$venv"
    fi
fi
py=$venv/bin/python
have_pkg() { [ "$("$py" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p')" = "$2" ]; }
if ! have_pkg maturin "$MATURIN" || ! have_pkg pytest "$PYTEST"; then
    echo "setup-python: installing maturin $MATURIN and pytest $PYTEST into $venv" >&2
    "$py" -m pip install -q --disable-pip-version-check "maturin==$MATURIN" "pytest==$PYTEST"
fi

# The wheel: an abi3 extension module, so one wheel serves Python >= 3.9.
# Its cargo build shares the workspace's target/ folder.
CARGO_TARGET_DIR=target/python "$venv/bin/maturin" build --quiet --release --locked \
    -m python/Cargo.toml -o "$wheels" --interpreter "$py" >/dev/null
wheel=$(ls -t "$wheels"/rdma_dissectors-*.whl | head -1)
stamp=$venv/.installed-wheel
if [ ! -f "$stamp" ] || [ "$wheel" -nt "$stamp" ] || ! "$py" -c "import rdma_dissectors" 2>/dev/null; then
    "$py" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
    touch "$stamp"
fi
