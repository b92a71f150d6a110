# Scenario catalogue (sourced by server.sh and client.sh).
#
# A scenario NAME (e.g. v3-ddp) maps to shell functions with the dashes turned
# into underscores (v3_ddp):
#   info_v3_ddp           one line: what it exercises (goes into the summary)
#   server_prep_v3_ddp    optional, on the server before tracing starts
#   server_reset_v3_ddp   optional, on the server after the scenario
#   client_v3_ddp         the workload, on the client, between tcpdump start/stop
# The workload runs with $SC (scenario name), $SCO (its output folder on the
# share) and $MNT (mount point); the export is mounted by the workload itself
# so the CM exchange and the NFS mount traffic are part of the capture.

ALL_SCENARIOS="v3-inline v41-inline v42-inline v3-ddp v42-ddp v42-reminv parallel inline-thresholds reconnect nconnect"
# Scenarios that induce one cause of the diagnosis each (docs/diagnosis.md):
# the cause is written down here, before the run, in each info_ line, and
# analyzer/tests/diagnosis_lab.rs checks that the diagnosis names it first.
# `run.sh diag` runs them all.
DIAG_SCENARIOS="diag-loss diag-ecn diag-slow-server diag-unresponsive diag-credits diag-inline diag-acl diag-nfs-errors diag-rdma-error diag-overrun diag-rnr"

fn_of() { echo "${1//-/_}"; }
scenario_known() { declare -F "client_$(fn_of "$1")" > /dev/null; }

# ---------------------------------------------------------------- helpers ---

MNT=/mnt/lab

# run 'COMMAND': log it (what ran, when) and run it, bounded; its output goes
# to the scenario's output.txt.
run() {
    local t0 t1 rc
    t0=$(date +%s.%N)
    timeout "${CMD_TIMEOUT:-180}" bash -c "$1" >> "$SCO/output.txt" 2>&1 < /dev/null
    rc=$?
    t1=$(date +%s.%N)
    printf '%s\t%s\t%s\trc=%s\t%s\n' "$(date -u -d "@$t0" +%H:%M:%S.%3N)" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3fs", b-a}')" "$ROLE" "$rc" "$1" >> "$SCO/commands.txt"
    [ "$rc" = 0 ] || log "command failed (rc=$rc): $1"
    return $rc
}

