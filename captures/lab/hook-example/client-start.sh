#!/bin/bash
# Example guest hook (client-start): run by the lab in the client guest before
# each scenario's tcpdump, with $1 = scenario name and $2 = output folder (also
# the working directory; it ends up in OUT/details/SCENARIO/hook-client/).
# A real hook (e.g. the eBPF probe) would start its binary from $LAB_HOOK_DIR
# in the background and record its pid for client-stop.sh:
#     "$LAB_HOOK_DIR/probe" --out "$2/probe.jsonl" & echo $! > /tmp/probe.pid
echo "$(date -u +%H:%M:%S.%N) client-start role=$LAB_ROLE scenario=$1 kernel=$(uname -r)" >> "$2/hook-example.txt"
sleep 300 &                  # stands for a long-running probe
echo $! > /tmp/hook-example.pid
