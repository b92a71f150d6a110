#!/usr/bin/env bash
# The README's run command: builds the analyzer and runs it on a bundled real
# capture. In a terminal it opens the TUI when that front end is built in;
# otherwise (or when piped) it prints the report. It installs only what that
# needs (libpcap; Rust must be there), and needs no root when it is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --run
# The demo needs neither Parquet export nor the HTTP exporter: leaving them
# out (cargo features `export`, `metrics-server`) spares the first run most
# of the build.
cargo build --release --quiet -p rdma-analyzer --no-default-features
capture=${1:-captures/v3-ddp.pcap}
bin=target/release/rdma-analyzer
if [ -t 1 ] && "$bin" --help | grep -q '^  open'; then
    exec "$bin" open "$capture"
fi
exec "$bin" report "$capture"
