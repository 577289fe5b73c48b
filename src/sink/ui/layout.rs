//! Where each pane goes, from the terminal's size and the focus. Two shapes:
//!
//! Compact (under 120 columns or 36 rows; 80x24 is the floor we design for):
//!
//! ```text
//! +------------------------------------------------+
//! | header (2 rows: run, step, progress, rates)    |
//! | verdict and alerts (2 to 7 rows)               |
//! | step breakdown (3 rows)                        |
//! +-----------------------+------------------------+
//! | history, or stages or | GPUs                   |
//! | log when focused      +------------------------+
//! |                       | host                   |
//! +-----------------------+------------------------+
//! ```
//!
//! Wide (120x36 and up, such as 160x48): every pane at once.
//!
//! ```text
//! +------------------------------------------------+
//! | header                                         |
//! | verdict and alerts           | step breakdown  |
//! | history                      | stages          |
//! |                              | python (stacks) |
//! | GPUs          | host         | log             |
//! +------------------------------------------------+
//! ```
//!
//! The python pane (the trainer's sampled stacks) shares the stages' place once there are
//! stacks; at 80x24 it is reached by focus, like the stages and the log.
//!
//! A zoomed pane takes everything under the header.

use ratatui::layout::{Constraint, Layout, Rect};

use super::state::Pane;
use super::state::UiState;

/// Rows the alerts pane takes: its rule and its text's rows, within bounds.
fn alerts_rows(text_rows: usize, max: u16) -> u16 {
    (1 + text_rows.min(usize::from(max)) as u16).clamp(2, max)
}

/// The panes to draw and their areas. `alerts` is how many rows the alerts pane's text takes;
/// `stacks`: whether the trainer's stacks are sampled (the wide shape then shows them).
pub fn layout(area: Rect, ui: &UiState, alerts: usize, stacks: bool) -> Vec<(Pane, Rect)> {
    let [header, body] = Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(area);
    let mut out = vec![(Pane::Header, header)];
    if ui.zoomed {
        out.push((ui.focus, body));
    } else if area.width >= 120 && area.height >= 36 {
        wide(body, alerts, stacks, &mut out);
    } else {
        compact(body, ui, alerts, &mut out);
    }
    out
}

fn compact(body: Rect, ui: &UiState, alerts: usize, out: &mut Vec<(Pane, Rect)>) {
    let [top, breakdown, rest] = Layout::vertical([
        Constraint::Length(alerts_rows(alerts, 7)),
        Constraint::Length(3),
        Constraint::Min(0),
    ])
    .areas(body);
    let [left, right] = Layout::horizontal([Constraint::Percentage(50), Constraint::Fill(1)])
        .spacing(1)
        .areas(rest);
    let [gpus, host] =
        Layout::vertical([Constraint::Percentage(45), Constraint::Fill(1)]).areas(right);
    let left_pane = match ui.focus {
        Pane::Stages | Pane::Log | Pane::Code => ui.focus,
        _ => Pane::History,
    };
    out.extend([
        (Pane::Alerts, top),
        (Pane::Breakdown, breakdown),
        (left_pane, left),
        (Pane::Gpus, gpus),
        (Pane::Host, host),
    ]);
}

fn wide(body: Rect, alerts: usize, stacks: bool, out: &mut Vec<(Pane, Rect)>) {
    let [top, middle, bottom] = Layout::vertical([
        Constraint::Length(alerts_rows(alerts, 12).max(7)),
        Constraint::Percentage(40),
        Constraint::Fill(1),
    ])
    .areas(body);
    let split = |r: Rect| {
        Layout::horizontal([Constraint::Percentage(62), Constraint::Fill(1)])
            .spacing(1)
            .areas::<2>(r)
    };
    let [alerts_area, breakdown] = split(top);
    let [history, stages] = split(middle);
    let [gpus, host, log] = Layout::horizontal([
        Constraint::Percentage(31),
        Constraint::Percentage(31),
        Constraint::Fill(1),
    ])
    .spacing(1)
    .areas(bottom);
    out.extend([
        (Pane::Alerts, alerts_area),
        (Pane::Breakdown, breakdown),
        (Pane::History, history),
    ]);
    if stacks {
        let [stages, code] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Fill(1)]).areas(stages);
        out.extend([(Pane::Stages, stages), (Pane::Code, code)]);
    } else {
        out.push((Pane::Stages, stages));
    }
    out.extend([(Pane::Gpus, gpus), (Pane::Host, host), (Pane::Log, log)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panes(w: u16, h: u16, ui: &UiState) -> Vec<Pane> {
        layout(Rect::new(0, 0, w, h), ui, 3, false)
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    }

    #[test]
    fn wide_screens_show_every_pane_and_small_ones_follow_the_focus() {
        let mut ui = UiState::default();
        assert_eq!(panes(160, 48, &ui).len(), 8);
        let with_stacks = layout(Rect::new(0, 0, 160, 48), &ui, 3, true);
        assert!(with_stacks.iter().any(|(p, _)| *p == Pane::Code));
        assert!(panes(80, 24, &ui).contains(&Pane::History));
        ui.focus = Pane::Log;
        let small = panes(80, 24, &ui);
        assert!(small.contains(&Pane::Log) && !small.contains(&Pane::History));
        ui.focus = Pane::Code;
        assert!(panes(80, 24, &ui).contains(&Pane::Code));
        ui.focus = Pane::Log;
        ui.zoomed = true;
        assert_eq!(panes(80, 24, &ui), vec![Pane::Header, Pane::Log]);
    }

    #[test]
    fn areas_stay_inside_the_screen_and_apart() {
        for (w, h) in [(80, 24), (100, 30), (160, 48), (250, 70), (20, 5)] {
            let screen = Rect::new(0, 0, w, h);
            let all = layout(screen, &UiState::default(), 9, true);
            for (i, (p, a)) in all.iter().enumerate() {
                assert_eq!(screen.intersection(*a), *a, "{p:?} at {w}x{h}");
                for (q, b) in &all[i + 1..] {
                    assert!(
                        !a.intersects(*b) || a.area() == 0,
                        "{p:?} and {q:?} at {w}x{h}"
                    );
                }
            }
        }
    }
}
