//! The live pipeline end to end on real files: the follow thread follows and parses, the inbox
//! carries owned messages, the monitor folds them into the model.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use steptop::DiagnoseConfig;
use steptop::ModelConfig;
use steptop::Monitor;
use steptop::Msg;
use steptop::{FileStatus, FollowOptions, InputSpec};

/// Applies messages until `done` holds, failing after a few seconds.
fn until(m: &mut Monitor, inbox: &Receiver<Msg>, what: &str, done: impl Fn(&Monitor) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done(m) {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "timed out waiting for {what}");
        if let Ok(msg) = inbox.recv_timeout(left) {
            m.apply(msg);
        }
    }
}

/// Follows `path` on the follow thread: its stop flag, inbox and handle.
fn follow(path: &std::path::Path) -> (Arc<AtomicBool>, Receiver<Msg>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, inbox) = steptop::inbox();
    let spec = InputSpec::parse(path.to_str().unwrap()).unwrap();
    let source = steptop::spawn_follow(
        vec![spec],
        FollowOptions::default(),
        Arc::default(),
        stop.clone(),
        tx,
    )
    .unwrap();
    (stop, inbox, source)
}

#[test]
fn history_then_appended_steps_reach_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank2.log");
    std::fs::write(
        &path,
        "step 1/100 | loss=0.90 | data_time=2ms | time=0.5s\nnoise line\n",
    )
    .unwrap();
    let (stop, inbox, source) = follow(&path);
    let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    until(&mut m, &inbox, "the history", Monitor::caught_up);
    assert_eq!(m.model.merged.last_step, Some(1));
    assert_eq!(m.sources[0].status, Some(FileStatus::Following));
    assert!(m.sources[0].path.ends_with("rank2.log"));
    assert_eq!(
        (m.sources[0].stats.records, m.sources[0].stats.unparsed),
        (1, 1)
    );

    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    log.write_all(b"step 2/100 | loss=0.80 | data_time=4ms | time=0.5s\n")
        .unwrap();
    until(&mut m, &inbox, "the appended step", |m| {
        m.model.merged.last_step == Some(2)
    });
    let rank = &m.model.ranks[&2];
    assert_eq!(rank.loss_track.last, Some(0.8));
    assert_eq!(rank.data_time_ms.run.mean(), Some(3.0));
    assert_eq!(m.model.merged.total, Some(100));
    // Live lines are stamped with their arrival: a real time, not a synthetic timeline.
    assert!(
        m.model.last_time.is_some_and(|t| t > 1.6e9),
        "{:?}",
        m.model.last_time
    );

    stop.store(true, Ordering::Relaxed);
    source.join().unwrap();
}

#[test]
fn a_follower_that_cannot_start_says_why() {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, inbox) = steptop::inbox();
    let source = steptop::spawn_follow(
        Vec::new(),
        FollowOptions::default(),
        Arc::default(),
        stop,
        tx,
    )
    .unwrap();
    let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    until(&mut m, &inbox, "the stop reason", |m| m.stopped.is_some());
    assert!(m.stopped.as_deref().unwrap().contains("no input files"));
    source.join().unwrap();
}

