//! Loading the probe object with aya and attaching it.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use super::format::{Format, FormatSet};
use super::plan::Plan;
use super::sys::CookieLink;

/// Where tracefs usually lives.
pub const TRACEFS_PATHS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The probe object built by `analyzer/build.rs` (empty when built without
/// the eBPF toolchain).
pub const PROBES_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ebpf-probes"));

/// Why the object is empty, when it is (`""` when probes were built).
pub const PROBES_BUILD_STATUS: &str = include_str!(concat!(env!("OUT_DIR"), "/probes-status.txt"));

impl FormatSet {
    /// Reads every `events/<system>/*/format` under `tracefs`. Systems that
    /// do not exist are returned in the second value; formats that cannot be
    /// parsed in the third (`system:event: error`).
    pub fn load(tracefs: &Path, systems: &[&str]) -> (FormatSet, Vec<String>, Vec<String>) {
        let mut set = FormatSet::default();
        let mut absent = Vec::new();
        let mut bad = Vec::new();
        for sys in systems {
            let dir = tracefs.join("events").join(sys);
            let Ok(rd) = fs::read_dir(&dir) else {
                absent.push((*sys).to_string());
                continue;
            };
            let mut names: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
            names.sort();
            for ev in names {
                let fmt_path = ev.join("format");
                let Ok(text) = fs::read_to_string(&fmt_path) else {
                    continue; // `enable`, `filter`: files, not events
                };
                match Format::parse(sys, &text) {
                    Ok(f) => set.insert(f),
                    Err(e) => bad.push(format!("{sys}:{}: {e}", ev.display())),
                }
            }
        }
        (set, absent, bad)
    }
}

/// The tracefs mount point, if one is mounted.
pub fn find_tracefs() -> Option<PathBuf> {
    TRACEFS_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("events").is_dir())
}

/// A tracepoint that could not be attached, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// `system:event` (or a kprobe's function).
    pub what: String,
    /// Why, in words.
    pub why: String,
}

/// Why a system's tracepoints are absent, in words a user can act on.
pub fn why_absent(system: &str) -> String {
    let module = match system {
        "rpcrdma" => "rpcrdma (the NFS/RDMA client and server transport)",
        "rdma_cma" => "rdma_cm",
        "ib_cma" => "ib_cm",
        "sunrpc" => "sunrpc (the kernel's RPC layer, under NFS)",
        other => other,
    };
    let loaded = fs::read_to_string("/proc/modules")
        .map(|m| {
            let name = module.split(' ').next().unwrap_or(module);
            m.lines().any(|l| l.split(' ').next() == Some(name))
        })
        .unwrap_or(false);
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let release = release.trim();
    let file = module.split(' ').next().unwrap_or(module);
    let in_kernel = fs::read_to_string(format!("/lib/modules/{release}/modules.dep"))
        .map(|d| d.contains(&format!("/{file}.ko")))
        .or_else(|_| {
            fs::read_to_string(format!("/lib/modules/{release}/modules.builtin"))
                .map(|d| d.contains(&format!("/{file}.ko")))
        })
        .ok();
    if !loaded && in_kernel == Some(false) {
        return format!("this kernel ({release}) has no {file} module: no kernel RDMA stack here");
    }
    if !loaded && in_kernel.is_none() {
        return format!("module {module} is not loaded, and kernel {release} lists no modules (/lib/modules/{release} absent): probably no kernel RDMA stack here");
    }
    if loaded {
        format!("module {module} is loaded but has no tracepoints under events/{system}")
    } else {
        format!(
            "module {module} is not loaded (modprobe {})",
            module.split(' ').next().unwrap_or(module)
        )
    }
}

/// The ring the probes send their records through.
type Ring = aya::maps::RingBuf<aya::maps::MapData>;
/// Records the probes could not put in the ring, per CPU.
type Lost = aya::maps::PerCpuArray<aya::maps::MapData, u64>;

/// Loaded probes: the object, its attachments and its maps.
pub struct ProbeSet {
    // Declared before `ebpf` so the links close before the program.
    links: Vec<CookieLink>,
    ebpf: aya::Ebpf,
    ring: Ring,
    lost: Lost,
    /// What got attached (`system:event`).
    pub attached: Vec<String>,
    /// What did not, and why.
    pub missing: Vec<Missing>,
    /// What was left in the kernel on purpose ([`Plan::left_out`]).
    pub left_out: Vec<String>,
    /// Whether the one program with BPF cookies runs (Linux 5.15+), or one
    /// slot program per tracepoint (older kernels).
    pub cookies: bool,
}

