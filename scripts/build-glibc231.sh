#!/usr/bin/env bash
# Builds the analyzer against glibc 2.31 (Debian 11), so one binary runs on
# Debian 11, 12 and 13: a binary linked on Debian 12 asks for GLIBC_2.34
# and will not start on Debian 11. cargo-zigbuild links with zig's glibc
# 2.31 stubs; both come from PyPI into a venv under target/ (pinned), and
# the build has its own target folder, so it never waits on the lock of the
# everyday one.
#
#   scripts/build-glibc231.sh [release|debug]     prints the binary's path
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-release}
venv=target/zig-venv
ZIGBUILD=0.24.0
if [ ! -x "$venv/bin/cargo-zigbuild" ] || ! "$venv/bin/cargo-zigbuild" --version | grep -q "$ZIGBUILD"; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "cargo-zigbuild==$ZIGBUILD" >&2
fi
target=x86_64-unknown-linux-gnu
flags=()
[ "$profile" = release ] && flags+=(--release)
# zig finds its own binary through the venv's python (ziglang).
PATH=$PWD/$venv/bin:$PATH CARGO_TARGET_DIR=target/glibc231 \
    "$venv/bin/cargo-zigbuild" build -q "${flags[@]}" -p rdma-analyzer --target "$target.2.31" >&2
bin=target/glibc231/$target/$profile/rdma-analyzer
# The check that matters: no symbol newer than glibc 2.31.
newest=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -t. -k2,2n -k3,3n -u | tail -n1)
case $newest in
    GLIBC_2.[0-9]|GLIBC_2.[12][0-9]|GLIBC_2.3[01]) ;;
    *) echo "build-glibc231: $bin still needs $newest" >&2; exit 1 ;;
esac
echo "$bin"
