//! Builds the eBPF probes (`ebpf-probes/probes`) for the BPF target with
//! aya-build and the pinned nightly, and embeds the object in the analyzer.
//!
//! The probes crate is outside the workspace (it needs the bpf target and a
//! nightly), so aya-build's `cargo build --package ebpf-probes` is run from
//! the probes' own folder.
//!
//! Without the eBPF toolchain (or with `AYA_BUILD_SKIP=1`) an empty
//! placeholder object is written instead and `probes-status.txt` says why;
//! everything else builds, and `rdma-analyzer live --probes` reports exactly
//! what was missing. `scripts/setup-ebpf.sh` installs the toolchain; the
//! next build notices it (the paths where it will appear are watched) and
//! builds the probes for real.
//!
//! The nightly is pinned in one place, `ebpf-probes/probes/rust-toolchain.toml`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `channel` of a rust-toolchain.toml.
fn pinned_channel(toml: &Path) -> String {
    let text =
        fs::read_to_string(toml).unwrap_or_else(|e| panic!("reading {}: {e}", toml.display()));
    text.lines()
        .find_map(|l| {
            let v = l.trim().strip_prefix("channel")?.trim().strip_prefix('=')?;
            Some(v.trim().trim_matches('"').to_string())
        })
        .unwrap_or_else(|| panic!("{} names no channel", toml.display()))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=AYA_BUILD_SKIP");
    println!("cargo:rerun-if-env-changed=PATH");
    println!("cargo:rerun-if-env-changed=RDMA_ANALYZER_EBPF_TOOLCHAIN");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let probes = manifest.join("../ebpf-probes/probes");
    let common = manifest.join("../ebpf-probes/common");
    println!("cargo:rerun-if-changed={}", common.display());
    println!("cargo:rerun-if-changed={}", probes.display());
    let object = out.join("ebpf-probes");
    let status = out.join("probes-status.txt");
    let pin = probes.join("rust-toolchain.toml");
    println!("cargo:rerun-if-changed={}", pin.display());
    let toolchain =
        env::var("RDMA_ANALYZER_EBPF_TOOLCHAIN").unwrap_or_else(|_| pinned_channel(&pin));

    let skip = env::var("AYA_BUILD_SKIP").is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    let missing = if skip {
        Some("built without eBPF probes (AYA_BUILD_SKIP=1)".to_string())
    } else {
        missing_toolchain(&toolchain)
    };
    if let Some(why) = missing {
        println!("cargo:warning=rdma-analyzer: {why}; `live --probes` will say so");
        if !skip {
            // Where the toolchain will appear once installed: a path that
            // does not exist yet makes cargo rerun this script, so the
            // build after scripts/setup-ebpf.sh builds the probes.
            for p in toolchain_paths(&toolchain) {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
        write_placeholder(&object, &status, &why);
        return;
    }

    let probes = probes.canonicalize().expect("ebpf-probes/probes");
    let root = probes.to_str().expect("utf-8 path");
    env::set_current_dir(&probes).expect("cd ebpf-probes/probes");
    let pkg = aya_build::Package {
        name: "ebpf-probes",
        root_dir: root,
        ..Default::default()
    };
    if let Err(e) = aya_build::build_ebpf([pkg], aya_build::Toolchain::Custom(&toolchain)) {
        panic!(
            "building the eBPF probes with {toolchain} failed: {e:#}\n\
             (set AYA_BUILD_SKIP=1 to build the analyzer without probes)"
        );
    }
    fs::write(&status, "").expect("write probes-status.txt");
}

fn write_placeholder(object: &Path, status: &Path, why: &str) {
    fs::write(object, b"").expect("write placeholder object");
    fs::write(status, why).expect("write probes-status.txt");
}

/// The paths the eBPF toolchain puts in place: the nightly's rust-src and
/// bpf-linker where scripts/setup-ebpf.sh installs it.
fn toolchain_paths(tc: &str) -> Vec<PathBuf> {
    let home = env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let rustup = env::var_os("RUSTUP_HOME").map_or_else(|| home.join(".rustup"), PathBuf::from);
    let cargo = env::var_os("CARGO_HOME").map_or_else(|| home.join(".cargo"), PathBuf::from);
    let host = env::var("HOST").unwrap_or_default();
    vec![
        rustup
            .join("toolchains")
            .join(format!("{tc}-{host}"))
            .join("lib/rustlib/src/rust/library/core"),
        cargo.join("bin").join("bpf-linker"),
    ]
}

/// What of the eBPF toolchain is missing, in words; `None` when all is there.
fn missing_toolchain(tc: &str) -> Option<String> {
    let mut missing = Vec::new();
    let sysroot = Command::new("rustup")
        .args(["run", tc, "rustc", "--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    match &sysroot {
        None => missing.push(format!("toolchain {tc}")),
        Some(s) if !s.join("lib/rustlib/src/rust/library/core").is_dir() => {
            missing.push(format!("rust-src for {tc}"));
        }
        Some(_) => {}
    }
    let on_path = env::var_os("PATH")
        .map(|p| env::split_paths(&p).any(|d| d.join("bpf-linker").is_file()))
        .unwrap_or(false);
    if !on_path {
        missing.push("bpf-linker (not on PATH)".to_string());
    }
    if missing.is_empty() {
        None
    } else {
        Some(format!(
            "built without eBPF probes: missing {} (run scripts/setup-ebpf.sh)",
            missing.join(", ")
        ))
    }
}
