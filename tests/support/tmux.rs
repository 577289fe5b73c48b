//! A tmux server of its own, for the tests that run the live views in a real terminal:
//! they type keys (send-keys) and read the screen (capture-pane).
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of its own (its own socket), killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn start(name: &str, width: u16, height: u16, dir: &Path, script: &str) -> Tmux {
        let t = Tmux {
            socket: format!("steptop-test-{}-{name}", std::process::id()),
        };
        let w = width.to_string();
        let h = height.to_string();
        let dir = dir.to_str().unwrap();
        let out = t.cmd(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &w,
            "-y",
            &h,
            "-c",
            dir,
            script,
        ]);
        assert!(out.is_some(), "tmux failed to start; is tmux installed?");
        t
    }

    pub fn cmd(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    pub fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "t"])
            .unwrap_or_default()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.cmd(&args).expect("send-keys");
    }

    pub fn var(&self, name: &str) -> String {
        self.cmd(&["display-message", "-p", "-t", "t", &format!("#{{{name}}}")])
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    /// Waits until the screen satisfies `done`; fails with the screen after 20 s.
    pub fn wait(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.screen();
            if done(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The pid of the program the pane's shell runs (its child).
    pub fn child_pid(&self) -> u32 {
        let shell: u32 = self.var("pane_pid").parse().expect("pane pid");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            for entry in std::fs::read_dir("/proc").unwrap().flatten() {
                let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
                // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
                let ppid = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                    .and_then(|p| p.parse::<u32>().ok());
                if ppid == Some(shell) {
                    return entry.file_name().to_str().unwrap().parse().unwrap();
                }
            }
            assert!(Instant::now() < deadline, "no child of the pane's shell");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.cmd(&["kill-server"]);
    }
}
