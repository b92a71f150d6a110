//! `docs/findings.md` is generated from the engine's tables of kinds and
//! guides: the committed page must be what they generate, so the reference
//! a user reads is the one the tool prints from.
//!
//! `UPDATE_DOCS=1 cargo test -p rdma-analyzer --test findings_doc` rewrites it.

use rdma_analyzer::engine::guide::findings_markdown;

#[test]
fn docs_findings_md_is_generated_from_the_kind_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/findings.md");
    let want = findings_markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(path, &want).expect("writing docs/findings.md");
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "docs/findings.md differs from the kind table; regenerate it with \
         `UPDATE_DOCS=1 cargo test -p rdma-analyzer --test findings_doc` and commit it"
    );
}
