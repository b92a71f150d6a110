#!/usr/bin/env bash
# The probes in the VM lab: builds the analyzer on the host, hands it to
# both guests through the lab's guest-hook mechanism, runs scenarios with
# `live --probes` in both guests (and live capture in the client), then
# compares what the probes saw with the wire (analyzer/tests/probes_lab.rs).
#
#   [PROFILE=debug] ebpf-probes/lab.sh [--out DIR] [--kernels K] [--fabric F]
#                                      [--siw-scenarios LIST] [SCENARIO...]
#
#   --kernels 6.1 (default; what scripts/test.sh runs), 5.10, 6.12, a list
#             (5.10,6.12) or all: the guests of each Debian release whose
#             kernel it is (bullseye 5.10, bookworm 6.1, trixie 6.12), one
#             lab run after the other, then the table of the matrix.
#   --fabric  rxe (default; soft-RoCE), siw (soft-iWARP: NFS/RDMA over TCP),
#             or both (rxe,siw): every kernel on every fabric named, a lab
#             run each. rxe+siw: both in one boot of the guests (what
#             scripts/test.sh runs): the scenarios on rxe, then the
#             --siw-scenarios (default v42-reminv parallel: read and write
#             chunks, remote invalidation, the credit-limited run) on siw,
#             compared as two runs (DIR/rxe/, DIR/siw/).
#   Scenarios: default v3-inline v3-ddp v42-reminv parallel for one run,
#             v3-ddp v42-reminv parallel reconnect nconnect for a matrix.
#
# Root and a few minutes per run (TCG). Leaves the lab's results and the
# hook's output (details/SC/hook-{client,server}/) in DIR (for more than one
# run: DIR/KERNEL/ with one fabric, DIR/KERNEL-FABRIC/ with two), and the
# comparison's counts in probes-lab.json; on siw that file also lists what
# cannot be compared there, and why (not_compared).
set -euo pipefail
cd "$(dirname "$0")/.."
# The whole script is one function, called on the last line: bash then parses
# it completely before running, so editing this file during a (long) run
# cannot break the run.
main() {
out=/tmp/rdma-analyzer-probes-lab/$(date -u +%Y%m%dT%H%M%SZ)
kernels=6.1
fabrics=rxe
siw_scenarios="v42-reminv parallel"
while [ $# -gt 0 ]; do
    case $1 in
        --out) out=${2:?--out needs a folder}; shift 2 ;;
        --kernels) kernels=${2:?--kernels needs all, 5.10, 6.1, 6.12 or a list}; shift 2 ;;
        --fabric) fabrics=${2:?--fabric needs rxe, siw, rxe,siw or rxe+siw}; shift 2 ;;
        --siw-scenarios) siw_scenarios=${2:?--siw-scenarios needs a list of scenarios}; shift 2 ;;
        *) break ;;
    esac
done
# Absolute: the comparison runs as a cargo test, from the crate's folder.
out=$(realpath -m "$out")
[ "$kernels" = all ] && kernels=5.10,6.1,6.12
IFS=, read -r -a klist <<< "$kernels"
suite_of() {
    case $1 in
        5.10) echo bullseye ;;
        6.1) echo bookworm ;;
        6.12) echo trixie ;;
        *) echo "lab.sh: no lab guest has kernel $1 (5.10, 6.1, 6.12 or all)" >&2; return 1 ;;
    esac
}
for k in "${klist[@]}"; do suite_of "$k" > /dev/null; done
IFS=, read -r -a flist <<< "$fabrics"
for f in "${flist[@]}"; do
    case $f in
        rxe|siw|rxe+siw) ;;
        *) echo "lab.sh: --fabric $f: the lab runs rxe (soft-RoCE) or siw (soft-iWARP), rxe,siw (a run each) or rxe+siw (one boot)" >&2; exit 2 ;;
    esac
