//! The raw system calls: what aya 0.14 and std do not offer.

use std::io;

/// A tracepoint attachment that carries a BPF cookie (the event's [`CopyPlan`]).
///
/// aya 0.14's `TracePoint::attach` sets no cookie, and the program cannot
/// read `common_type` (the kernel overwrites the record's first 8 bytes with
/// a pt_regs pointer before running BPF), so the attachment is made here:
/// `perf_event_open(PERF_TYPE_TRACEPOINT, id)` then
/// `bpf(BPF_LINK_CREATE, BPF_PERF_EVENT, cookie = plan)` (Linux 5.15+).
/// Closing the two descriptors detaches it.
pub(super) struct CookieLink {
    _link: std::os::fd::OwnedFd,
    _perf: std::os::fd::OwnedFd,
}

impl CookieLink {
    #[allow(unsafe_code)]
    pub(super) fn attach(
        prog_fd: std::os::fd::RawFd,
        tp_id: u16,
        cookie: u64,
    ) -> Result<CookieLink, String> {
        use std::os::fd::{FromRawFd, OwnedFd};
        // struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes).
        let mut attr = [0u8; 64];
        attr[0..4].copy_from_slice(&2u32.to_ne_bytes()); // PERF_TYPE_TRACEPOINT
        attr[4..8].copy_from_slice(&64u32.to_ne_bytes()); // size
        attr[8..16].copy_from_slice(&u64::from(tp_id).to_ne_bytes()); // config
        attr[16..24].copy_from_slice(&1u64.to_ne_bytes()); // sample_period
        attr[48..52].copy_from_slice(&1u32.to_ne_bytes()); // wakeup_events
                                                           // SAFETY: a valid attr buffer of the size it states; pid -1, cpu 0:
                                                           // every process (the BPF program runs on every CPU regardless).
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                attr.as_ptr(),
                -1 as libc::pid_t,
                0 as libc::c_int,
                -1 as libc::c_int,
                libc::c_ulong::from(8u32), // PERF_FLAG_FD_CLOEXEC
            )
        };
        if fd < 0 {
            return Err(format!("perf_event_open: {}", io::Error::last_os_error()));
        }
        // SAFETY: a descriptor the kernel just returned to us.
        let perf = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        use std::os::fd::AsRawFd;
        // union bpf_attr, link_create: prog_fd, target_fd, attach_type, flags, perf_event.bpf_cookie.
        let mut battr = [0u8; 64];
        battr[0..4].copy_from_slice(&(prog_fd as u32).to_ne_bytes());
        battr[4..8].copy_from_slice(&(perf.as_raw_fd() as u32).to_ne_bytes());
        battr[8..12].copy_from_slice(&41u32.to_ne_bytes()); // BPF_PERF_EVENT
        battr[16..24].copy_from_slice(&cookie.to_ne_bytes());
        // SAFETY: a valid bpf_attr buffer of the size passed.
        let lfd = unsafe { libc::syscall(libc::SYS_bpf, 28 as libc::c_int, battr.as_ptr(), 64u32) }; // BPF_LINK_CREATE
        if lfd < 0 {
            return Err(format!(
                "bpf(BPF_LINK_CREATE, BPF_PERF_EVENT with cookie): {} (needs Linux 5.15+)",
                io::Error::last_os_error()
            ));
        }
        // SAFETY: as above.
        let link = unsafe { OwnedFd::from_raw_fd(lfd as i32) };
        Ok(CookieLink {
            _link: link,
            _perf: perf,
        })
    }
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC now, ns (the probes stamp records with
/// the monotonic clock; captures and reports use the wall clock).
pub fn clock_offset_ns() -> io::Result<i64> {
    fn now(clock: libc::clockid_t) -> io::Result<i128> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        #[allow(unsafe_code)]
        let r = unsafe { libc::clock_gettime(clock, &mut ts) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec))
    }
    let m0 = now(libc::CLOCK_MONOTONIC)?;
    let r = now(libc::CLOCK_REALTIME)?;
    let m1 = now(libc::CLOCK_MONOTONIC)?;
    i64::try_from(r - (m0 + m1) / 2).map_err(|_| io::Error::other("clock offset out of range"))
}
