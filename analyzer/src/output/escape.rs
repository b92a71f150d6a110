//! Untrusted text made safe for a terminal: the one function every path,
//! message and name goes through before it is printed as text.
//!
//! A file name is any bytes but `/` and NUL: `\x1b[2J` in one clears the
//! screen of whoever runs `report` on it, a newline forges a line of the
//! report, U+202E reverses what follows. Such characters are written as
//! escapes instead (`\x1b`, `\n`, `\u{202e}`), so the text says what the
//! name holds and the terminal only ever receives printable characters.
//! JSON output needs none of this: serde escapes control characters, and
//! the string keeps its real value there.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal as it is: C0 and C1 controls and
/// DEL, and the bidirectional overrides and isolates (which reorder what
/// is shown after them).
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every character a terminal would act on written as an escape;
/// borrowed as it is when there is none (the usual case).
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unsafe_char(c) && u32::from(c) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`escape`] of a value's `Display` (a path's `display()`, an error).
pub fn escaped(v: impl std::fmt::Display) -> String {
    escape(&v.to_string()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_overrides_become_escapes_and_the_rest_is_untouched() {
        assert!(matches!(escape("v3 ddp.pcap é µs"), Cow::Borrowed(_)));
        assert_eq!(
            escape("a\x1b[2J\nb\r\tc\x7f\u{9b}d\u{202e}e"),
            "a\\x1b[2J\\nb\\r\\tc\\x7f\\x9bd\\u{202e}e"
        );
        assert_eq!(escaped(std::path::Path::new("x\ny").display()), "x\\ny");
    }
}