done
runs=$(( ${#klist[@]} * ${#flist[@]} ))
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
    if [ "$runs" -gt 1 ]; then scenarios=(v3-ddp v42-reminv parallel reconnect nconnect)
    else scenarios=(v3-inline v3-ddp v42-reminv parallel); fi
fi

scripts/setup-ebpf.sh
# PROFILE=debug skips the release build (e.g. when another build holds the lock).
profile=${PROFILE:-release}
if [ "$profile" = release ]; then cargo build --release -q -p rdma-analyzer; else cargo build -q -p rdma-analyzer; fi
# Where cargo put it: the caller's CARGO_TARGET_DIR, when set.
bin=${CARGO_TARGET_DIR:-target}/$profile/rdma-analyzer
# Debian 11's guests have glibc 2.31: a binary linked here (2.36) asks for
# GLIBC_2.34 and will not start there. One built against 2.31 runs on every
# guest, so a matrix with 5.10 hands that one to all of them.
case ",$kernels," in
    *,5.10,*) bin=$(scripts/build-glibc231.sh "$profile") ;;
esac
[ -n "$("$bin" live --help | grep -- --probes)" ]
hook=$(mktemp -d /tmp/rdma-probes-hook.XXXXXX)
trap 'rm -rf "$hook"' EXIT
cp ebpf-probes/lab-hook/*.sh "$hook/"
# LAB_RECORD=1: each guest's analyzer also runs the flight recorder and
# dumps the whole run (DIR/details/SC/hook-*/record/), for replays.
if [ "${LAB_RECORD:-0}" = 1 ]; then touch "$hook/record"; fi
cp "$bin" "$hook/rdma-analyzer"

# compare KERNEL FABRIC DIR: the comparison of one fabric's lab results.
compare() {
    RDMA_ANALYZER_LAB_OUT=$3 RDMA_ANALYZER_LAB_KERNEL=$1 RDMA_ANALYZER_LAB_FABRIC=$2 \
        cargo test -q -p rdma-analyzer --test probes_lab -- --ignored --nocapture
}

# run_one KERNEL FABRIC DIR: one lab run on that kernel's guests over that
# fabric (rxe+siw: both, one boot), then the comparison of each fabric's
# results; its status is the comparisons'.
run_one() {
    local k=$1 f=$2 dir=$3 suite
    local -a lab=(--fabric "$f")
    [ "$f" = rxe+siw ] && lab+=(--siw-scenarios "$siw_scenarios")
    suite=$(suite_of "$k")
    mkdir -p "$dir"
    echo "probes lab: Linux $k ($suite guests) over $f, results in $dir"
    # A TCG guest very rarely fails to boot (seen once: "IO-APIC + timer
    # doesn't work" in the guest kernel); that is the emulator, not the
    # probes, so the lab gets one more try. The comparison below never does.
    if ! captures/lab/run.sh --suite "$suite" "${lab[@]}" --out "$dir" --guest-hook "$hook" "${scenarios[@]}"; then
        echo "probes lab: the lab run failed (above); trying once more" >&2
        rm -rf "$dir"; mkdir -p "$dir"
        captures/lab/run.sh --suite "$suite" "${lab[@]}" --out "$dir" --guest-hook "$hook" "${scenarios[@]}"
    fi
    [ "$f" = rxe+siw ] || { compare "$k" "$f" "$dir"; return; }
    # Both comparisons run, whatever the first says.
    local rc=0
    compare "$k" rxe "$dir/rxe" || rc=1
    compare "$k" siw "$dir/siw" || rc=1
    return $rc
}

if [ "$runs" -eq 1 ]; then
    run_one "${klist[0]}" "${flist[0]}" "$out"
    exit
fi
# One folder per run: DIR/KERNEL as before with one fabric, DIR/KERNEL-FABRIC
# with both.
dirs=() failed=()
for k in "${klist[@]}"; do
    for f in "${flist[@]}"; do
        d=$out/$k
        [ ${#flist[@]} -gt 1 ] && d=$out/$k-$f
        dirs+=("$d")
        run_one "$k" "$f" "$d" || failed+=("$k on $f")
    done
done
# One line per fabric in the table: a one-boot run's two parts are two lines.
table=()
for d in "${dirs[@]}"; do
    if [ -d "$d/rxe" ] && [ -d "$d/siw" ]; then table+=("$d/rxe" "$d/siw"); else table+=("$d"); fi
done
python3 - "${table[@]}" <<'PY'
import json, sys, os
print("\n| kernel | fabric | events attached (client / server) | missing | XIDs checked | disagreements | not compared |")
print("|---|---|---:|---|---:|---:|---|")
for d in sys.argv[1:]:
    p = os.path.join(d, "probes-lab.json")
    if not os.path.exists(p):
        print(f"| {os.path.basename(d)} | - | - | no comparison (the lab run failed: {d}) | - | - | - |")
        continue
    s = json.load(open(p))
    missing = ", ".join(s["missing"]) or "none"
    # One line per reason: the fields and scenarios it kept from comparison.
    why = {}
    for n in s.get("not_compared", []):
        fields, scs = why.setdefault(n["reason"], ({}, {}))
        fields[n["field"]] = None
        scs[n["scenario"]] = None
    skipped = "; ".join(f"{', '.join(f)} in {', '.join(c)}: {r}" for r, (f, c) in why.items()) or "none"
    print(f"| {s['kernel']} | {s.get('fabric', 'rxe')} | {s['attached_client']} / {s['attached_server']} "
          f"| {missing} | {s['checked']} | {s['disagreements']} | {skipped} |")
PY
if [ ${#failed[@]} -gt 0 ]; then
    printf -v which '%s, ' "${failed[@]}"
    echo "probes lab: the probes disagree with the wire on Linux ${which%, } (above)" >&2
    exit 1
fi
}

main "$@"