/// Loads the tracepoint program `name` (once) and returns its descriptor.
fn load_tracepoint(ebpf: &mut aya::Ebpf, name: &str) -> Result<std::os::fd::RawFd, String> {
    use std::os::fd::{AsFd, AsRawFd};
    let prog: &mut aya::programs::TracePoint = ebpf
        .program_mut(name)
        .ok_or_else(|| format!("no program {name}"))?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| chain(&e))?;
    if prog.fd().is_err() {
        prog.load().map_err(|e| chain(&e))?;
    }
    let fd = prog.fd().map_err(|e| chain(&e))?;
    Ok(fd.as_fd().as_raw_fd())
}

/// Attaches a tracepoint program to every tracepoint of `plan`, each link
/// carrying the tracepoint's plan as its cookie: the fixed-copy program of
/// the plan's length where it has one
/// ([`CopyPlan::fixed_copy`](ebpf_common::CopyPlan::fixed_copy)), else the
/// one program that reads any span through a helper. Returns the links.
///
/// # Errors
/// The helper's program does not load: a kernel without
/// `bpf_get_attach_cookie`.
fn attach_with_cookies(
    ebpf: &mut aya::Ebpf,
    plan: &Plan,
    attached: &mut Vec<String>,
    missing: &mut Vec<Missing>,
) -> Result<Vec<CookieLink>, String> {
    // The benchmark's floor: the same attachments with a program that does
    // nothing (ebpf-probes/bench.sh).
    let floor = std::env::var_os("RDMA_ANALYZER_BENCH_FLOOR").is_some();
    // The benchmark's other program: every span through the helper, as
    // before the fixed copies, to measure what they save.
    let helper_only = std::env::var_os("RDMA_ANALYZER_BENCH_HELPER_COPY").is_some();
    let generic = if floor {
        ebpf_common::PROG_TRACEPOINT_FLOOR
    } else {
        ebpf_common::PROG_TRACEPOINT
    };
    // Loaded first and always: it is what tells a kernel without cookies.
    let generic_fd = load_tracepoint(ebpf, generic)?;
    let mut links = Vec::new();
    for (sys, ev, copy) in &plan.tracepoints {
        let fd = match copy.fixed_copy().filter(|_| !floor && !helper_only) {
            Some(n) => {
                let name = format!("{}{n}", ebpf_common::PROG_TRACEPOINT_FIXED);
                load_tracepoint(ebpf, &name)
            }
            None => Ok(generic_fd),
        };
        match fd.and_then(|fd| CookieLink::attach(fd, copy.event_id, copy.to_cookie())) {
            Ok(l) => {
                links.push(l);
                attached.push(format!("{sys}:{ev}"));
            }
            Err(e) => missing.push(Missing {
                what: format!("{sys}:{ev}"),
                why: e,
            }),
        }
    }
    Ok(links)
}

