//! Keys are data: one table maps keys to actions, the help overlay is drawn from the same table,
//! and `UiState::apply` is the one `match` over actions.

use crate::monitor::keys::{Key, KeyCode, Mods};

/// Everything a key can ask of the live view. None of them touches the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    FocusNext,
    FocusPrev,
    Zoom,
    Back,
    Pause,
    LongerHistory,
    ShorterHistory,
    NextTheme,
    Filter,
    AlertDetails,
    Up,
    Down,
    PageUp,
    PageDown,
    ReplayPause,
    ReplayFaster,
    ReplaySlower,
    ReplayJump,
}

/// Keys for one action and how the help names them.
pub struct Binding {
    pub keys: &'static [Key],
    pub label: &'static str,
    pub action: Action,
    pub help: &'static str,
}

const NONE: Mods = Mods::NONE;
const SHIFT: Mods = Mods::SHIFT;
const CTRL: Mods = Mods::CTRL;

/// The keymap, in the order the help lists it.
pub const KEYMAP: &[Binding] = &[
    Binding {
        keys: &[
            Key::new(KeyCode::Char('q'), NONE),
            Key::new(KeyCode::Char('c'), CTRL),
        ],
        label: "q",
        action: Action::Quit,
        help: "quit",
    },
    Binding {
        keys: &[
            Key::new(KeyCode::Char('?'), NONE),
            Key::new(KeyCode::F(1), NONE),
        ],
        label: "?",
        action: Action::Help,
        help: "this help",
    },
    Binding {
        keys: &[Key::new(KeyCode::Tab, NONE), Key::new(KeyCode::Right, NONE)],
        label: "Tab →",
        action: Action::FocusNext,
        help: "focus the next pane",
    },
    Binding {
        keys: &[
            Key::new(KeyCode::BackTab, SHIFT),
            Key::new(KeyCode::BackTab, NONE),
            Key::new(KeyCode::Left, NONE),
        ],
        label: "S-Tab ←",
        action: Action::FocusPrev,
        help: "focus the previous pane",
    },
    Binding {
        keys: &[Key::new(KeyCode::Enter, NONE)],
        label: "Enter",
        action: Action::Zoom,
        help: "zoom the focused pane",
    },
    Binding {
        keys: &[Key::new(KeyCode::Esc, NONE)],
        label: "Esc",
        action: Action::Back,
        help: "back: close help, details, zoom or filter",
    },
    Binding {
        keys: &[
            Key::new(KeyCode::Up, NONE),
            Key::new(KeyCode::Char('k'), NONE),
        ],
        label: "↑ k",
        action: Action::Up,
        help: "previous alert / older log lines",
    },
    Binding {
        keys: &[
            Key::new(KeyCode::Down, NONE),
            Key::new(KeyCode::Char('j'), NONE),
        ],
        label: "↓ j",
        action: Action::Down,
        help: "next alert / newer log lines",
    },
    Binding {
        keys: &[Key::new(KeyCode::PageUp, NONE)],
        label: "PgUp",
        action: Action::PageUp,
        help: "log: a page back",
    },
    Binding {
        keys: &[Key::new(KeyCode::PageDown, NONE)],
        label: "PgDn",
        action: Action::PageDown,
        help: "log: a page forward",
    },
    Binding {
        keys: &[Key::new(KeyCode::Char('a'), NONE)],
        label: "a",
        action: Action::AlertDetails,
        help: "alert details: evidence and every action",
    },
    Binding {
        keys: &[Key::new(KeyCode::Char('p'), NONE)],
        label: "p",
        action: Action::Pause,
        help: "pause the view (data keeps flowing)",
    },
    Binding {
        keys: &[
            Key::new(KeyCode::Char('+'), NONE),
            Key::new(KeyCode::Char('='), NONE),
        ],
        label: "+",
        action: Action::LongerHistory,
        help: "history: a longer time window",
    },
    Binding {
        keys: &[Key::new(KeyCode::Char('-'), NONE)],
        label: "-",
        action: Action::ShorterHistory,
        help: "history: a shorter time window",
    },
    Binding {
        keys: &[Key::new(KeyCode::Char('/'), NONE)],
        label: "/",
        action: Action::Filter,
        help: "filter the log pane (Enter keeps, Esc clears)",
    },
    Binding {
        keys: &[Key::new(KeyCode::Char('t'), NONE)],
        label: "t",
        action: Action::NextTheme,
        help: "next theme",
    },
];

