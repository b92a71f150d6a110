//! The JSON writes timestamps and 64-bit offsets as decimal strings and
//! VAs and R_Keys as `"0x…"` strings (schema version 2, so that readers
//! that parse numbers as doubles keep them exact): read either back.
#![allow(dead_code)]

use serde_json::Value;

/// A JSON number, a decimal string or a `0x` hex string, as a `u64`.
pub fn num(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => s.parse().ok(),
        },
        _ => None,
    }
}
