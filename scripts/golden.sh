#!/usr/bin/env bash
# Writes every output of the analyzer on every bundled capture (and on the
# third-party captures in ../shared/external-captures when present) to one
# folder, so a refactoring can be checked by `diff -r` against the outputs of
# the commit before it:
#
#   scripts/golden.sh /tmp/before        # on the old commit
#   scripts/golden.sh /tmp/after         # on the new one
#   diff -r /tmp/before /tmp/after
#
# BIN=path/to/rdma-analyzer uses that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/golden.sh OUT_DIR}
if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet -p rdma-analyzer
    BIN=target/release/rdma-analyzer
fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BIN" synth --calls 400 --connections 3 --inject all --seed 7 -o "$tmp/synth-all.pcap" >/dev/null
files=(captures/*.pcap "$tmp/synth-all.pcap")
# RDMA_EXTERNAL_CAPTURES, as the tests take it: a worktree elsewhere has no
# ../shared beside it, and a golden run without the third-party captures
# would compare a third of the files.
ext=${RDMA_EXTERNAL_CAPTURES:-../shared/external-captures}
if [ -d "$ext" ]; then
    files+=("$ext"/*.pcap "$ext"/*.pcapng)
else
    echo "golden: no third-party captures at $ext (set RDMA_EXTERNAL_CAPTURES)" >&2
fi
for f in "${files[@]}"; do
    n=$(basename "$f")
    # Each command's stdout, stderr and exit status; the path is printed as
    # given, so it is replaced by the name to compare runs from different trees.
    run() {
        local tag=$1
        shift
        set +e
        "$BIN" "$@" >"$out/$n.$tag" 2>"$out/$n.$tag.err"
        echo "exit $?" >>"$out/$n.$tag.err"
        set -e
        sed -i "s#$f#$n#g" "$out/$n.$tag" "$out/$n.$tag.err"
    }
    run report report "$f"
    run report.json report --json "$f"
    run transactions transactions "$f"
    run transactions.json transactions --json "$f"
    run anomalies anomalies "$f"
    run anomalies.json anomalies --json "$f"
    run frames frames "$f"
    run frames.json frames --json "$f"
done
echo "golden: $(ls "$out" | wc -l) files in $out"