/// The keys a replay adds, listed after the others in its help.
pub const REPLAY_KEYMAP: &[Binding] = &[
    Binding {
        keys: &[Key::new(KeyCode::Char(' '), NONE)],
        label: "space",
        action: Action::ReplayPause,
        help: "replay: pause / go on",
    },
    Binding {
        keys: &[Key::new(KeyCode::Char(']'), NONE)],
        label: "]",
        action: Action::ReplayFaster,
        help: "replay: faster",
    },
    Binding {
        keys: &[Key::new(KeyCode::Char('['), NONE)],
        label: "[",
        action: Action::ReplaySlower,
        help: "replay: slower",
    },
    Binding {
        keys: &[Key::new(KeyCode::Char('>'), NONE)],
        label: ">",
        action: Action::ReplayJump,
        help: "replay: jump ahead 5% of the input",
    },
];

/// The bindings in force: the replay keys only in a replay.
pub fn bindings(replay: bool) -> impl Iterator<Item = &'static Binding> {
    let extra: &'static [Binding] = if replay { REPLAY_KEYMAP } else { &[] };
    KEYMAP.iter().chain(extra)
}

/// The action a key asks for. Shift is ignored for characters: terminals disagree on
/// whether `?` or `+` carry it.
pub fn action_for(key: &Key, replay: bool) -> Option<Action> {
    let mods = match key.code {
        KeyCode::Char(_) => Mods {
            shift: false,
            ..key.mods
        },
        _ => key.mods,
    };
    bindings(replay)
        .find(|b| b.keys.iter().any(|k| k.code == key.code && k.mods == mods))
        .map(|b| b.action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, m: Mods) -> Key {
        Key::new(code, m)
    }

    fn action_for_live(k: &Key) -> Option<Action> {
        action_for(k, false)
    }

    #[test]
    fn replay_keys_act_only_in_a_replay() {
        let space = key(KeyCode::Char(' '), NONE);
        assert_eq!(action_for(&space, false), None);
        assert_eq!(action_for(&space, true), Some(Action::ReplayPause));
        assert_eq!(
            action_for(&key(KeyCode::Char('>'), SHIFT), true),
            Some(Action::ReplayJump)
        );
    }

    #[test]
    fn keys_map_to_actions() {
        assert_eq!(
            action_for_live(&key(KeyCode::Char('q'), NONE)),
            Some(Action::Quit)
        );
        assert_eq!(
            action_for_live(&key(KeyCode::Char('c'), CTRL)),
            Some(Action::Quit)
        );
        assert_eq!(action_for_live(&key(KeyCode::Char('c'), NONE)), None);
        assert_eq!(
            action_for_live(&key(KeyCode::Char('?'), SHIFT)),
            Some(Action::Help)
        );
        assert_eq!(
            action_for_live(&key(KeyCode::BackTab, SHIFT)),
            Some(Action::FocusPrev)
        );
        assert_eq!(
            action_for_live(&key(KeyCode::Char('+'), SHIFT)),
            Some(Action::LongerHistory)
        );
        assert_eq!(action_for_live(&key(KeyCode::Char('x'), NONE)), None);
    }

    #[test]
    fn no_key_is_bound_twice_and_every_action_has_a_key() {
        let mut seen = Vec::new();
        for b in bindings(true) {
            assert!(!b.keys.is_empty() && !b.help.is_empty(), "{}", b.label);
            for k in b.keys {
                assert!(!seen.contains(k), "{k:?} bound twice");
                seen.push(*k);
            }
        }
        let actions = [
            Action::Quit,
            Action::Help,
            Action::FocusNext,
            Action::FocusPrev,
            Action::Zoom,
            Action::Back,
            Action::Pause,
            Action::LongerHistory,
            Action::ShorterHistory,
            Action::NextTheme,
            Action::Filter,
            Action::AlertDetails,
            Action::Up,
            Action::Down,
            Action::PageUp,
            Action::PageDown,
            Action::ReplayPause,
            Action::ReplayFaster,
            Action::ReplaySlower,
            Action::ReplayJump,
        ];
        for a in actions {
            assert!(bindings(true).any(|b| b.action == a), "{a:?} has no key");
        }
    }
}
