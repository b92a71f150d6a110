# Shared helpers for the lab's guest scripts (sourced by server.sh and
# client.sh). They run as root inside the QEMU guests, with the host's share
# mounted on /lab:
#   /lab/config        settings written by run.sh (SCENARIOS, sizes, ...)
#   /lab/guest/        these scripts
#   /lab/hook/         optional --guest-hook directory
#   /lab/ctl/          flag files the two guests use to take turns
#   /lab/out/          results, one folder per scenario
# Both guests see the same host directory, so a file created by one is seen
# by the other: that is the only channel between them besides the RDMA link,
# which keeps the captures free of coordination traffic.

set -u
LAB=/lab
CTL=$LAB/ctl
OUT=$LAB/out
# The run's own flags (server-up, all-done, abort); CTL and OUT move to a
# fabric's subfolder when one boot runs the scenarios on two fabrics.
TOP_CTL=$CTL
TOP_OUT=$OUT
SERVER_IP=10.99.0.1
CLIENT_IP=10.99.0.2
EXPORT=/srv/export
TRACEFS=/sys/kernel/tracing
# Tracepoint systems recorded per scenario: the ground truth for the pcap.
TRACE_SYSTEMS="rpcrdma rdma_cma ib_cma"

# shellcheck source=/dev/null
. "$LAB/config"

log() { echo "[$(date -u +%H:%M:%S)] ${ROLE:-?}: $*"; }
die() { log "ERROR: $*"; exit 1; }

# wait_for FILE SECONDS: poll for a flag file; fails if it never shows up or
# if the other side gave up (ctl/abort).
wait_for() {
    local f=$1 limit=$2 start now
    start=$(date +%s)
    while [ ! -e "$f" ]; do
        if [ -e "$CTL/abort" ] || [ -e "$TOP_CTL/abort" ]; then log "abort flag seen while waiting for $f"; return 2; fi
        now=$(date +%s)
        if [ $((now - start)) -ge "$limit" ]; then log "timed out after ${limit}s waiting for $f"; return 1; fi
        sleep 0.5
    done
    return 0
}

# Both the phase's flag and the run's: a later fabric's phase must not start.
abort() { log "ABORT: $*"; touch "$CTL/abort" "$TOP_CTL/abort"; }

# The RDMA link the scenarios run over (run.sh --fabric): soft-RoCE (rxe) or
# soft-iWARP (siw, RDMA over the kernel's own TCP). FABRICS (run.sh --fabric
# rxe+siw) names more than one: the guests run the scenarios of SCENARIOS_rxe
# on the first, take its link down and run SCENARIOS_siw on the next, in the
# same boot (begin_phase).
FABRIC=${FABRIC:-rxe}
FABRICS=${FABRICS:-$FABRIC}
RDMA_DEV=${FABRIC}0

# begin_phase FABRIC: the scenarios, flags and results of that fabric's part
# of the run. With one fabric nothing moves (the layout every single-fabric
# run has always had); with two, each gets ctl/FABRIC and out/FABRIC, which
# run.sh collects as a lab run of its own.
begin_phase() {
    FABRIC=$1
    RDMA_DEV=${FABRIC}0
    local v=SCENARIOS_$FABRIC
    if [ "$FABRICS" != "$FABRIC" ]; then
        SCENARIOS=${!v:-$SCENARIOS}
        CTL=$TOP_CTL/$FABRIC
        OUT=$TOP_OUT/$FABRIC
        mkdir -p "$CTL" "$OUT"
    fi
}

# Bring up eth0 on the point-to-point link and the RDMA link on top of it.
setup_network_and_rdma() {
    local ip=$1
    ip link set lo up
    ip link set eth0 up || die "no eth0 (is the virtio-net device there? net.ifnames=0 on the kernel command line?)"
    ip addr add "$ip/24" dev eth0
    setup_rdma
}

# switch_rdma OLD_DEV: the next phase's RDMA link instead of OLD_DEV, on the
# same eth0. Never both at once: with two RDMA devices on one netdev,
# rdma_cm could resolve the peer's address to either.
switch_rdma() {
    rdma link delete "$1" || die "rdma link delete $1 failed; the next fabric's scenarios would share eth0 with it"
    setup_rdma
}

