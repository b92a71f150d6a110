#!/usr/bin/env bash
# Runs every cargo-fuzz target for N seconds each (default 60): the
# dissectors' (seeded from the real captures' frames) and the analyzer's
# (the capture readers, seeded with the bundled captures and the committed
# minimised corpus in analyzer/fuzz/seeds; the engine over generated
# conversations). Installs the pinned nightly and cargo-fuzz when missing.
# Any crash fails the run and leaves the input under */fuzz/artifacts/.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]    TARGET: a target name, or all
#   SANITIZER=none scripts/fuzz.sh ...       no AddressSanitizer (safe Rust; 5-20x the speed)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
only=("$@")
NIGHTLY=${NIGHTLY:-$(scripts/nightly.sh)}
if ! rustup toolchain list | grep -q "^$NIGHTLY"; then
    echo "fuzz: installing $NIGHTLY" >&2
    rustup toolchain install "$NIGHTLY" --profile minimal --no-self-update >/dev/null
fi
if ! cargo +"$NIGHTLY" fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install --locked cargo-fuzz >/dev/null 2>&1
fi
wanted() { [ ${#only[@]} = 0 ] || [[ " ${only[*]} " == *" $1 "* ]] || [[ " ${only[*]} " == *" all "* ]]; }

# run DIR TARGET: one target of the fuzz crate in DIR, for $secs seconds.
run() {
    local dir=$1 t=$2
    mkdir -p "$dir/corpus/$t"
    echo "fuzz: $t for ${secs}s" >&2
    (cd "$dir" && AYA_BUILD_SKIP=1 cargo +"$NIGHTLY" fuzz run -s "${SANITIZER:-address}" "$t" "corpus/$t" -- \
        -max_total_time="$secs" -print_final_stats=1 2>&1) \
        | grep -E "^stat::number_of_executed_units|^stat::peak_rss|Done|ERROR|panicked|cov:.*(DONE|INITED)" || true
    if [ -n "$(ls -A "$dir/artifacts/$t" 2>/dev/null)" ]; then
        echo "fuzz: $t found a crash: $dir/artifacts/$t" >&2
        exit 1
    fi
}

# The dissectors: seed corpora from every frame of every capture, cut at
# the layer each target parses.
for p in captures/*.pcap; do
    cargo run --quiet --release -p rdma-dissectors --example walk_pcap -- "$p" --seeds dissectors/fuzz/corpus >/dev/null
done
for t in $(cd dissectors/fuzz && cargo +"$NIGHTLY" fuzz list); do
    if wanted "$t"; then run dissectors/fuzz "$t"; fi
done

# The analyzer: the readers start from the committed minimised corpus and a
# few bundled captures; the engine builds its own input from its grammar.
mkdir -p analyzer/fuzz/corpus/capture_reader
cp analyzer/fuzz/seeds/capture_reader/* analyzer/fuzz/corpus/capture_reader/ 2>/dev/null || true
cp captures/v3-inline.pcap captures/v41-inline.pcap analyzer/fuzz/corpus/capture_reader/
# ERF (link type 197): the third-party ibdump capture, read in place and
# copied only into the (ignored) corpus, never into the repository.
erf=${RDMA_EXTERNAL_CAPTURES:-../shared/external-captures}/infiniband.pcap
[ -f "$erf" ] && cp "$erf" analyzer/fuzz/corpus/capture_reader/erf-ibdump.pcap
# The inputs as opened: the same seeds plain, gzip- and zstd-compressed.
mkdir -p analyzer/fuzz/corpus/capture_input analyzer/fuzz/corpus/capture_merge
for p in captures/v3-inline.pcap captures/v41-inline.pcap; do
    n=$(basename "$p")
    cp "$p" "analyzer/fuzz/corpus/capture_input/$n"
    gzip -1 -c "$p" >"analyzer/fuzz/corpus/capture_input/$n.gz"
    zstd -q -1 -c "$p" >"analyzer/fuzz/corpus/capture_input/$n.zst"
done
# Captures joined end to end (a second file header where a record would
# start), gzip members joined, a gzip stream without its trailer, a zstd
# stream with a 2 GiB window (refused under the default limit).
i=captures/v3-inline.pcap
cat "$i" "$i" >analyzer/fuzz/corpus/capture_reader/joined.pcap
{ gzip -1 -c "$i"; gzip -1 -c "$i"; } >analyzer/fuzz/corpus/capture_input/joined.pcap.gz
gzip -1 -c "$i" | head -c -8 >analyzer/fuzz/corpus/capture_input/no-trailer.pcap.gz
zstd -q --long=31 -c <"$i" >analyzer/fuzz/corpus/capture_input/long-window.pcap.zst
# mountstats: the committed sample (a 6.1 RDMA mount among others).
mkdir -p analyzer/fuzz/corpus/mountstats
cp analyzer/fuzz/seeds/mountstats/* analyzer/fuzz/corpus/mountstats/
# filter: one expression per operator and field type (docs/filters.md).
mkdir -p analyzer/fuzz/corpus/filter
cp analyzer/fuzz/seeds/filter/* analyzer/fuzz/corpus/filter/
# The merge: a count byte, then the inputs end to end (cut in equal parts).
{ printf '\001'; cat captures/v3-inline.pcap captures/v3-inline.pcap; } >analyzer/fuzz/corpus/capture_merge/two-inline
for t in $(cd analyzer/fuzz && AYA_BUILD_SKIP=1 cargo +"$NIGHTLY" fuzz list); do
    if wanted "$t"; then run analyzer/fuzz "$t"; fi
done
