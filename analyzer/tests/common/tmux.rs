//! A tmux server of the test's own, to drive the real binary in a real
//! terminal (shared by the TUI tests).
#![allow(dead_code)]

use std::process::{Command, Output};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// A tmux server of our own (its own socket), killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts a server on socket `socket` with one 160x48 session `t` running `shell`.
    pub fn start(socket: String, shell: &str) -> Tmux {
        Tmux::start_sized(socket, shell, 160, 48)
    }

    /// [`Tmux::start`] with a `w`×`h` terminal from the first frame on.
    pub fn start_sized(socket: String, shell: &str, w: u16, h: u16) -> Tmux {
        let t = Tmux { socket };
        let (w, h) = (w.to_string(), h.to_string());
        let o = t.cmd(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &w,
            "-y",
            &h,
            "sh",
            "-c",
            shell,
        ]);
        assert!(o.status.success(), "tmux new-session: {o:?}");
        t
    }

    pub fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("running tmux")
    }

    pub fn send(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "t"];
        a.extend_from_slice(keys);
        let o = self.cmd(&a);
        assert!(o.status.success(), "send-keys {keys:?}: {o:?}");
    }

    pub fn pane(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    /// Waits until the pane shows `what` (the UI redraws within 50 ms).
    pub fn wait_for(&self, what: &str) -> String {
        let start = Instant::now();
        loop {
            let p = self.pane();
            if p.contains(what) {
                // A capture can catch a frame half written: wait for two
                // identical ones in a row.
                sleep(Duration::from_millis(60));
                let q = self.pane();
                if q == p {
                    return q;
                }
                continue;
            }
            if start.elapsed() > Duration::from_secs(30) {
                panic!("pane never showed {what:?}; it shows:\n{p}");
            }
            sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the pane no longer shows `what`.
    pub fn wait_gone(&self, what: &str) {
        let start = Instant::now();
        while self.pane().contains(what) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "pane still shows {what:?}:\n{}",
                self.pane()
            );
            sleep(Duration::from_millis(100));
        }
    }

    /// Sends keys, then waits for `what`.
    pub fn step(&self, keys: &[&str], what: &str) -> String {
        self.send(keys);
        self.wait_for(what)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}
