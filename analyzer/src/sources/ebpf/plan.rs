//! What each probe copies: the span of a record the decoder reads.

use std::cell::RefCell;

use ebpf_common::CopyPlan;

use super::decode::Compiled;
use super::events::{row_of, wanted};
use super::format::{Field, Format, FormatSet};
use crate::engine::kernel::event::Use;

/// Which tracepoints the probes deliver, and how much of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProbeEvents {
    /// The events the analyzer uses, each cut to the fields it reads, plus
    /// the rare ones (connections, CM, errors) whole; the per-RPC events it
    /// has no use for stay in the kernel, where they cost nothing.
    #[default]
    Used,
    /// Every event of the systems, whole: for counting what the kernel
    /// says, or debugging the probes, at several times the cost.
    All,
}

/// The whole record of `f`, from its first byte past the common fields,
/// strings included.
pub fn whole_record(f: &Format) -> CopyPlan {
    let last_loc = f
        .fields
        .iter()
        .filter(|x| x.data_loc)
        .max_by_key(|x| x.offset);
    CopyPlan {
        event_id: f.id,
        lo: COMMON_LEN as u16,
        hi: u16::try_from(f.fixed_len().max(COMMON_LEN)).unwrap_or(u16::MAX),
        loc: last_loc.map_or(0, loc_of),
    }
}

use ebpf_common::COMMON_LEN;

fn loc_of(f: &Field) -> u16 {
    let at = u16::try_from(f.offset).unwrap_or(0) & !CopyPlan::REL_LOC;
    if f.ctype.starts_with("__rel_loc") {
        at | CopyPlan::REL_LOC
    } else {
        at
    }
}

/// What the analyzer needs of `f`'s records: the span from the first to the
/// last field the decoder reads (and, for a string, to the string's end),
/// `None` for a per-RPC event it has no use for
/// ([`Tracepoint::per_rpc_unused`](super::events::Tracepoint::per_rpc_unused)), the
/// whole record for any other.
///
/// The fields come from running the decoder itself over a blank record and
/// noting what it reads, so a change to the decoder changes the plans with
/// it.
pub fn needed(f: &Format) -> Option<CopyPlan> {
    let blank = vec![0u8; f.fixed_len().max(COMMON_LEN)];
    let touched = RefCell::new(Vec::new());
    let compiled = Compiled::new(f);
    let event = compiled.decode(&blank, 0, Some(&touched));
    if compiled.row.per_rpc_unused {
        return None;
    }
    match event.use_() {
        Use::Counted => Some(whole_record(f)),
        Use::Client | Use::Server => {
            let read: Vec<&Field> = touched
                .borrow()
                .iter()
                .filter_map(|&i| f.fields.get(i))
                .filter(|x| x.offset >= COMMON_LEN)
                .collect();
            let lo = read.iter().map(|x| x.offset).min().unwrap_or(COMMON_LEN);
            let hi = read.iter().map(|x| x.offset + x.size).max().unwrap_or(lo);
            let loc = read
                .iter()
                .filter(|x| x.data_loc)
                .max_by_key(|x| x.offset)
                .map_or(0, |x| loc_of(x));
            Some(CopyPlan {
                event_id: f.id,
                lo: u16::try_from(lo).unwrap_or(u16::MAX),
                hi: u16::try_from(hi).unwrap_or(u16::MAX),
                loc,
            })
        }
    }
}

/// The tracepoints (or kprobes) to attach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// `(system, event, what to copy)`, in order.
    pub tracepoints: Vec<(String, String, CopyPlan)>,
    /// `system:event` of the events left in the kernel on purpose.
    pub left_out: Vec<String>,
    /// Systems that are not in tracefs at all (module not loaded).
    pub absent_systems: Vec<String>,
}

impl Plan {
    /// The events of `systems` present in `formats` that `events` asks
    /// for; the systems not in tracefs are `absent_systems`.
    pub fn all_of(
        formats: &FormatSet,
        systems: &[&str],
        absent: &[String],
        events: ProbeEvents,
    ) -> Plan {
        let mut tracepoints = Vec::new();
        let mut left_out = Vec::new();
        for f in formats.sorted() {
            if !systems.contains(&f.system.as_str()) || !wanted(&f.system, &f.name) {
                continue;
            }
            let copy = match events {
                ProbeEvents::Used => needed(f),
                ProbeEvents::All => Some(whole_record(f)),
            };
            match copy {
                Some(c) => tracepoints.push((f.system.clone(), f.name.clone(), c)),
                None => left_out.push(format!("{}:{}", f.system, f.name)),
            }
        }
        Plan {
            tracepoints,
            left_out,
            absent_systems: absent.to_vec(),
        }
    }

    /// On a kernel without BPF cookies, the fixed-copy slot program of each
    /// of [`Plan::tracepoints`] (same order): `Some((n, entry))` for
    /// `rdma_tpf_<n>_<k>`, whose event id goes to `entry` of
    /// [`ebpf_common::MAP_FIXED_SLOT_IDS`]; `None` where the tracepoint
    /// takes a slot program that copies through the helper (a string to
    /// follow, a span past [`ebpf_common::FIXED_COPY_MAX`] or not a
    /// multiple of [`ebpf_common::FIXED_SLOT_STEP`], or no program of its
    /// length left).
    ///
    /// There are few programs of each length, and the rare events (CM,
    /// errors: dozens on Linux 5.10, most of one length) would take them
    /// before the per-RPC ones in the plan's order, so the events the
    /// engine reads (the client's and the server's) choose first.
    pub fn fixed_slots(&self) -> Vec<Option<(u16, u32)>> {
        let mut out = vec![None; self.tracepoints.len()];
        // Programs taken, by length.
        let mut used = std::collections::BTreeMap::new();
        let read = |sys: &str, ev: &str| row_of(sys, ev).use_ != Use::Counted;
        let order = (0..self.tracepoints.len()).filter(|&i| {
            let (sys, ev, _) = &self.tracepoints[i];
            read(sys, ev)
        });
        let rest = (0..self.tracepoints.len()).filter(|&i| {
            let (sys, ev, _) = &self.tracepoints[i];
            !read(sys, ev)
        });
        for i in order.chain(rest) {
            let Some(n) = self.tracepoints[i].2.fixed_copy() else {
                continue;
            };
            let taken = used.entry(n).or_insert(0u32);
            if let Some(entry) = ebpf_common::fixed_slot(usize::from(n), *taken) {
                *taken += 1;
                out[i] = Some((n, entry));
            }
        }
        out
    }
}
