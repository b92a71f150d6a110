//! Reading a Prometheus exposition (text format 0.0.4 or OpenMetrics) the
//! way a scraper does, for the tests that compare it with `report`.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Its name (with `_total`, `_bucket`, ...).
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its value.
    pub value: f64,
}

/// Every sample of `text`.
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| parse_line(l).unwrap_or_else(|| panic!("not a sample line: {l:?}")))
        .collect()
}

fn parse_line(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' '])?;
    let name = &line[..name_end];
    let rest = &line[name_end..];
    match rest.strip_prefix('{') {
        Some(labels) => parse_labels(name, BTreeMap::new(), labels),
        None => Some(Sample {
            name: name.to_string(),
            labels: BTreeMap::new(),
            value: parse_value(rest.split_whitespace().next()?)?,
        }),
    }
}

/// `key="value",...}` and the value after it; values escape `\\`, `\"`
/// and newlines (`\n`).
fn parse_labels(name: &str, mut labels: BTreeMap<String, String>, mut r: &str) -> Option<Sample> {
    loop {
        if let Some(t) = r.strip_prefix('}') {
            let value = t.split_whitespace().next()?;
            return Some(Sample {
                name: name.to_string(),
                labels,
                value: parse_value(value)?,
            });
        }
        let eq = r.find('=')?;
        let key = r[..eq].to_string();
        let mut value = String::new();
        let mut chars = r[eq + 2..].char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break eq + 2 + i,
                c => value.push(c),
            }
        };
        labels.insert(key, value);
        r = &r[end + 1..];
        r = r.strip_prefix(',').unwrap_or(r);
    }
}

fn parse_value(v: &str) -> Option<f64> {
    match v {
        "+Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        v => v.parse().ok(),
    }
}

/// The metric families `text` declares (`# TYPE name type`), as
/// (name, type).
pub fn families(text: &str) -> BTreeSet<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// The sum of `name`'s samples whose labels include every pair of `with`.
pub fn sum(samples: &[Sample], name: &str, with: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| {
            with.iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum()
}

/// `NFS READ` from a sample's `program` and `procedure` labels, as the
/// report names procedures (`Transaction::procedure_label`).
pub fn procedure_label(labels: &BTreeMap<String, String>) -> String {
    let program = labels.get("program").map_or("", String::as_str);
    let procedure = labels.get("procedure").map_or("", String::as_str);
    match (program, procedure) {
        ("", "") => "?".to_string(),
        ("", p) => p.to_string(),
        (prog, p) if prog.bytes().all(|b| b.is_ascii_digit()) && p.starts_with("proc ") => {
            format!("prog {prog} {p}")
        }
        // An NFSv4 minor version is in the version label ("4.1"), as the
        // report's label names it ("NFSv4.1 COMPOUND(...)").
        (prog, p) => match labels.get("version").map(String::as_str) {
            Some(v) if v.contains('.') => format!("{prog}v{v} {p}"),
            _ => format!("{prog} {p}"),
        },
    }
}
