#!/bin/bash
# rdma-analyzer capture lab: real RPC-over-RDMA (NFS over soft-RoCE) traffic
# from two QEMU guests, with the guests' own kernel traces as ground truth.
#
#   captures/lab/run.sh [--out DIR] [--guest-hook DIR] [--keep-work]
#                       [--accel auto|kvm|tcg] [--rebuild]
#                       [--suite bookworm|bullseye|trixie] [--image-only]
#                       [--fabric rxe|siw|rxe+siw] [--siw-scenarios LIST]
#                       [SCENARIO...]
#
# --suite picks the guests' Debian release, hence their kernel: bookworm
# (default, Linux 6.1), bullseye (5.10), trixie (6.12); LAB_SUITE too.
# --image-only builds (or finds) that suite's cached image and stops.
# --fabric picks the RDMA link under NFS: rxe (default, soft-RoCE: RoCEv2 on
# UDP 4791) or siw (soft-iWARP: MPA/DDP/RDMAP over TCP port 20049); LAB_FABRIC too.
# rxe+siw runs the scenarios on rxe, then (same boot: the guests swap rxe0
# for siw0 and restart nfsd) the --siw-scenarios (default: the same list) on
# siw; the results are DIR/rxe/ and DIR/siw/, each laid out as a run of its own.
# Default scenarios: all (see guest/scenarios.sh, ALL_SCENARIOS); `diag` runs the
# scenarios that each induce one cause of the diagnosis (DIAG_SCENARIOS; three of
# them run the userspace RPC-over-RDMA peer, peer/rpcrdma-peer.py). The output
# folder gets, per scenario: SC.pcap (tcpdump -i eth0 -s 0 in the client),
# SC.client.trace.txt and SC.server.trace.txt (tracefs output of the rpcrdma,
# rdma_cma and ib_cma events), SC.json (summary); plus lab.json (the run),
# serial-*.log and details/ (command logs, mountstats, tunables).
# Details, timings and the guest hook contract: captures/README.md.
#
# What it does, in order: installs the host packages it needs (apt, once);
# builds the guest image or takes it from the cache; probes KVM (falls back
# to TCG); boots the server and the client guest on a private socket link;
# the guests run the scenarios and power themselves off; collects and
# summarises the results. Everything is bounded in time, and on exit it kills
# only the QEMU processes it started and removes only its own temp folder.
set -euo pipefail

# The whole script is one function, called on the last line: bash then parses
# it completely before running, so editing this file during a (long) run
# cannot break the run.
main() {

here=$(cd "$(dirname "$0")" && pwd)
invocation="$0 $*"

out=""
hook=""
keep_work=0
accel=${LAB_ACCEL:-auto}
rebuild=0
suite=${LAB_SUITE:-bookworm}
fabric=${LAB_FABRIC:-rxe}
siw_scenarios=${LAB_SIW_SCENARIOS:-}
image_only=0
scenarios=()

usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
    case $1 in
        --out) out=${2:?--out needs a folder}; shift 2 ;;
        --guest-hook) hook=${2:?--guest-hook needs a folder}; shift 2 ;;
        --keep-work) keep_work=1; shift ;;
        --accel) accel=${2:?--accel needs auto, kvm or tcg}; shift 2 ;;
        --rebuild) rebuild=1; shift ;;
        --image-only) image_only=1; shift ;;
        --suite) suite=${2:?--suite needs bookworm, bullseye or trixie}; shift 2 ;;
        --fabric) fabric=${2:?--fabric needs rxe, siw or rxe+siw}; shift 2 ;;
        --siw-scenarios) siw_scenarios=${2:?--siw-scenarios needs a list of scenarios}; shift 2 ;;
        -h|--help) usage 0 ;;
        -*) echo "run.sh: unknown option $1" >&2; usage 2 ;;
        *) scenarios+=("$1"); shift ;;
    esac
done

