#!/usr/bin/env bash
# Soak (docs/capturing.md, "Capture at rate"): `live -i` with probes on, under a steady
# RATE frames/s for SECS seconds; the analyzer's RSS and CPU sampled every
# second into a CSV; RSS must stay flat.
#
# A veth pair with one end in a network namespace this script creates and
# removes; tools/rategen replays PCAP's RoCEv2 frames from the namespace,
# paced, every pass new connections (--vary), and calls getppid() SYSCALLS
# times a second. `live` captures the host end with --probes and the extra
# tracepoint syscalls:sys_enter_getppid, so the probe path (program, ring
# buffer, decoder, engine) carries a steady load too: on a host without
# the RDMA tracepoints that is the only probe that attaches.
#
#   scripts/soak.sh [CSV]     (root; default CSV target/soak/soak-DATE.csv)
#
# Environment: SECS (600), RATE (200000), SYSCALLS (10000), THREADS (2),
# PCAP (target/bench/small.pcap, made with synth when absent), LIVE_ARGS (extra `live` arguments), BIN,
# GEN. Columns: seconds since the start, VmRSS kB, CPU seconds (user +
# system), CPU % of one core over the last second. Then a summary: RSS in
# the first and last minute, its maximum and slope, mean CPU, and what
# `live` and rategen counted. Take the benchmark lock:
#   flock /tmp/bench.lock scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "soak: needs root (netns, veth, AF_PACKET, eBPF)" >&2; exit 1; }
secs=${SECS:-600} rate=${RATE:-200000} syscalls=${SYSCALLS:-10000} threads=${THREADS:-2}
bin=${BIN:-target/release/rdma-analyzer}
gen=${GEN:-target/release/rategen}
pcap=${PCAP:-target/bench/small.pcap}
csv=${1:-target/soak/soak-$(date +%Y%m%d-%H%M%S).csv}
[ -n "${BIN:-}" ] || cargo build --release -q -p rdma-analyzer
[ -n "${GEN:-}" ] || cargo build --release -q -p rategen
if [ ! -f "$pcap" ]; then
    mkdir -p "$(dirname "$pcap")"
    "$bin" synth --size 100M --connections 4 -o "$pcap" >/dev/null
fi
mkdir -p "$(dirname "$csv")"
base=${csv%.csv}
ns=rdma-soak-$$ host=rsoak0 peer=rsoak1
pid= gpid=
cleanup() {
    [ -z "$gpid" ] || kill "$gpid" 2>/dev/null || true
    [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    ip link del "$host" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$ns"
ip link add "$host" type veth peer name "$peer" netns "$ns"
ip link set "$host" mtu 9000 up
ip netns exec "$ns" ip link set "$peer" mtu 9000 up
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

echo "== soak: live -i $host --probes (+ syscalls:sys_enter_getppid at $syscalls/s) under $rate frames/s" \
    "of $pcap for $secs s; load $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086
"$bin" live -i "$host" --probes --no-kprobes --tracepoint syscalls:sys_enter_getppid --no-tui \
    --json-out /dev/null --stats-out "$base.stats.json" ${LIVE_ARGS:-} 2>"$base.live.err" &
pid=$!
for _ in $(seq 200); do grep -q 'capturing on' "$base.live.err" 2>/dev/null && break; sleep 0.05; done
sed 's/^/  /' "$base.live.err"
ip netns exec "$ns" "$gen" -i "$peer" -p "$pcap" -r "$rate" -t "$threads" -d "$secs" --vary \
    --syscall-rate "$syscalls" >"$base.gen.json" 2>"$base.gen.err" &
gpid=$!
until grep -q 'sending on' "$base.gen.err" 2>/dev/null || ! kill -0 $gpid 2>/dev/null; do sleep 0.01; done

tck=$(getconf CLK_TCK)
echo "seconds,rss_kb,cpu_seconds,cpu_percent" >"$csv"
t0=$(date +%s.%N) prev=
while kill -0 $gpid 2>/dev/null; do
    now=$(date +%s.%N)
    rss=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status)
    cpu=$(awk -v tck="$tck" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / tck }' /proc/$pid/stat)
    if [ -n "$prev" ]; then
        read -r pt pc <<<"$prev"
        pct=$(echo "100 * ($cpu - $pc) / ($now - $pt)" | bc -l)
    else
        pct=0
    fi
    printf '%.1f,%s,%s,%.1f\n' "$(echo "$now - $t0" | bc -l)" "$rss" "$cpu" "$pct" >>"$csv"
    prev="$now $cpu"
    # Every second from the start, whatever the sampling took.
    sleep "$(echo "1 - ($(date +%s.%N) - $now)" | bc -l | sed 's/^-.*/0/')"
done
wait $gpid; gpid=
sleep 1
kill -TERM $pid
wait $pid || true
pid=
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$csv" "$base" <<'PY'
import csv, json, sys
rows = [(float(r["seconds"]), int(r["rss_kb"]), float(r["cpu_percent"]))
        for r in csv.DictReader(open(sys.argv[1]))]
t = [r[0] for r in rows]; rss = [r[1] / 1024 for r in rows]; cpu = [r[2] for r in rows[1:]]
def mean(v): return sum(v) / len(v)
def slope(ts, vs):  # least squares, MB per minute
    mt, mv = mean(ts), mean(vs)
    return 60 * sum((a - mt) * (b - mv) for a, b in zip(ts, vs)) / sum((a - mt) ** 2 for a in ts)
first = [r for s, r in zip(t, rss) if s < 60]
last = [r for s, r in zip(t, rss) if s >= t[-1] - 60]
half = [(s, r) for s, r in zip(t, rss) if s >= t[-1] / 2]
print("samples %d over %.0f s" % (len(rows), t[-1]))
print("RSS MB: first minute mean %.1f (max %.1f), last minute mean %.1f (max %.1f), max %.1f at %.0f s" % (
    mean(first), max(first), mean(last), max(last), max(rss), t[rss.index(max(rss))]))
print("RSS slope: %.3f MB/min over the run, %.3f MB/min over its second half" % (
    slope(t, rss), slope([a for a, _ in half], [b for _, b in half])))
print("CPU %% of one core: mean %.1f, min %.1f, max %.1f" % (mean(cpu), min(cpu), max(cpu)))
print("RSS by minute (MB, mean): " + " ".join("%.1f" % mean([r for s, r in zip(t, rss) if m * 60 <= s < (m + 1) * 60] or [0])
                                            for m in range(int(t[-1] // 60) + 1)))
s = json.load(open(sys.argv[2] + ".stats.json")); g = json.load(open(sys.argv[2] + ".gen.json"))
print("rategen: %d frames in %.0f s (%.0f/s), %d send errors, %d passes, %d getppid calls" % (
    g["frames"], g["seconds"], g["frames_per_second"], g["send_errors"], g["passes"], g["syscalls"]))
print("live: %d frames (%d dropped), %d probe records (%d lost, %d undecodable), %d transactions, %d anomalies; attached %s" % (
    s["frames"], s["frames_dropped"], s["records"], s["lost_in_kernel"], s["decode_errors"],
    s["transactions"], s["anomalies"], ", ".join(s["attached"])))
PY
