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
}
