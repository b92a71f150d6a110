#!/usr/bin/env bash
# Benchmark of the probe-to-engine path on this host's own kernel: the same
# tracepoint program the RDMA probes use, attached to a tracepoint that only
# the load generator fires, driven by a paced loop of the system call that
# fires it:
#
#   BENCH_TP=rename  task:task_rename by prctl(PR_SET_NAME) (default): an
#                    ordinary TRACE_EVENT, like every rpcrdma event;
#   BENCH_TP=getppid syscalls:sys_enter_getppid by getppid(): what this
#                    script measured first; enabling any syscall tracepoint
#                    also sends every system call through the slow tracing
#                    path, so it overstates the cost of an rpcrdma event.
#
#   [BENCH_TP=rename|getppid] [BIN=path] ebpf-probes/bench.sh [SECONDS] [RATE...]
#                                        (root; default 5 s; rates in events/s)
#
# Per rate: records delivered per second, records lost in the kernel (ring
# full), the analyzer's CPU, and the program's own kernel time per event
# (kernel.bpf_stats_enabled: run_time_ns / run_cnt from the program's fdinfo).
# Then, unpaced: the generator's syscall rate with and without the probe
# attached, whose difference is the whole per-event cost in the kernel
# (tracepoint + perf glue + program + ring buffer).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}; shift || true
rates=("$@"); [ ${#rates[@]} -gt 0 ] || rates=(50000 100000 200000 400000 800000)
bin=${BIN:-target/release/rdma-analyzer}
[ -x "$bin" ] || bin=target/debug/rdma-analyzer
case ${BENCH_TP:-rename} in
    rename) tp=task:task_rename; nr=157 ;;   # prctl(PR_SET_NAME, "rdma-bench")
    getppid) tp=syscalls:sys_enter_getppid; nr=110 ;;
    *) echo "bench: BENCH_TP is rename or getppid" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "bench: needs root" >&2; exit 1; }
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
tmp=$(mktemp -d); trap 'rm -rf "$tmp"; sysctl -qw kernel.bpf_stats_enabled=$old_stats' EXIT
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1

# gen RATE SECS: about RATE events per second for SECS (RATE 0: flat out); prints calls/s.
# getppid() takes no argument; prctl(PR_SET_NAME, name) takes two, and
# leaves the generator named rdma-bench.
gen() {
    perl -MTime::HiRes=time,sleep -e '
        my ($rate, $secs, $nr) = @ARGV; my $t0 = time; my $n = 0; my $slice = 0.01;
        my $name = "rdma-bench\0"; my @a = $nr == 157 ? (15, $name) : ();
        while ((my $now = time) - $t0 < $secs) {
            if ($rate > 0) {
                my $due = int(($now - $t0 + $slice) * $rate) - $n;
                for (1..$due) { syscall($nr, @a) } $n += $due if $due > 0;
                my $next = $t0 + ($n / $rate); my $d = $next - time; sleep($d) if $d > 0;
            } else { for (1..10000) { syscall($nr, @a) } $n += 10000 }
        }
        printf "%.0f\n", $n / (time - $t0);' "$1" "$2" "$nr"
}

prog_stats() { # pid -> "run_time_ns run_cnt" summed over its tracepoint programs
    # (the helper's program is always loaded; a fixed-copy one may run instead)
    local pid=$1 fd
    for fd in /proc/"$pid"/fd/*; do
        [ "$(readlink "$fd")" = "anon_inode:bpf-prog" ] || continue
        awk '/^prog_type:/{t=$2} /^run_time_ns:/{r=$2} /^run_cnt:/{c=$2} END{if (t==5) print r, c}' /proc/"$pid"/fdinfo/"${fd##*/}"
    done | awk '{r+=$1; c+=$2} END{if (NR) print r, c}'
}

echo "bench: $tp, $bin, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%10s %12s %12s %10s %8s %12s\n' rate/s generated/s records/s lost cpu% ns/event
for rate in "${rates[@]}"; do
    "$bin" live --probes --no-kprobes --tracepoint "$tp" --duration $((secs + 2)) \
        --stats-out "$tmp/s.json" --json-out /dev/null 2> "$tmp/err" &
    pid=$!
    for _ in $(seq 1 50); do grep -q attached "$tmp/err" 2>/dev/null && break; sleep 0.1; done
    sleep 0.5
    g=$(gen "$rate" "$secs")
    st=$(prog_stats $pid)
    wait $pid
    python3 - "$tmp/s.json" "$rate" "$g" "$st" "$secs" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); rate, g, st, secs = sys.argv[2], sys.argv[3], sys.argv[4].split(), float(sys.argv[5])
