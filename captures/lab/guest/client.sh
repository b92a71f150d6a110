# Client role on 10.99.0.2: runs the scenarios one after the other, each with
# its own tcpdump (started before the mount, so the RDMA CM REQ/REP/RTU and
# their private data are captured) and its own kernel trace.
ROLE=client
. /lab/guest/common.sh
. /lab/guest/scenarios.sh

hostname labclient
set -- $FABRICS
begin_phase "$1"
log "kernel $(uname -r); scenarios: $SCENARIOS (on $FABRIC)"
setup_network_and_rdma "$CLIENT_IP"
wait_for "$CTL/server-up" 300 || { abort "the server never came up"; exit 1; }

# Resolve the server's MAC before the first capture, so ARP is not the first
# thing in it (the server answers ARP anyway whenever it is needed).
ping -c 1 -W 5 "$SERVER_IP" > /dev/null 2>&1 || true

# stop_capture: end the scenario's capture (a scenario may end it early, e.g.
# while the server does not answer; the rest of its clean-up is then not in it).
stop_capture() {
    [ -n "${tcpdump_pid:-}" ] || return 0
    kill -INT "$tcpdump_pid"; wait "$tcpdump_pid"
    tcpdump_pid=""
    echo "$(date -u +%H:%M:%S.%3N)	-	client	-	capture stopped" >> "$SCO/commands.txt"
}

# run_phase: the current fabric's scenarios, one after the other.
run_phase() {
    dump_tunables "$OUT/tunables-client.txt"
    uname -r > "$OUT/kernel-client.txt"
    for sc in $SCENARIOS; do
        SC=$sc; SCO=$OUT/$sc; f=$(fn_of "$sc")
        mkdir -p "$SCO"
        if ! scenario_known "$sc"; then log "unknown scenario $sc; skipped"; echo "rc=unknown" > "$SCO/meta.env"; continue; fi
        touch "$CTL/$sc.start"
        wait_for "$CTL/$sc.server-ready" 180 || { abort "server not ready for $sc"; break; }
        log "=== $sc: $("info_$f")"
        t_start=$(date +%s.%N)
        trace_start
        run_hook client-start "$sc"

        pcap=/var/tmp/$sc.pcap
        tcpdump -i eth0 -s 0 -B 16384 -U -w "$pcap" 2> "$SCO/tcpdump.log" &
        tcpdump_pid=$!
        for i in $(seq 1 60); do grep -q 'listening on' "$SCO/tcpdump.log" && break; sleep 0.5; done
        grep -q 'listening on' "$SCO/tcpdump.log" || log "warning: tcpdump did not say it was listening"

        t_work=$(date +%s.%N)
        "client_$f"
        rc=$?
        t_work_end=$(date +%s.%N)
        # Never leave a mount behind for the next scenario.
        if grep -q " $MNT " /proc/mounts; then log "still mounted after $sc; forcing umount"; umount -f -l "$MNT"; fi

        # The transport is torn down after umount returns: wait (bounded) until no
        # RDMA CM id is left, so the DREQ/DREP are in the capture.
        for i in $(seq 1 30); do
            rdma resource show cm_id 2>/dev/null | grep -q 20049 || break
            sleep 0.5
        done
        sleep 1
        stop_capture
        run_hook client-stop "$sc"
        trace_stop "$SCO/client.trace" > "$SCO/client-trace-stats.txt"
        cp "$pcap" "$SCO/client.pcap" && rm -f "$pcap"
        t_end=$(date +%s.%N)

        {
            echo "scenario=$sc"
            echo "exercises=$("info_$f")"
            echo "rc=$rc"
            echo "kernel=$(uname -r)"
            echo "started=$(date -u -d "@$t_start" +%Y-%m-%dT%H:%M:%S.%3NZ)"
            echo "workload_seconds=$(awk -v a="$t_work" -v b="$t_work_end" 'BEGIN{printf "%.1f", b-a}')"
            echo "scenario_seconds=$(awk -v a="$t_start" -v b="$t_end" 'BEGIN{printf "%.1f", b-a}')"
            echo "tcpdump=$(grep -E 'captured|dropped' "$SCO/tcpdump.log" | tr '\n' ';')"
        } > "$SCO/meta.env"
        dump_tunables "$SCO/tunables-client.txt"
        log "=== $sc: rc=$rc in $(awk -v a="$t_start" -v b="$t_end" 'BEGIN{printf "%.1f", b-a}')s"
        touch "$CTL/$sc.client-done"
        wait_for "$CTL/$sc.server-done" 120 || { abort "server did not finish $sc"; return 1; }
    done
}

run_phase
shift
for next in "$@"; do
    [ -e "$TOP_CTL/abort" ] && break
    old_dev=$RDMA_DEV
    begin_phase "$next"
    log "=== now on $FABRIC: scenarios $SCENARIOS"
    switch_rdma "$old_dev"
    # Not all-done: run.sh then says the run is incomplete (lab.sh retries).
    wait_for "$CTL/server-up" 300 || { abort "the server never came up on $FABRIC"; exit 1; }
    run_phase || break
done

# An abort above (a server that never got ready or finished) is not a
# finished run: run.sh then says the run is incomplete, and lab.sh retries.
if [ -e "$TOP_CTL/abort" ]; then log "aborted"; exit 1; fi
touch "$TOP_CTL/all-done"
log "finished"
