#!/bin/bash
# Shared by client-start.sh and server-start.sh: runs `rdma-analyzer live
# --probes` headless in the guest for one scenario ($1 = scenario, $2 = output
# folder), and on the client also captures eth0 live (-i eth0 --write), so the
# wire and the probes are correlated by XID in one JSON Lines file.
# The lab contract: return within HOOK_TIMEOUT; the -stop hook ends it.
set -u
sc=$1 out=$2
# This kernel's tracepoint formats, once per guest (the first scenario's
# hook output gets formats.tgz): the decoder's test data for this kernel
# (ebpf-probes/testdata/linux-VERSION). Not with tar: tracefs files say
# they are empty, so tar would store them empty; bash reads them itself.
if [ ! -e /tmp/rdma-formats.tgz ]; then
    t=/sys/kernel/tracing
    [ -d $t/events ] || mount -t tracefs nodev $t 2>/dev/null
    dest=/tmp/rdma-formats/linux-$(uname -r)
    rm -rf /tmp/rdma-formats
    files=() dirs=()
    for f in $t/events/{rpcrdma,rdma_cma,ib_cma,sunrpc}/*/format; do
        [ -e "$f" ] || continue
        files+=("$f"); d=${f#"$t"/}; dirs+=("$dest/${d%/format}")
    done
    # Builtins only in the loop: a TCG guest forks slowly, and the hook
    # has HOOK_TIMEOUT seconds for all of this and the analyzer's start.
    mkdir -p "${dirs[@]}"
    for f in "${files[@]}"; do
        mapfile -t lines < "$f"
        printf '%s\n' "${lines[@]}" > "$dest/${f#"$t"/}"
    done
    tar czf /tmp/rdma-formats.tgz -C /tmp/rdma-formats . && cp /tmp/rdma-formats.tgz "$out/formats.tgz"
fi
bin=$LAB_HOOK_DIR/rdma-analyzer
[ -x "$bin" ] || { echo "no $bin (build it on the host: ebpf-probes/lab.sh does)"; exit 1; }
args=(live --probes --json-out "$out/probes.jsonl" --stats-out "$out/probes-stats.json")
# With LAB_RECORD=1 (lab.sh leaves a `record` file beside this script),
# the flight recorder keeps the run's probe records (and the client's
# frames): stop.sh's SIGUSR1 dumps them all into $out/record/ as the run
# ends, so a run can be replayed through a later analyzer (report/open
# read a dump's probe records; ebpf-probes/testdata/lab-records/). Off by
# default: the single-vCPU TCG guest's CPU is the kernel's RPC tasks' too,
# and the test command's run measures the probes, not the recorder.
if [ -e "$LAB_HOOK_DIR/record" ]; then
    args+=(--record "$out/record" --record-before 30m --record-size 32M)
fi
if [ "$LAB_ROLE" = client ]; then
    args+=(-i eth0 --write "$out/live.pcapng")
    # live's default capture filter is RoCEv2's (udp port 4791): on siw the
    # RDMA traffic is MPA/DDP/RDMAP over TCP to the NFS/RDMA port, which that
    # filter would drop in the kernel, leaving the live side without a wire.
    case ${LAB_FABRIC:-rxe} in
        siw) args+=(--bpf "tcp port 20049") ;;
    esac
fi
"$bin" "${args[@]}" > "$out/live.out" 2> "$out/live.err" &
echo $! > "/tmp/rdma-live.$LAB_ROLE.pid"
# Wait until the probes are attached (or it gave up), bounded.
for _ in $(seq 1 100); do
    grep -q "probes: .* attached" "$out/live.err" 2>/dev/null && break
    kill -0 "$(cat "/tmp/rdma-live.$LAB_ROLE.pid")" 2>/dev/null || break
    sleep 0.2
done
cat "$out/live.err"
