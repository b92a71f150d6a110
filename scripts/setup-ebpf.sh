#!/usr/bin/env bash
# Installs what building the eBPF probes (ebpf-probes/probes, aya) needs, and
# nothing when it is already there (cheap to call from scripts/test.sh):
#   - the pinned nightly with rust-src (the BPF target is built from source);
#   - bpf-linker 0.13.0, built against that nightly's own libLLVM (Debian 12
#     has no system LLVM of the nightly's major version; see LAB_NOTES).
# Without them the analyzer still builds (build.rs writes a placeholder
# object) and `rdma-analyzer live --probes` says what is missing.
#
#   scripts/setup-ebpf.sh            install if missing
#   scripts/setup-ebpf.sh --check    only report; exit 1 when something is missing
set -euo pipefail

TC=${EBPF_TOOLCHAIN:-$("$(dirname "$0")/nightly.sh")}
BPF_LINKER_VERSION=0.13.0
PREFIX=${BPF_LINKER_LLVM_PREFIX:-$HOME/.local/share/rdma-analyzer/llvm-$TC}
CARGO_BIN=${CARGO_HOME:-$HOME/.cargo}/bin

check_only=0
[ "${1:-}" = --check ] && check_only=1

say() { echo "setup-ebpf: $*" >&2; }

have_tc() { rustup toolchain list 2>/dev/null | grep -q "^$TC"; }
have_src() { rustup +"$TC" component list --installed 2>/dev/null | grep -q '^rust-src'; }
have_linker() {
    local v
    v=$("$CARGO_BIN/bpf-linker" --version 2>/dev/null) || return 1
    [[ $v == *"$BPF_LINKER_VERSION"* ]]
}

if [ "$check_only" = 1 ]; then
    ok=0
    have_tc || { say "missing: toolchain $TC"; ok=1; }
    have_tc && { have_src || { say "missing: rust-src for $TC"; ok=1; }; }
    have_linker || { say "missing: bpf-linker $BPF_LINKER_VERSION in $CARGO_BIN"; ok=1; }
    [ $ok = 0 ] && say "ok: $TC with rust-src, bpf-linker $BPF_LINKER_VERSION"
    exit $ok
fi

command -v rustup >/dev/null || { say "rustup not found: install Rust with rustup first"; exit 1; }

if ! have_tc || ! have_src; then
    say "installing $TC with rust-src"
    rustup toolchain install "$TC" --profile minimal --component rust-src --no-self-update >/dev/null
fi

if ! have_linker; then
    sysroot=$(rustc +"$TC" --print sysroot)
    major=$(rustc +"$TC" -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
    lib=$(find "$sysroot/lib" -maxdepth 1 -name 'libLLVM.so.*' -o -maxdepth 1 -name 'libLLVM-*.so' | head -1)
    [ -n "$lib" ] || { say "no libLLVM in $sysroot/lib"; exit 1; }
    mkdir -p "$PREFIX/lib"
    ln -sf "$lib" "$PREFIX/lib/$(basename "$lib")"
    ln -sf "$lib" "$PREFIX/lib/libLLVM.so"
    say "building bpf-linker $BPF_LINKER_VERSION against $TC's LLVM $major (about 2 min)"
    LLVM_PREFIX=$PREFIX RUSTFLAGS="-C link-arg=-Wl,-rpath,$PREFIX/lib" \
        cargo install bpf-linker --version "$BPF_LINKER_VERSION" --locked \
        --no-default-features --features "llvm-$major" >/dev/null 2>"$PREFIX/bpf-linker-build.log" \
        || { say "bpf-linker build failed; see $PREFIX/bpf-linker-build.log"; exit 1; }
fi
have_linker || { say "bpf-linker installed but does not run: $("$CARGO_BIN/bpf-linker" --version 2>&1 | head -3)"; exit 1; }
say "ok: $TC with rust-src, $("$CARGO_BIN/bpf-linker" --version)"
