//! The live view's two extra producers: the input thread (keys and resizes, blocked in
//! crossterm's `read`) and the signal thread (SIGTERM, SIGHUP, SIGINT). Both send into the
//! same inbox as the sources, so the main loop has one place to wait.

use std::sync::mpsc::SyncSender;

use ratatui::crossterm::event::{self, Event, KeyEvent, KeyEventKind};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::msg::Msg;

/// Something the user or the system did to the live view.
#[derive(Clone, Debug, PartialEq)]
pub enum UiEvent {
    Key(KeyEvent),
    /// The terminal changed size: redraw everything.
    Resize,
    /// A signal asked steptop to stop (its number), or input failed (the terminal is gone).
    Stop(String),
}

/// Starts the thread that reads the terminal's input.
pub fn spawn_input(inbox: SyncSender<Msg>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("steptop-input".into())
        .spawn(move || {
            loop {
                let ui = match event::read() {
                    // Key releases and repeats (kitty protocol) would act twice.
                    Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => UiEvent::Key(k),
                    Ok(Event::Resize(..)) => UiEvent::Resize,
                    Ok(_) => continue,
                    Err(e) => UiEvent::Stop(format!("cannot read the terminal: {e}")),
                };
                let last = matches!(ui, UiEvent::Stop(_));
                if inbox.send(Msg::Ui(ui)).is_err() || last {
                    return;
                }
            }
        })
        .map(|_| ())
}

/// Starts the thread that turns SIGTERM, SIGINT and, with `hangup`, SIGHUP (a dropped ssh
/// session) into a stop message, so the main loop restores the terminal (or prints its last
/// line) before exiting. Headless runs leave SIGHUP alone: under `nohup` it stays ignored.
pub fn spawn_signals(inbox: SyncSender<Msg>, hangup: bool) -> std::io::Result<()> {
    let mut signals = if hangup {
        Signals::new([SIGTERM, SIGHUP, SIGINT])?
    } else {
        Signals::new([SIGTERM, SIGINT])?
    };
    std::thread::Builder::new()
        .name("steptop-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let name = match sig {
                    SIGTERM => "SIGTERM",
                    SIGHUP => "SIGHUP",
                    _ => "SIGINT",
                };
                let _ = inbox.send(Msg::Ui(UiEvent::Stop(format!("stopped by {name}"))));
            }
        })
        .map(|_| ())
}
