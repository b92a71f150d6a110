//! The RDMA devices' own counters (`/sys/class/infiniband/DEV/ports/N/
//! hw_counters/*` and `.../counters/*`): what a fabric engineer reads first
//! (rxe's `rcvd_seq_err`, `duplicate_request`, `retry_exceeded_err`; mlx5's
//! `out_of_sequence`, `packet_seq_err`, `local_ack_timeout_err`). Pure data;
//! the source reads sysfs.

/// One counter of one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCounter {
    /// The device (`rxe0`, `mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
    /// `hw_counters` (the driver's) or `counters` (the port's, IBA PortCounters).
    pub group: String,
    /// The file's name (`rcvd_seq_err`).
    pub name: String,
    /// Its value.
    pub value: u64,
}

impl DeviceCounter {
    /// Whether it only grows: `lifespan` is a setting (how long the driver
    /// keeps a reading), not a count.
    pub fn is_counter(&self) -> bool {
        self.name != "lifespan"
    }
}

/// The lines `device port group name value` (the lab's dump of sysfs);
/// `#` lines are comments, a line that is not five fields with a number
/// last is skipped (a counter the driver could not read prints `?`).
pub fn parse_dump(text: &str) -> Vec<DeviceCounter> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let [device, port, group, name, value] = w.as_slice() else {
                return None;
            };
            Some(DeviceCounter {
                device: (*device).to_string(),
                port: port.parse().ok()?,
                group: (*group).to_string(),
                name: (*name).to_string(),
                value: value.parse().ok()?,
            })
        })
        .collect()
}

/// One reading of a dump: the `# LABEL EPOCH` line that opens it (the
/// lab writes `# before-mount 1795708095.515712083`), and its counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// What the line names (`before-mount`).
    pub label: String,
    /// When it was read, ns since the epoch; `None` when the line gives no
    /// time.
    pub at_ns: Option<u64>,
    /// Its counters.
    pub counters: Vec<DeviceCounter>,
}

/// A dump of several readings, each opened by a `# LABEL EPOCH` line;
/// counters before the first such line make a reading of their own with
/// no label and no time. Other `#` lines are comments.
pub fn parse_snapshots(text: &str) -> Vec<Snapshot> {
    let mut out: Vec<Snapshot> = Vec::new();
    let mut body = String::new();
    let mut head: Option<(String, Option<u64>)> = None;
    let flush = |head: Option<(String, Option<u64>)>, body: &str, out: &mut Vec<Snapshot>| {
        let counters = parse_dump(body);
        if head.is_some() || !counters.is_empty() {
            let (label, at_ns) = head.unwrap_or_default();
            out.push(Snapshot {
                label,
                at_ns,
                counters,
            });
        }
    };
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("# ").and_then(snapshot_head) {
            flush(head.take(), &body, &mut out);
            body.clear();
            head = Some(h);
        } else {
            body.push_str(line);
            body.push('\n');
        }
    }
    flush(head, &body, &mut out);
    out
}

/// `LABEL SECONDS.FRACTION` (two words, the second a time) → label, ns.
fn snapshot_head(rest: &str) -> Option<(String, Option<u64>)> {
    let w: Vec<&str> = rest.split_whitespace().collect();
    let [label, at] = w.as_slice() else {
        return None;
    };
    let (secs, frac) = at.split_once('.').unwrap_or((at, ""));
    let secs: u64 = secs.parse().ok()?;
    let digits: String = frac.chars().take(9).collect();
    let frac_ns: u64 = if digits.is_empty() {
        0
    } else {
        digits.parse::<u64>().ok()? * 10u64.pow(9 - u32::try_from(digits.len()).ok()?)
    };
    Some((
        (*label).to_string(),
        secs.checked_mul(1_000_000_000)?.checked_add(frac_ns),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_gives_its_counters_and_skips_what_it_cannot_read() {
        let c = parse_dump(
            "# before-umount 1.0\nrxe0 1 hw_counters rcvd_seq_err 3\nrxe0 1 hw_counters lifespan 10\nrxe0 1 counters port_xmit_data ?\nbroken line\n",
        );
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].name, "rcvd_seq_err");
        assert_eq!((c[0].port, c[0].value), (1, 3));
        assert!(c[0].is_counter());
        assert!(!c[1].is_counter());
    }

    #[test]
    fn a_dump_of_readings_gives_each_with_its_time() {
        let s = parse_snapshots(
            "# rxe0 on the client\n# before-mount 1795708095.515712083\nrxe0 1 hw_counters sent_pkts 0\n# before-umount 1795708131.5\nrxe0 1 hw_counters sent_pkts 283\n",
        );
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].label, "before-mount");
        assert_eq!(s[0].at_ns, Some(1_795_708_095_515_712_083));
        assert_eq!(s[1].at_ns, Some(1_795_708_131_500_000_000));
        assert_eq!(s[1].counters[0].value, 283);
        // A comment of more than two words is no reading.
        assert!(parse_snapshots("# rxe0 on the client\n").is_empty());
    }
}
