//! eBPF programs of rdma-analyzer's live mode (aya-ebpf).
//!
//! - [`rdma_tracepoint`]: attached to every tracepoint userspace asks for
//!   (rpcrdma, rdma_cma, ib_cma; `sched:sched_switch` for the benchmark).
//!   It copies the raw record, unparsed, behind an [`ebpf_common::RecordHeader`]
//!   into the `EVENTS` ring buffer. Decoding happens in userspace with the
//!   running kernel's `format` files, so one object works on every kernel.
//! - [`rdma_connect_pdata`] / [`rdma_accept_pdata`]: kprobes on
//!   `rdma_connect_locked` and `rdma_accept` that copy the CM private data
//!   (RFC 8797), which no tracepoint carries.
//!
//! When `reserve` fails (ring full) the per-CPU `LOST` counter goes up, so
//! userspace can show exactly how many records it never saw.
#![cfg_attr(target_arch = "bpf", no_std)]
#![cfg_attr(target_arch = "bpf", no_main)]

#[cfg(target_arch = "bpf")]
mod bpf {
    use aya_ebpf::helpers::{
        bpf_get_attach_cookie, bpf_get_current_pid_tgid, bpf_get_smp_processor_id,
        bpf_ktime_get_ns, bpf_probe_read_kernel, bpf_probe_read_kernel_buf,
    };
    use aya_ebpf::macros::{kprobe, map, tracepoint};
    use aya_ebpf::maps::{PerCpuArray, RingBuf};
    use aya_ebpf::programs::{ProbeContext, TracePointContext};
    use aya_ebpf::EbpfContext;
    use ebpf_common::{
        KprobeId, Record, RecordHeader, RecordKind, PDATA_MAX, RECORD_DATA_MAX, RECORD_VERSION,
        RING_BYTES,
    };

    #[map(name = "EVENTS")]
    static EVENTS: RingBuf = RingBuf::with_byte_size(RING_BYTES, 0);

    #[map(name = "LOST")]
    static LOST: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

    /// Counts one record that found the ring buffer full.
    #[inline(always)]
    fn count_lost() {
        if let Some(p) = LOST.get_ptr_mut(0) {
            // SAFETY: per-CPU slot, this program is not re-entered on this CPU.
            unsafe { *p += 1 };
        }
    }

    /// `bpf_ringbuf_submit` flags: waking the reader for every record costs
    /// an irq_work per event; the reader polls with a short timeout anyway,
    /// so wake it only once the ring is an eighth full.
    #[inline(always)]
    fn wakeup_flags() -> u64 {
        const BPF_RB_AVAIL_DATA: u64 = 0;
        const BPF_RB_NO_WAKEUP: u64 = 1;
        const BPF_RB_FORCE_WAKEUP: u64 = 2;
        if EVENTS.query(BPF_RB_AVAIL_DATA) > u64::from(RING_BYTES / 8) {
            BPF_RB_FORCE_WAKEUP
        } else {
            BPF_RB_NO_WAKEUP
        }
    }

    #[inline(always)]
    fn header(kind: RecordKind, event_id: u16, len: u32) -> RecordHeader {
        // SAFETY: plain helpers without arguments.
        let (cpu, ts_ns) = unsafe { (bpf_get_smp_processor_id(), bpf_ktime_get_ns()) };
        RecordHeader {
            version: RECORD_VERSION,
            kind: kind as u8,
            event_id,
            cpu,
            ts_ns,
            pid_tgid: bpf_get_current_pid_tgid(),
            len,
            _pad: 0,
        }
    }

    /// Copies any tracepoint's raw record.
    #[tracepoint]
    pub fn rdma_tracepoint(ctx: TracePointContext) -> u32 {
        match try_tracepoint(&ctx) {
            Ok(()) => 0,
            Err(_) => 1,
        }
    }

    fn try_tracepoint(ctx: &TracePointContext) -> Result<(), i32> {
        let Some(mut entry) = EVENTS.reserve::<Record>(0) else {
            count_lost();
            return Ok(());
        };
        let rec = entry.as_mut_ptr();
        let src = ctx.as_ptr() as *const u8;
        // SAFETY: `rec` points at a reserved, writable Record; the source is
        // read through the fault-safe probe_read helper (the record sits in
        // the per-CPU trace buffer, which is larger than RECORD_DATA_MAX).
        let r = unsafe { bpf_probe_read_kernel_buf(src, &mut (*rec).data) };
        if let Err(e) = r {
            entry.discard(0);
            return Err(e as i32);
        }
        // The record's first 8 bytes (`common_type` and the other common
        // fields) are overwritten by the kernel with a pt_regs pointer before
        // BPF programs run (perf_trace_run_bpf_submit), so the event id comes
        // from the attach cookie userspace set to the tracepoint's `ID:`.
        // SAFETY: the helper only reads the program's own run context.
        let id = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) } as u16;
        unsafe {
            (*rec).header = header(RecordKind::Tracepoint, id, RECORD_DATA_MAX as u32);
        }
        entry.submit(wakeup_flags());
        Ok(())
    }

    /// `rdma_connect_locked(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)`.
    #[kprobe]
    pub fn rdma_connect_pdata(ctx: ProbeContext) -> u32 {
        match try_pdata(&ctx, KprobeId::Connect) {
            Ok(()) => 0,
            Err(_) => 1,
        }
    }

    /// `rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)`.
    #[kprobe]
    pub fn rdma_accept_pdata(ctx: ProbeContext) -> u32 {
        match try_pdata(&ctx, KprobeId::Accept) {
            Ok(()) => 0,
            Err(_) => 1,
        }
    }

    /// `struct rdma_conn_param` starts `{ const void *private_data; u8
    /// private_data_len; ... }` (include/rdma/rdma_cm.h, unchanged since 2.6).
    fn try_pdata(ctx: &ProbeContext, which: KprobeId) -> Result<(), i32> {
        let param: *const u8 = ctx.arg(1).ok_or(-1)?;
        if param.is_null() {
            return Ok(());
        }
        // SAFETY: fault-safe kernel reads.
        let pdata: *const u8 = unsafe { bpf_probe_read_kernel(param as *const *const u8)? };
        let len: u8 = unsafe { bpf_probe_read_kernel(param.add(8))? };
        let Some(mut entry) = EVENTS.reserve::<Record>(0) else {
            count_lost();
            return Ok(());
        };
        let rec = entry.as_mut_ptr();
        let n = (len as usize).min(PDATA_MAX);
        let mut copied = 0u32;
        if !pdata.is_null() && n > 0 {
            // SAFETY: `rec` is reserved; the read is fault-safe. The length is
            // a constant so the verifier can bound it; `len` tells userspace
            // how much of it is the private data.
            let r =
                unsafe { bpf_probe_read_kernel_buf(pdata, &mut (&mut (*rec).data)[..PDATA_MAX]) };
            if r.is_ok() {
                copied = n as u32;
            }
        }
        unsafe {
            (*rec).header = header(RecordKind::Kprobe, which as u16, copied);
        }
        entry.submit(0);
        Ok(())
    }

    #[panic_handler]
    fn panic(_info: &core::panic::PanicInfo) -> ! {
        loop {}
    }
}

/// Host builds (rust-analyzer, `cargo check` on the host) get an empty
/// binary; the programs exist only for the BPF target.
#[cfg(not(target_arch = "bpf"))]
fn main() {}

#[cfg(target_arch = "bpf")]
#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
