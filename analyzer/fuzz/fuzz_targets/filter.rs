//! `--filter` text, arbitrary bytes: the parser never panics, an error's
//! column lies within the text (or just past its end), and an expression
//! that parses is evaluated on a record without panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_analyzer::output::filter::{Field, Record, Val};
use rdma_analyzer::output::Filter;

/// A record with a value for every field but `status` (unknown) and
/// `peer` (not applicable): the three cases evaluation has.
struct Any;

impl Record for Any {
    fn get(&self, f: Field, out: &mut Vec<Val>) -> bool {
        match f {
            Field::Peer => return false,
            Field::Status => {}
            Field::Proc | Field::Kind | Field::Mode => out.push(Val::Text("NFS READ".into())),
            _ => out.extend([Val::Num(0), Val::Num(u64::MAX)]),
        }
        true
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Filter::parse(text) {
        Ok(f) => {
            let _ = (f.maybe(&Any), f.needs_transaction(), f.text());
        }
        Err(e) => {
            assert!(e.column >= 1 && e.column <= text.chars().count() + 1, "{e}");
        }
    }
});
