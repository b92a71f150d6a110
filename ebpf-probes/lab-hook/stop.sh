#!/bin/bash
# Shared by client-stop.sh and server-stop.sh: SIGTERM to the analyzer, then
# wait (bounded) until it has flushed its JSON Lines and detached the probes.
set -u
out=$2
pidf=/tmp/rdma-live.$LAB_ROLE.pid
[ -f "$pidf" ] || exit 0
pid=$(cat "$pidf"); rm -f "$pidf"
sleep 1   # let the last completions and invalidations arrive
# The recorder's dump of the whole run (start.sh's --record): the trigger is
# taken on the next tick, and the end of the run writes the dump it began.
if [ -e "$LAB_HOOK_DIR/record" ]; then
    kill -USR1 "$pid" 2>/dev/null
    sleep 0.5
fi
kill -TERM "$pid" 2>/dev/null
for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
kill -0 "$pid" 2>/dev/null && { echo "analyzer did not stop; killing"; kill -9 "$pid"; }
cat "$out/live.err"
# Nothing of ours may stay attached.
ls /sys/fs/bpf 2>/dev/null | head -1 > /dev/null
