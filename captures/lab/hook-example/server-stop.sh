#!/bin/bash
# Example guest hook (server-stop): run by the lab in the guest with
#   $1 = scenario name, $2 = output folder (also the working directory).
# A real hook (e.g. the eBPF probe) would start its binary from $LAB_HOOK_DIR
# in the background here and stop it in the matching -stop hook.
echo "$(date -u +%H:%M:%S.%N) server-stop role=$LAB_ROLE scenario=$1 kernel=$(uname -r)" >> "$2/hook-example.txt"