# Tunables (environment): guest memory, time limits, workload sizes.
MEM_MB=${LAB_MEM_MB:-2048}
RUN_TIMEOUT=${LAB_RUN_TIMEOUT:-1500}          # whole guest run, seconds (host side)
GUEST_WATCHDOG=$((RUN_TIMEOUT - 30))          # guests power off before the host kills them
KVM_PROBE_SECONDS=${LAB_KVM_PROBE_SECONDS:-20}

log() { echo "[$(date -u +%H:%M:%S)] lab: $*"; }
die() { echo "[$(date -u +%H:%M:%S)] lab: ERROR: $*" >&2; exit 1; }

case $suite in
    bullseye|bookworm|trixie) ;;
    *) die "--suite $suite: the lab builds guests of bullseye (5.10), bookworm (6.1) or trixie (6.12)" ;;
esac
case $fabric in
    rxe|siw|rxe+siw|siw+rxe) ;;
    *) die "--fabric $fabric: the lab runs NFS over rxe (soft-RoCE), siw (soft-iWARP) or both in one boot (rxe+siw)" ;;
esac
IFS=+ read -r -a fabrics <<< "$fabric"
[ -z "$siw_scenarios" ] || [ "${#fabrics[@]}" -gt 1 ] \
    || die "--siw-scenarios is for --fabric rxe+siw (one boot, both fabrics); with one fabric, name the scenarios"
[ "$(id -u)" = 0 ] || die "run as root: it installs packages, runs debootstrap and reads the guest image"

t_run0=$(date +%s)
[ -n "$out" ] || out=$here/out/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -n "$hook" ]; then
    [ -d "$hook" ] || die "--guest-hook $hook is not a folder"
    hook=$(cd "$hook" && pwd)
fi

# ------------------------------------------------------------ host packages
# qemu-utils is deliberately absent: on these machines a preinstalled
# backports version conflicts with Debian's qemu-system-common, and the lab
# never needs qemu-img (mkfs.ext4 -d makes the raw image).
host_pkgs=(qemu-system-x86 debootstrap e2fsprogs tcpdump tshark)
missing=()
for p in "${host_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# python3 (standard library only) runs summarize.py; any python3 will do.
command -v python3 > /dev/null || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
    log "installing host packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get update -q || die "apt-get update failed; check the network and /etc/apt/sources.list*"
    timeout 1200 apt-get install -y -q --no-install-recommends "${missing[@]}" \
        || die "apt-get install ${missing[*]} failed"
fi
for c in qemu-system-x86_64 debootstrap mkfs.ext4 tshark python3; do
    command -v "$c" > /dev/null || die "$c not found even after installing ${host_pkgs[*]}"
done

