#!/usr/bin/env bash
# The fleet benchmarks (docs/fleet.md), on the release build:
#
#   export    `export` against `report` on the same 2 GB capture (target:
#             export at least half report's speed): interleaved runs,
#             medians; the export is written to a scratch folder each run.
#   rss       peak RSS of `export` (and `report`) on a 10 GB capture made
#             with `synth --size 10G` and deleted afterwards (RSS_MIX=inline=1
#             for one of small inline RPCs only: the most rows per byte).
#   scrape    one scrape of an exporter holding 10,000 series (target
#             < 10 ms): `cargo bench --bench metrics`.
#   cpu       the exporter's CPU while `live` runs at 300k frames/s: a veth
#             pair with one end in a network namespace this script creates
#             (and removes), tcpreplay sending the 2 GB capture at 300k
#             frames/s from the namespace, `live -i` capturing the other end
#             with and without --metrics (scraped every second), CPU per
#             thread from /proc. Needs root and tcpreplay (installed here
#             when missing).
#
#   scripts/bench-fleet.sh [export|rss|scrape|cpu]...   (default: all)
#
# BIG (default /work/bench/big.pcap, else target/bench/big.pcap) is made with
# `synth --size 2G --connections 4` when missing; HUGE_DIR (default: BIG's
# folder) holds the 10 GB capture while it is measured. RUNS (default 5)
# runs of each command; PPS (default 300000) and CPU_RUNS (default 3
# alternations of the two modes) for cpu.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/release/rdma-analyzer
runs=${RUNS:-5}
if [ -n "${BIG:-}" ]; then
    big=$BIG
elif [ -f /work/bench/big.pcap ]; then
    big=/work/bench/big.pcap
else
    big=target/bench/big.pcap
