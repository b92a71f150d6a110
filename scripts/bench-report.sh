#!/usr/bin/env bash
# Throughput of `rdma-analyzer report` on a large capture, against reading the
# file from the page cache (dd) and, with TSHARK=1, against
# `tshark -q -z rpc,srt,100003,3` (issue 4's comparisons).
#
#   scripts/bench-report.sh [FILE] [RUNS]
#
# FILE defaults to target/bench/big.pcap, made with `synth --size 2G` when
# missing. The commands alternate, RUNS times each (default 9), so that a
# noisy neighbour hurts them alike; the medians and their ratios are printed.
set -euo pipefail
cd "$(dirname "$0")/.."

file=${1:-target/bench/big.pcap}
runs=${2:-9}
bin=target/release/rdma-analyzer

cargo build --release -q -p rdma-analyzer
if [ ! -f "$file" ]; then
    mkdir -p "$(dirname "$file")"
    "$bin" synth --size 2G --connections 4 -o "$file"
fi

# Seconds (wall) of one run of "$@", output discarded.
wall() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# Warm the page cache and the binary.
cat "$file" >/dev/null
"$bin" report "$file" >/dev/null

report=() dd=()
for _ in $(seq "$runs"); do
    report+=("$(wall "$bin" report --json "$file")")
    dd+=("$(wall dd if="$file" of=/dev/null bs=1M)")
done
r=$(printf '%s\n' "${report[@]}" | median)
d=$(printf '%s\n' "${dd[@]}" | median)
bytes=$(stat -c %s "$file")
frames=$("$bin" report --json "$file" | sed -n '/"totals"/,$p' | grep -m1 '"frames"' | tr -dc 0-9)
echo "file: $file ($bytes bytes, $frames frames), $runs runs each, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "report runs (s): ${report[*]}"
echo "dd runs (s):     ${dd[*]}"
printf 'report median %.3f s: %.0f MB/s, %.2f M frames/s\n' "$r" "$(echo "$bytes / $r / 1000000" | bc -l)" "$(echo "$frames / $r / 1000000" | bc -l)"
printf 'dd     median %.3f s: %.0f MB/s\n' "$d" "$(echo "$bytes / $d / 1000000" | bc -l)"
printf 'report / dd: %.2fx the time\n' "$(echo "$r / $d" | bc -l)"
peak=$( { /usr/bin/time -f '%M' "$bin" report --json "$file" >/dev/null; } 2>&1 | tail -1)
echo "report peak RSS: $((peak / 1024)) MB"

if [ "${TSHARK:-0}" = 1 ]; then
    ts=()
    for _ in 1 2; do
        ts+=("$(wall tshark -r "$file" -q -z rpc,srt,100003,3)")
    done
    t=$(printf '%s\n' "${ts[@]}" | sort -g | head -1)
    echo "tshark runs (s): ${ts[*]}"
    printf 'tshark (faster run) %.2f s: %.0f MB/s; report is %.1fx faster\n' "$t" "$(echo "$bytes / $t / 1000000" | bc -l)" "$(echo "$t / $r" | bc -l)"
fi
