//! What the user chose to see: focus, zoom, overlays, the history window, the theme, the log
//! filter. Keys change this and only this; the model never sees a key.

use super::action::{Action, action_for};
use crate::input::replay::pacer::Speed;
use crate::monitor::keys::{Key, KeyCode};
use crate::monitor::msg::Position;

/// The panes, in focus order (the header takes no focus).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pane {
    Header,
    Alerts,
    Breakdown,
    History,
    Stages,
    Gpus,
    Host,
    /// The trainer's Python stacks.
    Code,
    Log,
}

/// The panes Tab moves through, in order.
const FOCUSABLE: [Pane; 8] = [
    Pane::Alerts,
    Pane::Breakdown,
    Pane::History,
    Pane::Stages,
    Pane::Gpus,
    Pane::Host,
    Pane::Code,
    Pane::Log,
];

impl Pane {
    pub fn next(self) -> Pane {
        let i = FOCUSABLE.iter().position(|p| *p == self).unwrap_or(0);
        FOCUSABLE[(i + 1) % FOCUSABLE.len()]
    }

    pub fn prev(self) -> Pane {
        let i = FOCUSABLE.iter().position(|p| *p == self).unwrap_or(0);
        FOCUSABLE[(i + FOCUSABLE.len() - 1) % FOCUSABLE.len()]
    }

    pub fn title(self) -> &'static str {
        match self {
            Pane::Header => "steptop",
            Pane::Alerts => "verdict",
            Pane::Breakdown => "step breakdown",
            Pane::History => "history",
            Pane::Stages => "forward stages",
            Pane::Gpus => "GPUs",
            Pane::Host => "host",
            Pane::Code => "python",
            Pane::Log => "log",
        }
    }
}

/// The history pane's time windows in seconds; `+` and `-` move along them. The last is the
/// whole run.
pub const HISTORY_WINDOWS: [(f64, &str); 6] = [
    (300.0, "5m"),
    (900.0, "15m"),
    (3600.0, "1h"),
    (6.0 * 3600.0, "6h"),
    (24.0 * 3600.0, "24h"),
    (f64::INFINITY, "all"),
];

/// Log lines a page key moves.
const PAGE: usize = 10;

/// The live view's own state.
#[derive(Clone, Debug, PartialEq)]
pub struct UiState {
    pub focus: Pane,
    pub zoomed: bool,
    pub help: bool,
    pub details: bool,
    /// The alert the details view shows: an index into the alerts pane's list.
    pub selected: usize,
    pub paused: bool,
    /// Index into `HISTORY_WINDOWS`.
    pub history: usize,
    /// Themes moved through with `t`; the loop takes it modulo the number of themes.
    pub theme: usize,
    pub filter: String,
    /// Typing into the filter: keys are text until Enter or Esc.
    pub editing: bool,
    /// Log lines scrolled back from the newest.
    pub log_back: usize,
    /// A replay's pace as the keys set it, and where it is; None when following live logs.
    pub replay: Option<ReplayUi>,
    /// Why no probe reads the GPUs and the host (`--no-probe`, or a replay of plain logs),
    /// so that their panes say so instead of waiting for readings that never come.
    pub probes_off: Option<&'static str>,
    pub quit: bool,
}

/// A replay as the view steers and shows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplayUi {
    pub speed: Speed,
    pub paused: bool,
    /// Jumps asked for so far (the loop sends one per new jump).
    pub jumps: u32,
    pub position: Position,
}

impl Default for ReplayUi {
    fn default() -> Self {
        ReplayUi {
            speed: Speed::Times(1.0),
            paused: false,
            jumps: 0,
            position: Position::default(),
        }
    }
}

impl Default for UiState {
    fn default() -> Self {
        UiState {
            focus: Pane::Alerts,
            zoomed: false,
            help: false,
            details: false,
            selected: 0,
            paused: false,
            history: 1,
            theme: 0,
            filter: String::new(),
            editing: false,
            log_back: 0,
            replay: None,
            probes_off: None,
            quit: false,
        }
    }
}

impl UiState {
    /// One key press. While the filter is being typed, keys are its text.
    pub fn key(&mut self, k: &Key) {
        if k.code == KeyCode::Char('c') && k.mods.ctrl {
            self.quit = true;
            return;
        }
        if self.editing {
            match k.code {
                KeyCode::Char(c) => self.filter.push(c),
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Enter => self.editing = false,
                KeyCode::Esc => {
                    self.editing = false;
                    self.filter.clear();
                }
                _ => {}
            }
            self.log_back = 0;
            return;
        }
        if let Some(a) = action_for(k, self.replay.is_some()) {
            self.apply(a);
        }
    }

