//! The progress of work that reads whole files (`report`, `compare`) on stderr: which file,
//! bytes read of the total, the rate and the time left. Drawn only when stderr is a terminal
//! and `--quiet` is not given, and only once the work has taken half a second (a quick read
//! draws nothing); cleared before the result is printed, and on any way out.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::common::display;

/// How long the work runs before the bar is drawn.
const DELAY: Duration = Duration::from_millis(500);

pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: AtomicBool,
}

impl Progress {
    /// A bar over `total` bytes, if stderr is a terminal and not `quiet`.
    pub fn new(total: u64, quiet: bool) -> Progress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
            let style = ProgressStyle::with_template(
                "{msg} [{bar:24}] {bytes}/{total_bytes} {bytes_per_sec} {eta} left",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        Progress {
            bar,
            started: Instant::now(),
            shown: AtomicBool::new(false),
        }
    }

    /// No bar: for reads nobody watches (a baseline, a test).
    pub fn off() -> Progress {
        Progress::new(0, true)
    }

    /// The file being read now, `n` of `of`.
    pub fn file(&self, n: usize, of: usize, path: &std::path::Path) {
        if let Some(bar) = &self.bar {
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            bar.set_message(display::terminal(&format!("{n}/{of} {name}")).into_owned());
        }
    }

    /// `bytes` more were read.
    pub fn advance(&self, bytes: u64) {
        let Some(bar) = &self.bar else { return };
        bar.inc(bytes);
        if !self.shown.load(Ordering::Relaxed) && self.started.elapsed() >= DELAY {
            self.shown.store(true, Ordering::Relaxed);
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The bytes of all the files, for the bar's total.
pub fn total_bytes<'a>(paths: impl IntoIterator<Item = &'a std::path::PathBuf>) -> u64 {
    paths
        .into_iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum()
}