#[test]
fn a_followed_log_places_yearless_times_in_the_current_year() {
    // Today's date without a year, in a file last written long ago: following places it by
    // the clock, not by the file's time.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let today = steptop::testing::units::clock(now);
    let (year, month, day) = (&today[..4], &today[5..7], &today[8..10]);
    let line = |step: u32| {
        format!(
            "[{month}/{day} 00:00:01 d2.utils.events]:  iter: {step}  total_loss: 2.9  time: 0.31\n"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.log");
    std::fs::write(&path, line(19)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + Duration::from_secs(991_353_600))
        .unwrap();
    let (stop, inbox, source) = follow(&path);
    let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    let year_of_last = |m: &Monitor| {
        m.model
            .last_time
            .map(|t| steptop::testing::units::clock(t)[..4].to_string())
    };
    until(&mut m, &inbox, "the history", Monitor::caught_up);
    assert_eq!(year_of_last(&m).as_deref(), Some(year));

    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    log.write_all(line(39).as_bytes()).unwrap();
    until(&mut m, &inbox, "the appended step", |m| {
        m.model.merged.last_step == Some(39)
    });
    assert_eq!(year_of_last(&m).as_deref(), Some(year));

    stop.store(true, Ordering::Relaxed);
    source.join().unwrap();
}

/// A live job that logs a header stating the plan, then only `[Step N]` memory monitor
/// lines. The plan is the total, the prefixes are the progress, and the run is not stalled
/// while they come; once they stop, it is.
#[test]
fn step_prefixes_alone_keep_a_live_run_moving() {
    let mut feed = steptop::Feed::new(0, "train.log", Arc::default());
    let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    let t0 = 1.8e9;
    let header = "Dataset: 700 samples, cache 4.0 GB, num_workers=4, batch_size=16, steps=2500";
    m.apply(feed.message(1, header.as_bytes(), Some(t0)));
    let reading = |i: u32| steptop::Sample {
        time: t0 + f64::from(i),
        ..Default::default()
    };
    // A reading a second, a memory line every 10 s (20 steps).
    for i in 1..=300u32 {
        m.sample(reading(i));
        if i % 10 == 0 {
            let step = 2 * i;
            let line = format!(
                "[Step {step}] Memory - Process: 700.0MB (3.0%), System: 1.2/23.5GB (5.1%)"
            );
            m.apply(feed.message(u64::from(i), line.as_bytes(), Some(t0 + f64::from(i))));
        }
    }
    assert_eq!(m.model.merged.last_step, Some(600));
    assert_eq!(m.model.facts.total_steps, Some(2500));
    assert_eq!(m.model.merged.step_time_ms.recent.last(), Some(500.0));
    let stalled = |m: &Monitor| m.diagnosis.alerts.iter().any(|a| a.rule == "stalled");
    assert!(!stalled(&m));
    for i in 301..=500u32 {
        m.sample(reading(i));
    }
    assert!(stalled(&m), "no step for 200 s and no stall");
}

#[test]
fn a_burst_of_lines_comes_in_blocks_that_leave_the_monitor_as_single_lines_would() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.log");
    std::fs::write(&path, "").unwrap();
    let (stop, inbox, source) = follow(&path);
    let mut blocks = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    let mut sent = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !blocks.caught_up() {
        let msg = inbox.recv_timeout(Duration::from_secs(10)).unwrap();
        sent.push(msg.clone());
        blocks.apply(msg);
    }
    // A job printing fast: thousands of lines in one write.
    let burst: String = (1..=3000)
        .map(|s| {
            format!(
                "step {s}/3000 | loss={:.3} | data_time=4ms | time=0.25s\n",
                3.0 - s as f64 / 1e3
            )
        })
        .collect();
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    log.write_all(burst.as_bytes()).unwrap();
    let (mut singles, mut lines) = (0, 0);
    while blocks.model.merged.last_step != Some(3000) {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "timed out waiting for the burst");
        let Ok(msg) = inbox.recv_timeout(left) else {
            continue;
        };
        match &msg {
            Msg::Line { .. } => singles += 1,
            Msg::Lines(l) => {
                lines += 1;
                assert!(
                    l.heads.iter().all(|h| h.arrival.is_some()),
                    "live lines have arrivals"
                );
            }
            _ => {}
        }
        sent.push(msg.clone());
        blocks.apply(msg);
    }
    stop.store(true, Ordering::Relaxed);
    source.join().unwrap();
    assert_eq!(singles, 0, "no line of the burst came alone");
    assert!((1..=30).contains(&lines), "{lines} messages for 3000 lines");
    // The same lines one message each: the monitor they give is the blocks' to the last bit.
    let mut one_by_one = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    for msg in sent {
        match msg {
            Msg::Lines(l) => l.into_messages().for_each(|(m, _)| {
                one_by_one.apply(m);
            }),
            m => {
                one_by_one.apply(m);
            }
        }
    }
    assert_eq!(
        format!("{:?}", one_by_one.model),
        format!("{:?}", blocks.model)
    );
    assert_eq!(
        format!("{:?}", one_by_one.diagnosis),
        format!("{:?}", blocks.diagnosis)
    );
    assert_eq!(
        format!("{:?}", one_by_one.sources),
        format!("{:?}", blocks.sources)
    );
}