fi
huge_dir=${HUGE_DIR:-$(dirname "$big")}
what=("$@")
[ ${#what[@]} -gt 0 ] || what=(export rss scrape cpu)

cargo build --release -q -p rdma-analyzer
if [ ! -f "$big" ]; then
    mkdir -p "$(dirname "$big")"
    "$bin" synth --size 2G --connections 4 -o "$big"
fi
scratch=$(mktemp -d)
cleanup() { rm -rf "$scratch"; }
trap cleanup EXIT

# Seconds (wall) of one run of "$@", output discarded.
wall() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
peak_mb() {
    /usr/bin/time -f '%M' -o "$scratch/rss" "$@" >/dev/null 2>&1
    awk '{printf "%.0f", $1 / 1024}' "$scratch/rss"
}

bench_export() {
    cat "$big" >/dev/null
    "$bin" report "$big" >/dev/null
    local report=() export=()
    for _ in $(seq "$runs"); do
        report+=("$(wall "$bin" report --json "$big")")
        rm -rf "$scratch/ds"
        export+=("$(wall "$bin" export --out "$scratch/ds" --host bench "$big")")
    done
    local r e bytes
    r=$(printf '%s\n' "${report[@]}" | median)
    e=$(printf '%s\n' "${export[@]}" | median)
    bytes=$(stat -c %s "$big")
    echo "== export vs report: $big ($bytes bytes), $runs runs each, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "report runs (s): ${report[*]}"
    echo "export runs (s): ${export[*]}"
    printf 'report median %.3f s: %.0f MB/s\n' "$r" "$(echo "$bytes / $r / 1000000" | bc -l)"
    printf 'export median %.3f s: %.0f MB/s (%.2f of report'"'"'s speed; target >= 0.5)\n' \
        "$e" "$(echo "$bytes / $e / 1000000" | bc -l)" "$(echo "$r / $e" | bc -l)"
    "$bin" export --out "$scratch/ds" --host bench "$big" | sed 's/^/export: /'
    echo "dataset size: $(du -sh "$scratch/ds" | cut -f1)"
}

huge="$huge_dir/huge-10g.pcap"
bench_rss() {
    trap 'rm -f "$huge" "$huge.expected.json"; cleanup' EXIT
    echo "== peak RSS on a 10 GB capture ($huge, deleted afterwards)"
    # RSS_MIX=inline=1: every call a small inline RPC, the most rows per byte.
    "$bin" synth --size 10G --connections 16 ${RSS_MIX:+--mix "$RSS_MIX"} -o "$huge" >/dev/null
    echo "capture: $(stat -c %s "$huge") bytes, $(grep -m1 '"transactions"' "$huge.expected.json" | tr -dc 0-9) transactions"
    local t0 t1
    rm -rf "$scratch/ds"
    t0=$(date +%s.%N)
    echo "export peak RSS: $(peak_mb "$bin" export --out "$scratch/ds" --host bench "$huge") MB"
    t1=$(date +%s.%N)
    printf 'export took %.1f s; dataset %s\n' "$(echo "$t1 - $t0" | bc -l)" "$(du -sh "$scratch/ds" | cut -f1)"
    echo "report peak RSS: $(peak_mb "$bin" report --json "$huge") MB"
    rm -f "$huge" "$huge.expected.json"
}

bench_scrape() {
    echo "== one scrape of an exporter holding 10,000 series"
    cargo bench -q -p rdma-analyzer --bench metrics -- --noplot 2>&1 |
        grep -E 'holds|time:|^(encode|scrape)' || true
}

# CPU seconds of each thread of process $1, as "tid name seconds" lines.
thread_cpu() {
    local tck
    tck=$(getconf CLK_TCK)
    for t in /proc/"$1"/task/*; do
        # comm may hold spaces: take the fields after the closing parenthesis
        # (utime and stime are then the 12th and 13th).
        awk -v tck="$tck" -v tid="${t##*/}" -v name="$(tr ' ' _ <"$t/comm")" \
            '{ sub(/.*\) /, ""); printf "%s %s %.2f\n", tid, name, ($12 + $13) / tck }' "$t/stat"
    done
}

ns=rdma-bench-$$
bench_cpu() {
    local pps=${PPS:-300000} port=19464
    if ! command -v tcpreplay >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tcpreplay >/dev/null
    fi
    ip netns add "$ns"
    trap 'ip netns del "$ns" 2>/dev/null; ip link del rdmab0 2>/dev/null; cleanup' EXIT
    ip link add rdmab0 type veth peer name rdmab1 netns "$ns"
    # Soft-RoCE frames carry 4 KiB payloads: room for them on the veth.
    ip link set rdmab0 mtu 9000 up
    ip netns exec "$ns" ip link set rdmab1 mtu 9000 up
    # The capture is sent once, whole: a second loop would repeat its PSNs
    # and XIDs, which the engine takes as retransmissions (a cheaper path).
    local frames
    "$bin" report --json "$big" >"$scratch/report.json"
    frames=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["frames"])' "$scratch/report.json")
    echo "== live -i at $pps frames/s: $frames frames of $big, load $(cut -d' ' -f1-3 /proc/loadavg)"
    local round
    for round in $(seq "${CPU_RUNS:-3}"); do
    for mode in plain metrics; do
        local args=(live -i rdmab0 --no-tui --json-out /dev/null --stats-out "$scratch/stats-$mode.json")
        [ "$mode" = metrics ] && args+=(--metrics "127.0.0.1:$port")
        "$bin" "${args[@]}" 2>"$scratch/live-$mode.err" &
        local pid=$!
        sleep 2
        # The scraper runs in both modes (in plain mode nothing listens and
        # curl is refused), so that its own CPU weighs on both alike.
        (while sleep 1; do
            curl -s -o /dev/null -w '%{time_total}\n' -H 'Accept: application/openmetrics-text' \
                "http://127.0.0.1:$port/metrics" >>"$scratch/scrapes-$mode" || true
        done) &
        local scraper=$!
        local before after t0 t1
        before=$(thread_cpu "$pid")
        t0=$(date +%s.%N)
        ip netns exec "$ns" tcpreplay -q -i rdmab1 --pps "$pps" "$big" \
            >"$scratch/tcpreplay-$mode.out" 2>&1
        sleep 1
        after=$(thread_cpu "$pid")
        t1=$(date +%s.%N)
        kill "$scraper" && wait "$scraper" 2>/dev/null || true
        kill -TERM "$pid"
        wait "$pid" || true
        echo "-- $mode (--json-out /dev/null$([ "$mode" = metrics ] && echo ", --metrics") ; scraped every second)"
        grep -E 'Actual|Rated' "$scratch/tcpreplay-$mode.out" | sed 's/^[[:space:]]*/tcpreplay: /'
        # Per thread name: CPU seconds between the two readings, and the
        # share of one core over that wall time.
        join <(echo "$before" | sort) <(echo "$after" | sort) |
            awk -v w="$(echo "$t1 - $t0" | bc -l)" '{ d[$2] += $5 - $3; tot += $5 - $3 }
                END { for (n in d) printf "thread %-16s %6.2f CPU s (%5.1f%% of a core)\n", n, d[n], 100 * d[n] / w;
                      printf "all threads             %6.2f CPU s (%5.1f%% of a core over %.1f s)\n", tot, 100 * tot / w, w }' |
            tee -a "$scratch/cpu-$mode"
        python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print('live: frames', s['frames'], 'dropped', s['frames_dropped'], 'transactions', s['transactions'])" "$scratch/stats-$mode.json"
    done
    done
    # Medians over the rounds: the whole process, and the pipeline thread
    # (where the metrics sink counts) alone.
    for mode in plain metrics; do
        printf '%-8s median: all threads %s CPU s, pipeline thread %s CPU s, HTTP thread %s CPU s\n' "$mode" \
            "$(awk '/^all threads/ {print $3}' "$scratch/cpu-$mode" | median)" \
            "$(awk '$2 == "rdma-analyzer" {print $3}' "$scratch/cpu-$mode" | median)" \
            "$(awk '$2 == "metrics-http" {print $3}' "$scratch/cpu-$mode" | median | sed 's/^$/(none)/')"
    done
    if [ -s "$scratch/scrapes-metrics" ]; then
        sort -g "$scratch/scrapes-metrics" | awk '{a[NR]=$1} END {printf "scrapes under load: %d, median %.1f ms, max %.1f ms\n", NR, 1000 * a[int((NR+1)/2)], 1000 * a[NR]}'
    fi
    ip netns del "$ns"
}

for w in "${what[@]}"; do
    case "$w" in
        export) bench_export ;;
        rss) bench_rss ;;
        scrape) bench_scrape ;;
        cpu) bench_cpu ;;
        *) echo "bench-fleet: unknown benchmark $w (export, rss, scrape, cpu)" >&2; exit 2 ;;
    esac
done
