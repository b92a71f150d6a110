#!/usr/bin/env bash
# Throughput of `rdma-analyzer report --json` on one large capture as each
# kind of input: the plain file, the file gzip- and zstd-compressed, and the
# plain bytes through a pipe (`cat FILE | report -`). The variants alternate,
# RUNS times each (default 7), so a noisy neighbour hurts them alike;
# medians in seconds and MB/s of capture (uncompressed bytes) are printed,
# and every variant's report must equal the plain file's.
#
#   scripts/bench-inputs.sh [FILE] [RUNS] [WORKDIR]
#
# FILE defaults to target/bench/big.pcap (made with `synth --size 2G` when
# missing); the compressed copies go to WORKDIR (default target/bench).
set -euo pipefail
cd "$(dirname "$0")/.."

file=${1:-target/bench/big.pcap}
runs=${2:-7}
work=${3:-target/bench}
bin=${BIN:-target/release/rdma-analyzer}

[ -x "$bin" ] || cargo build --release -q -p rdma-analyzer
if [ ! -f "$file" ]; then
    mkdir -p "$(dirname "$file")"
    "$bin" synth --size 2G --connections 4 -o "$file"
fi
mkdir -p "$work"
base=$work/$(basename "$file")
[ -f "$base.gz" ] || gzip -6 -c "$file" >"$base.gz"
[ -f "$base.zst" ] || zstd -q -3 -c "$file" >"$base.zst"
bytes=$(stat -c %s "$file")

# Microseconds (wall) of one run of the shell command "$1", output discarded.
wall() {
    local t0 t1
    t0=$(date +%s%N)
    bash -c "$1" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000))
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

names=(plain gzip zstd pipe)
cmds=(
    "'$bin' report --json '$file'"
    "'$bin' report --json '$base.gz'"
    "'$bin' report --json '$base.zst'"
    "cat '$file' | '$bin' report --json -"
)

# Warm the page cache, and check that every variant reports the same.
cat "$file" "$base.gz" "$base.zst" >/dev/null
want=$(bash -c "${cmds[0]}" | grep -v '"file"')
for i in 1 2 3; do
    got=$(bash -c "${cmds[$i]}" | grep -v '"file"')
    [ "$got" = "$want" ] || { echo "bench-inputs: ${names[$i]} reports differently" >&2; exit 1; }
done

declare -A t
for _ in $(seq "$runs"); do
    for i in "${!names[@]}"; do
        t[${names[$i]}]+="$(wall "${cmds[$i]}") "
    done
done
printf '%-6s %10s %10s  %s\n' input "median s" "MB/s" "runs (s)"
for n in "${names[@]}"; do
    m=$(printf '%s\n' ${t[$n]} | median)
    printf '%-6s %10.2f %10.0f  %s\n' "$n" "$(echo "$m / 1000000" | bc -l)" \
        "$(echo "$bytes / $m" | bc -l)" \
        "$(printf '%s\n' ${t[$n]} | awk '{printf "%.2f ", $1/1e6}')"
done
echo "sizes: plain $bytes, gzip $(stat -c %s "$base.gz"), zstd $(stat -c %s "$base.zst") bytes"