# ------------------------------------------------------------ guest image
# The cache key covers everything baked into the image (the suite too: one
# image per kernel of the matrix); the scenario scripts travel over 9p at
# boot time and are not part of it.
image_hash=$( { echo "suite=$suite"; cat "$here/image/build-image.sh" "$here/image/build-siw.sh" "$here/image/packages.txt" \
                 "$here/image/lab-boot" "$here/image/lab.service"; } | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/rdma-analyzer-lab/$image_hash
mkdir -p "$cache"
image_built=0
t_img0=$(date +%s)
(
    # One builder at a time per cache entry.
    flock -w 1800 9 || die "another lab run has held the image lock for 30 min"
    if [ "$rebuild" = 1 ]; then rm -f "$cache/rootfs.img"; fi
    if [ ! -f "$cache/rootfs.img" ]; then
        log "building the $suite guest image into $cache (debootstrap; a few minutes)"
        timeout 1800 "$here/image/build-image.sh" "$cache" "$suite" > "$out/image-build.log" 2>&1 \
            || die "image build failed; see $out/image-build.log"
        touch "$cache/.built-by-this-run.$$"
    fi
) 9> "$cache/.lock"
if [ -e "$cache/.built-by-this-run.$$" ]; then image_built=1; rm -f "$cache/.built-by-this-run.$$"; fi
t_img1=$(date +%s)
log "guest image ($suite): $cache ($( [ $image_built = 1 ] && echo "built in $((t_img1 - t_img0)) s" || echo cached))"
if [ "$image_only" = 1 ]; then
    sed 's/^/  /' "$cache/build-info.txt"
    return 0
fi

# ------------------------------------------------------------ work folder
work=$(mktemp -d /tmp/rdma-analyzer-lab.XXXXXX)
share=$work/share
mkdir -p "$share/guest" "$share/ctl" "$share/out"
cp "$here"/guest/*.sh "$share/guest/"
# The userspace RPC-over-RDMA peer (diag-rdma-error, diag-overrun, diag-rnr).
mkdir -p "$share/peer"; cp "$here"/peer/*.py "$share/peer/"
[ -n "$hook" ] && cp -r "$hook" "$share/hook"

qemu_pids=()
cleanup() {
    local p f
    # The recorded pids are the background subshells around `timeout`;
    # killing them leaves QEMU running, so QEMU's own pid files are read too.
    for f in "$work"/qemu-*.pid; do
        [ -f "$f" ] && qemu_pids+=("$(cat "$f")")
    done
    for p in "${qemu_pids[@]}"; do
        if kill -0 "$p" 2>/dev/null; then log "stopping QEMU pid $p"; kill "$p" 2>/dev/null || true; fi
    done
    sleep 1
    for p in "${qemu_pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    if [ "$keep_work" = 1 ]; then log "work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Scenario list: validated against the guest catalogue.
# shellcheck source=guest/scenarios.sh
all=$(ROLE=host bash -c ". '$here/guest/scenarios.sh'; echo \$ALL_SCENARIOS")
diag=$(ROLE=host bash -c ". '$here/guest/scenarios.sh'; echo \$DIAG_SCENARIOS")
[ ${#scenarios[@]} -gt 0 ] || read -r -a scenarios <<< "$all"
[ "${scenarios[*]}" = diag ] && read -r -a scenarios <<< "$diag"
# The scenarios of each fabric's part of the run.
declare -A scenarios_of
for f in "${fabrics[@]}"; do scenarios_of[$f]="${scenarios[*]}"; done
if [ -n "$siw_scenarios" ]; then
    scenarios_of[siw]=${siw_scenarios//,/ }
    [ "${scenarios_of[siw]}" = diag ] && scenarios_of[siw]=$diag
fi
# Whole names only: grep -w would take "v42" or "diag-slow" (a hyphen ends a word).
for sc in ${scenarios_of[*]}; do
    [[ " $all $diag " == *" $sc "* ]] || die "unknown scenario '$sc'; known: $all, and the induced causes (diag): $diag"
done

{
    echo "SCENARIOS=\"${scenarios[*]}\""
    echo "FABRIC=\"${fabrics[0]}\""
    echo "FABRICS=\"${fabrics[*]}\""
    for f in "${fabrics[@]}"; do echo "SCENARIOS_$f=\"${scenarios_of[$f]}\""; done
    # Pass through workload sizes if the caller set them (see scenarios.sh).
    for v in DDP_MB REMINV_MB PARALLEL_JOBS PARALLEL_BS PARALLEL_COUNT BIGDIR_ENTRIES \
             PARALLEL_CREDITS LOSS_PCT LOSS_MB ECN_PCT SLOW_MS SLOW_WRITES FREEZE_SECONDS DIAG_CREDITS ACL_ENTRIES ACL_TIMEOUT RECONNECT_DOWN RECONNECT_DOWN_MAX RECONNECT_METHOD CMD_TIMEOUT UMOUNT_TIMEOUT TRACE_BUFFER_KB HOOK_TIMEOUT; do
        [ -n "${!v:-}" ] && echo "$v=\"${!v}\""
    done
    true
} > "$share/config"

kernel_image=$cache/vmlinuz
initrd_image=$cache/initrd.img
root_image=$cache/rootfs.img

# qemu_cmd ROLE ACCEL NETDEV SERIAL_LOG MAC: the common QEMU command line.
# snapshot=on: both guests boot the same cached image; writes go to a
# throw-away overlay. Each guest has its own 9p share to the same folder.
qemu_cmd() {
    local role=$1 acc=$2 netdev=$3 serial=$4 mac=$5
    echo qemu-system-x86_64 -name "rdma-lab-$role" -accel "$acc" -smp 1 -m "$MEM_MB" \
        -display none -monitor none -no-reboot -serial "file:$serial" -pidfile "$work/qemu-$role.pid" \
        -kernel "$kernel_image" -initrd "$initrd_image" \
        -append "\"root=/dev/vda rw console=ttyS0 net.ifnames=0 mitigations=off lab.role=$role lab.timeout=$GUEST_WATCHDOG\"" \
        -drive "file=$root_image,if=virtio,format=raw,snapshot=on" \
        -virtfs "local,path=$share,mount_tag=lab,security_model=none,id=lab" \
        -netdev "$netdev" -device "virtio-net-pci,netdev=n0,mac=$mac"
}

# ------------------------------------------------------------ KVM probe
# A working KVM boots to userspace in seconds; nested KVM on these machines
# takes minutes (and -cpu host aborts), so a short bounded boot decides.
chosen=tcg
if [ "$accel" = kvm ] || { [ "$accel" = auto ] && [ -w /dev/kvm ]; }; then
    log "probing KVM (bounded ${KVM_PROBE_SECONDS}s boot)"
    t_probe0=$(date +%s)
    eval "timeout -k 5 $KVM_PROBE_SECONDS $(qemu_cmd probe kvm "user,id=n0" "$work/serial-probe.log" 52:54:00:99:00:09)" \
        > "$work/probe.out" 2>&1 &
    qemu_pids+=($!)
    wait $! || true
    if grep -q LAB-PROBE-OK "$work/serial-probe.log" 2>/dev/null; then
        chosen=kvm
    fi
    log "KVM probe: $( [ $chosen = kvm ] && echo "usable" || echo "unusable here, using TCG") ($(( $(date +%s) - t_probe0 )) s)"
    cp "$work/serial-probe.log" "$out/serial-probe.log" 2>/dev/null || true
fi
[ "$accel" = kvm ] && [ "$chosen" != kvm ] && die "--accel kvm asked for, but the KVM probe boot failed"
if [ "$accel" = tcg ]; then chosen=tcg; fi
accel_arg=$chosen
[ "$chosen" = tcg ] && accel_arg=tcg,thread=single

# ------------------------------------------------------------ boot the guests
# A free TCP port on loopback for the point-to-point link.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log "booting server and client guests ($chosen, ${MEM_MB} MiB each, link on 127.0.0.1:$port); scenarios: $(for f in "${fabrics[@]}"; do printf '%s on %s; ' "${scenarios_of[$f]}" "$f"; done)"
t_boot0=$(date +%s)
eval "timeout -k 10 $RUN_TIMEOUT $(qemu_cmd server "$accel_arg" "socket,id=n0,listen=127.0.0.1:$port" "$out/serial-server.log" 52:54:00:99:00:01)" \
    > "$out/qemu-server.log" 2>&1 &
qemu_pids+=($!); server_pid=$!
sleep 1   # the listener must exist before the client connects
eval "timeout -k 10 $RUN_TIMEOUT $(qemu_cmd client "$accel_arg" "socket,id=n0,connect=127.0.0.1:$port" "$out/serial-client.log" 52:54:00:99:00:02)" \
    > "$out/qemu-client.log" 2>&1 &
qemu_pids+=($!); client_pid=$!

# Follow the guests' logs while waiting; note when the server is up.
t_server_up=""
t_abort=""
shown_server=0; shown_client=0
while kill -0 "$server_pid" 2>/dev/null || kill -0 "$client_pid" 2>/dev/null; do
    sleep 2
    if [ -z "$t_server_up" ] && [ -e "$share/ctl/server-up" ]; then t_server_up=$(date +%s); fi
    # An aborted run has failed already. A guest whose NFS mount hangs (a
    # wedged server) cannot power off: its workload's processes, stuck in
    # the mount, hold its console pipe open. Waiting for the host timeout
    # (RUN_TIMEOUT) would only delay the retry, so it gets 90 s.
    if [ -e "$share/ctl/abort" ]; then
        t_abort=${t_abort:-$(date +%s)}
        if [ $(( $(date +%s) - t_abort )) -gt 90 ]; then
            log "the run aborted (above) and a guest has not powered off 90 s later: stopping it"
            for f in "$work"/qemu-*.pid; do [ -f "$f" ] && { kill "$(cat "$f")" 2>/dev/null || true; }; done
            sleep 2
        fi
    fi
    for r in server client; do
        f=$share/out/$r.log
        [ -f "$f" ] || continue
        n=$(wc -l < "$f")
        var=shown_$r
        if [ "$n" -gt "${!var}" ]; then sed -n "$(( ${!var} + 1 )),${n}p" "$f" | sed 's/^/  /'; printf -v "$var" %s "$n"; fi
    done
done
wait "$server_pid" || log "server QEMU exited with status $? (124 = host timeout)"
wait "$client_pid" || log "client QEMU exited with status $? (124 = host timeout)"
t_boot1=$(date +%s)
complete=1
[ -e "$share/ctl/all-done" ] || { complete=0; log "WARNING: the client did not finish all scenarios; see $out/serial-*.log and details/"; }

# ------------------------------------------------------------ collect
# collect FABRIC SRC DEST: one fabric's results from the share (SRC) into
# DEST, summarised as a run of its own (lab.json says which fabric).
collect() {
    local f=$1 src=$2 dest=$3 sc d
    local -a scs
    read -r -a scs <<< "${scenarios_of[$f]}"
    mkdir -p "$dest/details"
    cp "$share/out"/*.log "$src"/*.txt "$dest/details/" 2>/dev/null || true
    for sc in "${scs[@]}"; do
        d=$src/$sc
        [ -d "$d" ] || { log "no results for $sc on $f"; continue; }
        [ -f "$d/client.pcap" ] && cp "$d/client.pcap" "$dest/$sc.pcap"
        [ -f "$d/client.trace" ] && cp "$d/client.trace" "$dest/$sc.client.trace.txt"
        [ -f "$d/server.trace" ] && cp "$d/server.trace" "$dest/$sc.server.trace.txt"
        # The mount's block of /proc/self/mountstats just before the unmount:
        # the kernel's own counters for the same window as the capture.
        [ -f "$d/mountstats.txt" ] && cp "$d/mountstats.txt" "$dest/$sc.mountstats.txt"
        mkdir -p "$dest/details/$sc"
        find "$d" -maxdepth 1 -type f ! -name client.pcap ! -name '*.trace' -exec cp {} "$dest/details/$sc/" \;
        [ -d "$d/hook-client" ] && cp -r "$d/hook-client" "$dest/details/$sc/"
        [ -d "$d/hook-server" ] && cp -r "$d/hook-server" "$dest/details/$sc/"
    done
    # Both fabrics' parts share the boot: the guests' logs go with each.
    [ "$dest" = "$out" ] || cp "$out"/serial-*.log "$out"/qemu-*.log "$dest/" 2>/dev/null || true
    t_run1=$(date +%s)
    python3 "$here/summarize.py" --out "$dest" --share-out "$src" \
        --accel "$chosen" --fabric "$f" --image-hash "$image_hash" --image-dir "$cache" --image-built "$image_built" \
        --image-seconds $((t_img1 - t_img0)) \
        --boot-to-server-up "$( [ -n "$t_server_up" ] && echo $((t_server_up - t_boot0)) || echo -1)" \
        --guests-seconds $((t_boot1 - t_boot0)) --total-seconds $((t_run1 - t_run0)) \
        --command "$invocation" -- "${scs[@]}" \
        || log "summarize.py failed; the raw results are still in $dest"
}
if [ ${#fabrics[@]} -eq 1 ]; then
    collect "$fabric" "$share/out" "$out"
else
    for f in "${fabrics[@]}"; do collect "$f" "$share/out/$f" "$out/$f"; done
fi
log "done in $((t_run1 - t_run0)) s; results in $out"
# What did run is collected above; the status says it was not all of it
# (ebpf-probes/lab.sh retries on it).
[ "$complete" = 1 ] || die "the scenarios did not all run (see the WARNING above and $out/serial-*.log)"
}

main "$@"