# lab_mount OPTIONS [EXPORT]: mount the export over RDMA and record the mount
# options the kernel actually uses.
# device_counters WHEN: the RDMA devices' own counters (rxe's hw_counters,
# the port's counters), one "device port group counter value" line each,
# appended to $SCO/device-counters.txt under a "# WHEN epoch" line.
device_counters() {
    local f rest
    echo "# $1 $(date +%s.%N)" >> "$SCO/device-counters.txt"
    for f in /sys/class/infiniband/*/ports/*/hw_counters/* /sys/class/infiniband/*/ports/*/counters/*; do
        [ -f "$f" ] || continue
        rest=${f#/sys/class/infiniband/}
        # rxe0/ports/1/hw_counters/NAME -> rxe0 1 hw_counters NAME
        echo "$(echo "$rest" | awk -F/ '{print $1, $3, $4, $5}') $(cat "$f" 2>/dev/null || echo '?')"
    done >> "$SCO/device-counters.txt"
}

lab_mount() {
    device_counters before-mount
    mkdir -p "$MNT"
    run "mount -t nfs -o $1,proto=rdma,port=20049 $SERVER_IP:${2:-$EXPORT} $MNT" || return 1
    grep " $MNT " /proc/mounts >> "$SCO/mounts.txt"
    echo "requested=$1,proto=rdma,port=20049" >> "$SCO/mount-requests.txt"
}

# lab_umount: keep the transport statistics ("xprt: rdma ..." counts read,
# write and reply chunks) before unmounting.
lab_umount() {
    device_counters before-umount
    awk -v m="$MNT" '$0 ~ "mounted on " m " " {p=1} p && /^device / && $0 !~ "mounted on " m " " {p=0} p' \
        /proc/self/mountstats >> "$SCO/mountstats.txt"
    CMD_TIMEOUT=${UMOUNT_TIMEOUT:-90} run "umount $MNT" || run "umount -f -l $MNT"
}

drop_caches() { run "sync; echo 3 > /proc/sys/vm/drop_caches"; }

set_tunable() {   # set_tunable PATH VALUE (under /proc/sys), logged
    if [ -w "/proc/sys/$1" ]; then run "echo $2 > /proc/sys/$1"
    else log "tunable $1 does not exist in this kernel; skipped"; fi
}

# Server-side helpers.
prep_dir() { rm -rf "${EXPORT:?}/$SC"; mkdir -p "$EXPORT/$SC"; chmod 777 "$EXPORT/$SC"; }

# A directory with hundreds of long names (READDIR/READDIRPLUS replies far
# larger than the 4 KiB inline threshold: reply chunks) and a ~1.5 KB symlink
# target (READLINK: reply chunk).
prep_bigdir_and_link() {
    local d=$EXPORT/$SC i pad
    mkdir -p "$d/bigdir"
    pad=$(printf 'x%.0s' $(seq 1 180))
    for i in $(seq -w 1 "${BIGDIR_ENTRIES:-300}"); do : > "$d/bigdir/entry-$i-$pad"; done
    ln -s "$(printf 'dir%04d/' $(seq 1 188))target" "$d/longlink"
}

# ------------------------------------------------------------- workloads ---

# Small-file operations. Their calls and data fit the 4 KiB inline buffers,
# but the Linux client asks for a reply chunk whenever the largest possible
# reply exceeds the inline threshold (READDIR/READDIRPLUS, GETACL after
# `ls -l`, NFSv4 EXCHANGE_ID and GETATTR with ACL-sized buffers) and for a
# write chunk when it reads a whole page through the page cache; so these
# scenarios are "mostly inline", and show both cases on small payloads.
inline_workload() {
    local d=$MNT/$SC
    run "head -c 1000 /dev/zero | tr '\\0' a > $d/small.txt"   # CREATE/OPEN, WRITE, COMMIT
    run "touch $d/empty"                                        # CREATE
    run "chmod 600 $d/small.txt"                                # SETATTR
    run "mkdir $d/sub"                                          # MKDIR
    drop_caches
    run "stat $d/small.txt > /dev/null"                         # LOOKUP, GETATTR
    run "dd if=$d/small.txt of=/dev/null bs=1000 count=1 iflag=direct"  # ACCESS, READ of 1000 bytes: inline reply
    run "cat $d/small.txt > /dev/null"                          # READ of a whole page (4 KiB > inline): write chunk
    run "ls -l $d > /dev/null"                                  # READDIR(PLUS), small
    run "mv $d/empty $d/sub/empty2"                             # RENAME
    run "rm $d/sub/empty2 && rmdir $d/sub"                      # REMOVE, RMDIR
    run "stat -f $d > /dev/null"                                # FSSTAT / statfs
}

# Direct data placement: read chunks, write chunks, reply chunks.
ddp_workload() {
    local d=$MNT/$SC mb=${DDP_MB:-2}
    run "dd if=/dev/zero of=$d/big bs=1M count=$mb oflag=direct"   # WRITE: read chunk
    run "dd if=$d/big of=/dev/null bs=1M iflag=direct"              # READ: write chunk
    run "ls -f $d/bigdir > /dev/null"                               # READDIR(PLUS) only, no per-entry stat: reply chunks
    run "readlink $d/longlink > /dev/null"                          # READLINK: reply chunk
}

# ------------------------------------------------------------- scenarios ---

info_v3_inline() { echo "NFSv3 small-file CREATE/WRITE/COMMIT/SETATTR/MKDIR/LOOKUP/GETATTR/ACCESS/READ/READDIRPLUS/RENAME/REMOVE/RMDIR/FSSTAT: calls and data inline (a 1000-byte direct READ answered inline); reply chunks only where the reply size is unbounded (READDIRPLUS, NFSACL GETACL), one write chunk for a page-cache READ"; }
server_prep_v3_inline() { prep_dir; }
client_v3_inline() { lab_mount vers=3 && inline_workload; lab_umount; }

info_v41_inline() { echo "NFSv4.1 session set-up (EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE, SEQUENCE) and the same small-file workload as COMPOUNDs: mostly inline, reply chunks for EXCHANGE_ID/GETATTR/READDIR replies of unbounded size, one write chunk for a page-cache READ"; }
server_prep_v41_inline() { prep_dir; }
client_v41_inline() { lab_mount vers=4.1 && inline_workload; lab_umount; }

info_v42_inline() { echo "NFSv4.2 session set-up and the same small-file workload as COMPOUNDs: mostly inline, reply chunks for EXCHANGE_ID/GETATTR/READDIR replies of unbounded size, one write chunk for a page-cache READ"; }
server_prep_v42_inline() { prep_dir; }
client_v42_inline() { lab_mount vers=4.2 && inline_workload; lab_umount; }

info_v3_ddp() { echo "NFSv3, rsize=wsize=256 KiB: dd bs=1M direct WRITEs (256 KiB WRITE RPCs with 2-segment read chunks), direct READs (2-segment write chunks with different R_keys, so no Send With Invalidate), READDIRPLUS of 300 long names and READLINK of a 1.5 KB target (reply chunks)"; }
server_prep_v3_ddp() { prep_dir; prep_bigdir_and_link; }
client_v3_ddp() { lab_mount vers=3 && ddp_workload; lab_umount; }

info_v42_ddp() { echo "NFSv4.2, rsize=wsize=256 KiB: dd bs=1M direct WRITEs (read chunks), direct READs (2-segment write chunks), READDIR of 300 long names and READLINK of a 1.5 KB target (reply chunks)"; }
server_prep_v42_ddp() { prep_dir; prep_bigdir_and_link; }
client_v42_ddp() { lab_mount vers=4.2 && ddp_workload; lab_umount; }

info_nconnect() { echo "NFSv3 with nconnect=4: one mount, four RDMA transports (four connections, four xprt: lines in mountstats); ${NCONNECT_JOBS:-16} concurrent direct dd WRITEs then READs (bs=64k) spread over them"; }
server_prep_nconnect() { prep_dir; }
client_nconnect() {
    local d=$MNT/$SC i n=${NCONNECT_JOBS:-16} pids=()
    lab_mount vers=3,nconnect=4 || { lab_umount; return 1; }
    for i in $(seq 1 "$n"); do
        dd if=/dev/zero of="$d/n$i" bs=64k count=4 oflag=direct 2>/dev/null &
        pids+=($!)
    done
    wait "${pids[@]}"
    pids=()
    for i in $(seq 1 "$n"); do
        dd if="$d/n$i" of=/dev/null bs=64k iflag=direct 2>/dev/null &
        pids+=($!)
    done
    wait "${pids[@]}"
    echo "$(date -u +%H:%M:%S.%3N)	-	client	-	$n jobs: dd of=$d/nN bs=64k count=4 oflag=direct, then read back" >> "$SCO/commands.txt"
    lab_umount
}

info_v42_reminv() { echo "NFSv4.2 with rsize=wsize=131072: one-segment write chunks, so the server answers READs with Send With Invalidate (remote invalidation)"; }
server_prep_v42_reminv() { prep_dir; }
client_v42_reminv() {
    local d=$MNT/$SC
    lab_mount vers=4.2,rsize=131072,wsize=131072 || { lab_umount; return 1; }
    run "dd if=/dev/zero of=$d/big bs=1M count=${REMINV_MB:-1} oflag=direct"   # 128 KiB WRITEs
    run "dd if=$d/big of=/dev/null bs=1M iflag=direct"                          # 128 KiB READs, SendInv
    lab_umount
}

info_parallel() { echo "NFSv3, ${PARALLEL_JOBS:-96} concurrent direct dd (bs=${PARALLEL_BS:-8k}) writing then reading, server credits lowered to ${PARALLEL_CREDITS:-16} (svc_rdma/max_requests): more RPCs ready than credits granted, so the credit window runs full"; }
# Under TCG one vCPU cannot start processes fast enough to keep 64 RPCs (the
# default grant) in flight; a smaller grant makes the limit reachable.
server_prep_parallel() {
    prep_dir
    if [ -w /proc/sys/sunrpc/svc_rdma/max_requests ] && [ -n "${PARALLEL_CREDITS:-16}" ]; then
        cat /proc/sys/sunrpc/svc_rdma/max_requests > /tmp/max_requests.saved
        echo "${PARALLEL_CREDITS:-16}" > /proc/sys/sunrpc/svc_rdma/max_requests
    fi
}
server_reset_parallel() {
    [ -f /tmp/max_requests.saved ] && cat /tmp/max_requests.saved > /proc/sys/sunrpc/svc_rdma/max_requests
}
client_parallel() {
    local d=$MNT/$SC i n=${PARALLEL_JOBS:-96} bs=${PARALLEL_BS:-8k} cnt=${PARALLEL_COUNT:-2}
    lab_mount vers=3 || { lab_umount; return 1; }
    # All jobs wait on one lock the parent holds, then start together.
    exec 9> /tmp/parallel.lock
    flock -x 9
    local pids=()
    for i in $(seq 1 "$n"); do
        ( flock -s /tmp/parallel.lock true
          dd if=/dev/zero of="$d/p$i" bs="$bs" count="$cnt" oflag=direct 2>/dev/null
          dd if="$d/p$i" of=/dev/null bs="$bs" iflag=direct 2>/dev/null ) 9>&- &
        pids+=($!)
    done
    echo "$(date -u +%H:%M:%S.%3N)	-	client	-	$n parallel jobs: dd of=$d/pN bs=$bs count=$cnt oflag=direct; dd if=$d/pN bs=$bs iflag=direct" >> "$SCO/commands.txt"
    sleep 2
    flock -u 9; exec 9>&-
    echo "$(date -u +%H:%M:%S.%3N)	-	client	-	released the $n jobs" >> "$SCO/commands.txt"
    # Bounded wait: a watchdog kills the jobs if they hang.
    # (Its output goes to the command log, not to our stdout: a leftover sleep
    # holding the console pipe open would delay the guest's power-off.)
    ( sleep "${CMD_TIMEOUT:-180}"; echo "parallel jobs still running after ${CMD_TIMEOUT:-180}s; killing them"
      kill "${pids[@]}" ) >> "$SCO/commands.txt" 2>&1 < /dev/null &
    local watchdog=$!
    wait "${pids[@]}"
    kill "$watchdog" 2>/dev/null; wait "$watchdog" 2>/dev/null
    echo "$(date -u +%H:%M:%S.%3N)	-	client	-	all $n jobs finished" >> "$SCO/commands.txt"
    lab_umount
}

info_inline_thresholds() { echo "NFSv3 mounted twice with different client inline thresholds (/proc/sys/sunrpc/rdma_max_inline_{read,write} = 1024, then 16384 with the server's max_req_size 16384): the CM private data and the inline-vs-chunk decisions for 3000 and 12000 byte WRITEs/READs change"; }
server_prep_inline_thresholds() {
    prep_dir
    # The server advertises its receive size (max_req_size) in the CM REP; raise
    # it so the client's 16 KiB inline sends are accepted.
    [ -w /proc/sys/sunrpc/svc_rdma/max_req_size ] && {
        cat /proc/sys/sunrpc/svc_rdma/max_req_size > /tmp/max_req_size.saved
        echo 16384 > /proc/sys/sunrpc/svc_rdma/max_req_size; }
}
server_reset_inline_thresholds() {
    [ -f /tmp/max_req_size.saved ] && cat /tmp/max_req_size.saved > /proc/sys/sunrpc/svc_rdma/max_req_size
}
client_inline_thresholds() {
    local d=$MNT/$SC w r saved_w saved_r
    saved_w=$(cat /proc/sys/sunrpc/rdma_max_inline_write 2>/dev/null || echo 4096)
    saved_r=$(cat /proc/sys/sunrpc/rdma_max_inline_read 2>/dev/null || echo 4096)
    for w in 1024 16384; do
        r=$w
        set_tunable sunrpc/rdma_max_inline_write "$w"
        set_tunable sunrpc/rdma_max_inline_read "$r"
        if lab_mount vers=3; then
            run "dd if=/dev/zero of=$d/f3000-$w bs=3000 count=1 oflag=direct"
            run "dd if=/dev/zero of=$d/f12000-$w bs=12000 count=1 oflag=direct"
            run "dd if=$d/f3000-$w of=/dev/null bs=3000 iflag=direct"
            run "dd if=$d/f12000-$w of=/dev/null bs=12000 iflag=direct"
            run "ls -l $d > /dev/null"
        fi
        lab_umount
    done
    set_tunable sunrpc/rdma_max_inline_write "$saved_w"
    set_tunable sunrpc/rdma_max_inline_read "$saved_r"
}

# The reconnect's trigger. On siw the default is the client's link: a
# blackhole only stalls the TCP connection under iWARP (TCP retransmits for
# many minutes, tcp_retries2), where an RC QP fails after 7 retries.
reconnect_method() {
    local m=${RECONNECT_METHOD:-}
    [ -n "$m" ] || { [ "${FABRIC:-rxe}" = siw ] && m=client-link || m=server-blackhole; }
    # client-rxe: the name from before the lab had a second fabric.
    [ "$m" = client-rxe ] && m=client-link
    echo "$m"
}

info_reconnect() {
    case $(reconnect_method) in
        server-blackhole) echo "NFSv3 direct 16 KiB WRITEs in a loop while the server drops every frame (ingress: tc matchall drop; egress: netem loss 100%) until the client's QP gives up: RC retransmissions with the same PSN, RETRY_EXC_ERR, DREQ, CM REQ retries, then a new REQ/REP/RTU (new QP) and the pending XID sent again" ;;
        server-link) echo "NFSv3 direct 16 KiB WRITEs in a loop while the server's eth0 is down for ${RECONNECT_DOWN:-25}s: RC retransmissions, QP error, a second CM exchange and the pending XID sent again" ;;
        client-link) echo "NFSv3 direct 16 KiB WRITEs in a loop while the client's ${RDMA_DEV:-rxe0} is deleted for ${RECONNECT_DOWN:-25}s and added again: device removal, a new connection (CM REQ/REP/RTU on rxe, TCP and MPA on siw) and the pending XID sent again" ;;
    esac
}
server_prep_reconnect() { prep_dir; }
server_reset_reconnect() { tc qdisc del dev eth0 root 2>/dev/null; tc qdisc del dev eth0 clsact 2>/dev/null; ip link set eth0 up; true; }

# client_saw EVENT: has the client's own trace recorded EVENT in this scenario?
client_saw() { grep -q "$1" "$TRACEFS/trace" 2>/dev/null; }

client_reconnect() {
    local d=$MNT/$SC start c0 c
    lab_mount vers=3 || { lab_umount; return 1; }
    rm -f /tmp/reconnect.stop; echo 0 > /tmp/reconnect.count
    # A slow, steady stream of direct writes, so I/O is in flight whatever the
    # moment the link drops, without a large capture. Each completed write
    # bumps a counter, so we can tell when I/O flows again.
    ( i=0
      while [ ! -e /tmp/reconnect.stop ] && [ "$i" -lt 400 ]; do
          i=$((i + 1))
          timeout 300 dd if=/dev/zero of="$d/stream" bs=16k count=1 seek="$i" oflag=direct conv=notrunc 2>/dev/null \
              && echo "$i" > /tmp/reconnect.count
          sleep 0.3
      done ) > /dev/null 2>&1 < /dev/null &
    local writer=$!
    echo "$(date -u +%H:%M:%S.%3N)	-	client	-	background loop: dd if=/dev/zero of=$d/stream bs=16k count=1 seek=N oflag=direct conv=notrunc; sleep 0.3" >> "$SCO/commands.txt"
    sleep 3
    case $(reconnect_method) in
        server-blackhole)
            # The server drops all frames without touching any device state, so
            # rxe keeps its GIDs and answers the new REQ at once when the drop
            # ends. The drop lasts until this client's QP has given up (about
            # 7 retries 2 s apart) and xprtrdma has tried once more, bounded.
            run "touch $CTL/$SC.action.blackhole-on"
            wait_for "$CTL/$SC.action.blackhole-on.done" 60
            start=$(date +%s)
            while ! client_saw xprtrdma_disconnect && [ $(( $(date +%s) - start )) -lt "${RECONNECT_DOWN_MAX:-120}" ]; do sleep 1; done
            client_saw xprtrdma_disconnect || log "the QP did not fail within ${RECONNECT_DOWN_MAX:-120}s"
            sleep 3   # a CM REQ or two into the void
            echo "$(date -u +%H:%M:%S.%3N)	$(( $(date +%s) - start ))s	client	-	QP failed and xprtrdma disconnected; ending the drop" >> "$SCO/commands.txt"
            run "touch $CTL/$SC.action.blackhole-off"
            wait_for "$CTL/$SC.action.blackhole-off.done" 60
            ;;
        server-link)
            # The server takes its own eth0 down and up. Note: after that, the
            # server's rxe sometimes does not answer CM REQs any more (seen
            # under heavy host load), hence not the default.
            run "touch $CTL/$SC.action.bounce"
            wait_for "$CTL/$SC.action.bounce.done" $(( ${RECONNECT_DOWN:-25} + 60 ))
            ;;
        client-link)
            # Device removal on the client: xprtrdma drops the connection at once.
            run "rdma link delete $RDMA_DEV"
            sleep "${RECONNECT_DOWN:-25}"
            run "rdma link add $RDMA_DEV type $FABRIC netdev eth0"
            ;;
    esac
    # Wait (bounded) until three more writes went through on the new connection.
    c0=$(cat /tmp/reconnect.count)
    log "link back; waiting for writes to flow again (done so far: $c0)"
    start=$(date +%s)
    while :; do
        c=$(cat /tmp/reconnect.count)
        [ "$c" -ge $((c0 + 3)) ] && break
        if [ $(( $(date +%s) - start )) -gt 180 ]; then log "no write completed within 180s after the link came back"; break; fi
        sleep 1
    done
    echo "$(date -u +%H:%M:%S.%3N)	$(( $(date +%s) - start ))s	client	-	writes flowing again ($c0 -> $c)" >> "$SCO/commands.txt"
    touch /tmp/reconnect.stop
    start=$(date +%s)
    while kill -0 "$writer" 2>/dev/null; do
        [ $(( $(date +%s) - start )) -gt 60 ] && { log "writer still stuck; killing it"; kill "$writer"; break; }
        sleep 0.5
    done
    wait "$writer" 2>/dev/null
    # A hung hard mount would make these wait their full timeout: shorten it.
    CMD_TIMEOUT=60 run "stat $d/stream"
    lab_umount
}

# ------------------------------------------------- induced causes (diag-*) ---

# An export of its own, on an ext4 file system the scenario controls: over a
# loop device, optionally behind dm-delay (every read and write of the
# block device delayed by DELAY ms), so it can be slowed down or frozen.
#   prep_own_export [DELAY_MS]    server_reset: reset_own_export
own_export_dir() { echo "/srv/$SC"; }
prep_own_export() {
    local img=/var/tmp/$SC.img dir loop dev
    dir=$(own_export_dir)
    truncate -s 64M "$img"
    loop=$(losetup -f --show "$img") || { log "losetup failed"; return 1; }
    echo "$loop" > /tmp/own-export.loop
    run "mkfs.ext4 -q -F $loop"
    dev=$loop
    if [ -n "${1:-}" ]; then
        modprobe dm-delay
        run "echo '0 $(blockdev --getsz "$loop") delay $loop 0 $1' | dmsetup create labdelay" && dev=/dev/mapper/labdelay
    fi
    mkdir -p "$dir"; run "mount $dev $dir"; chmod 777 "$dir"
    cp /etc/exports /tmp/exports.saved
    echo "$dir 10.99.0.0/24(rw,sync,no_subtree_check,no_root_squash,insecure,fsid=4242)" >> /etc/exports
    run "exportfs -ra"
}
reset_own_export() {
    local dir
    dir=$(own_export_dir)
    fsfreeze -u "$dir" 2>/dev/null
    [ -f /tmp/exports.saved ] && cp /tmp/exports.saved /etc/exports && exportfs -ra
    umount "$dir" 2>/dev/null || umount -l "$dir"
    dmsetup remove labdelay 2>/dev/null
    [ -f /tmp/own-export.loop ] && losetup -d "$(cat /tmp/own-export.loop)"
    rm -f "/var/tmp/$SC.img" /tmp/own-export.loop
}

# action NAME [SECONDS]: ask the server for NAME (see server_action) and wait
# until it is done.
action() {
    run "touch $CTL/$SC.action.$1"
    wait_for "$CTL/$SC.action.$1.done" "${2:-60}"
}

# RoCE traffic class for the connections rdma_cm makes from now on
# (configfs): 2 is ECT(0), so a queue can mark CE instead of dropping.
set_roce_tos() {
    mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
    mkdir -p /sys/kernel/config/rdma_cm/rxe0
    run "echo $1 > /sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos"
}

info_diag_loss() { echo "induces network_loss: NFSv3 direct 256 KiB WRITEs and READs of ${LOSS_MB:-1} MiB while the server's eth0 drops ${LOSS_PCT:-2}% of its frames (tc netem loss): RC retransmissions and PSN sequence error NAKs"; }
server_prep_diag_loss() { prep_dir; }
server_reset_diag_loss() { tc qdisc del dev eth0 root 2>/dev/null; true; }
client_diag_loss() {
    local d=$MNT/$SC
    lab_mount vers=3 || { lab_umount; return 1; }
    action netem-loss
    run "dd if=/dev/zero of=$d/big bs=256k count=$(( ${LOSS_MB:-1} * 4 )) oflag=direct"
    run "dd if=$d/big of=/dev/null bs=256k iflag=direct"
    action netem-off
    lab_umount
}

info_diag_ecn() { echo "induces congestion: connections with RoCE traffic class ECT(0) (rdma_cm default_roce_tos 2) and a server queue that marks ${ECN_PCT:-5}% of its frames CE instead of dropping them (tc netem loss ecn), during NFSv3 direct 256 KiB WRITEs and READs of 1 MiB"; }
server_prep_diag_ecn() { prep_dir; set_roce_tos 2; }
server_reset_diag_ecn() { tc qdisc del dev eth0 root 2>/dev/null; set_roce_tos 0; true; }
client_diag_ecn() {
    local d=$MNT/$SC
    set_roce_tos 2
    lab_mount vers=3 || { lab_umount; set_roce_tos 0; return 1; }
    action netem-ecn
    run "dd if=/dev/zero of=$d/big bs=256k count=4 oflag=direct"
    run "dd if=$d/big of=/dev/null bs=256k iflag=direct"
    action netem-off
    lab_umount
    set_roce_tos 0
}

info_diag_slow_server() { echo "induces server_time: NFSv3 FILE_SYNC 16 KiB WRITEs (dd oflag=direct,dsync) to an export on ext4 over dm-delay, ${SLOW_MS:-150} ms per block I/O: the server holds each WRITE for hundreds of ms while the network moves its data in under one"; }
server_prep_diag_slow_server() { prep_own_export "${SLOW_MS:-150}"; }
server_reset_diag_slow_server() { reset_own_export; }
client_diag_slow_server() {
    local d=$MNT i
    lab_mount vers=3 "$(own_export_dir)" || { lab_umount; return 1; }
    for i in $(seq 1 "${SLOW_WRITES:-16}"); do
        run "dd if=/dev/zero of=$d/slow bs=16k count=1 seek=$i oflag=direct,dsync conv=notrunc"
    done
    lab_umount
}

info_diag_unresponsive() { echo "induces server_unresponsive: NFSv3 direct WRITEs to an export whose ext4 the server freezes (fsfreeze): the connection stays up and ACKs every Send, no reply comes; the capture ends ${FREEZE_SECONDS:-5} s into the freeze, UDP datagrams to the server marking the time"; }
server_prep_diag_unresponsive() { prep_own_export; }
server_reset_diag_unresponsive() { reset_own_export; }
client_diag_unresponsive() {
    local d=$MNT w=() i
    lab_mount vers=3 "$(own_export_dir)" || { lab_umount; return 1; }
    # The files exist before the freeze, so what waits is a WRITE (a CREATE
    # could wait in the client, on the directory, before it is sent).
    for i in 1 2; do run "dd if=/dev/zero of=$d/frozen$i bs=16k count=1 oflag=direct"; done
    action freeze
    for i in 1 2; do
        ( timeout 300 dd if=/dev/zero of="$d/frozen$i" bs=16k count=1 oflag=direct conv=notrunc ) > /dev/null 2>&1 < /dev/null &
        w+=($!)
    done
    echo "$(date -u +%H:%M:%S.%3N)	-	client	-	2 background dd of=$d/frozenN bs=16k count=1 oflag=direct conv=notrunc into the frozen export" >> "$SCO/commands.txt"
    # The link stays quiet while the calls wait (nothing to retransmit, no
    # keep-alive in RC), and a pcap does not record when its capture ended:
    # other traffic on the port, as on any production host, marks the time
    # (here a UDP datagram to the discard port every half second).
    run "for i in \$(seq 1 $(( ${FREEZE_SECONDS:-5} * 2 ))); do echo mark > /dev/udp/$SERVER_IP/9; sleep 0.5; done"
    stop_capture   # the capture ends with the WRITEs unanswered
    action thaw
    wait "${w[@]}"
    lab_umount
}

info_diag_credits() { echo "induces credit_window_full: the server grants ${DIAG_CREDITS:-4} credits (svc_rdma/max_requests) to a client with 32 concurrent direct dd writers and readers (bs=8k count=4): calls wait for a credit most of the time"; }
server_prep_diag_credits() { PARALLEL_CREDITS=${DIAG_CREDITS:-4} server_prep_parallel; }
server_reset_diag_credits() { server_reset_parallel; }
client_diag_credits() { PARALLEL_JOBS=32 PARALLEL_COUNT=4 client_parallel; }

info_diag_inline() { echo "induces reply_chunks_inline_threshold: NFSv4.2 with the client's inline thresholds at their minimum (rdma_max_inline_read/_write 1024): creating, stat-ing and listing 40 small files, most COMPOUND replies go through reply chunks"; }
server_prep_diag_inline() { prep_dir; }
client_diag_inline() {
    local d=$MNT/$SC saved_w saved_r
    saved_w=$(cat /proc/sys/sunrpc/rdma_max_inline_write 2>/dev/null || echo 4096)
    saved_r=$(cat /proc/sys/sunrpc/rdma_max_inline_read 2>/dev/null || echo 4096)
    set_tunable sunrpc/rdma_max_inline_write 1024
    set_tunable sunrpc/rdma_max_inline_read 1024
    if lab_mount vers=4.2; then
        run "for i in \$(seq 1 40); do echo \$i > $d/f\$i; done"
        drop_caches
        run "for i in \$(seq 1 40); do stat $d/f\$i > /dev/null; cat $d/f\$i > /dev/null; done"
        run "ls -l $d > /dev/null"
    fi
    lab_umount
    set_tunable sunrpc/rdma_max_inline_write "$saved_w"
    set_tunable sunrpc/rdma_max_inline_read "$saved_r"
}

info_diag_acl() { echo "induces rpc_errors: NFSv3 GETACL (NFSACL) of a file with a ${ACL_ENTRIES:-400}-entry POSIX ACL, larger than the reply the client provides for it: the server's reply is rejected or fails, and what the client does next"; }
server_prep_diag_acl() {
    local f i spec=""
    prep_dir
    f=$EXPORT/$SC/aclfile; : > "$f"
    for i in $(seq 2000 $(( 2000 + ${ACL_ENTRIES:-400} - 1 ))); do spec="$spec,u:$i:r"; done
    run "setfacl -m '${spec#,}' $f" || log "setfacl failed (acl package missing from the image?)"
}
client_diag_acl() {
    local d=$MNT/$SC
    lab_mount vers=3 || { lab_umount; return 1; }
    CMD_TIMEOUT=${ACL_TIMEOUT:-30} run "getfacl $d/aclfile > /dev/null"
    CMD_TIMEOUT=${ACL_TIMEOUT:-30} run "ls -l $d > /dev/null"
    lab_umount
}

info_diag_nfs_errors() { echo "induces nfs_errors: a process on the server holds a read lease (fcntl F_SETLEASE) on two files for ${LEASE_HOLD:-3} s after the kernel asks for it back; the client writes them, NFSv3 (nfsd cannot break the lease at once: NFS3ERR_JUKEBOX, the client retries after 5 s) then NFSv4.2 (NFS4ERR_DELAY on OPEN, the client retries with backoff)"; }
server_prep_diag_nfs_errors() { prep_dir; echo v3 > "$EXPORT/$SC/leased3"; echo v4 > "$EXPORT/$SC/leased4"; }
client_diag_nfs_errors() {
    local d=$MNT/$SC
    if lab_mount vers=3; then
        action lease-leased3
        run "dd if=/dev/zero of=$d/leased3 bs=4k count=1 oflag=direct conv=notrunc"
    fi
    lab_umount
    if lab_mount vers=4.2; then
        action lease-leased4
        run "dd if=/dev/zero of=$d/leased4 bs=4k count=1 oflag=direct conv=notrunc"
    fi
    lab_umount
}

# hold_lease FILE SECONDS: a server-local reader holding a read lease on FILE,
# as a backup agent or an indexer with leases would. It ignores SIGIO (the
# kernel's "give it back", whose default action would end it at once) and
# gives the lease up SECONDS after taking it; until then nfsd, which only
# tries to break leases without waiting, answers the client's WRITE or OPEN
# with JUKEBOX/DELAY. perl, because the minbase image has no python;
# 1024 is F_SETLEASE, 0 F_RDLCK, 2 F_UNLCK (linux/fcntl.h).
hold_lease() {
    rm -f /tmp/lease.ok
    perl -e '$SIG{IO} = "IGNORE"; open(my $f, "<", $ARGV[0]) or die "open $ARGV[0]: $!\n";
             fcntl($f, 1024, 0) or die "F_SETLEASE $ARGV[0]: $!\n";
             open(my $ok, ">", "/tmp/lease.ok"); close $ok;
             sleep $ARGV[1]; fcntl($f, 1024, 2); close $f' "$1" "$2" >> "$SCO/output.txt" 2>&1 &
    local i
    for i in $(seq 1 50); do [ -e /tmp/lease.ok ] && break; sleep 0.1; done
    [ -e /tmp/lease.ok ] && log "read lease on $1 held for $2 s" || log "could not take a lease on $1"
}

# The userspace peer (captures/lab/peer/rpcrdma-peer.py) does what the Linux
# client never does, against the real kernel server; one connection per run,
# its "peer:" lines go to output.txt. No mount: the capture holds only the
# peer's connections.
peer() { CMD_TIMEOUT=${PEER_TIMEOUT:-30} run "python3 /lab/peer/rpcrdma-peer.py $*"; }

info_diag_rdma_error() { echo "induces rdma_error: a userspace peer sends calls the server must refuse, over three connections: a header of RPC-over-RDMA version 2 (RFC 8166 says RDMA_ERROR ERR_VERS), twice, then a version-1 call whose Write list claims 1000 segments it does not hold (ERR_CHUNK, or whatever the 6.1 server does instead: output.txt and server.trace record it)"; }
client_diag_rdma_error() {
    peer vers2 --xid 0x5eed0001
    peer vers2 --xid 0x5eed0002
    peer badchunk --xid 0x5eed0003
}

info_diag_overrun() { echo "induces receive_buffer_overrun: a userspace peer sends ${OVERRUN_SIZE:-8192}-byte calls, larger than the server's 4096-byte receive buffers (no RFC 8797 private data in its REQ), over ${OVERRUN_TRIES:-3} connections: each Send overruns the posted receive, and the server's receive completes in error and it tears the connection down"; }
client_diag_overrun() {
    local i
    for i in $(seq 1 "${OVERRUN_TRIES:-3}"); do
        peer overrun --size "${OVERRUN_SIZE:-8192}" --xid "0x5eed010$i"
    done
}

info_diag_rnr() { echo "induces rnr_retry: a userspace peer sends NULL calls but posts the receive for each reply only ${RNR_DELAY:-0.5} s later, over ${RNR_TRIES:-2} connections: the server's reply Send meets RNR NAKs from the peer's rxe until then (rnr_retry_count 7 in the peer's REQ, so it recovers)"; }
client_diag_rnr() {
    local i
    for i in $(seq 1 "${RNR_TRIES:-2}"); do
        peer rnr --recv-delay "${RNR_DELAY:-0.5}" --xid "0x5eed020$i"
    done
}

# server_action SC NAME: requests from the client during a scenario.
server_action() {
    case $2 in
        netem-loss) tc qdisc add dev eth0 root netem loss "${LOSS_PCT:-2}%"; log "eth0 drops ${LOSS_PCT:-2}% of its frames" ;;
        netem-ecn) tc qdisc add dev eth0 root netem loss "${ECN_PCT:-5}%" ecn; log "eth0 marks ${ECN_PCT:-5}% of its ECT frames CE" ;;
        netem-off) tc qdisc del dev eth0 root; log "eth0 queue back to normal" ;;
        lease-*) hold_lease "$EXPORT/$1/${2#lease-}" "${LEASE_HOLD:-3}" ;;
        freeze) fsfreeze -f "$(own_export_dir)"; log "$(own_export_dir) frozen" ;;
        thaw) fsfreeze -u "$(own_export_dir)"; log "$(own_export_dir) thawed" ;;
        bounce)
            log "link down for ${RECONNECT_DOWN:-25}s"
            ip link set eth0 down
            sleep "${RECONNECT_DOWN:-25}"
            ip link set eth0 up
            log "link up again"
            ;;
        blackhole-on)
            # Outgoing frames are lost as on a wire (netem: the send
            # succeeds), not refused: a tc egress drop fails rxe's transmit,
            # and 6.12's rxe then errors the QP at once (a posted RDMA Read
            # flushed 0.3 s into the drop), QP1 too, so the server's CM never
            # answers a REQ again in that boot.
            log "dropping all frames on eth0 (ingress: tc clsact matchall drop; egress: netem loss 100%)"
            tc qdisc add dev eth0 clsact
            tc filter add dev eth0 ingress matchall action drop
            tc qdisc add dev eth0 root netem loss 100%
            ;;
        blackhole-off)
            tc qdisc del dev eth0 root
            tc qdisc del dev eth0 clsact
            log "frames flow again"
            ;;
        *) log "unknown action $2" ;;
    esac
}
