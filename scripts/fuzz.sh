#!/usr/bin/env bash
# Runs every cargo-fuzz target of the dissectors for N seconds (default 60),
# seeded from the real captures' frames. Installs the pinned nightly and
# cargo-fuzz when missing. Any crash fails the run and leaves the input under
# dissectors/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
NIGHTLY=${NIGHTLY:-$(scripts/nightly.sh)}
if ! rustup toolchain list | grep -q "^$NIGHTLY"; then
    echo "fuzz: installing $NIGHTLY" >&2
    rustup toolchain install "$NIGHTLY" --profile minimal --no-self-update >/dev/null
fi
if ! cargo +"$NIGHTLY" fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install --locked cargo-fuzz >/dev/null 2>&1
fi
cd dissectors/fuzz
# Seed corpora: every frame of every capture, cut at the layer each target parses.
for p in ../../captures/*.pcap; do cargo run --quiet --release --manifest-path ../Cargo.toml --example walk_pcap -- "$p" --seeds corpus >/dev/null; done
for t in $(cargo +"$NIGHTLY" fuzz list); do
    mkdir -p "corpus/$t"
    echo "fuzz: $t for ${secs}s" >&2
    cargo +"$NIGHTLY" fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -print_final_stats=1 2>&1 \
        | grep -E "^stat::number_of_executed_units|Done|ERROR|panicked" || true
    if [ -n "$(ls -A artifacts/"$t" 2>/dev/null)" ]; then
        echo "fuzz: $t found a crash: dissectors/fuzz/artifacts/$t" >&2
        exit 1
    fi
done
