//! CRC-32 (the Ethernet polynomial, reflected, as `crc32fast` computes it),
//! tuned for the 256 B to 4 KiB buffers of RoCE packets.
//!
//! `crc32fast` is built for long buffers: below 2 KiB it folds eight
//! streams and then collapses them one after another, and the short tail is
//! folded 16 bytes at a time. Every step of that collapse waits for the
//! previous carry-less multiply, so a 1 KiB packet spends most of its ~150
//! cycles waiting, not computing. Here, on x86-64 with AVX-512 and
//! VPCLMULQDQ:
//!
//! - the buffer is split into 64-byte blocks counted from its *end*: the
//!   short remainder becomes a first block padded with zeros in front, which
//!   does not change a CRC whose state is zero (the running state is
//!   XORed into the first four message bytes instead), and whole zero blocks
//!   are added in front so that the blocks fill four accumulators evenly;
//! - the four accumulators (16 streams of 16 bytes) are folded onto the last
//!   one in a single step, each by its own distance, and the four lanes of
//!   that one the same way, so the collapse costs two multiplies of latency
//!   instead of fifteen;
//! - a Barrett reduction takes the 128 bits left to 32.
//!
//! Elsewhere, and for lengths this path does not take, [`update`] is
//! `crc32fast`.
//!
//! The method is the folding of Gopal et al., "Fast CRC Computation for
//! Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009); the
//! constants are derived below at compile time, and the tests check them
//! against the published ones and every length against `crc32fast`.
//!
//! # Features
//!
//! - `std` (default): detect AVX-512 and VPCLMULQDQ at run time. Without it
//!   the crate is `no_std` (and allocates nothing); the folding path is then
//!   compiled in only when the build itself enables every feature it needs
//!   (`-C target-cpu=icelake-server` and later, or `-C target-feature=...`),
//!   since `core` cannot ask the CPU.
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![deny(missing_docs)]

/// Continues a CRC-32: `crc` is the finished CRC of the bytes before `data`
/// (0 for none), and the result is the finished CRC of both, exactly as
/// `crc32fast::Hasher::new_with_initial(crc)` followed by `update(data)` and
/// `finalize()`.
///
/// ```
/// assert_eq!(crc32_fold::update(0, b"123456789"), 0xcbf4_3926);
/// let (a, b) = b"123456789".split_at(4);
/// assert_eq!(crc32_fold::update(crc32_fold::update(0, a), b), 0xcbf4_3926);
/// ```
#[inline]
pub fn update(crc: u32, data: &[u8]) -> u32 {
    #[cfg(all(
        target_arch = "x86_64",
        any(
            feature = "std",
            all(
                target_feature = "avx512f",
                target_feature = "avx512bw",
                target_feature = "avx512vbmi",
                target_feature = "vpclmulqdq",
                target_feature = "pclmulqdq",
                target_feature = "sse4.1"
            )
        )
    ))]
    if x86::takes(data.len()) && x86::available() {
        return x86::update(crc, data);
    }
    let mut h = crc32fast::Hasher::new_with_initial(crc);
    h.update(data);
    h.finalize()
}

/// Bytes to force to ones in the first 64 bytes of a buffer, for
/// [`update_masked`]: the invariant fields that the InfiniBand ICRC covers
/// as ones, for instance.
#[derive(Debug, Clone)]
pub struct OrMask {
    /// 64 zero bytes, the mask, 64 zero bytes: the kernel reads the mask of
    /// any 64-byte block at an offset into this, never past its end.
    padded: [u8; 192],
}

impl OrMask {
    /// `mask[i]` is ORed into byte `i` of the buffer.
    pub const fn new(mask: [u8; 64]) -> Self {
        let mut padded = [0; 192];
        let mut i = 0;
        while i < 64 {
            padded[64 + i] = mask[i];
            i += 1;
        }
        OrMask { padded }
    }

    fn mask(&self) -> &[u8] {
        self.padded.get(64..128).unwrap_or_default()
    }
}