# The current FABRIC's modules and its RDMA link on eth0, ACTIVE.
setup_rdma() {
    local m fabric_mods
    case $FABRIC in
        rxe) fabric_mods="rdma_rxe" ;;
        # siw computes its (optional) MPA CRC through the crypto API, which
        # modprobe does not follow as a symbol dependency: crc32c first. Its
        # alias also names crc32c_intel, which fails on a CPU without SSE4.2
        # (TCG) while the generic one is there: -q keeps that out of the log.
        siw) fabric_mods="crc32c siw" ;;
        *) die "unknown fabric '$FABRIC' (rxe or siw)" ;;
    esac
    for m in $fabric_mods rdma_cm rdma_ucm ib_uverbs ib_umad rpcrdma nfs nfsv3 nfsv4 nfsd; do
        modprobe -q "$m" || log "warning: modprobe $m failed"
    done
    rdma link add "$RDMA_DEV" type "$FABRIC" netdev eth0 \
        || die "rdma link add $RDMA_DEV type $FABRIC failed (module $FABRIC missing? the image builds siw.ko: see image/build-siw.sh)"
    local i
    for i in $(seq 1 40); do
        rdma link show "$RDMA_DEV/1" 2>/dev/null | grep -q 'state ACTIVE' && break
        sleep 0.5
    done
    rdma link show "$RDMA_DEV/1" | sed 's/^/  /'
    rdma link show "$RDMA_DEV/1" | grep -q 'state ACTIVE' || die "$RDMA_DEV did not become ACTIVE"
}

# Record every sunrpc tunable (name = value) into a file.
dump_tunables() {
    find /proc/sys/sunrpc -type f 2>/dev/null | sort | while read -r f; do
        printf '%s = %s\n' "${f#/proc/sys/}" "$(tr '\n' ' ' < "$f" 2>/dev/null | sed 's/ *$//')"
    done > "$1"
}

# Kernel tracing of the RPC-over-RDMA and RDMA CM tracepoints.
trace_start() {
    [ -d "$TRACEFS/events" ] || mount -t tracefs nodev "$TRACEFS" 2>/dev/null
    [ -d "$TRACEFS/events" ] || { log "warning: no tracefs, no kernel trace"; return 0; }
    echo 0 > "$TRACEFS/tracing_on"
    echo "${TRACE_BUFFER_KB:-32768}" > "$TRACEFS/buffer_size_kb"
    # 'tai' is CLOCK_TAI (wall clock, no leap-second offset set here), so trace
    # timestamps line up with the pcap's; fall back to the default if absent.
    if grep -qw tai "$TRACEFS/trace_clock"; then echo tai > "$TRACEFS/trace_clock"; fi
    echo > "$TRACEFS/trace"
    local s
    for s in $TRACE_SYSTEMS; do
        if [ -e "$TRACEFS/events/$s/enable" ]; then echo 1 > "$TRACEFS/events/$s/enable"
        else log "warning: no tracepoint system $s"; fi
    done
    echo 1 > "$TRACEFS/tracing_on"
}

# trace_stop FILE: stop, save the trace text, and say whether events were lost.
trace_stop() {
    [ -d "$TRACEFS/events" ] || return 0
    echo 0 > "$TRACEFS/tracing_on"
    local s
    for s in $TRACE_SYSTEMS; do
        [ -e "$TRACEFS/events/$s/enable" ] && echo 0 > "$TRACEFS/events/$s/enable"
    done
    cat "$TRACEFS/trace" > "$1"
    # The header says "entries-in-buffer/entries-written: A/B"; A < B means the
    # ring buffer overflowed and the trace is not complete.
    grep -m1 'entries-in-buffer' "$1" || true
    grep -E '^(overrun|dropped events):' "$TRACEFS/per_cpu/cpu0/stats" 2>/dev/null | tr '\n' ' '; echo
    echo > "$TRACEFS/trace"
}

# run_hook NAME SCENARIO: run /lab/hook/NAME.sh if the host passed --guest-hook.
# Contract (see captures/README.md): called as `NAME.sh SCENARIO OUTDIR`, with
# LAB_ROLE, LAB_SCENARIO, LAB_HOOK_OUT, LAB_HOOK_DIR, LAB_FABRIC (rxe or siw)
# and LAB_RDMA_DEV (rxe0 or siw0) in the environment, cwd
# = OUTDIR, bounded by HOOK_TIMEOUT seconds; anything it starts in the
# background must be stopped by the matching *-stop.sh hook.
run_hook() {
    local name=$1 sc=$2 h="$LAB/hook/$1.sh"
    [ -f "$h" ] || return 0
    local dir="$OUT/$sc/hook-$ROLE"
    mkdir -p "$dir"
    log "hook $name.sh $sc"
    ( cd "$dir" && LAB_ROLE=$ROLE LAB_SCENARIO=$sc LAB_HOOK_OUT=$dir LAB_HOOK_DIR=$LAB/hook \
        LAB_FABRIC=$FABRIC LAB_RDMA_DEV=$RDMA_DEV \
        timeout "${HOOK_TIMEOUT:-60}" bash "$h" "$sc" "$dir" ) >> "$dir/$name.log" 2>&1 \
        || log "warning: hook $name.sh exited $?"
}
