#!/usr/bin/env bash
# The project's test command (README): set-up, formatting, lints, every test
# (unit, property, real captures vs kernel traces, tshark oracle, TUI in tmux),
# the published dissector crates (MSRV, no_std, package, API) and their
# Python binding, docs, and a short fuzz smoke run of every fuzz target.
#
#   scripts/test.sh            everything
#   scripts/test.sh --quick    the inner loop: fmt, clippy, nextest (no set-up,
#                              no lab, no crate checks, no fuzzing; tests whose
#                              prerequisites are missing skip loudly)
#   FUZZ_SECONDS=0 scripts/test.sh   skip the fuzz smoke run
#   LAB=0 scripts/test.sh            skip the VM lab (eBPF probes vs the wire on rxe and siw, a few minutes under TCG)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n=== %s (%ss)\n' "$1" "$(( $(date +%s) - start ))"; }

if [ "${1:-}" = --quick ]; then
    step "cargo fmt --check"
    cargo fmt --all --check
    step "cargo clippy -D warnings"
    cargo clippy --workspace --all-targets --quiet -- -D warnings
    step "tests (cargo nextest)"
    cargo nextest run --workspace --no-fail-fast --status-level fail --final-status-level slow
    step "quick tier passed"
    exit 0
fi

step "set-up"
scripts/setup.sh
scripts/setup-python.sh   # venv under target/, the binding's wheel built and installed
scripts/setup-ebpf.sh
scripts/setup-fleet.sh    # Prometheus, Java, DuckDB and PySpark for the fleet tests
# Tests that need root, tshark, tmux, the probes, Prometheus or Spark fail here when one is
# missing (run alone they skip, loudly): analyzer/tests/common/prereq.rs.
export RDMA_ANALYZER_REQUIRE=1
# The third-party captures are read in place, beside the project root; a
# clone made elsewhere (git clone . /tmp/fresh) finds them beside its origin.
if [ -z "${RDMA_EXTERNAL_CAPTURES:-}" ] && [ ! -d ../shared/external-captures ]; then
    origin=$(git remote get-url origin 2>/dev/null || true)
    if [ -d "$origin/../shared/external-captures" ]; then
        RDMA_EXTERNAL_CAPTURES=$(cd "$origin/../shared/external-captures" && pwd)
        export RDMA_EXTERNAL_CAPTURES
    fi
fi

step "captures are the committed ones (sha256)"
(cd captures && sha256sum --quiet -c SHA256SUMS)

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The lean build demo.sh makes (no Parquet export, no HTTP exporter) must
# keep building, with its tests.
cargo clippy -p rdma-analyzer --no-default-features --all-targets --quiet -- -D warnings

step "dependencies: licences, bans, sources (cargo deny, deny.toml)"
cargo deny --locked check licenses bans sources

step "tests (cargo nextest)"
cargo nextest run --workspace --no-fail-fast --status-level fail --final-status-level slow
# nextest does not run doctests.
cargo test --workspace --doc --quiet

if [ "${LAB:-1}" != 0 ]; then
    step "eBPF probes in the VM lab vs the wire (ebpf-probes/lab.sh)"
    # The debug binary nextest just built carries the same eBPF object as a
    # release build (the probes are always compiled for BPF in release), so
    # no second build of the whole tree is needed.
    # rxe+siw: the iWARP captures pass the same comparison as the RoCE ones,
    # in the same boot of the guests (a second boot and the full scenario
    # list on siw would add about 8.5 min under TCG).
    lab_out=target/probes-lab
    rm -rf "$lab_out"
    PROFILE=debug ebpf-probes/lab.sh --out "$lab_out" --fabric rxe+siw
fi

step "dissector crates: MSRV, no_std, examples, cargo publish --dry-run, semver (scripts/check-crates.sh)"
scripts/check-crates.sh

step "Python binding: fmt, clippy, pytest (vs frames --json)"
cargo fmt --manifest-path python/Cargo.toml --check
PYO3_PYTHON=$PWD/target/python-venv/bin/python CARGO_TARGET_DIR=target/python \
    cargo clippy --quiet --manifest-path python/Cargo.toml --all-targets -- -D warnings
# The analyzer nextest built above is the reference the binding is compared with.
RDMA_ANALYZER=$PWD/target/debug/rdma-analyzer target/python-venv/bin/pytest -q python/tests

step "rustdoc without warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

if [ "${FUZZ_SECONDS:-15}" != 0 ]; then
    step "fuzz smoke run (${FUZZ_SECONDS:-15}s per target)"
    scripts/fuzz.sh "${FUZZ_SECONDS:-15}"
fi
step "all passed"
