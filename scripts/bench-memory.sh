#!/usr/bin/env bash
# Peak RSS and time of `report` on the hostile floods of issues 15 and 23,
# under the default memory budget (256 MiB) unless the case says: the table
# the note gives.
#
#   scripts/bench-memory.sh [DIR]     DIR holds the generated captures
#                                     (default target/bench-memory; about 3 GB)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/bench-memory}
mkdir -p "$dir"
cargo build --release -q -p rdma-analyzer
bin=target/release/rdma-analyzer
cases=(
    "4096 connections x 500 unanswered calls|unanswered --connections 4096 --calls 500|"
    "1,000,000 queue pairs (a connection each)|qp-flood --connections 1000000|"
    "10,000,000 unanswered calls on one connection|unanswered --connections 1 --calls 10000000|"
    "200,000 connections, --max-connections 65536|qp-flood --connections 200000|--max-connections 65536"
    "200,000 distinct procedure labels, --memory-limit 16M|many-labels --calls 200000|--memory-limit 16M"
    "1,000,000 frames to unowned QPs, 4096 connections waiting|unowned-flood --connections 4096 --calls 1000000|"
)
printf '| case | frames | file | peak RSS | time | evicted |\n|---|---|---|---|---|---|\n'
for c in "${cases[@]}"; do
    IFS='|' read -r name gen extra <<<"$c"
    f="$dir/$(echo "$gen" | tr -c 'a-z0-9' '_').pcap"
    [ -f "$f" ] || "$bin" synth --hostile $gen -o "$f"
    # shellcheck disable=SC2086
    /usr/bin/time -f '%M %e' -o "$dir/time.txt" "$bin" report --json $extra "$f" > "$dir/report.json"
    read -r kib secs < "$dir/time.txt"
    frames=$(python3 -c "import json;d=json.load(open('$dir/report.json'));print(d['totals']['frames'])")
    evicted=$(python3 -c "import json;d=json.load(open('$dir/report.json'));e=d['evictions'];o=d['procedures_over_cap']['transactions'];print(', '.join([f'{k} {v}' for k,v in e.items() if v] + ([f'{o} transactions under (other procedures)'] if o else [])))")
    printf '| %s | %s | %s MB | %s MB | %s s | %s |\n' "$name" "$frames" "$(( $(stat -c %s "$f") / 1000000 ))" "$((kib / 1024))" "$secs" "${evicted:-none}"
done