ns = int(st[0]) / max(int(st[1]), 1) if len(st) == 2 else float("nan")
# Rates over the generator's window (the run lasts 2 s longer, idle).
print("%10s %12s %12.0f %10d %8.1f %12.0f" % (rate, g, s["records"] / secs, s["lost_in_kernel"],
      100 * s["cpu_seconds"] / secs, ns))
PY
done

# Unpaced, interleaved rounds (this machine is noisy; medians): the
# generator's rate with nothing attached, with the floor (the same
# attachment, a program that does nothing), with the probe, with the same
# probe copying through the helper as it did before the fixed copies
# (RDMA_ANALYZER_BENCH_HELPER_COPY: what they save), and optionally with
# the probe of another build (BIN_BEFORE) for a before/after.
with() { # BIN [ENV=...] -> "calls/s program-ns/event" while that binary's probe is attached
    local b=$1 g st; shift
    env "$@" "$b" live --probes --no-kprobes --tracepoint "$tp" --duration $((secs + 2)) \
        --stats-out "$tmp/u.json" --json-out /dev/null 2> "$tmp/uerr" &
    local p=$!
    for _ in $(seq 1 50); do grep -q attached "$tmp/uerr" 2>/dev/null && break; sleep 0.1; done
    sleep 0.5
    g=$(gen 0 "$secs")
    st=$(prog_stats $p)
    wait $p
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(1 if s["lost_in_kernel"] else 0)' "$tmp/u.json" \
        || echo "bench: records lost in an unpaced run" >&2
    # bpf_stats: the program's own time, which other jobs on the machine
    # disturb far less than the generator's rate.
    echo "$g $(echo "${st:-0 0}" | awk '{printf "%.1f", $2 ? $1 / $2 : 0}')"
}
rounds=${ROUNDS:-5}
: > "$tmp/rounds"
for r in $(seq 1 "$rounds"); do
    b=$(gen 0 "$secs")
    f=$(with "$bin" RDMA_ANALYZER_BENCH_FLOOR=1)
    p=$(with "$bin")
    h=$(with "$bin" RDMA_ANALYZER_BENCH_HELPER_COPY=1)
    o=${BIN_BEFORE:+$(with "$BIN_BEFORE")}
    # Columns: bare, then calls/s and program ns of floor, probe, before, helper.
    echo "$b $f $p ${o:-0 0} $h" >> "$tmp/rounds"
done
python3 - "$tmp/rounds" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
# Column of each configuration's calls/s; its program ns/event is the next.
FLOOR, PROBE, BEFORE, HELPER = 1, 3, 5, 7
ns = lambda i: statistics.median(1e9 / r[i] - 1e9 / r[0] for r in rows)
med = lambda i: statistics.median(r[i] for r in rows)
spread = lambda i: "%.0f-%.0f" % (min(r[i] for r in rows), max(r[i] for r in rows))
print("unpaced, median of %d interleaved rounds: %.2f M calls/s bare, %.2f M with the floor, %.2f M with the probe"
      % (len(rows), med(0) / 1e6, med(FLOOR) / 1e6, med(PROBE) / 1e6))
print("  added kernel time per event: floor (tracepoint + BPF dispatch) %+.0f ns, probe %+.0f ns end to end, of which the program's own work %+.0f ns"
      % (ns(FLOOR), ns(PROBE), ns(PROBE) - ns(FLOOR)))
print("  program ns/event (bpf_stats, median, range): floor %.0f (%s), probe %.0f (%s), helper copies %.0f (%s)"
      % (med(FLOOR + 1), spread(FLOOR + 1), med(PROBE + 1), spread(PROBE + 1), med(HELPER + 1), spread(HELPER + 1)))
print("  the same build with every span copied through bpf_probe_read_kernel (no fixed copies): %.2f M calls/s, %+.0f ns per event end to end"
      % (med(HELPER) / 1e6, ns(HELPER)))
if rows[0][BEFORE]:
    print("  BIN_BEFORE's probe: %.2f M calls/s, %+.0f ns per event end to end, program %.0f ns/event (%s)"
          % (med(BEFORE) / 1e6, ns(BEFORE), med(BEFORE + 1), spread(BEFORE + 1)))
PY
