#!/usr/bin/env bash
# Per-frame cost of frames to queue pairs no connection owns (issue 23):
# `report` on FRAMES Writes, Read requests and replies to unowned QPs, with
# 4096 connections made from traffic waiting for their client QP (the
# hostile case) and with one (the benign case). Before the lookups were
# indexed, each such frame walked every connection.
#
#   scripts/bench-unowned.sh [FRAMES] [RUNS]
#
# FRAMES defaults to 1000000, RUNS to 5. BIN=path/to/rdma-analyzer uses that
# binary instead of building a release one. The two cases alternate, so a
# noisy neighbour hurts them alike; the medians and their ratio are printed.
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-1000000}
runs=${2:-5}
if [ -z "${BIN:-}" ]; then
    cargo build --release -q -p rdma-analyzer
    BIN=target/release/rdma-analyzer
fi
dir=target/bench-unowned
mkdir -p "$dir"
hostile="$dir/unowned-4096-$frames.pcap"
benign="$dir/unowned-1-$frames.pcap"
[ -f "$hostile" ] || "$BIN" synth --hostile unowned-flood --connections 4096 --calls "$frames" -o "$hostile" >/dev/null
[ -f "$benign" ] || "$BIN" synth --hostile unowned-flood --connections 1 --calls "$frames" -o "$benign" >/dev/null

# Seconds (wall) of one run of "$@", output discarded.
wall() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

cat "$hostile" "$benign" >/dev/null
h=() b=()
for _ in $(seq "$runs"); do
    h+=("$(wall "$BIN" report "$hostile")")
    b+=("$(wall "$BIN" report "$benign")")
done
hm=$(printf '%s\n' "${h[@]}" | median)
bm=$(printf '%s\n' "${b[@]}" | median)
echo "binary: $BIN; $frames frames to unowned QPs, $runs runs each, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "4096 connections waiting (s): ${h[*]}"
echo "1 connection waiting (s):     ${b[*]}"
printf '4096 connections: median %.3f s, %.2f us a frame\n' "$hm" "$(echo "$hm * 1000000 / $frames" | bc -l)"
printf '1 connection:     median %.3f s, %.2f us a frame\n' "$bm" "$(echo "$bm * 1000000 / $frames" | bc -l)"
printf 'hostile / benign: %.2fx the time (target: under 2x)\n' "$(echo "$hm / $bm" | bc -l)"
