//! Whether the test runs with root's privileges (capture and BPF need them).

/// True when the effective uid is 0 (`Uid:` in /proc/self/status lists
/// real, effective, saved and filesystem ids).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|v| v.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}
