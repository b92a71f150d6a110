//! `rdma_dissectors._native`: the dissector library for Python.
//!
//! Every frame comes out as a `dict` serialized from
//! [`rdma_dissectors::view::FrameView`], the type `rdma-analyzer frames
//! --json` prints, so the keys and values are those of the JSON by
//! construction.

use std::sync::Mutex;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use rdma_capture::input::{Input, Stream};
use rdma_capture::{PcapReader, ReadError, ReadErrorKind};
use rdma_dissectors::erf;
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{self, Config};
use rdma_dissectors::view::{FrameView, SCHEMA_VERSION};

fn config(rocev2_port: u16, verify_icrc: bool) -> Config {
    Config::default()
        .with_rocev2_port(rocev2_port)
        .with_verify_icrc(verify_icrc)
}

fn to_dict<'py>(
    py: Python<'py>,
    number: u64,
    ts_ns: u64,
    orig_len: u32,
    link: LinkType,
    data: &[u8],
    config: &Config,
) -> PyResult<Bound<'py, PyAny>> {
    // An ERF record (what ibdump writes) is opened to the frame it carries,
    // with the record's own time and wire length, as `frames --json` does; a
    // record carrying no frame stays whole, under its own link type.
    let (ts_ns, link, orig_len, data) =
        match (link.0 == erf::LINKTYPE_ERF).then(|| erf::parse(data)) {
            Some(Ok(f)) => match data.get(f.data) {
                Some(frame) => (f.ts_ns, f.link, f.orig_len, frame),
                None => (ts_ns, link, data.len() as u32, data),
            },
            Some(Err(erf::Problem::UnsupportedType { ts_ns, .. })) => {
                (ts_ns, link, data.len() as u32, data)
            }
            Some(Err(erf::Problem::Malformed(..))) => (ts_ns, link, data.len() as u32, data),
            None => (ts_ns, link, orig_len, data),
        };
    let d = stack::dissect(link, data, config);
    let view = FrameView::new(number, ts_ns, orig_len, &d);
    pythonize::pythonize(py, &view).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Dissects one frame; returns a dict with the keys of `rdma-analyzer frames --json`.
///
/// `link_type` is the pcap link type (1 Ethernet, 101 raw IP, 113 Linux
/// cooked, 276 Linux cooked v2, 247 InfiniBand, 197 an ERF record). `number`, `ts_ns` and
/// `orig_len` only fill the `frame`, `ts_ns` and `len` keys (`orig_len`
/// defaults to the length of `frame`).
#[pyfunction]
#[pyo3(signature = (frame, link_type = 1, *, number = 1, ts_ns = 0, orig_len = None, rocev2_port = 4791, verify_icrc = true))]
#[allow(clippy::too_many_arguments)]
fn dissect<'py>(
    py: Python<'py>,
    frame: &[u8],
    link_type: u32,
    number: u64,
    ts_ns: u64,
    orig_len: Option<u32>,
    rocev2_port: u16,
    verify_icrc: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let orig_len = orig_len.unwrap_or(u32::try_from(frame.len()).unwrap_or(u32::MAX));
    to_dict(
        py,
        number,
        ts_ns,
        orig_len,
        LinkType(link_type),
        frame,
        &config(rocev2_port, verify_icrc),
    )
}

/// An iterator over the frames of a capture file, one dict each.
///
/// The file is read by `rdma-capture`, the reader `rdma-analyzer` uses:
/// pcap or pcapng, plain or gzip/zstd-compressed, FCS trimmed and ERF
/// records opened as the analyzer does, so the frames are the ones
/// `frames --json` prints. Streams the file: memory stays at the read
/// buffer whatever its size.
#[pyclass(module = "rdma_dissectors._native")]
struct Capture {
    /// Behind a mutex only so the class is `Sync`: `__next__` has `&mut self`
    /// and takes it with `get_mut`, without locking.
    reader: Mutex<PcapReader<Stream>>,
    config: Config,
    done: bool,
}

/// A reader's error as Python's: the operating system's as `OSError`,
/// everything about the bytes as `ValueError`, with the reader's message
/// (file, frame and byte offset).
fn py_err(e: &ReadError) -> PyErr {
    match e.kind {
        ReadErrorKind::Io(_) => PyOSError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

#[pymethods]
impl Capture {
    #[new]
    #[pyo3(signature = (path, *, rocev2_port = 4791, verify_icrc = true))]
    fn new(path: std::path::PathBuf, rocev2_port: u16, verify_icrc: bool) -> PyResult<Self> {
        let reader = Input::open(&path)
            .and_then(Input::reader)
            .map_err(|e| py_err(&e))?;
        Ok(Capture {
            reader: Mutex::new(reader),
            config: config(rocev2_port, verify_icrc),
            done: false,
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.done {
            return Ok(None);
        }
        let reader = self
            .reader
            .get_mut()
            .map_err(|_| PyValueError::new_err("capture reader poisoned"))?;
        match reader.next_packet() {
            Ok(Some(p)) => to_dict(
                py,
                p.number,
                p.ts_ns,
                p.orig_len,
                p.link,
                p.data,
                &self.config,
            )
            .map(Some),
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                Err(py_err(&e))
            }
        }
    }
}

/// The native part of the `rdma_dissectors` package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dissect, m)?)?;
    m.add_class::<Capture>()?;
    m.add("SCHEMA_VERSION", SCHEMA_VERSION)?;
    m.add("LINKTYPE_ETHERNET", LinkType::ETHERNET.0)?;
    m.add("LINKTYPE_RAW", LinkType::RAW.0)?;
    m.add("LINKTYPE_LINUX_SLL", LinkType::LINUX_SLL.0)?;
    m.add("LINKTYPE_LINUX_SLL2", LinkType::LINUX_SLL2.0)?;
    m.add("LINKTYPE_INFINIBAND", LinkType::INFINIBAND.0)?;
    Ok(())
}