    /// The one place an action changes the view.
    pub fn apply(&mut self, a: Action) {
        match a {
            Action::Quit => self.quit = true,
            Action::Help => self.help = !self.help,
            Action::FocusNext => self.focus = self.focus.next(),
            Action::FocusPrev => self.focus = self.focus.prev(),
            Action::Zoom => self.zoomed = true,
            Action::Back => {
                if self.help {
                    self.help = false;
                } else if self.details {
                    self.details = false;
                } else if self.zoomed {
                    self.zoomed = false;
                } else {
                    self.filter.clear();
                }
            }
            Action::Pause => self.paused = !self.paused,
            Action::LongerHistory => {
                self.history = (self.history + 1).min(HISTORY_WINDOWS.len() - 1);
            }
            Action::ShorterHistory => self.history = self.history.saturating_sub(1),
            Action::NextTheme => self.theme = self.theme.wrapping_add(1),
            Action::Filter => {
                self.editing = true;
                self.focus = Pane::Log;
            }
            Action::AlertDetails => self.details = !self.details,
            Action::Up => self.step(-1),
            Action::Down => self.step(1),
            Action::PageUp => self.log_back += PAGE,
            Action::PageDown => self.log_back = self.log_back.saturating_sub(PAGE),
            Action::ReplayPause => {
                if let Some(r) = &mut self.replay {
                    r.paused = !r.paused;
                }
            }
            Action::ReplayFaster => {
                if let Some(r) = &mut self.replay {
                    r.speed = r.speed.faster();
                }
            }
            Action::ReplaySlower => {
                if let Some(r) = &mut self.replay {
                    r.speed = r.speed.slower();
                }
            }
            Action::ReplayJump => {
                if let Some(r) = &mut self.replay {
                    r.jumps += 1;
                }
            }
        }
    }

    /// Up and down: through the alerts in the details view or the alerts pane, through the
    /// log's lines in the log pane, else from pane to pane.
    fn step(&mut self, by: i32) {
        if self.details || self.focus == Pane::Alerts {
            self.selected = self.selected.saturating_add_signed(by as isize);
        } else if self.focus == Pane::Log {
            self.log_back = self.log_back.saturating_add_signed(-by as isize);
        } else if by > 0 {
            self.focus = self.focus.next();
        } else {
            self.focus = self.focus.prev();
        }
    }

    pub fn history_window(&self) -> (f64, &'static str) {
        HISTORY_WINDOWS[self.history.min(HISTORY_WINDOWS.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(s: &mut UiState, code: KeyCode) {
        s.key(&Key::new(code, crate::monitor::keys::Mods::NONE));
    }

    #[test]
    fn keys_move_focus_zoom_and_back() {
        let mut s = UiState::default();
        press(&mut s, KeyCode::Tab);
        assert_eq!(s.focus, Pane::Breakdown);
        press(&mut s, KeyCode::BackTab);
        press(&mut s, KeyCode::BackTab);
        assert_eq!(s.focus, Pane::Log);
        press(&mut s, KeyCode::Enter);
        assert!(s.zoomed);
        press(&mut s, KeyCode::Char('?'));
        assert!(s.help);
        press(&mut s, KeyCode::Esc);
        assert!(!s.help && s.zoomed);
        press(&mut s, KeyCode::Esc);
        assert!(!s.zoomed);
        press(&mut s, KeyCode::Char('q'));
        assert!(s.quit);
    }

    #[test]
    fn the_filter_takes_keys_as_text() {
        let mut s = UiState::default();
        for c in "/nan q".chars() {
            press(&mut s, KeyCode::Char(c));
        }
        assert_eq!(
            (s.filter.as_str(), s.editing, s.quit),
            ("nan q", true, false)
        );
        press(&mut s, KeyCode::Backspace);
        press(&mut s, KeyCode::Enter);
        assert_eq!(
            (s.filter.as_str(), s.editing, s.focus),
            ("nan ", false, Pane::Log)
        );
        press(&mut s, KeyCode::Esc);
        assert_eq!(s.filter, "");
    }

    #[test]
    fn the_history_window_stays_in_range() {
        let mut s = UiState::default();
        for _ in 0..10 {
            press(&mut s, KeyCode::Char('+'));
        }
        assert_eq!(s.history_window().1, "all");
        for _ in 0..10 {
            press(&mut s, KeyCode::Char('-'));
        }
        assert_eq!(s.history_window().1, "5m");
    }

    #[test]
    fn arrows_scroll_the_log_and_select_alerts() {
        let mut s = UiState::default();
        press(&mut s, KeyCode::Down);
        press(&mut s, KeyCode::Down);
        press(&mut s, KeyCode::Up);
        assert_eq!(s.selected, 1);
        s.focus = Pane::Log;
        press(&mut s, KeyCode::Up);
        press(&mut s, KeyCode::PageUp);
        assert_eq!(s.log_back, 11);
        press(&mut s, KeyCode::PageDown);
        press(&mut s, KeyCode::PageDown);
        assert_eq!(s.log_back, 0);
        s.focus = Pane::Stages;
        press(&mut s, KeyCode::Down);
        assert_eq!(s.focus, Pane::Gpus);
    }
}
