//! What makes the flight recorder write a dump (`--record-on`).

use std::fmt;

use crate::diagnosis::CauseName;
use crate::engine::{Finding, Kind, Severity};

/// One `--record-on` condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    /// An anomaly of this kind (`finding:credit_overrun`).
    Kind(Kind),
    /// An anomaly of at least this severity (`severity>=error`).
    Severity(Severity),
    /// The diagnosis names this cause (`cause:reconnect_stall`).
    Cause(String),
    /// A connection torn down (CM DREQ) or a client that connects again
    /// (`reconnect`).
    Reconnect,
    /// A transaction slower than this many µs (`latency>2s`).
    Latency(f64),
    /// SIGUSR1 (`sigusr1`; always on).
    Signal,
    /// A POST to the metrics server's `/record` (on with `--metrics`).
    Http,
}

impl Trigger {
    /// The trigger as `--record-on` spells it, made safe for a file name
    /// (`finding-credit_overrun`, `severity-error`, `latency-2s`).
    pub fn file_tag(&self) -> String {
        match self {
            Trigger::Kind(k) => format!("finding-{}", k.as_str()),
            Trigger::Severity(s) => format!("severity-{}", s.as_str()),
            Trigger::Cause(c) => format!("cause-{c}"),
            Trigger::Reconnect => "reconnect".into(),
            Trigger::Latency(_) => "latency".into(),
            Trigger::Signal => "sigusr1".into(),
            Trigger::Http => "http".into(),
        }
    }

    /// Whether the finding `f` fires this trigger.
    pub fn fired_by(&self, f: &Finding) -> bool {
        match (self, f) {
            (Trigger::Kind(k), Finding::Anomaly(a)) => a.kind == *k,
            (Trigger::Severity(s), Finding::Anomaly(a)) => a.kind.severity() >= *s,
            (Trigger::Latency(us), Finding::Transaction(t)) => {
                t.latency_us.is_some_and(|l| l > *us)
            }
            // An operation sent again on a new connection: the client
            // reconnected with calls outstanding.
            (Trigger::Reconnect, Finding::Transaction(t)) => !t.earlier_connections.is_empty(),
            _ => false,
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trigger::Kind(k) => write!(f, "finding:{}", k.as_str()),
            Trigger::Severity(s) => write!(f, "severity>={}", s.as_str()),
            Trigger::Cause(c) => write!(f, "cause:{c}"),
            Trigger::Reconnect => f.write_str("reconnect"),
            Trigger::Latency(us) => write!(f, "latency>{}s", us / 1e6),
            Trigger::Signal => f.write_str("sigusr1"),
            Trigger::Http => f.write_str("http POST /record"),
        }
    }
}

/// The causes the diagnosis can name, from its schema: a cause added
/// there is accepted here without a second list to keep.
fn cause_names() -> Vec<String> {
    // A variant with a doc comment is a `oneOf` entry with a `const`; one
    // without, a string in an `enum`.
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("const", serde_json::Value::String(s)) => out.push(s.clone()),
                        ("enum", serde_json::Value::Array(a)) => {
                            out.extend(a.iter().filter_map(|x| x.as_str().map(str::to_string)));
                        }
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let schema = schemars::schema_for!(CauseName);
    let mut out = Vec::new();
    walk(schema.as_value(), &mut out);
    out
}

/// A duration with a unit: `2s`, `500ms`, `250us`, `1.5s`; in µs.
pub fn parse_duration_us(s: &str) -> Result<f64, String> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60e6)
    } else {
        return Err(format!("{s:?} has no unit: write 2s, 500ms, 250us or 1m"));
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (2s, 500ms, 250us, 1m)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{s:?} is not a duration of zero or more"));
    }
    Ok(v * scale)
}

/// Parses one `--record-on` value.
pub fn parse(s: &str) -> Result<Trigger, String> {
    if let Some(k) = s.strip_prefix("finding:") {
        return Kind::from_name(k).map(Trigger::Kind).ok_or_else(|| {
            format!("{k:?} is not a finding kind (`rdma-analyzer man` lists them, as does docs/anomalies.md)")
        });
    }
    if let Some(level) = s.strip_prefix("severity>=") {
        return match level {
            "info" => Ok(Trigger::Severity(Severity::Info)),
            "warning" => Ok(Trigger::Severity(Severity::Warning)),
            "error" => Ok(Trigger::Severity(Severity::Error)),
            _ => Err(format!(
                "{level:?} is not a severity: info, warning or error"
            )),
        };
    }
    if let Some(c) = s.strip_prefix("cause:") {
        let names = cause_names();
        return if names.iter().any(|n| n == c) {
            Ok(Trigger::Cause(c.to_string()))
        } else {
            Err(format!(
                "{c:?} is not a diagnosis cause: one of {}",
                names.join(", ")
            ))
        };
    }
    if let Some(d) = s.strip_prefix("latency>") {
        return parse_duration_us(d).map(Trigger::Latency);
    }
    match s {
        "reconnect" => Ok(Trigger::Reconnect),
        "sigusr1" => Ok(Trigger::Signal),
        _ => Err(format!(
            "{s:?} is not a trigger: finding:KIND, severity>=LEVEL, cause:NAME, reconnect, latency>DURATION or sigusr1"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses_and_reads_back_as_written() {
        for s in [
            "finding:credit_overrun",
            "severity>=error",
            "cause:reconnect_stall",
            "reconnect",
            "latency>2s",
            "sigusr1",
        ] {
            assert_eq!(parse(s).map(|t| t.to_string()), Ok(s.to_string()), "{s}");
        }
        assert_eq!(parse("latency>500ms"), Ok(Trigger::Latency(500_000.0)));
    }

    #[test]
    fn a_misspelt_trigger_says_what_is_accepted() {
        let e = parse("cause:reconect_stall").unwrap_err();
        assert!(e.contains("reconnect_stall"), "{e}");
        assert!(parse("finding:nope").is_err());
        assert!(parse("severity>=fatal").unwrap_err().contains("warning"));
        assert!(parse("latency>2").unwrap_err().contains("unit"));
        assert!(parse("latency>-1s").is_err());
        assert!(parse("always").unwrap_err().contains("sigusr1"));
    }
}
