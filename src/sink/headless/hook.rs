//! `--exec`: a shell command run for each alert change, on a thread of its own so that a slow
//! or hanging hook never holds up the monitor. Hooks run one at a time, in the order of the
//! changes (a "cleared" never overtakes its "raised"), each killed at its timeout. What a hook
//! prints goes to stderr, so that stdout keeps only steptop's lines; a hook that fails, hangs
//! or cannot start is reported there too.

use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::display;

/// Changes waiting for their hook; beyond this, new ones are dropped (and said so).
const QUEUE: usize = 64;
/// How often a running hook is checked for its end.
const POLL: Duration = Duration::from_millis(20);

/// One change for the hook: its environment.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub rule: String,
    pub severity: String,
    pub title: String,
    pub change: String,
    pub json: String,
}

/// The running hook thread.
pub struct Hooks {
    tx: Option<SyncSender<Call>>,
    worker: Option<JoinHandle<()>>,
}

impl Hooks {
    /// Starts the thread that runs `cmd` with `sh -c`.
    pub fn spawn(cmd: String, timeout: Duration) -> std::io::Result<Hooks> {
        let (tx, rx) = sync_channel::<Call>(QUEUE);
        let worker = std::thread::Builder::new()
            .name("steptop-exec".into())
            .spawn(move || {
                for call in rx {
                    if let Err(why) = run(&cmd, &call, timeout) {
                        eprintln!(
                            "steptop: --exec hook for {} {}: {}",
                            call.rule,
                            call.change,
                            display::terminal(&why.to_string())
                        );
                    }
                }
            })?;
        Ok(Hooks {
            tx: Some(tx),
            worker: Some(worker),
        })
    }

    /// Queues a change; never waits.
    pub fn send(&self, call: Call) {
        let Some(tx) = &self.tx else { return };
        match tx.try_send(call) {
            Ok(()) => {}
            Err(TrySendError::Full(c)) => eprintln!(
                "steptop: --exec hook for {} {} dropped: {QUEUE} hooks already waiting",
                c.rule, c.change
            ),
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Lets the queued hooks run to their end (each bounded by its timeout).
    pub fn finish(mut self) {
        drop(self.tx.take());
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// Runs one hook to its end or its timeout.
fn run(cmd: &str, call: &Call, timeout: Duration) -> Result<(), String> {
    let stderr = || {
        std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::null())
    };
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("STEPTOP_RULE", &call.rule)
        .env("STEPTOP_SEVERITY", &call.severity)
        .env("STEPTOP_TITLE", &call.title)
        .env("STEPTOP_CHANGE", &call.change)
        .env("STEPTOP_JSON", &call.json)
        // Its own process group, so that a timeout kills what it started too (`curl` under
        // `sh`), not only the shell.
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(stderr())
        .stderr(stderr())
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("failed ({status})")),
            Ok(None) if start.elapsed() >= timeout => {
                kill(&mut child);
                return Err(format!(
                    "still running after {:.1}s (--exec-timeout); killed",
                    timeout.as_secs_f64()
                ));
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
    }
}

/// Kills the hook's process group. The shell's `kill` takes a group (`-PID`) and needs no
/// unsafe code here.
fn kill(child: &mut Child) {
    let _ = Command::new("sh")
        .arg("-c")
        .arg(format!("kill -KILL -{}", child.id()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call() -> Call {
        Call {
            rule: "input_bound".into(),
            severity: "warn".into(),
            title: "Data loading waits".into(),
            change: "raised".into(),
            json: "{}".into(),
        }
    }

    #[test]
    fn a_hook_sees_the_change_in_its_environment() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("env.txt");
        let cmd = format!(
            "printf '%s|%s|%s|%s' \"$STEPTOP_RULE\" \"$STEPTOP_SEVERITY\" \"$STEPTOP_CHANGE\" \
             \"$STEPTOP_TITLE\" > {}",
            out.display()
        );
        run(&cmd, &call(), Duration::from_secs(5)).unwrap();
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "input_bound|warn|raised|Data loading waits"
        );
    }

    #[test]
    fn a_failing_hook_and_a_hanging_one_are_reported() {
        let e = run("exit 3", &call(), Duration::from_secs(5)).unwrap_err();
        assert!(e.contains("exit status: 3"), "{e}");
        // The hook's child is killed with it: the pipe it holds closes and `wait` returns.
        let e = run("sleep 30 | cat", &call(), Duration::from_millis(200)).unwrap_err();
        assert!(e.contains("killed"), "{e}");
    }
}
