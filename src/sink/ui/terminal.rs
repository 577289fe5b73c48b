//! Entering and leaving the full-screen terminal, and making sure it is always left: on
//! return, on a panic on any thread (the hook restores, prints, and exits), and on the
//! signals the input module turns into stop messages.

use std::io::{BufWriter, Stdout, Write, stdout};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode, size,
};
use ratatui::layout::Size;

use super::coalesce::Coalesce;

/// True while the terminal is in raw mode on the alternate screen.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// The terminal a frame is drawn on: writes are buffered and sent once per frame, short gaps
/// between changed cells written again rather than moved over (`coalesce`).
pub type Screen = Terminal<Coalesce<CrosstermBackend<BufWriter<Stdout>>>>;

/// Leaves the full-screen mode when dropped.
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        leave();
    }
}

/// Switches to raw mode and the alternate screen, hides the cursor, and installs the panic
/// hook that undoes it.
pub fn enter() -> std::io::Result<(Screen, Guard)> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // A library's panic that its caller turns into a failed call (`contain`).
            if crate::common::contain::active() {
                return;
            }
            let was_active = ACTIVE.load(Ordering::SeqCst);
            leave();
            previous(info);
            // A panic on a background thread would leave the view frozen: end the program.
            if was_active {
                std::process::exit(101);
            }
        }));
    });
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let guard = Guard(());
    execute!(stdout(), EnterAlternateScreen, Hide)?;
    let (width, height) = size()?;
    let backend = CrosstermBackend::new(BufWriter::with_capacity(1 << 16, stdout()));
    // The alternate screen starts blank.
    let screen = Terminal::new(Coalesce::blank(backend, Size::new(width, height)))?;
    Ok((screen, guard))
}

/// Restores the terminal; safe to call twice and from any thread. Errors are ignored: after a
/// dropped ssh session there is no terminal left to restore.
pub fn leave() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let mut out = stdout();
        let _ = execute!(out, Show, LeaveAlternateScreen);
        let _ = out.flush();
        let _ = disable_raw_mode();
    }
}
