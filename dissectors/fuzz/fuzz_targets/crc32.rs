//! The ICRC's CRC-32 kernel against crc32fast: any bytes, any running
//! state, any split point and any mask of ones give the same CRC.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, data)) = data.split_first_chunk::<14>() else {
        return;
    };
    let crc = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let cut = usize::from(u16::from_le_bytes([head[4], head[5]])).min(data.len());
    let mut h = crc32fast::Hasher::new_with_initial(crc);
    h.update(data);
    let want = h.finalize();
    assert_eq!(crc32_fold::update(crc, data), want);
    let (a, b) = data.split_at(cut);
    assert_eq!(crc32_fold::update(crc32_fold::update(crc, a), b), want);

    // Bit i of the last eight header bytes forces byte i to ones.
    let bits = u64::from_le_bytes([
        head[6], head[7], head[8], head[9], head[10], head[11], head[12], head[13],
    ]);
    let mask: [u8; 64] = std::array::from_fn(|i| if bits >> i & 1 == 1 { 0xff } else { 0 });
    let mut copy = data.to_vec();
    for (d, m) in copy.iter_mut().zip(mask) {
        *d |= m;
    }
    let mut h = crc32fast::Hasher::new_with_initial(crc);
    h.update(&copy);
    assert_eq!(
        crc32_fold::update_masked(crc, data, &crc32_fold::OrMask::new(mask)),
        h.finalize()
    );
});
