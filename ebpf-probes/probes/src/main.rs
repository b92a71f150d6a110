//! eBPF programs of rdma-analyzer's live mode (aya-ebpf).
//!
//! - [`rdma_tracepoint`]: attached to every tracepoint userspace asks for
//!   (rpcrdma, rdma_cma, ib_cma; `sched:sched_switch` for the benchmark).
//!   On kernels without BPF cookies (before 5.15) the slot programs
//!   `rdma_tp_N` take its place, one per tracepoint.
//!   It copies the span of the raw record its [`ebpf_common::CopyPlan`]
//!   names (the fields the analyzer reads), unparsed, behind an
//!   [`ebpf_common::RecordHeader`] into the `EVENTS` ring buffer, in the
//!   smallest size class that holds it. Userspace works the plans out from
//!   the running kernel's `format` files and decodes with them, so one
//!   object works on every kernel.
//! - `rdma_tp_copy_1` .. `rdma_tp_copy_64`: the same, for a span that is
//!   the record's fixed part from byte 8, `n` bytes long (every per-RPC
//!   event the analyzer reads), copied with plain loads at constant offsets
//!   instead of the `bpf_probe_read_kernel` helper. Kernels with cookies.
//! - `rdma_tpf_L_K`: the same copy of `L` bytes on kernels without cookies,
//!   the event id read from the program's entry of `FIXED_SLOT_IDS` (`L` a
//!   multiple of 4, `K` slots of each length).
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
    use aya_ebpf::maps::{Array, PerCpuArray, RingBuf};
    use aya_ebpf::programs::{ProbeContext, TracePointContext};
    use aya_ebpf::EbpfContext;
    use ebpf_common::{
        CopyPlan, KprobeId, Record, RecordHeader, RecordKind, COMMON_LEN, DATA_CLASSES,
        FIXED_SLOTS, FIXED_SLOTS_PER_LEN, FIXED_SLOT_STEP, PDATA_MAX, RECORD_VERSION, RING_BYTES,
        TP_SLOTS,
    };

    #[map(name = "EVENTS")]
    static EVENTS: RingBuf = RingBuf::with_byte_size(RING_BYTES, 0);

    #[map(name = "LOST")]
    static LOST: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

    #[map(name = "SLOT_IDS")]
    static SLOT_IDS: Array<u64> = Array::with_max_entries(TP_SLOTS, 0);

    #[map(name = "FIXED_SLOT_IDS")]
    static FIXED_SLOT_IDS: Array<u64> = Array::with_max_entries(FIXED_SLOTS, 0);

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
    fn header(kind: RecordKind, event_id: u16, len: u16, base: u16) -> RecordHeader {
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
            base,
            _pad: 0,
        }
    }

    /// Copies a tracepoint's span; its plan is the attach cookie (Linux 5.15+).
    #[tracepoint]
    pub fn rdma_tracepoint(ctx: TracePointContext) -> u32 {
        // The record's first 8 bytes (`common_type` and the other common
        // fields) are overwritten by the kernel with a pt_regs pointer before
        // BPF programs run (perf_trace_run_bpf_submit), so the event id comes
        // from the plan userspace made from the tracepoint's format file.
        // SAFETY: the helper only reads the program's own run context.
        let plan = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) };
        match copy_record(&ctx, CopyPlan::from_cookie(plan)) {
            Ok(()) => 0,
            Err(_) => 1,
        }
    }

    /// Copies bytes `[8, 8 + L)` of the record with loads at constant
    /// offsets (`R`: `L` rounded up to 8, the data reserved); the cookie
    /// carries the event id. Userspace attaches program `L` only where the
    /// plan's span is exactly that ([`CopyPlan::fixed_copy`]), which never
    /// passes the event's last field: the kernel refuses to attach a
    /// program that loads past it.
    #[inline(always)]
    fn copy_fixed<const L: usize, const R: usize>(ctx: &TracePointContext) -> u32 {
        // SAFETY: the helper only reads the program's own run context.
        let id = CopyPlan::from_cookie(unsafe { bpf_get_attach_cookie(ctx.as_ptr()) }).event_id;
        emit_fixed::<L, R>(ctx, id)
    }

    /// [`copy_fixed`] without cookies: the event id is in entry `slot` of
    /// `FIXED_SLOT_IDS`, where userspace put it before attaching.
    #[inline(always)]
    fn copy_fixed_slot<const L: usize, const R: usize>(ctx: &TracePointContext, slot: u32) -> u32 {
        let Some(&id) = FIXED_SLOT_IDS.get(slot) else {
            return 1;
        };
        emit_fixed::<L, R>(ctx, id as u16)
    }

    /// Reserves a record of `R` bytes of data, copies bytes `[8, 8 + L)` of
    /// the tracepoint's record into it and submits it as event `id`.
    #[inline(always)]
    fn emit_fixed<const L: usize, const R: usize>(ctx: &TracePointContext, id: u16) -> u32 {
        let Some(mut entry) = EVENTS.reserve::<Record<R>>(0) else {
            count_lost();
            return 0;
        };
        let rec = entry.as_mut_ptr();
        // SAFETY: `rec` is reserved and writable, `R >= L`; the loads stay
        // inside the record's fixed part (above), which the verifier checks.
        unsafe {
            load_fixed::<L>(ctx.as_ptr() as *const u8, (*rec).data.as_mut_ptr());
            (*rec).header = header(RecordKind::Tracepoint, id, L as u16, COMMON_LEN as u16);
        }
        entry.submit(wakeup_flags());
        0
    }

    /// `L` bytes from `src + 8` to `dst`: 8-byte loads, then a 4-, 2- and
    /// 1-byte tail. The verifier takes a context load only from the
    /// context register plus a constant and aligned to its size; `L` is a
    /// constant, so the loop unrolls into such loads, and every offset is
    /// aligned (8 + 8k, then 4 and 2 past it).
    ///
    /// # Safety
    /// `src` is a tracepoint context whose record has `8 + L` bytes;
    /// `dst` has room for `L`.
    #[inline(always)]
    unsafe fn load_fixed<const L: usize>(src: *const u8, dst: *mut u8) {
        use core::ptr::{read_volatile, write_unaligned};
        let mut at = 0;
        while at + 8 <= L {
            // Volatile: one load each, never a call to memcpy.
            let v = read_volatile(src.add(COMMON_LEN + at) as *const u64);
            write_unaligned(dst.add(at) as *mut u64, v);
            at += 8;
        }
        if L - at >= 4 {
            let v = read_volatile(src.add(COMMON_LEN + at) as *const u32);
            write_unaligned(dst.add(at) as *mut u32, v);
            at += 4;
        }
        if L - at >= 2 {
            let v = read_volatile(src.add(COMMON_LEN + at) as *const u16);
            write_unaligned(dst.add(at) as *mut u16, v);
            at += 2;
        }
        if L > at {
            let v = read_volatile(src.add(COMMON_LEN + at));
            write_unaligned(dst.add(at), v);
        }
    }

    macro_rules! fixed_programs {
        ($($n:literal)*) => { paste::paste! { $(
            #[tracepoint]
            pub fn [<rdma_tp_copy_ $n>](ctx: TracePointContext) -> u32 {
                copy_fixed::<$n, { ($n + 7) / 8 * 8 }>(&ctx)
            }
        )* } };
    }

    // FIXED_COPY_MAX of them.
    fixed_programs!(
        1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
        33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64
    );

    // FIXED_SLOTS_PER_LEN programs of each length that is a multiple of
    // FIXED_SLOT_STEP, the entry of each as `ebpf_common::fixed_slot` says.
    macro_rules! fixed_slot_programs {
        ($($n:literal)*) => { $( fixed_slot_programs!(@len $n 0 1 2 3 4 5 6 7); )* };
        (@len $n:literal $($k:literal)*) => { paste::paste! { $(
            #[tracepoint]
            pub fn [<rdma_tpf_ $n _ $k>](ctx: TracePointContext) -> u32 {
                const SLOT: u32 = ($n / FIXED_SLOT_STEP as u32 - 1) * FIXED_SLOTS_PER_LEN + $k;
                copy_fixed_slot::<$n, { ($n + 7) / 8 * 8 }>(&ctx, SLOT)
            }
        )* } };
    }

    // Lengths FIXED_SLOT_STEP to FIXED_COPY_MAX; `@len` lists
    // FIXED_SLOTS_PER_LEN slots.
    fixed_slot_programs!(4 8 12 16 20 24 28 32 36 40 44 48 52 56 60 64);
    const _: () = assert!(FIXED_SLOTS_PER_LEN == 8 && FIXED_SLOT_STEP == 4);

    /// Does nothing: `ebpf-probes/bench.sh` attaches it in place of
    /// [`rdma_tracepoint`] (`RDMA_ANALYZER_BENCH_FLOOR=1`) to measure what
    /// an enabled tracepoint and the kernel's BPF dispatch cost before any
    /// work of the probes.
    #[tracepoint]
    pub fn rdma_bench_floor(_ctx: TracePointContext) -> u32 {
        0
    }

    /// Kernels without cookies (Linux 5.10 has no `bpf_get_attach_cookie`,
    /// and a program that calls it does not load): one program per
    /// tracepoint, each reading its tracepoint's plan from its own slot.
    #[inline(always)]
    fn slot_tracepoint(ctx: &TracePointContext, slot: u32) -> u32 {
        let Some(&plan) = SLOT_IDS.get(slot) else {
            return 1;
        };
        match copy_record(ctx, CopyPlan::from_cookie(plan)) {
            Ok(()) => 0,
            Err(_) => 1,
        }
    }

    macro_rules! slot_programs {
        ($($n:literal)*) => { paste::paste! { $(
            #[tracepoint]
            pub fn [<rdma_tp_ $n>](ctx: TracePointContext) -> u32 {
                slot_tracepoint(&ctx, $n)
            }
        )* } };
    }

    // TP_SLOTS of them.
    slot_programs!(
        0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
        32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
        64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
        96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127
        128 129 130 131 132 133 134 135 136 137 138 139 140 141 142 143 144 145 146 147 148 149 150 151 152 153 154 155 156 157 158 159
        160 161 162 163 164 165 166 167 168 169 170 171 172 173 174 175 176 177 178 179 180 181 182 183 184 185 186 187 188 189 190 191
        192 193 194 195 196 197 198 199 200 201 202 203 204 205 206 207 208 209 210 211 212 213 214 215 216 217 218 219 220 221 222 223
        224 225 226 227 228 229 230 231 232 233 234 235 236 237 238 239 240 241 242 243 244 245 246 247 248 249 250 251 252 253 254 255
    );

    /// Copies the span `plan` names of the record behind `ctx` into the ring.
    #[inline(always)]
    fn copy_record(ctx: &TracePointContext, plan: CopyPlan) -> Result<(), i64> {
        let src = ctx.as_ptr() as *const u8;
        // A string's place is only known now (it follows the strings
        // before it), so the plan names the word that says where it is.
        let word = match plan.loc_at() {
            // SAFETY: fault-safe read inside the per-CPU trace buffer.
            Some(at) => unsafe { bpf_probe_read_kernel(src.add(at as usize) as *const u32)? },
            None => 0,
        };
        let (lo, n) = plan.span(word);
        // One branch per size class, each with a constant size (the
        // verifier wants constant reservations and bounded reads).
        if n as usize <= DATA_CLASSES[0] {
            emit::<{ DATA_CLASSES[0] }>(src, plan.event_id, lo, n)
        } else if n as usize <= DATA_CLASSES[1] {
            emit::<{ DATA_CLASSES[1] }>(src, plan.event_id, lo, n)
        } else if n as usize <= DATA_CLASSES[2] {
            emit::<{ DATA_CLASSES[2] }>(src, plan.event_id, lo, n)
        } else {
            emit::<{ DATA_CLASSES[3] }>(src, plan.event_id, lo, n)
        }
    }

    /// Reserves a record of class `N`, copies `N` bytes from `src + lo` (of
    /// which `n` are the span; reading a whole class is cheaper for the
    /// verifier than a variable length and stays inside the 8 KiB per-CPU
    /// trace buffer) and submits it.
    #[inline(always)]
    fn emit<const N: usize>(src: *const u8, id: u16, lo: u32, n: u32) -> Result<(), i64> {
        let Some(mut entry) = EVENTS.reserve::<Record<N>>(0) else {
            count_lost();
            return Ok(());
        };
        let rec = entry.as_mut_ptr();
        // SAFETY: `rec` points at a reserved, writable record; the source is
        // read through the fault-safe probe_read helper.
        let r = unsafe { bpf_probe_read_kernel_buf(src.add(lo as usize), &mut (*rec).data) };
        if let Err(e) = r {
            entry.discard(0);
            return Err(i64::from(e));
        }
        unsafe {
            (*rec).header = header(RecordKind::Tracepoint, id, n as u16, lo as u16);
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
    fn try_pdata(ctx: &ProbeContext, which: KprobeId) -> Result<(), i64> {
        let param: *const u8 = ctx.arg(1).ok_or(-1)?;
        if param.is_null() {
            return Ok(());
        }
        // SAFETY: fault-safe kernel reads.
        let pdata: *const u8 = unsafe { bpf_probe_read_kernel(param as *const *const u8)? };
        let len: u8 = unsafe { bpf_probe_read_kernel(param.add(8))? };
        let Some(mut entry) = EVENTS.reserve::<Record<{ DATA_CLASSES[2] }>>(0) else {
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
            (*rec).header = header(RecordKind::Kprobe, which as u16, copied as u16, 0);
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