/// Kernels without BPF cookies: each tracepoint of `plan` gets a program of
/// its own, which finds what to copy in its slot of a map: a fixed-copy
/// slot program where [`Plan::fixed_slots`] gives one (its event id in
/// `FIXED_SLOT_IDS`), else a slot program that copies through the helper
/// (its plan in `SLOT_IDS`). The links live in `ebpf`.
///
/// # Errors
/// The slot maps or programs are not in the object, or do not load.
fn attach_slots(
    ebpf: &mut aya::Ebpf,
    plan: &Plan,
    attached: &mut Vec<String>,
    missing: &mut Vec<Missing>,
) -> Result<(), String> {
    // The benchmark's configurations, as with cookies (attach_with_cookies).
    let floor = std::env::var_os("RDMA_ANALYZER_BENCH_FLOOR").is_some();
    let helper_only = std::env::var_os("RDMA_ANALYZER_BENCH_HELPER_COPY").is_some();
    let fixed = if floor || helper_only {
        vec![None; plan.tracepoints.len()]
    } else {
        plan.fixed_slots()
    };
    let mut helper = Vec::new();
    let mut programs = Vec::new();
    for ((sys, ev, copy), fixed) in plan.tracepoints.iter().zip(fixed) {
        let name = match fixed {
            _ if floor => ebpf_common::PROG_TRACEPOINT_FLOOR.to_string(),
            Some((n, entry)) => {
                let k = entry % ebpf_common::FIXED_SLOTS_PER_LEN;
                set_slot(
                    ebpf,
                    ebpf_common::MAP_FIXED_SLOT_IDS,
                    entry,
                    u64::from(copy.event_id),
                )?;
                format!("{}{n}_{k}", ebpf_common::PROG_TRACEPOINT_FIXED_SLOT)
            }
            None if helper.len() == ebpf_common::TP_SLOTS as usize => {
                missing.push(Missing {
                    what: format!("{sys}:{ev}"),
                    why: format!(
                        "no program slot left: this kernel has no BPF cookies (Linux 5.15 added them), so each tracepoint takes one of {} programs",
                        ebpf_common::TP_SLOTS
                    ),
                });
                continue;
            }
            None => {
                let slot = helper.len() as u32;
                helper.push(slot);
                set_slot(ebpf, ebpf_common::MAP_SLOT_IDS, slot, copy.to_cookie())?;
                format!("{}{slot}", ebpf_common::PROG_TRACEPOINT_SLOT)
            }
        };
        programs.push((sys, ev, name));
    }
    for (sys, ev, name) in programs {
        let prog: &mut aya::programs::TracePoint = ebpf
            .program_mut(&name)
            .ok_or_else(|| format!("no program {name}"))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| chain(&e))?;
        // The floor's one program serves every tracepoint: loaded once.
        if prog.fd().is_err() {
            prog.load().map_err(|e| chain(&e))?;
        }
        match prog.attach(sys, ev) {
            Ok(_) => attached.push(format!("{sys}:{ev}")),
            Err(e) => missing.push(Missing {
                what: format!("{sys}:{ev}"),
                why: chain(&e),
            }),
        }
    }
    Ok(())
}

/// Writes `value` to entry `slot` of the `u64` array `map`.
fn set_slot(ebpf: &mut aya::Ebpf, map: &str, slot: u32, value: u64) -> Result<(), String> {
    let m = ebpf.map_mut(map).ok_or_else(|| format!("no map {map}"))?;
    let mut ids: aya::maps::Array<_, u64> = aya::maps::Array::try_from(m).map_err(|e| chain(&e))?;
    ids.set(slot, value, 0).map_err(|e| chain(&e))
}

/// The kprobes that read the CM private data (RFC 8797) of
/// `rdma_connect_locked` and `rdma_accept`; what cannot attach is missing,
/// with a hint.
fn attach_kprobes(ebpf: &mut aya::Ebpf, attached: &mut Vec<String>, missing: &mut Vec<Missing>) {
    for (prog_name, func) in [
        (ebpf_common::PROG_KPROBE_CONNECT, ebpf_common::FN_CONNECT),
        (ebpf_common::PROG_KPROBE_ACCEPT, ebpf_common::FN_ACCEPT),
    ] {
        let r = (|| -> Result<(), String> {
            let p: &mut aya::programs::KProbe = ebpf
                .program_mut(prog_name)
                .ok_or("program not in the object")?
                .try_into()
                .map_err(|e: aya::programs::ProgramError| chain(&e))?;
            p.load().map_err(|e| chain(&e))?;
            p.attach(func, 0).map_err(|e| chain(&e))?;
            Ok(())
        })();
        match r {
            Ok(()) => attached.push(format!("kprobe:{func}")),
            Err(why) => missing.push(Missing {
                what: format!("kprobe:{func} (CM private data, RFC 8797)"),
                why: kprobe_hint(&why),
            }),
        }
    }
}

/// The ring the probes write records to, and their per-CPU count of records lost.
///
/// # Errors
/// The object lacks either map.
fn take_maps(ebpf: &mut aya::Ebpf) -> Result<(Ring, Lost), StartError> {
    let ring = ebpf
        .take_map(ebpf_common::MAP_EVENTS)
        .ok_or_else(|| StartError::Load(format!("no map {}", ebpf_common::MAP_EVENTS)))
        .and_then(|m| aya::maps::RingBuf::try_from(m).map_err(|e| StartError::Load(chain(&e))))?;
    let lost = ebpf
        .take_map(ebpf_common::MAP_LOST)
        .ok_or_else(|| StartError::Load(format!("no map {}", ebpf_common::MAP_LOST)))
        .and_then(|m| {
            aya::maps::PerCpuArray::try_from(m).map_err(|e| StartError::Load(chain(&e)))
        })?;
    Ok((ring, lost))
}

