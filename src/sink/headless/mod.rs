//! Headless: no screen, one line per alert change as it happens (text or JSON lines), an
//! optional periodic status, a hook per change, and an exit code for batch checks. The same
//! monitor as the live view; this loop only decides what to print and when to stop.
//!
//! Time: a live run's status lines follow the wall clock; a replay's follow the replayed time,
//! so that `replay --speed max --headless` gives the same bytes every time.

pub mod hook;
pub mod line;

use std::io::{BufWriter, Stdout, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use crate::common::display;
use crate::common::error::Error;
use crate::diagnose::{Change, ChangeKind, Severity};
use crate::model::Stamp;
use crate::model::job::{JobIdentity, NodeIdentity};
use crate::monitor::Monitor;
use crate::monitor::keys::UiEvent;
use crate::monitor::msg::Msg;
use crate::monitor::msg::unix_now;
use crate::probe::process::running;
use crate::sink::exposition::Publisher;
use hook::{Call, Hooks};
use line::{Origin, Status, Summary};

/// How each headless line is written: `--format text` or `json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LineFormat {
    Text,
    Json,
}

/// How often a live loop wakes with nothing to do: the trainer check, a status line due.
const WAKE: Duration = Duration::from_millis(500);
/// After the trainer exits, its last lines are read until the logs are quiet this long.
const SETTLE: Duration = Duration::from_millis(1500);

/// The `--exec` command, its timeout, and the least severity whose changes run it.
pub struct Exec {
    pub cmd: String,
    pub timeout: Duration,
    pub min: Severity,
}

/// What a headless run prints and when it stops.
pub struct Headless {
    pub format: LineFormat,
    pub status_every: Option<Duration>,
    /// The `--exec` hook.
    pub exec: Option<Exec>,
    pub fail_on: Option<Severity>,
    pub until_exit: Option<u32>,
    /// A replay: time is the replayed time, and the end of the input ends the run.
    pub replay: bool,
    /// Changes before this step are not printed (`replay --from`).
    pub from: Option<u64>,
    /// The machine (none in a replay unless given) and the job named in each line's origin.
    pub node: NodeIdentity,
    pub metrics: Option<Publisher>,
}

/// Runs until the input ends (a replay), the trainer exits (`--until-exit`), a signal, or a
/// closed stdout. Err(Error::Alerted) when `--fail-on` was met.
pub fn run(opts: Headless, mut mon: Monitor, inbox: &Receiver<Msg>) -> Result<(), Error> {
    let hooks = opts
        .exec
        .as_ref()
        .map(|e| Hooks::spawn(e.cmd.clone(), e.timeout))
        .transpose()
        .map_err(|e| Error::Runtime(format!("cannot start the --exec thread: {e}")))?;
    let mut sink = Sink {
        opts,
        hooks,
        seen: 0,
        failed: None,
        next_status: None,
        now: 0.0,
        open: true,
        out: BufWriter::new(std::io::stdout()),
    };
    let result = sink.main_loop(&mut mon, inbox);
    sink.flush();
    if let Some(h) = sink.hooks.take() {
        h.finish();
    }
    let reason = result?;
    mon.finish();
    if sink.open {
        sink.emit_summary(&mon, &reason);
        sink.flush();
    }
    if let Some(m) = &mut sink.opts.metrics {
        m.flush(&mon);
    }
    match (sink.failed, sink.opts.fail_on) {
        (Some(what), Some(sev)) => Err(Error::Alerted(format!(
            "{what}; exit 1 (--fail-on {})",
            sev.name()
        ))),
        _ => Ok(()),
    }
}

struct Sink {
    opts: Headless,
    hooks: Option<Hooks>,
    /// Changes already printed (an index into `Diagnosis::changes`).
    seen: u64,
    /// The first change that met `--fail-on`, in words.
    failed: Option<String>,
    /// The next status line: a wall-clock instant live, a replayed time in a replay.
    next_status: Option<Due>,
    /// The latest time known: replayed, or the wall clock.
    now: f64,
    /// False once stdout is closed: nothing more is printed.
    open: bool,
    /// Lines printed and not yet written: they go out before the loop waits for input.
    out: BufWriter<Stdout>,
}

#[derive(Clone, Copy)]
enum Due {
    Wall(Instant),
    Replayed(f64),
}

