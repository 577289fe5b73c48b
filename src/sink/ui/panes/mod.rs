//! One file per pane, each with `render(frame, area, &View)`: shared references only, the
//! same parameter order everywhere. A pane asks the theme for roles and never names a colour.

pub mod alerts;
pub mod breakdown;
pub mod code;
pub mod details;
pub mod gpus;
pub mod header;
pub mod help;
pub mod history;
pub mod host;
pub mod log;
pub mod stages;

use std::borrow::Cow;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders};

use super::state::{Pane, UiState};
use crate::monitor::Monitor;
use crate::settings::theme::{Role, Theme};

/// Everything a pane may read: the monitor (or its paused copy), the UI state, the theme, and
/// how long ago the last step arrived by the loop's clock (None in replays and tests).
pub struct View<'a> {
    pub mon: &'a Monitor,
    pub ui: &'a UiState,
    pub theme: &'a Theme,
    pub step_age: Option<f64>,
}

impl View<'_> {
    pub fn style(&self, role: Role) -> Style {
        self.theme.style(role)
    }

    /// Text in a role's style, shown as `widgets::styled` shows it.
    pub fn span<'s>(&self, text: impl Into<Cow<'s, str>>, role: Role) -> Span<'s> {
        crate::sink::ui::widgets::styled(self.theme, text, role)
    }

    /// A pane's frame: one rule on top with its title (extra words after it, muted), in the
    /// focused colour when it has the focus. Side borders would cost two columns at 80x24.
    pub fn block<'s>(&self, pane: Pane, extra: String) -> Block<'s> {
        let border = if self.ui.focus == pane {
            Role::BorderFocused
        } else {
            Role::Border
        };
        let mut title = vec![self.span(format!(" {} ", pane.title()), Role::Title)];
        if !extra.is_empty() {
            title.push(self.span(format!("{extra} "), Role::Muted));
        }
        Block::default()
            .borders(Borders::TOP)
            .border_style(self.style(border))
            .title(Line::from(title))
    }
}

/// Draws one pane.
pub fn render(f: &mut Frame, pane: Pane, area: Rect, v: &View) {
    match pane {
        Pane::Header => header::render(f, area, v),
        Pane::Alerts => alerts::render(f, area, v),
        Pane::Breakdown => breakdown::render(f, area, v),
        Pane::History => history::render(f, area, v),
        Pane::Stages => stages::render(f, area, v),
        Pane::Gpus => gpus::render(f, area, v),
        Pane::Host => host::render(f, area, v),
        Pane::Log => log::render(f, area, v),
        Pane::Code => code::render(f, area, v),
    }
}
