#!/usr/bin/env bash
# The flight recorder's memory over a long recording run: `live --record`
# on a veth pair while captures/v42-ddp.pcap is injected in a loop, a
# 4 MiB ring wrapping all the time and a SIGUSR1 dump every 10 s. Prints
# resident memory every 5 s and the curve's start, after warm-up, end and
# max; fails when memory grows after warm-up beyond 10% (at least 4 MiB).
#
#   sudo scripts/recorder-soak.sh [SECONDS]     # default 600 (10 minutes)
#
# The test suite runs the same test for 60 s
# (analyzer/tests/recorder_soak.rs). Needs root and cargo; cargo test, not
# nextest, so that no per-test timeout cuts a long run.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
case "$secs" in '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
RDMA_RECORDER_SOAK_SECS="$secs" RDMA_ANALYZER_REQUIRE=1 \
    cargo test -p rdma-analyzer --test recorder_soak -- --nocapture
