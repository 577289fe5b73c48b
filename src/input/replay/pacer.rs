//! A replay's clock: the thread that sends a finished run's messages into the inbox at the
//! pace they were written (or N times faster, or as fast as the monitor takes them), and the
//! controls the live view sends it: pause, speed, jump.
//!
//! A message's time is its arrival time in a recording, else its log time (the log's own
//! timestamps, or the logged step times added up). The monitor reads time only from the
//! messages, so the pace changes when things are shown, never what the model concludes.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use crate::monitor::msg::{Backlog, Msg, Position};
use crate::parse::record::Record;
use crate::parse::user::UserPattern;

/// A replay's pace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Speed {
    /// Times real time.
    Times(f64),
    /// As fast as the monitor takes the messages.
    Max,
}

/// The speeds `]` and `[` move through.
const LADDER: [f64; 11] = [
    0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0,
];

impl Speed {
    /// The next speed up the ladder; past its top, as fast as it goes.
    pub fn faster(self) -> Speed {
        match self {
            Speed::Max => Speed::Max,
            Speed::Times(x) => LADDER
                .iter()
                .find(|s| **s > x * 1.0001)
                .map_or(Speed::Max, |s| Speed::Times(*s)),
        }
    }

    /// The next speed down the ladder.
    pub fn slower(self) -> Speed {
        let x = match self {
            Speed::Max => f64::INFINITY,
            Speed::Times(x) => x,
        };
        Speed::Times(
            LADDER
                .iter()
                .rev()
                .find(|s| **s < x * 0.9999)
                .copied()
                .unwrap_or(LADDER[0]),
        )
    }

    /// `10x`, `0.5x`, `max`.
    pub fn label(self) -> String {
        match self {
            Speed::Max => "max".into(),
            Speed::Times(x) => format!("{x}x"),
        }
    }
}

/// What the live view asks of a running replay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Control {
    Pause(bool),
    Speed(Speed),
    /// Read the next `JUMP_SHARE` of the input at once.
    Jump,
}

/// A replay to start.
pub struct Replay {
    pub paths: Vec<PathBuf>,
    pub patterns: Arc<Vec<UserPattern>>,
    /// The user's own metric names, for metric files.
    pub tags: Arc<crate::input::metric_files::UserTags>,
    pub speed: Speed,
    /// Messages before this step are sent at once.
    pub from: Option<u64>,
}

/// The share of the input `>` skips.
const JUMP_SHARE: f64 = 0.05;
/// The longest a quiet stretch of the run is waited out, in real seconds: a run that paused
/// for an hour replays its silence in this long (its times, and so the model, are unchanged).
const MAX_GAP: Duration = Duration::from_secs(10);
/// Position updates at most this often.
const POSITION_EVERY: Duration = Duration::from_millis(200);

/// Starts the replay thread. It ends after a last `Msg::Replay` with `finished` set, or with
/// `InputStopped` when a file cannot be read.
pub fn spawn(
    replay: Replay,
    inbox: SyncSender<Msg>,
    control: Receiver<Control>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("steptop-replay".into())
        .spawn(move || {
            let total = replay
                .paths
                .iter()
                .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
                .sum();
            let mut pacer = Pacer::new(replay.speed, replay.from, total, control);
            let backlog = Backlog::default();
            let paths: Vec<&std::path::Path> = replay.paths.iter().map(PathBuf::as_path).collect();
            let vocabulary = (&replay.patterns, &replay.tags);
            let result = super::messages_tagged(&paths, vocabulary, 0, &mut |msg, bytes| {
                match msg {
                    // Lines read in bulk go in bulk at full speed; at a pace, one by one.
                    Msg::Lines(lines) if !pacer.at_full_speed() => {
                        let mut at = bytes - lines.bytes;
                        for (line, len) in lines.into_messages() {
                            at += len;
                            pacer.pass(line, at, &inbox, &backlog);
                        }
                    }
                    msg => pacer.pass(msg, bytes, &inbox, &backlog),
                }
            });
            let _ = match result {
                Ok(_) => {
                    pacer.position.bytes = total;
                    pacer.report(&inbox, true);
                    Ok(())
                }
                Err(e) => inbox.send(Msg::InputStopped {
                    reason: e.to_string(),
                }),
            };
        })
        .map(|_| ())
}

/// The replay clock: when each message is due, and the controls.
struct Pacer {
    speed: Speed,
    paused: bool,
    /// A replayed time and the instant it was (or would have been) sent.
    anchor: Option<(f64, Instant)>,
    /// Until `from` is reached, and up to `skip_to` bytes, messages go at once.
    from: Option<u64>,
    skip_to: u64,
    control: Receiver<Control>,
    position: Position,
    reported: Option<Instant>,
}

impl Pacer {
    fn new(speed: Speed, from: Option<u64>, total: u64, control: Receiver<Control>) -> Pacer {
        Pacer {
            speed,
            paused: false,
            anchor: None,
            from,
            skip_to: 0,
            control,
            position: Position {
                total,
                ..Position::default()
            },
            reported: None,
        }
    }

    /// Whether messages go as fast as they are read, whatever their times.
    fn at_full_speed(&self) -> bool {
        self.speed == Speed::Max
    }

    /// Sends `msg` when it is due (bulk within the inbox's allowance), then the position.
    fn pass(&mut self, msg: Msg, bytes: u64, inbox: &SyncSender<Msg>, backlog: &Backlog) {
        self.wait(&msg, bytes, inbox);
        match msg {
            Msg::Lines(lines) => {
                backlog.send(inbox, *lines);
            }
            msg => {
                let _ = inbox.send(msg);
            }
        }
        self.report(inbox, false);
    }

