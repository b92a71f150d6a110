# Server role: NFS server over RDMA on 10.99.0.1, port 20049.
# For each scenario: wait for the client's request, prepare the export,
# start the kernel trace (and the server hooks), tell the client it may go,
# serve in-scenario requests (e.g. a link bounce), then save the trace.
ROLE=server
. /lab/guest/common.sh
. /lab/guest/scenarios.sh

hostname labserver
set -- $FABRICS
begin_phase "$1"
log "kernel $(uname -r); scenarios: $SCENARIOS (on $FABRIC)"
setup_network_and_rdma "$SERVER_IP"

mkdir -p "$EXPORT"; chmod 777 "$EXPORT"
# No fsid=0: with it, NFSv4 mounts of this path fail with ENOENT.
echo "$EXPORT 10.99.0.0/24(rw,sync,no_subtree_check,no_root_squash,insecure)" > /etc/exports
timeout 90 systemctl start nfs-server || { abort "nfs-server did not start"; systemctl status nfs-server --no-pager; exit 1; }
# nfsd listens on 20049 for IPv4 and then for IPv6, both on the wildcard.
# On siw each becomes a kernel TCP socket, and 5.10's siw binds the IPv6 one
# dual-stack, so it collides with the IPv4 one ("RDMA CMA: cma_listen_on_dev,
# error -98", and the write fails with EADDRINUSE); later kernels hand
# rdma_cm's afonly down to siw. bindv6only makes every new IPv6 socket
# IPv6-only, which is what svcrdma asks of rdma_cm anyway.
listen_rdma() {
    if [ "$FABRIC" = siw ]; then
        # (procps, hence sysctl, is not in the minbase image)
        echo 1 > /proc/sys/net/ipv6/bindv6only || log "warning: cannot set net.ipv6.bindv6only"
    fi
    echo "rdma 20049" > /proc/fs/nfsd/portlist || { abort "cannot add the rdma listener to /proc/fs/nfsd/portlist (dmesg: $(dmesg | grep -i 'cma\|siw\|rdma' | tail -n 2 | tr '\n' ' '))"; exit 1; }
    log "nfsd listening on: $(tr '\n' ' ' < /proc/fs/nfsd/portlist)"
    dump_tunables "$OUT/tunables-server.txt"
    uname -r > "$OUT/kernel-server.txt"
    touch "$CTL/server-up"
}
listen_rdma
# When run.sh timed the boot: the first fabric's listener is up.
touch "$TOP_CTL/server-up"

# run_phase: serve the current fabric's scenarios, one after the other.
run_phase() {
    for sc in $SCENARIOS; do
        SC=$sc; SCO=$OUT/$sc; f=$(fn_of "$sc")
        wait_for "$CTL/$sc.start" "${SCENARIO_WAIT:-900}" || break
        mkdir -p "$SCO"
        log "=== $sc: prepare"
        declare -F "server_prep_$f" > /dev/null && "server_prep_$f"
        trace_start
        run_hook server-start "$sc"
        touch "$CTL/$sc.server-ready"
        # Serve action requests until the client is done.
        while [ ! -e "$CTL/$sc.client-done" ] && [ ! -e "$CTL/abort" ]; do
            for a in "$CTL/$sc".action.*; do
                [ -e "$a" ] || continue
                case $a in *.done) continue ;; esac
                [ -e "$a.done" ] && continue
                server_action "$sc" "${a##*.action.}"
                touch "$a.done"
            done
            sleep 0.5
        done
        run_hook server-stop "$sc"
        trace_stop "$SCO/server.trace" > "$SCO/server-trace-stats.txt"
        declare -F "server_reset_$f" > /dev/null && "server_reset_$f"
        log "=== $sc: done"
        touch "$CTL/$sc.server-done"
    done
}

run_phase
shift
for next in "$@"; do
    [ -e "$TOP_CTL/abort" ] && break
    old_dev=$RDMA_DEV
    begin_phase "$next"
    log "=== now on $FABRIC: scenarios $SCENARIOS"
    # nfsd's RDMA listener goes with the old link: stopping nfsd closes it
    # (and every connection) before the device it listens on is deleted,
    # and the new one is made on the new device, as at boot. The grace
    # period restarts too (10 s, image/build-image.sh), as at boot.
    timeout 90 systemctl stop nfs-server || { abort "nfs-server did not stop"; exit 1; }
    switch_rdma "$old_dev"
    timeout 90 systemctl start nfs-server || { abort "nfs-server did not start again on $FABRIC"; exit 1; }
    listen_rdma
    run_phase
done

wait_for "$TOP_CTL/all-done" 120
log "finished"