/// Why the probes could not start at all.
#[derive(Debug)]
pub enum StartError {
    /// The binary carries no probe object.
    NotBuilt(String),
    /// Loading into the kernel failed (permissions, verifier, BTF).
    Load(String),
    /// Nothing could be attached.
    NothingAttached(Vec<Missing>),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::NotBuilt(why) => write!(f, "{why}"),
            StartError::Load(why) => write!(f, "loading the eBPF probes failed: {why}"),
            StartError::NothingAttached(m) => write!(
                f,
                "the eBPF program loaded and passed the verifier, but none of the {} tracepoint groups above exists on this kernel",
                m.len()
            ),
        }
    }
}

impl std::error::Error for StartError {}

impl ProbeSet {
    /// Loads the embedded object and attaches the tracepoint program to
    /// every entry of `plan` (and the private-data kprobes when `kprobes`).
    /// What cannot be attached is recorded in `missing`, not fatal, unless
    /// nothing at all could be attached.
    ///
    /// # Errors
    /// See [`StartError`].
    pub fn start(plan: &Plan, kprobes: bool) -> Result<ProbeSet, StartError> {
        if PROBES_OBJECT.is_empty() {
            return Err(StartError::NotBuilt(if PROBES_BUILD_STATUS.is_empty() {
                "built without eBPF probes".to_string()
            } else {
                PROBES_BUILD_STATUS.to_string()
            }));
        }
        let mut ebpf = aya::Ebpf::load(PROBES_OBJECT).map_err(|e| StartError::Load(chain(&e)))?;
        let mut missing: Vec<Missing> = plan
            .absent_systems
            .iter()
            .map(|s| Missing {
                what: format!("{s}:*"),
                why: why_absent(s),
            })
            .collect();
        let mut attached = Vec::new();
        let mut links = Vec::new();
        let mut cookies = true;
        // RDMA_ANALYZER_NO_COOKIES: the older kernels' way on this one
        // (tests, and a way out should cookies misbehave somewhere).
        let tried = if std::env::var_os("RDMA_ANALYZER_NO_COOKIES").is_some() {
            Err("RDMA_ANALYZER_NO_COOKIES is set".to_string())
        } else {
            attach_with_cookies(&mut ebpf, plan, &mut attached, &mut missing)
        };
        match tried {
            Ok(l) => links = l,
            // Only a kernel without cookies fails to load the cookie
            // program that the slot programs stand in for; any other cause
            // fails them too, and both reasons are said.
            Err(no_cookies) => {
                cookies = false;
                attach_slots(&mut ebpf, plan, &mut attached, &mut missing).map_err(|e| {
                    StartError::Load(format!(
                        "{e} (and the program for kernels with BPF cookies: {no_cookies})"
                    ))
                })?;
            }
        }
        if kprobes {
            attach_kprobes(&mut ebpf, &mut attached, &mut missing);
        }
        if attached.is_empty() {
            return Err(StartError::NothingAttached(missing));
        }
        let (ring, lost) = take_maps(&mut ebpf)?;
        Ok(ProbeSet {
            links,
            ebpf,
            ring,
            lost,
            attached,
            missing,
            left_out: plan.left_out.clone(),
            cookies,
        })
    }

    /// The ring buffer's file descriptor, for `poll`.
    pub fn ring_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.ring.as_raw_fd()
    }

    /// Hands the records now in the ring to `f` until `enough` says so
    /// (asked every 64 records); returns how many, and whether it stopped
    /// with records left.
    pub fn drain(
        &mut self,
        mut f: impl FnMut(&[u8]),
        mut enough: impl FnMut() -> bool,
    ) -> (u64, bool) {
        let mut n = 0;
        while let Some(item) = self.ring.next() {
            f(&item);
            n += 1;
            // A clock read per 64 records: cheap beside their decoding.
            if n % 64 == 0 && enough() {
                return (n, true);
            }
        }
        (n, false)
    }

    /// Records the kernel could not put in the ring (summed over CPUs).
    pub fn lost(&self) -> u64 {
        self.lost
            .get(&0, 0)
            .map(|v| v.iter().copied().sum())
            .unwrap_or(0)
    }

    /// Detaches everything (also done on drop).
    pub fn detach(self) {
        let ProbeSet { links, ebpf, .. } = self;
        drop(links);
        drop(ebpf);
    }
}

fn kprobe_hint(why: &str) -> String {
    if why.contains("No such file") || why.contains("kprobe_events") || why.contains("not found") {
        format!("{why} (this kernel has no kprobes: the CM private data stays unknown; only a packet capture of the CM REQ/REP shows it)")
    } else {
        why.to_string()
    }
}

/// An error and its sources, one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}