    /// Waits until `msg` is due, taking controls meanwhile.
    fn wait(&mut self, msg: &Msg, bytes: u64, inbox: &SyncSender<Msg>) {
        self.position.bytes = bytes;
        while let Ok(c) = self.control.try_recv() {
            self.apply(c, inbox);
        }
        // Paused, it waits here; a jump asked for meanwhile is read first.
        while self.paused && bytes >= self.skip_to {
            match self.control.recv() {
                Ok(c) => self.apply(c, inbox),
                Err(_) => self.paused = false,
            }
        }
        if let Some(from) = self.from
            && step_of(msg).is_some_and(|s| s >= from)
        {
            self.from = None;
        }
        let Some(t) = time_of(msg) else { return };
        let last = self.position.time.unwrap_or(t);
        self.position
            .start
            .get_or_insert(first_time_of(msg).unwrap_or(t));
        self.position.time = Some(t.max(last));
        let x = match self.speed {
            Speed::Times(x) if self.from.is_none() && bytes >= self.skip_to => x,
            _ => {
                self.anchor = None;
                return;
            }
        };
        let now = Instant::now();
        let gap = seconds((t - last) / x);
        let (t0, w0) = match self.anchor {
            Some(a) if t >= last && gap <= MAX_GAP => a,
            // The first paced message, time that runs backwards (the next of several files)
            // or a long silence: the clock starts again here.
            before => {
                let wall = if before.is_some() {
                    now + gap.min(MAX_GAP)
                } else {
                    now
                };
                *self.anchor.insert((t, wall))
            }
        };
        let due = w0 + seconds((t - t0) / x);
        let now = Instant::now();
        if now >= due {
            return;
        }
        match self.control.recv_timeout(due - now) {
            // A pause, a new speed or a jump: this message is due again from now.
            Ok(c) => {
                self.apply(c, inbox);
                self.wait(msg, bytes, inbox);
            }
            Err(RecvTimeoutError::Timeout) => {}
            // No live view to send controls (headless): just the wait.
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(due - now),
        }
    }

    fn apply(&mut self, c: Control, inbox: &SyncSender<Msg>) {
        match c {
            Control::Pause(p) => self.paused = p,
            Control::Speed(s) => self.speed = s,
            Control::Jump => {
                let chunk = (self.position.total as f64 * JUMP_SHARE) as u64;
                self.skip_to = self.position.bytes + chunk.max(1);
            }
        }
        // The clock starts again from the replayed time reached, at the new pace.
        self.anchor = self.position.time.map(|t| (t, Instant::now()));
        self.report(inbox, false);
    }

    /// Sends the position when it is due (always at the end).
    fn report(&mut self, inbox: &SyncSender<Msg>, finished: bool) {
        let due = self
            .reported
            .is_none_or(|at| at.elapsed() >= POSITION_EVERY);
        if finished || due {
            self.reported = Some(Instant::now());
            self.position.finished = finished;
            let _ = inbox.send(Msg::Replay(self.position));
        }
    }
}

/// A wait of `v` seconds: none when negative, and capped (a log's times are not to be trusted
/// to be sane).
fn seconds(v: f64) -> Duration {
    Duration::try_from_secs_f64(v.max(0.0)).map_or(MAX_GAP, |d| d.min(MAX_GAP * 1000))
}

/// A message's replayed time (of its last line, for lines in bulk): a recorded arrival, else
/// the time the log gave it.
pub fn time_of(msg: &Msg) -> Option<f64> {
    match msg {
        Msg::Line { stamp, arrival, .. } => Some(arrival.unwrap_or(stamp.time)),
        Msg::Lines(lines) => lines.heads.last().map(|h| h.stamp.time),
        Msg::Sample(s) => Some(s.time),
        _ => None,
    }
}

/// The replayed time of a message's first line.
fn first_time_of(msg: &Msg) -> Option<f64> {
    match msg {
        Msg::Lines(lines) => lines.heads.first().map(|h| h.stamp.time),
        _ => time_of(msg),
    }
}

/// The last step a message's lines logged, if they logged one.
fn step_of(msg: &Msg) -> Option<u64> {
    let step = |r: &Record| match r {
        Record::Step(s) => s.step,
        _ => None,
    };
    match msg {
        Msg::Line { records, .. } => records.iter().find_map(step),
        Msg::Lines(lines) => lines.records.iter().rev().find_map(step),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_speed_ladder_moves_both_ways_and_ends_at_max() {
        assert_eq!(Speed::Times(1.0).faster(), Speed::Times(2.0));
        assert_eq!(Speed::Times(3.0).faster(), Speed::Times(5.0));
        assert_eq!(Speed::Times(3000.0).faster(), Speed::Max);
        assert_eq!(Speed::Max.slower(), Speed::Times(3000.0));
        assert_eq!(Speed::Times(1.0).slower(), Speed::Times(0.5));
        assert_eq!(Speed::Times(0.25).slower(), Speed::Times(0.25));
        assert_eq!(Speed::Times(10.0).label(), "10x");
    }

    #[test]
    fn position_share() {
        let p = Position {
            bytes: 50,
            total: 200,
            ..Position::default()
        };
        assert_eq!(p.share(), 0.25);
        let done = Position {
            finished: true,
            ..p
        };
        assert_eq!(done.share(), 1.0);
    }
}
