#!/usr/bin/env bash
# The probes in the VM lab: builds the analyzer (release) on the host, hands
# it to both guests through the lab's guest-hook mechanism, runs scenarios
# with `live --probes` in both guests (and live capture in the client), then
# compares what the probes saw with the wire (analyzer/tests/probes_lab.rs).
#
#   [PROFILE=debug] ebpf-probes/lab.sh [--out DIR] [SCENARIO...]   (default: v3-inline v3-ddp v42-reminv parallel)
#
# Root and a few minutes (TCG). Leaves the lab's results and the hook's
# output (details/SC/hook-{client,server}/) in DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
out=/tmp/rdma-analyzer-probes-lab/$(date -u +%Y%m%dT%H%M%SZ)
if [ "${1:-}" = --out ]; then out=$2; shift 2; fi
# Absolute: the comparison runs as a cargo test, from the crate's folder.
out=$(realpath -m "$out")
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(v3-inline v3-ddp v42-reminv parallel)

scripts/setup-ebpf.sh
# PROFILE=debug skips the release build (e.g. when another build holds the lock).
profile=${PROFILE:-release}
if [ "$profile" = release ]; then cargo build --release -q -p rdma-analyzer; else cargo build -q -p rdma-analyzer; fi
bin=target/$profile/rdma-analyzer
[ -n "$("$bin" live --help | grep -- --probes)" ]
hook=$(mktemp -d /tmp/rdma-probes-hook.XXXXXX)
trap 'rm -rf "$hook"' EXIT
cp ebpf-probes/lab-hook/*.sh "$hook/"
cp "$bin" "$hook/rdma-analyzer"
mkdir -p "$out"
echo "probes lab: results in $out"
# A TCG guest very rarely fails to boot (seen once: "IO-APIC + timer doesn't
# work" in the guest kernel); that is the emulator, not the probes, so the lab
# gets one more try. The comparison below never does.
if ! captures/lab/run.sh --out "$out" --guest-hook "$hook" "${scenarios[@]}"; then
    echo "probes lab: the lab run failed (above); trying once more" >&2
    rm -rf "$out"; mkdir -p "$out"
    captures/lab/run.sh --out "$out" --guest-hook "$hook" "${scenarios[@]}"
fi
RDMA_ANALYZER_LAB_OUT=$out cargo test -q -p rdma-analyzer --test probes_lab -- --ignored --nocapture
