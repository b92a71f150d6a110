#!/usr/bin/env bash
# Capture at rate (docs/capturing.md, "Capture at rate"): how many frames/s `live -i`
# takes without loss on this host.
#
# A veth pair with one end in a network namespace this script creates and
# removes (nothing leaves the machine); tools/rategen (AF_PACKET, qdisc
# bypass, sendmmsg, THREADS senders) replays PCAP's RoCEv2 frames from the
# namespace at each RATE for SECS seconds (--vary: every pass of the
# capture is new connections); `live -i` captures the host end.
#
#   scripts/bench-capture.sh [RATE...]     (root; RATE in frames/s, 0 = flat out)
#
# Per rate and run: frames/s offered (what rategen sent), frames/s the
# analyzer saw, drops in the kernel (the veth's rx_dropped plus the
# backlog drops of /proc/net/softnet_stat), in the capture ring (libpcap's
# ps_drop: live's frames_dropped less the interface drops libpcap adds in),
# frames unaccounted for (sent, not seen, not counted dropped: the
# analyzer's own losses; its capture thread waits rather than drop), the
# analyzer's CPU (% of one core, and µs per frame seen; cap-us: of which
# its capture thread), rategen's CPU (% of one core, the kernel's
# sending and, on the same CPU, its receiving on the veth included), and
# the CPU of everything else on the host (another job: the run is suspect),
# the whole host's CPU split (user, system, softirq, idle; 200% = both
# cores; the analyzer's and the host's figures span the sending and the
# second after it). A run is lossless when every frame sent was seen. Then the median
# of RUNS runs per rate, and the highest lossless rate.
#
# Environment: PCAP (default
# target/bench/small.pcap made with `synth --size 100M --connections 4`:
# 103k frames, looped, each pass new connections), SECS
# (5), RUNS (3), THREADS (4 senders), BATCH (32 frames per sendmmsg), PIN
# (unset: the scheduler places everything; "1": rategen on CPU 0 and the
# analyzer on CPU 1), LIVE_ARGS (extra `live` arguments), BIN, GEN, OUT
# (a folder for the per-run files; default a temporary one). Take the
# benchmark lock: flock /tmp/bench.lock scripts/bench-capture.sh
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "bench-capture: needs root (netns, veth, AF_PACKET)" >&2; exit 1; }
rates=("$@"); [ ${#rates[@]} -gt 0 ] || rates=(200000 400000 600000 800000 1000000 0)
secs=${SECS:-5} runs=${RUNS:-3} threads=${THREADS:-4} batch=${BATCH:-32}
bin=${BIN:-target/release/rdma-analyzer}
gen=${GEN:-target/release/rategen}
if [ -n "${PCAP:-}" ]; then pcap=$PCAP
else pcap=target/bench/small.pcap; fi

[ -n "${BIN:-}" ] || cargo build --release -q -p rdma-analyzer
[ -n "${GEN:-}" ] || cargo build --release -q -p rategen
if [ ! -f "$pcap" ]; then
    mkdir -p "$(dirname "$pcap")"
    "$bin" synth --size 100M --connections 4 -o "$pcap" >/dev/null
fi
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
ns=rdma-rate-$$
host=rrate0 peer=rrate1
cleanup() {
    ip netns del "$ns" 2>/dev/null || true
    ip link del "$host" 2>/dev/null || true
    [ -n "${OUT:-}" ] || rm -rf "$out"
}
trap cleanup EXIT
ip netns add "$ns"
ip link add "$host" type veth peer name "$peer" netns "$ns"
ip link set "$host" mtu 9000 up
ip netns exec "$ns" ip link set "$peer" mtu 9000 up

pin_gen=() pin_live=()
if [ "${PIN:-}" = 1 ]; then pin_gen=(taskset -c 0) pin_live=(taskset -c 1); fi

# Backlog drops, all CPUs (2nd column of softnet_stat, hex).
softnet_drops() { local s=0 x; for x in $(awk '{print $2}' /proc/net/softnet_stat); do s=$((s + 16#$x)); done; echo $s; }
rx_dropped() { cat /sys/class/net/$host/statistics/rx_dropped; }
# "user system softirq idle" jiffies of the whole host.
host_cpu() { awk '/^cpu / { print $2 + $3, $4, $8, $5 + $6 }' /proc/stat; }
proc_cpu() { # CPU seconds of process $1
    awk -v tck="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.3f\n", ($12 + $13) / tck }' /proc/"$1"/stat
}
# CPU seconds of the capture thread and of the rest of process $1.
thread_cpu() {
    local t cap=0 all
    for t in /proc/"$1"/task/*; do
        [ "$(cat "$t/comm")" = live-capture ] || continue
        cap=$(awk -v tck="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.3f", ($12 + $13) / tck }' "$t/stat")
    done
    all=$(proc_cpu "$1")
    echo "$cap $all"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "== capture at rate: $pcap, $threads senders x $batch frames per sendmmsg, ${secs} s per run, $runs runs," \
    "pin ${PIN:-none}, live ${LIVE_ARGS:-(defaults)}; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
"$gen" --version | sed 's/^/generator: /'
printf '%9s %4s %9s %9s %8s %8s %8s %8s %7s %7s %7s %7s %7s %s\n' rate run offered/s seen/s kernel ring unacct lossless cpu% us/fr cap-us gen% other% "host user/sys/softirq/idle %"
for rate in "${rates[@]}"; do
    for run in $(seq "$runs"); do
        f=$out/r$rate-$run
        # shellcheck disable=SC2086
        "${pin_live[@]}" "$bin" live -i "$host" --no-tui --json-out /dev/null --stats-out "$f.stats.json" ${LIVE_ARGS:-} 2>"$f.live.err" &
        pid=$!
        for _ in $(seq 100); do grep -q 'capturing on' "$f.live.err" 2>/dev/null && break; sleep 0.05; done
        sleep 0.5
        ip netns exec "$ns" "${pin_gen[@]}" "$gen" -i "$peer" -p "$pcap" -r "$rate" -t "$threads" -b "$batch" \
            -d "$secs" --vary >"$f.gen.json" 2>"$f.gen.err" &
        gpid=$!
        # Loading the capture takes a while: the figures start with the sending.
        until grep -q 'sending on' "$f.gen.err" 2>/dev/null || ! kill -0 $gpid 2>/dev/null; do sleep 0.01; done
        sd0=$(softnet_drops) rd0=$(rx_dropped) hc0=$(host_cpu) c0=$(thread_cpu $pid) t0=$(date +%s.%N)
        wait $gpid
        sleep 1 # the analyzer drains what is buffered
        sd1=$(softnet_drops) rd1=$(rx_dropped) hc1=$(host_cpu) c1=$(thread_cpu $pid) t1=$(date +%s.%N)
        kill -TERM $pid
        wait $pid || true
        python3 - "$f" "$rate" "$run" "$(echo "$t1 - $t0" | bc -l)" "$((sd1 - sd0))" "$((rd1 - rd0))" "$c0" "$c1" "$hc0" "$hc1" "$(getconf CLK_TCK)" <<'PY' | tee -a "$out/rows"
import json, sys
f, rate, run, span = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
softnet, rxdrop = int(sys.argv[5]), int(sys.argv[6])
(cap0, c0), (cap1, c1) = ([float(x) for x in a.split()] for a in sys.argv[7:9])
h0, h1, tck = [float(x) for x in sys.argv[9].split()], [float(x) for x in sys.argv[10].split()], int(sys.argv[11])
g = json.load(open(f + ".gen.json")); s = json.load(open(f + ".stats.json"))
sent, seen, wall = g["frames"], s["frames"], g["seconds"]
kernel = softnet + rxdrop
ring = max(0, s["frames_dropped"] - rxdrop)  # libpcap adds the interface's drops in
unacct = sent - seen - kernel - ring
cpu = c1 - c0  # the analyzer, from the generator's start to 1 s after its end
capture = cap1 - cap0  # its capture thread (libpcap, copying into batches)
host = [100 * (b - a) / tck / span for a, b in zip(h0, h1)]
lossless = "yes" if seen >= sent and kernel == 0 and ring == 0 else "no"
gen = 100 * g["cpu_seconds"] / wall
# Busy CPU of the host that is neither the analyzer nor rategen (another
# job on the machine: the figures of that run are suspect).
other = sum(host[:3]) - 100 * cpu / span - gen * wall / span
print("%9d %4s %9.0f %9.0f %8d %8d %8d %8s %7.1f %7.2f %7.2f %7.1f %7.1f %s" % (
    rate, run, sent / wall, seen / wall, kernel, ring, unacct, lossless,
    100 * cpu / span, 1e6 * cpu / max(seen, 1), 1e6 * capture / max(seen, 1), gen, other,
    "/".join("%.0f" % x for x in host)))
PY
    done
done
echo "-- medians over $runs runs"
printf '%9s %9s %9s %7s %7s %7s %7s %s\n' rate offered/s seen/s cpu% us/fr cap-us gen% "lossless runs"
best=0
for rate in "${rates[@]}"; do
    rows=$(awk -v r="$rate" '$1 == r' "$out/rows")
    m() { echo "$rows" | awk -v c="$1" '{print $c}' | median; }
    ok=$(echo "$rows" | awk '$8 == "yes"' | wc -l)
    printf '%9s %9.0f %9.0f %7.1f %7.2f %7.2f %7.1f %s/%s\n' "$rate" "$(m 3)" "$(m 4)" "$(m 9)" "$(m 10)" "$(m 11)" "$(m 12)" "$ok" "$runs"
    if [ "$ok" = "$runs" ]; then
        o=$(m 3); best=$(python3 -c "print(max($best, round($o)))")
    fi
done
echo "highest lossless offered rate (every run lossless): $best frames/s; load $(cut -d' ' -f1-3 /proc/loadavg)"
