//! Byte counts as every text view writes them: scaled to KiB/MiB/GiB/TiB
//! (powers of 1024, as `ls -h` and the kernel's sizes), with the exact
//! count beside where a total is compared with another tool's.

const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];

/// The unit `n` is written in and its value there (unit 0 below 1 KiB).
fn scaled(n: u64) -> (f64, usize) {
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    (v, i)
}

/// `812 B`, `1.5 KiB`, `256 KiB`, `3.8 MiB`: one decimal, none when it
/// is `.0` (it would claim a precision the rounding does not have).
pub fn bytes(n: u64) -> String {
    let (v, i) = scaled(n);
    if i == 0 {
        return format!("{n} B");
    }
    let one = format!("{v:.1}");
    let one = one.strip_suffix(".0").unwrap_or(&one);
    format!("{one} {}", UNITS[i])
}

/// [`bytes()`], and the exact count when the scaled value is rounded:
/// `1.5 MiB` (exactly), `3.8 MiB = 3966544 B`.
pub fn bytes_exact(n: u64) -> String {
    let (_, i) = scaled(n);
    let short = bytes(n);
    // Exact when n is a whole number of tenths of its unit (in integers:
    // a double cannot tell counts above 2^53 apart).
    let exact = (u128::from(n) * 10) % (1u128 << (10 * i)) == 0;
    if exact {
        short
    } else {
        format!("{short} = {n} B")
    }
}

#[cfg(test)]
mod tests {
    use super::{bytes, bytes_exact};

    #[test]
    fn scaled_with_the_exact_count_where_rounded() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1 KiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(262_144), "256 KiB");
        assert_eq!(bytes(1_572_864), "1.5 MiB");
        assert_eq!(bytes(3 << 30), "3 GiB");
        assert_eq!(bytes_exact(1_572_864), "1.5 MiB");
        assert_eq!(bytes_exact(136), "136 B");
        assert_eq!(bytes_exact(3_966_544), "3.8 MiB = 3966544 B");
        assert_eq!(bytes_exact(3_145_864), "3 MiB = 3145864 B");
        assert_eq!(
            bytes_exact(u64::MAX),
            format!("16777216 TiB = {} B", u64::MAX)
        );
    }
}
