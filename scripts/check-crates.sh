#!/usr/bin/env bash
# The published crates (rdma-dissectors, crc32-fold, rdma-capture) as a reuser gets them,
# run by scripts/test.sh after scripts/setup.sh installed the toolchains:
#
#   1. they build with their declared minimum Rust version (rust-version);
#   2. they build without std for a target that has none;
#   3. the examples build, and the emit one builds a frame and dissects it back;
#   4. `cargo publish --dry-run` passes for both from a clean clone of HEAD
#      (only committed files count), and lists what each .crate holds;
#   5. their public API has no breaking change against the baseline: the
#      newest tag rdma-dissectors-v* once one exists, until then the commit
#      named in dissectors/SEMVER_BASELINE (see that file).
#
# Every missing prerequisite fails; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf -- '--- %s (%ss)\n' "$1" "$(( $(date +%s) - start ))"; }
crates=(-p crc32-fold -p rdma-dissectors)
# rdma-capture is published too, but has std and no released baseline yet:
# it joins the MSRV build, the docs and the publish dry-run, not no_std or
# the API check.
published=("${crates[@]}" -p rdma-capture)

msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' dissectors/Cargo.toml)
step "MSRV: cargo +$msrv build (all features, and no default features)"
cargo "+$msrv" build --quiet --locked "${published[@]}" --all-features
cargo "+$msrv" build --quiet --locked -p rdma-dissectors --no-default-features --features serde

step "no_std: x86_64-unknown-none (no std, no allocator)"
cargo build --quiet --locked -p crc32-fold --no-default-features --target x86_64-unknown-none
cargo build --quiet --locked -p rdma-dissectors --no-default-features --features serde \
    --target x86_64-unknown-none

step "examples: all built; emit_frames builds a frame with emit and dissects it back"
cargo build --quiet --locked -p rdma-dissectors --examples
cargo run --quiet --locked -p rdma-dissectors --example emit_frames >/dev/null

step "docs as docs.rs builds them (all features) without warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --quiet --locked --no-deps "${published[@]}" --all-features

step "cargo publish --dry-run from a clean clone of HEAD"
clone=target/publish-check
rm -rf "$clone"
# The dry-run verifies each crate against the others through a temporary
# local registry, which cargo unpacks under $CARGO_HOME/registry/src/-HASH/
# (HASH from that registry's path, the same on every run) and never unpacks
# again: a later run would build rdma-capture against an earlier
# rdma-dissectors of the same version (seen: "unresolved import
# rdma_dissectors::frame"). Our crates' unpacked copies go first; crates.io's
# folders are named after their host and stay.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/{crc32-fold,rdma-dissectors,rdma-capture}-[0-9]*
git clone --quiet --no-local . "$clone"
(
    cd "$clone"
    # The verify builds share one target folder across runs (cheap when nothing changed).
    export CARGO_TARGET_DIR=$PWD/../publish-target
    if ! out=$(cargo publish --dry-run --locked "${published[@]}" 2>&1); then
        echo "$out" >&2
        exit 1
    fi
    for c in crc32-fold rdma-dissectors rdma-capture; do
        files=$(cargo package --list --quiet --locked -p "$c")
        f=$(ls "$CARGO_TARGET_DIR"/package/tmp-crate/$c-*.crate)
        echo "$c: $(basename "$f"), $(stat -c %s "$f") bytes, $(echo "$files" | wc -l) files:"
        echo "$files" | tr '\n' ' ' | fold -s -w 100 | sed 's/^/    /'
        echo
    done
)

step "API compatibility: cargo semver-checks"
baseline=$(git tag --list 'rdma-dissectors-v*' --sort=-v:refname | head -1)
if [ -z "$baseline" ]; then
    baseline=$(sed -n 's/^baseline = \([0-9a-f]\{40\}\)$/\1/p' dissectors/SEMVER_BASELINE)
fi
if ! git cat-file -e "${baseline:-none}^{commit}" 2>/dev/null; then
    echo "semver baseline ${baseline:-(none)} is not a commit of this repository (dissectors/SEMVER_BASELINE)" >&2
    exit 1
fi
cargo semver-checks "${crates[@]}" --baseline-rev "$baseline"
step "crates checked"
