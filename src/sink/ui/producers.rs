//! The live view's two extra producers: the input thread (keys and resizes, blocked in
//! crossterm's `read`) and the signal thread (SIGTERM, SIGHUP, SIGINT). Both send into the
//! same inbox as the follow thread, so the main loop has one place to wait.

use std::sync::mpsc::SyncSender;

use ratatui::crossterm::event::{self, Event, KeyEvent, KeyEventKind, KeyModifiers};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::monitor::keys::{Key, KeyCode, Mods, UiEvent};
use crate::monitor::msg::Msg;

/// Starts the thread that reads the terminal's input.
pub fn spawn_input(inbox: SyncSender<Msg>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("steptop-input".into())
        .spawn(move || {
            loop {
                let ui = match event::read() {
                    // Key releases and repeats (kitty protocol) would act twice.
                    Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => UiEvent::Key(key_of(&k)),
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

/// The terminal's key event in steptop's terms.
fn key_of(k: &KeyEvent) -> Key {
    use ratatui::crossterm::event::KeyCode as Term;
    let code = match k.code {
        Term::Char(c) => KeyCode::Char(c),
        Term::F(n) => KeyCode::F(n),
        Term::Tab => KeyCode::Tab,
        Term::BackTab => KeyCode::BackTab,
        Term::Enter => KeyCode::Enter,
        Term::Esc => KeyCode::Esc,
        Term::Backspace => KeyCode::Backspace,
        Term::Up => KeyCode::Up,
        Term::Down => KeyCode::Down,
        Term::Left => KeyCode::Left,
        Term::Right => KeyCode::Right,
        Term::PageUp => KeyCode::PageUp,
        Term::PageDown => KeyCode::PageDown,
        _ => KeyCode::Other,
    };
    let m = k.modifiers;
    let mods = Mods {
        shift: m.contains(KeyModifiers::SHIFT),
        ctrl: m.contains(KeyModifiers::CONTROL),
        other: !(m - KeyModifiers::SHIFT - KeyModifiers::CONTROL).is_empty(),
    };
    Key::new(code, mods)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_keys_keep_the_modifiers_that_bind() {
        let k = key_of(&KeyEvent::new(
            ratatui::crossterm::event::KeyCode::Char('c'),
            KeyModifiers::CONTROL,
        ));
        assert_eq!(k, Key::new(KeyCode::Char('c'), Mods::CTRL));
        // Alt-q is not q: it binds nothing.
        let k = key_of(&KeyEvent::new(
            ratatui::crossterm::event::KeyCode::Char('q'),
            KeyModifiers::ALT,
        ));
        assert!(k.mods.other && !k.mods.ctrl);
        let k = key_of(&KeyEvent::new(
            ratatui::crossterm::event::KeyCode::Home,
            KeyModifiers::SHIFT,
        ));
        assert_eq!(k, Key::new(KeyCode::Other, Mods::SHIFT));
    }
}