/// As [`update`], over `data` with byte `i` ORed with `mask`'s byte `i`
/// for the first 64 bytes, without writing the masked copy anywhere.
///
/// ```
/// let mut mask = [0; 64];
/// mask[1] = 0xff;
/// let mask = crc32_fold::OrMask::new(mask);
/// assert_eq!(
///     crc32_fold::update_masked(0, b"1\x0034", &mask),
///     crc32_fold::update(0, b"1\xff34"),
/// );
/// ```
#[inline]
pub fn update_masked(crc: u32, data: &[u8], mask: &OrMask) -> u32 {
    #[cfg(all(
        target_arch = "x86_64",
        any(
            feature = "std",
            all(
                target_feature = "avx512f",
                target_feature = "avx512bw",
                target_feature = "avx512vbmi",
                target_feature = "vpclmulqdq",
                target_feature = "pclmulqdq",
                target_feature = "sse4.1"
            )
        )
    ))]
    if x86::takes(data.len()) && x86::available() {
        return x86::update_masked(crc, data, mask);
    }
    let (head, rest) = data.split_at(data.len().min(64));
    let mut masked = [0u8; 64];
    for ((m, &d), &o) in masked.iter_mut().zip(head).zip(mask.mask()) {
        *m = d | o;
    }
    let mut h = crc32fast::Hasher::new_with_initial(crc);
    h.update(masked.get(..head.len()).unwrap_or_default());
    h.update(rest);
    h.finalize()
}

/// Fold constants, derived from the polynomial. Unused (but still tested)
/// where the folding path is not compiled in.
#[allow(dead_code)]
mod consts {
    /// The CRC-32 polynomial without its x^32 term, normal bit order.
    const POLY: u32 = 0x04c1_1db7;

    /// x^e mod P, normal bit order.
    const fn xpow_mod(e: u32) -> u32 {
        let mut r: u32 = 1;
        let mut i = 0;
        while i < e {
            let carry = r & 0x8000_0000 != 0;
            r <<= 1;
            if carry {
                r ^= POLY;
            }
            i += 1;
        }
        r
    }

    /// The multiplier that moves 64 bits of the reflected stream forward: x^e
    /// mod P bit-reflected, one bit up, because the carry-less product of two
    /// reflected operands comes out one bit low.
    pub const fn k(e: u32) -> i64 {
        ((xpow_mod(e).reverse_bits() as u64) << 1) as i64
    }

    /// The pair that folds a 128-bit lane `d` bits forward: its first
    /// (low) 64 bits are 64 bits further from the end than its high 64 bits.
    pub const fn fold(d: u32) -> (i64, i64) {
        (k(d + 32), k(d - 32))
    }

    /// The polynomial with its x^32 term, reflected over 33 bits.
    pub const P_REFLECTED: i64 = ((((POLY as u64) | 1 << 32).reverse_bits()) >> 31) as i64;

    /// Barrett's mu = floor(x^64 / P), reflected over 33 bits.
    pub const MU_REFLECTED: i64 = {
        let p: u128 = (POLY as u128) | 1 << 32;
        let mut rem: u128 = 1 << 64;
        let mut q: u64 = 0;
        let mut bit = 64;
        while bit >= 32 {
            if rem & (1 << bit) != 0 {
                rem ^= p << (bit - 32);
                q |= 1 << (bit - 32);
            }
            bit -= 1;
        }
        (q.reverse_bits() >> 31) as i64
    };
}

/// On x86-64 with `std` (runtime detection decides), or without `std` when
/// the build enables every feature the path uses: nothing can ask the CPU
/// then, and a target such as `x86_64-unknown-none`, built without SIMD
/// registers, must not see this code at all.
#[cfg(all(
    target_arch = "x86_64",
    any(
        feature = "std",
        all(
            target_feature = "avx512f",
            target_feature = "avx512bw",
            target_feature = "avx512vbmi",
            target_feature = "vpclmulqdq",
            target_feature = "pclmulqdq",
            target_feature = "sse4.1"
        )
    )
))]
#[allow(unsafe_code)]
mod x86 {
    use super::consts::{fold, k, MU_REFLECTED, P_REFLECTED};
    use core::arch::x86_64::*;
    use core::sync::atomic::{AtomicU8, Ordering};

    /// Whether the kernel takes a buffer of `len` bytes. Below 64 bytes
    /// `crc32fast`'s one-stream fold is as quick. A remainder of 1-3 bytes
    /// would leave the running state straddling two blocks: rare for packets
    /// (IBA pads them to four bytes), so left to `crc32fast`.
    #[inline]
    pub fn takes(len: usize) -> bool {
        len >= 64 && !matches!(len % 64, 1..=3)
    }

    /// 0: not yet known, 1: yes, 2: no.
    static AVAILABLE: AtomicU8 = AtomicU8::new(0);

