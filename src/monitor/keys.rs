//! What the user or the system did to the live view, in steptop's own terms: a key with the
//! modifiers that matter, a resize, a stop. The live view's input thread converts the
//! terminal's events into these, so the inbox's message type, and the core that reads it,
//! depend on no terminal library.

/// Something the user or the system did to the live view.
#[derive(Clone, Debug, PartialEq)]
pub enum UiEvent {
    Key(Key),
    /// The terminal changed size: redraw everything.
    Resize,
    /// A signal asked steptop to stop (its number), or input failed (the terminal is gone).
    Stop(String),
}

/// One key press.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: Mods,
}

impl Key {
    pub const fn new(code: KeyCode, mods: Mods) -> Key {
        Key { code, mods }
    }
}

/// The keys the live view can bind; every other key is `Other` and does nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyCode {
    Char(char),
    F(u8),
    Tab,
    BackTab,
    Enter,
    Esc,
    Backspace,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Other,
}

/// The modifiers held. Shift and control take part in bindings; any other (alt, super, meta,
/// hyper) leaves a key unbound, so it is kept only as `other`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mods {
    pub shift: bool,
    pub ctrl: bool,
    pub other: bool,
}

impl Mods {
    pub const NONE: Mods = Mods {
        shift: false,
        ctrl: false,
        other: false,
    };
    pub const SHIFT: Mods = Mods {
        shift: true,
        ..Mods::NONE
    };
    pub const CTRL: Mods = Mods {
        ctrl: true,
        ..Mods::NONE
    };
}
