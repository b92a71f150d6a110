//! The kernel as judge: a lab run's mountstats against its capture through
//! the real binary (`rdma-analyzer mountstats`), shared by the committed-run
//! test and the test command's fresh lab run.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

/// The umount's start, seconds since the epoch, from the run's command log
/// (`HH:MM:SS.mmm` on the day the run started).
pub fn umount_time(summary: &Value) -> String {
    let day = &summary["started_utc"].as_str().unwrap()[..10];
    let at = summary["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .rfind(|c| c.rsplit('\t').next().unwrap().starts_with("umount"))
        .and_then(|c| c.split('\t').next())
        .expect("the run logs its umount");
    let out = Command::new("date")
        .args(["-u", "-d", &format!("{day} {at}"), "+%s.%3N"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A mountstats block rebuilt from a run's summary: the mount line as the
/// kernel reported it and the `xprt: rdma` lines it recorded.
pub fn rebuilt_mountstats(summary: &Value, dir: &Path) -> Option<PathBuf> {
    let mount = summary["mounts_as_kernel_reports"]
        .as_array()?
        .first()?
        .as_str()?;
    let xprts = summary["xprt_rdma_mountstats"].as_array()?;
    let w: Vec<&str> = mount.split_whitespace().collect();
    let mut text = format!(
        "device {} mounted on {} with fstype {} statvers=1.1\n\topts:\t{}\n",
        w[0], w[1], w[2], w[3]
    );
    for x in xprts {
        text.push_str(&format!("\txprt:\t{}\n", x.as_str()?));
    }
    let path = dir.join("mountstats.txt");
    std::fs::write(&path, text).unwrap();
    Some(path)
}

/// `mountstats AFTER --capture PCAP [--until T] --json`: exit code, document.
pub fn compare(after: &Path, pcap: &Path, until: Option<&str>) -> (i32, Value) {
    compare_with_devices(after, pcap, until, None)
}

/// [`compare`], with the host's device counters (`--device-counters`).
pub fn compare_with_devices(
    after: &Path,
    pcap: &Path,
    until: Option<&str>,
    devices: Option<&Path>,
) -> (i32, Value) {
    let mut cmd = Command::new(BIN);
    cmd.arg("mountstats")
        .arg(after)
        .arg("--capture")
        .arg(pcap)
        .arg("--json");
    if let Some(u) = until {
        cmd.args(["--until", u]);
    }
    if let Some(d) = devices {
        cmd.arg("--device-counters").arg(d);
    }
    let out = cmd.output().unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: {}",
            pcap.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), doc)
}

pub fn differing(mount: &Value) -> Vec<String> {
    mount["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["verdict"] == "differ")
        .map(|r| r["field"].as_str().unwrap().to_string())
        .collect()
}
