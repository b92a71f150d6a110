//! How the JSON writes numbers a double cannot hold: nanosecond timestamps
//! since the epoch (about 1.8e18, above 2^53: jq 1.6 and JavaScript round
//! them to 256 ns) and 64-bit file offsets as decimal strings; VAs and
//! R_Keys as `"0x…"` hex strings, as the text writes them. Every JSON
//! reader keeps a string exact; the Parquet columns stay integers.
//!
//! Used as `#[serde(serialize_with = "exact::decimal")]` with
//! `#[schemars(with = "String")]` (or `Option<String>`), on fields of type
//! `u64`, `u32`, their `Option`s, or references to them.

// One definition, the dissectors': frames and the analyzer's documents
// write the same numbers the same way.
pub use rdma_dissectors::view::exact::{decimal, hex, Exact};

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
