#!/bin/bash
# Example guest hook (client-stop): run after the scenario's tcpdump stopped.
# Stops what client-start.sh started and leaves its output in $2.
if [ -f /tmp/hook-example.pid ]; then kill "$(cat /tmp/hook-example.pid)" 2>/dev/null; rm -f /tmp/hook-example.pid; fi
echo "$(date -u +%H:%M:%S.%N) client-stop role=$LAB_ROLE scenario=$1 kernel=$(uname -r)" >> "$2/hook-example.txt"
