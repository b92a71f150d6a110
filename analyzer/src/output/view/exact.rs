//! How the JSON writes numbers a double cannot hold: nanosecond timestamps
//! since the epoch (about 1.8e18, above 2^53: jq 1.6 and JavaScript round
//! them to 256 ns) and 64-bit file offsets as decimal strings; VAs and
//! R_Keys as `"0x…"` hex strings, as the text writes them. Every JSON
//! reader keeps a string exact; the Parquet columns stay integers.
//!
//! Used as `#[serde(serialize_with = "exact::decimal")]` with
//! `#[schemars(with = "String")]` (or `Option<String>`), on fields of type
//! `u64`, `u32`, their `Option`s, or references to them.

use serde::Serializer;

/// A number the JSON writes as a string, or null.
pub trait Exact {
    /// The value; `None` for null.
    fn exact(&self) -> Option<u64>;
}

impl Exact for u64 {
    fn exact(&self) -> Option<u64> {
        Some(*self)
    }
}

impl Exact for u32 {
    fn exact(&self) -> Option<u64> {
        Some(u64::from(*self))
    }
}

impl<T: Exact> Exact for Option<T> {
    fn exact(&self) -> Option<u64> {
        self.as_ref().and_then(Exact::exact)
    }
}

impl<T: Exact + ?Sized> Exact for &T {
    fn exact(&self) -> Option<u64> {
        (**self).exact()
    }
}

/// `"1795217646495692000"`, or null.
pub fn decimal<S: Serializer, T: Exact>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    match v.exact() {
        Some(x) => s.collect_str(&x),
        None => s.serialize_none(),
    }
}

/// `"0xfa7da3d48d23d000"`, or null.
pub fn hex<S: Serializer, T: Exact>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    match v.exact() {
        Some(x) => s.collect_str(&format_args!("{x:#x}")),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct T<'a> {
        #[serde(serialize_with = "decimal")]
        ts: &'a u64,
        #[serde(serialize_with = "decimal")]
        none: Option<u64>,
        #[serde(serialize_with = "hex")]
        va: u64,
        #[serde(serialize_with = "hex")]
        rkey: &'a Option<u32>,
    }

    #[test]
    fn big_numbers_are_exact_strings() {
        let t = T {
            ts: &1_795_217_646_495_692_001,
            none: None,
            va: 0xfa7d_a3d4_8d23_d000,
            rkey: &Some(0x1234),
        };
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"ts":"1795217646495692001","none":null,"va":"0xfa7da3d48d23d000","rkey":"0x1234"}"#
        );
    }
}
