//! The third-party captures of `../shared/external-captures/`, read in
//! place: they are other people's data and never enter the repository.
//!
//! Found at `$RDMA_EXTERNAL_CAPTURES`, or at `../shared/external-captures`
//! beside the project root (`scripts/test.sh` sets the variable for a clone
//! made elsewhere, from the clone's origin).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

#[path = "prereq.rs"]
mod prereq;

/// The directory, if it is there.
pub fn dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("RDMA_EXTERNAL_CAPTURES") {
        return Some(PathBuf::from(d));
    }
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/external-captures");
    d.is_dir().then_some(d)
}

/// The path of capture `name`; `None` (after failing under the test
/// command, or saying the test skipped) when the directory is missing.
pub fn capture(name: &str) -> Option<PathBuf> {
    let p = dir().map(|d| d.join(name));
    let have = p.as_ref().is_some_and(|p| p.is_file());
    if !prereq::require(
        &format!("third-party capture {name}"),
        have,
        "set RDMA_EXTERNAL_CAPTURES to the directory of ../shared/external-captures",
    ) {
        return None;
    }
    p
}
