//! The ICRC's CRC-32 kernel against crc32fast: any bytes, any running
//! state, any split point give the same CRC.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, data)) = data.split_first_chunk::<6>() else {
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
});