    /// Whether this CPU has every instruction the kernel uses.
    #[inline]
    pub fn available() -> bool {
        match AVAILABLE.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => detect(),
        }
    }

    #[cold]
    fn detect() -> bool {
        let yes = cpu_has_features();
        AVAILABLE.store(if yes { 1 } else { 2 }, Ordering::Relaxed);
        yes
    }

    #[cfg(feature = "std")]
    fn cpu_has_features() -> bool {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vbmi")
            && std::is_x86_feature_detected!("vpclmulqdq")
            && std::is_x86_feature_detected!("pclmulqdq")
            && std::is_x86_feature_detected!("sse4.1")
    }

    /// Without `std` nothing can ask the CPU: the build's own target
    /// features decide.
    #[cfg(not(feature = "std"))]
    fn cpu_has_features() -> bool {
        cfg!(all(
            target_feature = "avx512f",
            target_feature = "avx512bw",
            target_feature = "avx512vbmi",
            target_feature = "vpclmulqdq",
            target_feature = "pclmulqdq",
            target_feature = "sse4.1"
        ))
    }

    /// See [`super::update`]; the caller has checked [`takes`] and
    /// [`available`].
    #[inline]
    pub fn update(crc: u32, data: &[u8]) -> u32 {
        debug_assert!(takes(data.len()) && available());
        // SAFETY: the caller checked that the CPU has every feature `kernel`
        // enables (`available`), and `kernel` reads only inside `data` (and
        // `NO_MASK`, which it does not read unmasked).
        !unsafe { kernel::<false>(!crc, data, &NO_MASK) }
    }

    /// See [`super::update_masked`]; the caller has checked [`takes`] and
    /// [`available`].
    #[inline]
    pub fn update_masked(crc: u32, data: &[u8], mask: &super::OrMask) -> u32 {
        debug_assert!(takes(data.len()) && available());
        // SAFETY: as in `update`; the mask is read at offsets 64..=128 of
        // its 192 bytes, 64 bytes at a time.
        !unsafe { kernel::<true>(!crc, data, &mask.padded) }
    }

    static NO_MASK: [u8; 192] = [0; 192];

    /// Sixteen 64-bit constants as eight 128-bit lanes, lowest first.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,vpclmulqdq,pclmulqdq,sse4.1")]
    fn lanes(p: [(i64, i64); 4]) -> __m512i {
        _mm512_set_epi64(
            p[3].1, p[3].0, p[2].1, p[2].0, p[1].1, p[1].0, p[0].1, p[0].0,
        )
    }

    /// Each 128-bit lane of `a` moved forward by its lane's distance in `k`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,vpclmulqdq,pclmulqdq,sse4.1")]
    fn advance(a: __m512i, k: __m512i) -> __m512i {
        _mm512_xor_si512(
            _mm512_clmulepi64_epi128(a, k, 0x00),
            _mm512_clmulepi64_epi128(a, k, 0x11),
        )
    }

    /// `a` moved forward by the distance in `k`, plus `b`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,vpclmulqdq,pclmulqdq,sse4.1")]
    fn advance_add(a: __m512i, k: __m512i, b: __m512i) -> __m512i {
        _mm512_ternarylogic_epi64(
            _mm512_clmulepi64_epi128(a, k, 0x00),
            _mm512_clmulepi64_epi128(a, k, 0x11),
            b,
            0x96,
        )
    }

    /// The raw (unfinished) CRC of `state` continued over `data`, with
    /// `takes(data.len())`. With `MASKED`, byte `i < 64` of `data` is ORed
    /// with byte `64 + i` of `mask` (laid out as [`super::OrMask`]).
    ///
    /// # Safety
    /// The CPU must have the enabled features.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,vpclmulqdq,pclmulqdq,sse4.1")]
    unsafe fn kernel<const MASKED: bool>(state: u32, data: &[u8], mask: &[u8; 192]) -> u32 {
        let n = data.len();
        // The first block holds the first `first` bytes (1..=64), at its end.
        let first = match n % 64 {
            0 => 64,
            r => r,
        };
        let blocks = (n - first) / 64 + 1;
        // Zero blocks in front, so that the last block lands in `v3`.
        let lead = (4 - blocks % 4) % 4;

        // The first block: its bytes, the running state XORed into the first
        // four, then moved to the top (the zeros in front leave a CRC with
        // zero state unchanged).
        // SAFETY (loads): the mask takes only `first` <= n bytes from the start.
        let head =
            unsafe { _mm512_maskz_loadu_epi8(u64::MAX >> (64 - first), data.as_ptr().cast()) };
        let head = if MASKED {
            // SAFETY: `first` <= 64 bytes from offset 64 of 192.
            let m = unsafe {
                _mm512_maskz_loadu_epi8(u64::MAX >> (64 - first), mask.as_ptr().add(64).cast())
            };
            _mm512_or_si512(head, m)
        } else {
            head
        };
        // Block 1 holds bytes `first..first + 64`: the rest of the mask.
        let mask1 = if MASKED {
            // SAFETY: 64 + first + 64 <= 192.
            unsafe { _mm512_loadu_si512(mask.as_ptr().add(64 + first).cast()) }
        } else {
            _mm512_setzero_si512()
        };
        let head = _mm512_xor_si512(
            head,
            _mm512_zextsi128_si512(_mm_cvtsi32_si128(state as i32)),
        );
        let head = {
            let shift = 64 - first as i8;
            let iota = _mm512_set_epi8(
                63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43,
                42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22,
                21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
            );
            // Byte j of the result is byte j - shift of `head` (indices are
            // taken mod 64), and zero below `shift`.
            let idx = _mm512_sub_epi8(iota, _mm512_set1_epi8(shift));
            _mm512_maskz_permutexvar_epi8(u64::MAX << shift, idx, head)
        };

        // Block `i` (0 = `head`) of the data.
        let load = |i: usize| -> __m512i {
            let at = first + 64 * (i - 1);
            debug_assert!(at + 64 <= n);
            // SAFETY: blocks after the first are whole: first + 64 * (blocks - 1) == n.
            let block = unsafe { _mm512_loadu_si512(data.as_ptr().add(at).cast()) };
            // Blocks from 2 on start past byte 64, where no mask reaches.
            if MASKED && i == 1 {
                _mm512_or_si512(block, mask1)
            } else {
                block
            }
        };
        // Virtual block `v` (0..4) of the first group.
        let group0 = |v: usize| -> __m512i {
            match v.checked_sub(lead) {
                None => _mm512_setzero_si512(),
                Some(0) => head,
                Some(i) => load(i),
            }
        };
        let (mut v0, mut v1, mut v2, mut v3) = (group0(0), group0(1), group0(2), group0(3));

        let by256 = {
            let p = const { fold(2048) };
            lanes([p; 4])
        };
        let mut i = 4 - lead;
        while i < blocks {
            v0 = advance_add(v0, by256, load(i));
            v1 = advance_add(v1, by256, load(i + 1));
            v2 = advance_add(v2, by256, load(i + 2));
            v3 = advance_add(v3, by256, load(i + 3));
            i += 4;
        }

        // The four accumulators onto the last, each by its distance.
        let x = _mm512_ternarylogic_epi64(
            advance(v0, lanes([const { fold(1536) }; 4])),
            advance(v1, lanes([const { fold(1024) }; 4])),
            _mm512_xor_si512(advance(v2, lanes([const { fold(512) }; 4])), v3),
            0x96,
        );
        // The four lanes of `x` onto its last.
        let t = advance(
            x,
            lanes(const { [fold(384), fold(256), fold(128), (0, 0)] }),
        );
        let t = _mm512_mask_blend_epi64(0b1100_0000, t, x);
        let t = _mm256_xor_si256(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
        let x = _mm_xor_si128(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));

        reduce(x)
    }

    /// The raw CRC of the 16 bytes in `x` (state zero): 128 bits to 64 by
    /// moving the low half forward onto the high, then 64 to 32 the same
    /// way, then Barrett.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,vpclmulqdq,pclmulqdq,sse4.1")]
    fn reduce(x: __m128i) -> u32 {
        let low32 = _mm_set_epi32(0, 0, 0, -1);
        // Low 64 bits times x^96 mod P, onto the high 64 (a 96-bit value).
        let x = _mm_xor_si128(
            _mm_clmulepi64_si128(x, _mm_set_epi64x(0, const { k(96) }), 0x00),
            _mm_srli_si128(x, 8),
        );
        // Low 32 bits times x^64 mod P, onto the rest (64 bits).
        let x = _mm_xor_si128(
            _mm_clmulepi64_si128(
                _mm_and_si128(x, low32),
                _mm_set_epi64x(0, const { k(64) }),
                0x00,
            ),
            _mm_srli_si128(x, 4),
        );
        // Barrett: q = low32(x) * mu, r = x - low32(q) * P; the CRC is in
        // bits 32..64 (reflected).
        let pm = _mm_set_epi64x(MU_REFLECTED, P_REFLECTED);
        let q = _mm_clmulepi64_si128(_mm_and_si128(x, low32), pm, 0x10);
        let r = _mm_clmulepi64_si128(_mm_and_si128(q, low32), pm, 0x00);
        _mm_extract_epi32(_mm_xor_si128(x, r), 1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::consts::{fold, k, MU_REFLECTED, P_REFLECTED};
    use proptest::prelude::*;

    fn reference(crc: u32, data: &[u8]) -> u32 {
        let mut h = crc32fast::Hasher::new_with_initial(crc);
        h.update(data);
        h.finalize()
    }

    #[test]
    fn constants_match_the_published_ones() {
        // Gopal et al. and the Linux/zlib/crc32fast tables for CRC-32.
        assert_eq!(fold(512), (0x1_5444_2bd4, 0x1_c6e4_1596));
        assert_eq!(fold(128), (0x1_7519_97d0, 0x0_ccaa_009e));
        assert_eq!(k(64), 0x1_63cd_6124);
        assert_eq!(P_REFLECTED, 0x1_db71_0641);
        assert_eq!(MU_REFLECTED, 0x1_f701_1641);
        assert_eq!(fold(1024), (0x1_e88e_f372, 0x1_4a7f_e880));
        assert_eq!(fold(2048), (0x1_1542_778a, 0x1_322d_1430));
    }

    #[test]
    fn check_value() {
        assert_eq!(super::update(0, b"123456789"), 0xcbf4_3926);
        assert_eq!(super::update(0, &[]), 0);
    }

    /// Every length up to 4.5 KiB, at every alignment mod 64, with a state.
    #[test]
    fn every_length_and_alignment_agrees_with_crc32fast() {
        let buf: Vec<u8> = (0..4700u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in 0..=4608 {
            for skew in [0, 1, 7, 33, 63] {
                let data = &buf[skew..skew + len];
                for crc in [0, 0xffff_ffff, 0x1234_5678] {
                    assert_eq!(
                        super::update(crc, data),
                        reference(crc, data),
                        "len {len} skew {skew} crc {crc:#x}"
                    );
                }
            }
        }
    }

    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    #[test]
    fn the_kernel_runs_here() {
        // The lab and CI machines have AVX-512: make sure the tests above
        // exercised the kernel rather than only the fallback.
        if std::env::var_os("CRC32_FOLD_MAY_FALL_BACK").is_none() {
            assert!(super::x86::available(), "no AVX-512 VPCLMULQDQ here: set CRC32_FOLD_MAY_FALL_BACK=1 to run the tests on the fallback only");
        }
    }

    fn masked_reference(crc: u32, data: &[u8], mask: &[u8; 64]) -> u32 {
        let mut copy = data.to_vec();
        for (d, m) in copy.iter_mut().zip(mask) {
            *d |= m;
        }
        reference(crc, &copy)
    }

    /// Every length up to 1 KiB and a few masks, including one that
    /// reaches into the second 64-byte block for every length.
    #[test]
    fn masked_agrees_with_masking_a_copy() {
        let buf: Vec<u8> = (0..1200u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        let mut sparse = [0u8; 64];
        for i in [0, 1, 3, 8, 10, 11, 26, 27, 32, 46, 47, 52, 63] {
            sparse[i] = 0xff;
        }
        sparse[0] = 0x0f;
        let masks = [[0u8; 64], [0xff; 64], sparse];
        for mask in &masks {
            let or = super::OrMask::new(*mask);
            for len in 0..=1024 {
                for skew in [0, 5] {
                    let data = &buf[skew..skew + len];
                    for crc in [0, 0xdead_beef] {
                        assert_eq!(
                            super::update_masked(crc, data, &or),
                            masked_reference(crc, data, mask),
                            "len {len} skew {skew} crc {crc:#x} mask {mask:?}"
                        );
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn masked_agrees_with_masking_a_copy_anywhere(
            crc: u32,
            data in proptest::collection::vec(any::<u8>(), 0..600),
            mask in proptest::array::uniform32(any::<u8>()),
            mask_at in 0usize..33,
        ) {
            let mut m = [0u8; 64];
            m[mask_at..mask_at + 32].copy_from_slice(&mask);
            let or = super::OrMask::new(m);
            prop_assert_eq!(super::update_masked(crc, &data, &or), masked_reference(crc, &data, &m));
        }

        #[test]
        fn agrees_with_crc32fast(crc: u32, data in proptest::collection::vec(any::<u8>(), 0..9000)) {
            prop_assert_eq!(super::update(crc, &data), reference(crc, &data));
        }

        #[test]
        fn composes(data in proptest::collection::vec(any::<u8>(), 0..3000), cut in 0usize..3000) {
            let cut = cut.min(data.len());
            let (a, b) = data.split_at(cut);
            prop_assert_eq!(super::update(super::update(0, a), b), reference(0, &data));
        }
    }
}
