//! `rdma_dissectors._native`: the dissector library for Python.
//!
//! Every frame comes out as a `dict` serialized from
//! [`rdma_dissectors::view::FrameView`], the type `rdma-analyzer frames
//! --json` prints, so the keys and values are those of the JSON by
//! construction.

use std::fs::File;

use std::sync::Mutex;

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{Block, PcapBlockOwned, PcapError};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use rdma_dissectors::erf;
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{self, Config};
use rdma_dissectors::view::{FrameView, SCHEMA_VERSION};

/// Bytes the capture reader asks the OS for at a time.
const READ_BUFFER: usize = 1 << 20;

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

/// A link type and timestamp units of one capture interface.
#[derive(Clone, Copy)]
struct Interface {
    link: LinkType,
    units_per_sec: u64,
    offset_secs: i64,
}

/// An iterator over the frames of a pcap or pcapng file, one dict each.
///
/// Streams the file: memory stays at the read buffer whatever its size.
#[pyclass(module = "rdma_dissectors._native")]
struct Capture {
    /// Behind a mutex only so the class is `Sync`: `__next__` has `&mut self`
    /// and takes it with `get_mut`, without locking.
    reader: Mutex<Box<dyn PcapReaderIterator + Send>>,
    path: String,
    interfaces: Vec<Interface>,
    number: u64,
    config: Config,
    done: bool,
}

impl Capture {
    fn scale(ts: u64, iface: Interface) -> u64 {
        let units = iface.units_per_sec.max(1);
        let secs = ts / units;
        let frac = ts % units;
        let ns = (u128::from(frac) * 1_000_000_000 / u128::from(units)) as u64;
        let secs = secs.saturating_add_signed(iface.offset_secs);
        secs.saturating_mul(1_000_000_000).saturating_add(ns)
    }
}

#[pymethods]
impl Capture {
    #[new]
    #[pyo3(signature = (path, *, rocev2_port = 4791, verify_icrc = true))]
    fn new(path: std::path::PathBuf, rocev2_port: u16, verify_icrc: bool) -> PyResult<Self> {
        let shown = path.display().to_string();
        let file = File::open(&path).map_err(|e| PyOSError::new_err(format!("{shown}: {e}")))?;
        let reader = pcap_parser::create_reader(READ_BUFFER, file).map_err(|e| {
            PyValueError::new_err(format!("{shown}: not a pcap or pcapng file: {e:?}"))
        })?;
        Ok(Capture {
            reader: Mutex::new(reader),
            path: shown,
            interfaces: Vec::new(),
            number: 0,
            config: config(rocev2_port, verify_icrc),
            done: false,
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let reader = self
            .reader
            .get_mut()
            .map_err(|_| PyValueError::new_err("capture reader poisoned"))?;
        while !self.done {
            let (offset, out) = match reader.next() {
                Ok((offset, block)) => {
                    let mut out = None;
                    match block {
                        PcapBlockOwned::LegacyHeader(h) => {
                            self.interfaces = vec![Interface {
                                link: LinkType(h.network.0 as u32),
                                units_per_sec: if h.is_nanosecond_precision() {
                                    1_000_000_000
                                } else {
                                    1_000_000
                                },
                                offset_secs: 0,
                            }];
                        }
                        PcapBlockOwned::Legacy(b) => {
                            let iface = self.interfaces.first().copied().ok_or_else(|| {
                                PyValueError::new_err(format!(
                                    "{}: record before the file header",
                                    self.path
                                ))
                            })?;
                            self.number += 1;
                            let ts =
                                u64::from(b.ts_sec) * iface.units_per_sec + u64::from(b.ts_usec);
                            out = Some(to_dict(
                                py,
                                self.number,
                                Self::scale(ts, iface),
                                b.origlen,
                                iface.link,
                                b.data,
                                &self.config,
                            )?);
                        }
                        PcapBlockOwned::NG(Block::SectionHeader(_)) => self.interfaces.clear(),
                        PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                            self.interfaces.push(Interface {
                                link: LinkType(idb.linktype.0 as u32),
                                units_per_sec: idb.ts_resolution().unwrap_or(1_000_000_000),
                                offset_secs: idb.ts_offset(),
                            });
                        }
                        PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                            let iface = self
                                .interfaces
                                .get(epb.if_id as usize)
                                .copied()
                                .ok_or_else(|| {
                                    PyValueError::new_err(format!(
                                        "{}: packet on undeclared interface {}",
                                        self.path, epb.if_id
                                    ))
                                })?;
                            self.number += 1;
                            let ts = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                            let caplen = (epb.caplen as usize).min(epb.data.len());
                            out = Some(to_dict(
                                py,
                                self.number,
                                Self::scale(ts, iface),
                                epb.origlen,
                                iface.link,
                                epb.data.get(..caplen).unwrap_or(epb.data),
                                &self.config,
                            )?);
                        }
                        PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                            let iface = self.interfaces.first().copied().ok_or_else(|| {
                                PyValueError::new_err(format!(
                                    "{}: packet before any interface",
                                    self.path
                                ))
                            })?;
                            self.number += 1;
                            out = Some(to_dict(
                                py,
                                self.number,
                                0,
                                spb.origlen,
                                iface.link,
                                spb.data,
                                &self.config,
                            )?);
                        }
                        PcapBlockOwned::NG(_) => {}
                    }
                    (offset, out)
                }
                Err(PcapError::Eof) => {
                    self.done = true;
                    return Ok(None);
                }
                Err(PcapError::Incomplete(_)) => {
                    reader.refill().map_err(|e| {
                        PyValueError::new_err(format!(
                            "{}: after frame {}: {e:?}",
                            self.path, self.number
                        ))
                    })?;
                    continue;
                }
                Err(e) => {
                    self.done = true;
                    return Err(PyValueError::new_err(format!(
                        "{}: after frame {}: {e:?}",
                        self.path, self.number
                    )));
                }
            };
            reader.consume(offset);
            if out.is_some() {
                return Ok(out);
            }
        }
        Ok(None)
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
