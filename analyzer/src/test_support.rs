//! Wiring for the unit tests of the front ends: the crate root may know
//! every layer, so a test of the TUI gets its capture source from here and
//! the TUI itself never imports the sources.

use std::path::Path;

use rdma_dissectors::stack;

use crate::pipeline::Source;
use crate::sources::pcap::FileSource;

/// A capture file as a pipeline source.
pub(crate) fn capture_source(path: &Path, config: &stack::Config) -> Box<dyn Source> {
    Box::new(FileSource::open(path, config).expect("a capture"))
}
