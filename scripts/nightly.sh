#!/usr/bin/env bash
# Prints the pinned nightly (ebpf-probes/probes/rust-toolchain.toml, the one
# place it is written).
set -euo pipefail
sed -n 's/^channel *= *"\(.*\)"/\1/p' "$(dirname "$0")/../ebpf-probes/probes/rust-toolchain.toml"
