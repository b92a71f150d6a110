#!/usr/bin/env bash
# Installs what rdma-analyzer needs on a Debian 12 machine, and nothing when it
# is already there (so it is cheap to call from every entry point).
#
#   scripts/setup.sh --run   what building and running the analyzer needs:
#                            libpcap and Rust (scripts/demo.sh); no root when
#                            they are present
#   scripts/setup.sh         also everything the tests need: tshark, tcpdump, jq,
#                            tmux, clippy, cargo-nextest, the MSRV toolchain, a
#                            no_std target, cargo-deny, cargo-semver-checks
#                            (scripts/test.sh; root expected, as in CI and the lab)
set -euo pipefail
run_only=0
if [ "${1:-}" = --run ]; then
    run_only=1
fi

need_pkgs=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
pkgs=(libpcap-dev pkg-config)
if [ $run_only = 0 ]; then
    pkgs+=(tshark tcpdump tmux jq)
fi
for p in "${pkgs[@]}"; do
    have "$p" || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${need_pkgs[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: need root to install ${need_pkgs[*]} (run as root or install them yourself)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
    echo "setup: cargo not found: install Rust with rustup (https://rustup.rs) first" >&2
    exit 1
fi
if [ $run_only = 1 ]; then
    exit 0
fi
for c in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c" >/dev/null 2>&1 || true
done
if ! command -v cargo-nextest >/dev/null; then
    echo "setup: installing cargo-nextest" >&2
    cargo install --locked cargo-nextest >/dev/null 2>&1
fi

# The dissector crates' checks in scripts/test.sh: their minimum Rust version
# (read from dissectors/Cargo.toml), a target without std, the API
# compatibility checker (pinned: a new release may change its verdicts).
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$(dirname "$0")/../dissectors/Cargo.toml")
if ! rustup toolchain list | grep -q "^$msrv-"; then
    echo "setup: installing Rust $msrv (the dissectors' MSRV)" >&2
    rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1
fi
if ! rustup target list --installed | grep -qx x86_64-unknown-none; then
    rustup target add x86_64-unknown-none >/dev/null 2>&1
fi
# cargo-deny (pinned likewise) checks licences, bans and sources (deny.toml).
DENY=0.20.2
if [ "$(cargo-deny --version 2>/dev/null)" != "cargo-deny $DENY" ]; then
    echo "setup: installing cargo-deny $DENY (a few minutes, once)" >&2
    cargo install --locked cargo-deny --version "$DENY" >/dev/null 2>&1
fi
SEMVER_CHECKS=0.51.0
if [ "$(cargo-semver-checks --version 2>/dev/null)" != "cargo-semver-checks $SEMVER_CHECKS" ]; then
    echo "setup: installing cargo-semver-checks $SEMVER_CHECKS (several minutes, once)" >&2
    cargo install --locked cargo-semver-checks --version "$SEMVER_CHECKS" >/dev/null 2>&1
fi