impl Sink {
    /// Returns why the run ended.
    fn main_loop(&mut self, mon: &mut Monitor, inbox: &Receiver<Msg>) -> Result<String, Error> {
        let mut trainer_gone: Option<Instant> = None;
        let mut last_msg = Instant::now();
        let mut checked: Option<Instant> = None;
        // The clock is read before any history, so that a run already hung when steptop
        // started is judged from its start.
        if !self.opts.replay {
            self.handle(mon, Msg::Tick(unix_now()))?;
        }
        loop {
            let wait = if self.opts.replay {
                Duration::from_secs(3600)
            } else {
                WAKE
            };
            let next = match inbox.try_recv() {
                Ok(msg) => Ok(msg),
                Err(TryRecvError::Empty) => {
                    // Lines wait while messages are queued: a burst of changes (a replay at
                    // full speed, a history read) is one write, not one a line, and every
                    // line is out before the loop waits.
                    self.flush();
                    inbox.recv_timeout(wait)
                }
                Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
            };
            match next {
                Ok(msg) => {
                    // Quiet means no log line: the sampler's readings come every second.
                    if matches!(msg, Msg::Line { .. } | Msg::Lines(_)) {
                        last_msg = Instant::now();
                    }
                    if let Some(end) = self.handle(mon, msg)? {
                        return Ok(end);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok("input finished".into()),
            }
            if !self.open {
                return Ok("stdout closed".into());
            }
            if !self.opts.replay {
                self.now = unix_now();
                // Time passes for the rules when no sample comes (probes off).
                if mon.tick_due(self.now) {
                    self.handle(mon, Msg::Tick(self.now))?;
                }
                self.wall_status(mon);
                if let Some(pid) = self.opts.until_exit {
                    if trainer_gone.is_none() && checked.is_none_or(|c| c.elapsed() >= WAKE) {
                        checked = Some(Instant::now());
                        trainer_gone = (!running(pid)).then(Instant::now);
                    }
                    // Its last lines are read before the summary.
                    if trainer_gone.is_some_and(|at| at.elapsed() >= SETTLE)
                        && last_msg.elapsed() >= SETTLE
                    {
                        return Ok(format!("trainer {pid} exited"));
                    }
                }
            }
            if let Some(m) = &mut self.opts.metrics {
                m.tick(mon);
            }
        }
    }

    /// One message. Some(reason) when it ends the run.
    fn handle(&mut self, mon: &mut Monitor, msg: Msg) -> Result<Option<String>, Error> {
        match msg {
            Msg::Ui(UiEvent::Stop(why)) => return Ok(Some(why)),
            Msg::Ui(_) => return Ok(None),
            Msg::Replay(pos) if pos.finished => return Ok(Some("input finished".into())),
            Msg::Replay(_) => return Ok(None),
            Msg::InputStopped { reason } => return Err(Error::Runtime(reason)),
            Msg::Lines(lines) => {
                // Each line's changes are printed with its own origin and replayed time.
                let node = self.opts.node.clone();
                mon.lines(*lines, &mut |mon, head| {
                    let origin = || line_origin(&node, mon, &head.stamp);
                    // A followed line's time is its arrival, as a single line's.
                    self.after(mon, Some(head.arrival.unwrap_or(head.stamp.time)), &origin);
                });
                if let Some(m) = &mut self.opts.metrics {
                    m.changed();
                }
                return Ok(None);
            }
            _ => {}
        }
        let origin = self.origin(mon, &msg);
        let time = crate::input::replay::pacer::time_of(&msg);
        if mon.apply(msg)
            && let Some(m) = &mut self.opts.metrics
        {
            m.changed();
        }
        self.after(mon, time, &|| origin.clone());
        Ok(None)
    }

    /// What follows a message (or one of a bulk's lines) at replayed time `time`: a status
    /// line when one is due, and the changes it caused, said with the `origin` of the message
    /// (made only when there is a change: most lines cause none).
    fn after(&mut self, mon: &Monitor, time: Option<f64>, origin: &dyn Fn() -> Origin) {
        if self.opts.replay
            && let Some(t) = time
        {
            self.now = self.now.max(t);
            self.replayed_status(mon);
        }
        if mon.diagnosis.changes_since(self.seen).next().is_some() {
            self.changes(mon, &origin());
        }
    }

    /// Prints the changes the last message caused, runs their hooks, notes `--fail-on`.
    fn changes(&mut self, mon: &Monitor, origin: &Origin) {
        let d = &mon.diagnosis;
        for (n, c) in d.changes_since(self.seen) {
            self.seen = n + 1;
            if self
                .opts
                .from
                .is_some_and(|from| c.step.is_none_or(|s| s < from))
            {
                continue;
            }
            // The alert of a change just made is always kept.
            let Some(a) = d.alert(c.alert) else {
                continue;
            };
            // The JSON form only where it is printed or a hook takes it: made for every change
            // of a replay printed in words, it was 3% of the replay's instructions.
            let text = match self.opts.format {
                LineFormat::Json => line::alert_json(c, a, origin),
                // One clock on every text line: a live run's lines say when steptop said
                // them, as its status lines do (a change in the history read at the start
                // would say a log time, or a time into a log that has none); a replay's, the
                // replayed time.
                LineFormat::Text if !self.opts.replay => {
                    let said = Change {
                        time: unix_now(),
                        ..c.clone()
                    };
                    line::alert_text(&said, a, origin)
                }
                LineFormat::Text => line::alert_text(c, a, origin),
            };
            if let Some(h) = &self.hooks
                && self.opts.exec.as_ref().is_some_and(|e| c.severity >= e.min)
            {
                let json = match self.opts.format {
                    LineFormat::Json => text.clone(),
                    LineFormat::Text => line::alert_json(c, a, origin),
                };
                h.send(Call {
                    rule: c.rule.to_string(),
                    severity: c.severity.name().to_string(),
                    title: a.title.clone(),
                    change: c.change.name().to_string(),
                    json,
                });
            }
            if c.change != ChangeKind::Cleared
                && self.failed.is_none()
                && self.opts.fail_on.is_some_and(|f| c.severity >= f)
            {
                let at = c.step.map(|s| format!(" at step {s}")).unwrap_or_default();
                self.failed = Some(format!("{} {}{at}", c.severity.name(), c.rule));
            }
            self.print(&text);
        }
    }

    /// The file and line of a log message, or none for a sample.
    fn origin(&self, mon: &Monitor, msg: &Msg) -> Origin {
        match msg {
            Msg::Line { stamp, .. } => line_origin(&self.opts.node, mon, stamp),
            _ => Origin {
                host: self.opts.node.host.clone(),
                job: job_of(&self.opts.node, mon),
                ..Origin::default()
            },
        }
    }

    fn wall_status(&mut self, mon: &Monitor) {
        let Some(every) = self.opts.status_every else {
            return;
        };
        let now = Instant::now();
        let due = match self.next_status {
            Some(Due::Wall(at)) => at,
            _ => now + every,
        };
        if now >= due {
            self.emit_status(mon, self.now);
        }
        // After a stall of the loop itself, the next line comes one interval from now.
        let next = if now >= due {
            (due + every).max(now)
        } else {
            due
        };
        self.next_status = Some(Due::Wall(next));
    }

    /// Status lines at every multiple of the interval the replayed time passed.
    fn replayed_status(&mut self, mon: &Monitor) {
        let Some(every) = self.opts.status_every.map(|d| d.as_secs_f64()) else {
            return;
        };
        let mut due = match self.next_status {
            Some(Due::Replayed(t)) => t,
            _ => (self.now / every).floor() * every + every,
        };
        // One line for a long silence, not one per interval it spans.
        if self.now >= due {
            self.emit_status(mon, due);
            due = (self.now / every).floor() * every + every;
        }
        self.next_status = Some(Due::Replayed(due));
    }

    fn emit_status(&mut self, mon: &Monitor, time: f64) {
        let s = Status::of(mon, time);
        let text = match self.opts.format {
            LineFormat::Json => line::status_json(&s),
            LineFormat::Text => line::status_text(&s),
        };
        self.print(&text);
    }

    fn emit_summary(&mut self, mon: &Monitor, reason: &str) {
        let time = if self.opts.replay {
            self.now
        } else {
            unix_now()
        };
        let s = Summary::of(mon, time, reason);
        let text = match self.opts.format {
            LineFormat::Json => line::summary_json(&s),
            LineFormat::Text => line::summary_text(&s),
        };
        self.print(&text);
    }

    /// One line for stdout; a closed pipe ends the printing quietly.
    fn print(&mut self, text: &str) {
        if !self.open {
            return;
        }
        // Labels, file names and quoted log lines are in it: made safe for a terminal here.
        let text = match self.opts.format {
            LineFormat::Text => display::terminal(text),
            LineFormat::Json => display::json_terminal(text),
        };
        let ok = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.write_all(b"\n"));
        if ok.is_err() {
            self.open = false;
        }
    }

    /// Writes out the lines printed so far.
    fn flush(&mut self) {
        if self.open && self.out.flush().is_err() {
            self.open = false;
        }
    }
}

/// The job the node's trainer runs in, when anything is known of it.
fn job_of(node: &NodeIdentity, mon: &Monitor) -> Option<JobIdentity> {
    Some(node.job(mon.model.hardware.job.as_ref())).filter(|j| !j.is_empty())
}

/// The host, job, file, line and rank of the line stamped `stamp`.
fn line_origin(node: &NodeIdentity, mon: &Monitor, stamp: &Stamp) -> Origin {
    Origin {
        host: node.host.clone(),
        job: job_of(node, mon),
        file: mon.sources.get(stamp.source).map(|s| s.path.clone()),
        line: Some(stamp.line),
        rank: Some(stamp.rank),
    }
}
