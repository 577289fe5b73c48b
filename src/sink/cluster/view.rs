//! `steptop cluster` live: the table refreshed every `--interval` by a poller thread, in the
//! node view's terminal, keys, themes and help. A refresh that cannot read Prometheus keeps
//! the last table, says why on the top line, and is tried again later (backing off).

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{COLUMNS, HEADS, TREND, VERDICT, cells, source_line, state, summary_parts};
use crate::common::display;
use crate::common::error::Error;
use crate::input::prometheus::Prometheus;
use crate::monitor::keys::{Key, UiEvent};
use crate::monitor::msg::{self, Msg};
use crate::nodes::fetch::fetch;
use crate::nodes::queries::Selector;
use crate::nodes::rows::{self, Cluster, Limits, Row, State};
use crate::settings::theme::{Role, Theme};
use crate::sink::ui::action::{Action, KEYMAP, action_for};
use crate::sink::ui::panes::details::overlay;
use crate::sink::ui::widgets::{ago, severity_role, sparkline, styled};
use crate::sink::ui::{producers, terminal};

pub struct Options {
    pub prom: Prometheus,
    pub sel: Selector,
    pub limits: Limits,
    pub interval: Duration,
    pub themes: Vec<Theme>,
}

/// What reaches the view's loop: keys and signals, and refreshes.
enum Event {
    Ui(UiEvent),
    Refresh(Box<Cluster>),
}

/// The longest wait between refreshes while Prometheus cannot be read.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The keys the cluster view answers, and what they do here.
const HELP: [(Action, &str); 9] = [
    (Action::Quit, "quit"),
    (Action::Help, "this help"),
    (Action::Up, "previous node"),
    (Action::Down, "next node"),
    (Action::PageUp, "a page of nodes up"),
    (Action::PageDown, "a page of nodes down"),
    (Action::Zoom, "the node's alerts: evidence and actions"),
    (Action::Back, "back: close help or the node's alerts"),
    (Action::NextTheme, "next theme"),
];

pub fn run(opts: Options) -> Result<(), Error> {
    let fail = |what: &str, e: std::io::Error| Error::Runtime(format!("cannot start {what}: {e}"));
    let (tx, rx) = sync_channel::<Event>(64);
    // Keys and signals come as the node view's messages; one thread passes them on.
    let (keys_tx, keys_rx) = msg::inbox();
    producers::spawn_signals(keys_tx.clone(), true).map_err(|e| fail("the signal thread", e))?;
    let ui_tx = tx.clone();
    std::thread::Builder::new()
        .name("steptop-keys".into())
        .spawn(move || {
            while let Ok(m) = keys_rx.recv() {
                if let Msg::Ui(e) = m
                    && ui_tx.send(Event::Ui(e)).is_err()
                {
                    return;
                }
            }
        })
        .map_err(|e| fail("the key thread", e))?;
    let url = opts.prom.url().to_string();
    spawn_poller(opts.prom, opts.sel, opts.limits, opts.interval, tx)
        .map_err(|e| fail("the Prometheus thread", e))?;
    let (mut screen, guard) =
        terminal::enter().map_err(|e| fail("the terminal's full-screen mode", e))?;
    producers::spawn_input(keys_tx).map_err(|e| fail("the input thread", e))?;
    let mut app = App {
        url,
        themes: opts.themes,
        ..App::default()
    };
    let result = app.main_loop(&mut screen, &rx);
    drop(guard);
    result
}

/// Refreshes until the view is gone: at `interval`, or backing off while the figures cannot
/// be read.
fn spawn_poller(
    prom: Prometheus,
    sel: Selector,
    limits: Limits,
    interval: Duration,
    tx: SyncSender<Event>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("steptop-prometheus".into())
        .spawn(move || {
            let mut wait = interval;
            loop {
                let fetched = fetch(&prom, &sel);
                wait = if fetched.figures.is_ok() {
                    interval
                } else {
                    (wait * 2).min(MAX_BACKOFF).max(interval)
                };
                let table = rows::build(&fetched, limits);
                if tx.send(Event::Refresh(Box::new(table))).is_err() {
                    return;
                }
                std::thread::sleep(wait);
            }
        })
        .map(|_| ())
}

#[derive(Default)]
struct App {
    url: String,
    themes: Vec<Theme>,
    theme: usize,
    /// The last table that had figures, and when it came.
    table: Option<(Cluster, Instant)>,
    /// Why the last refresh could not read the figures, if it could not.
    failing: Option<String>,
    /// The selected row's place, and its node and name: a refresh that reorders the rows
    /// keeps the same node selected.
    selected: usize,
    selected_row: Option<(String, String)>,
    details: bool,
    help: bool,
    quit: bool,
}

impl App {
    fn main_loop(
        &mut self,
        screen: &mut terminal::Screen,
        rx: &Receiver<Event>,
    ) -> Result<(), Error> {
        let draw_err = |e: std::io::Error| Error::Runtime(format!("cannot draw: {e}"));
        loop {
            screen.draw(|f| self.frame(f)).map_err(draw_err)?;
            // The ages on screen move with the clock: redraw at least every second.
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(e) => self.handle(e),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            while let Ok(e) = rx.try_recv() {
                self.handle(e);
            }
            if self.quit {
                return Ok(());
            }
        }
    }

    fn handle(&mut self, e: Event) {
        match e {
            Event::Refresh(c) => {
                if c.unreadable.is_some() {
                    self.failing = c.unreadable;
                } else {
                    self.failing = None;
                    self.table = Some((*c, Instant::now()));
                    if let Some(key) = &self.selected_row
                        && let Some(i) = self.rows().iter().position(|r| row_key(r) == *key)
                    {
                        self.selected = i;
                    }
                }
            }
            Event::Ui(UiEvent::Key(k)) => self.key(&k),
            Event::Ui(UiEvent::Stop(_)) => self.quit = true,
            Event::Ui(_) => {}
        }
    }

    fn rows(&self) -> Vec<&Row> {
        self.table
            .iter()
            .flat_map(|(c, _)| c.jobs.iter().flat_map(|j| &j.rows))
            .collect()
    }

    fn key(&mut self, k: &Key) {
        let Some(action) = action_for(k, false) else {
            return;
        };
        let last = self.rows().len().saturating_sub(1);
        match action {
            Action::Quit => self.quit = true,
            Action::Help => self.help = !self.help,
            Action::Back => {
                self.help = false;
                self.details = false;
            }
            Action::Zoom | Action::AlertDetails => self.details = !self.details,
            Action::Up => self.selected = self.selected.saturating_sub(1),
            Action::Down => self.selected = (self.selected + 1).min(last),
            Action::PageUp => self.selected = self.selected.saturating_sub(10),
            Action::PageDown => self.selected = (self.selected + 10).min(last),
            Action::NextTheme => self.theme = (self.theme + 1) % self.themes.len().max(1),
            _ => {}
        }
        self.selected_row = self.rows().get(self.selected).map(|r| row_key(r));
    }

    fn frame(&self, f: &mut Frame) {
        let Some(theme) = self.themes.get(self.theme) else {
            return;
        };
        let area = f.area();
        let rows = self.rows();
        let selected = self.selected.min(rows.len().saturating_sub(1));
        let (body, at) = self.body(theme, &rows, selected, area.width as usize);
        // One line on top, one for the keys; the body scrolls to keep the selection shown.
        let height = area.height.saturating_sub(2) as usize;
        let skip = at.map_or(0, |at| (at + 1).saturating_sub(height));
        let mut lines = vec![self.top_line(theme)];
        lines.extend(body.into_iter().skip(skip).take(height));
        lines.resize(height + 1, Line::default());
        let keys = "↑↓ node · Enter its alerts · t theme · ? help · q quit";
        lines.push(Line::from(styled(theme, keys, Role::Muted)));
        f.render_widget(Paragraph::new(lines), area);
        if self.details
            && let Some(r) = rows.get(selected)
        {
            details(f, area, theme, r);
        }
        if self.help {
            help(f, area, theme);
        }
    }

    /// Where the figures come from and how fresh they are, or why they cannot be read.
    fn top_line(&self, theme: &Theme) -> Line<'static> {
        if let Some(why) = &self.failing {
            let held = match &self.table {
                Some((_, at)) => format!("; the table is {} old", ago(at.elapsed().as_secs_f64())),
                None => String::new(),
            };
            return Line::from(styled(
                theme,
                format!("cannot read Prometheus, trying again: {why}{held}"),
                Role::Crit,
            ));
        }
        match &self.table {
            Some((c, at)) => Line::from(styled(
                theme,
                format!(
                    "{} · {} ago",
                    source_line(&self.url, c),
                    ago(at.elapsed().as_secs_f64())
                ),
                Role::Title,
            )),
            None => Line::from(styled(
                theme,
                format!(
                    "steptop cluster · asking {} for the nodes' figures…",
                    self.url
                ),
                Role::Muted,
            )),
        }
    }

    /// The jobs' summaries and rows, and which line holds the selected row.
    fn body(
        &self,
        theme: &Theme,
        rows: &[&Row],
        selected: usize,
        width: usize,
    ) -> (Vec<Line<'static>>, Option<usize>) {
        let Some((c, _)) = &self.table else {
            return (Vec::new(), None);
        };
        let cols = columns(rows, width);
        let mut lines = Vec::new();
        let mut at = None;
        let mut i = 0;
        for j in &c.jobs {
            for l in wrapped(&summary_parts(j), width) {
                lines.push(Line::from(styled(theme, l, Role::Title)));
            }
            lines.push(cells_line(theme, &cols, &HEADS.map(String::from), |_| {
                Role::Muted
            }));
            for r in &j.rows {
                let mut line = cells_line(theme, &cols, &view_cells(r), |col| role(r, col));
                if i == selected {
                    line = line.style(theme.style(Role::Selected));
                    at = Some(lines.len());
                }
                lines.push(line);
                i += 1;
            }
        }
        if c.jobs.is_empty() {
            lines.push(Line::from(styled(
                theme,
                "no steptop node found: is each node running `steptop --headless \
                 --metrics-addr`, and in Prometheus's scrape config?",
                Role::Warn,
            )));
        }
        for p in &c.problems {
            lines.push(Line::from(styled(
                theme,
                format!("problem: {p}"),
                Role::Warn,
            )));
        }
        (lines, at)
    }
}

/// What identifies a row across refreshes: its node and its name (a rank's row has its own).
fn row_key(r: &Row) -> (String, String) {
    (r.instance.clone(), r.name.clone())
}

/// Parts joined with ` · ` on lines of at most `width` cells, a part never split.
fn wrapped(parts: &[String], width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for p in parts {
        match lines.last_mut() {
            Some(l) if display::width(l) + 3 + display::width(p) <= width => {
                l.push_str(" · ");
                l.push_str(p);
            }
            _ => lines.push(p.clone()),
        }
    }
    lines
}

/// The columns shown, by index into `HEADS`, with their widths: the most telling first,
/// the rest while they fit `width`. The node and the verdict shrink (to `MIN`) before a
/// column is left out.
fn columns(rows: &[&Row], width: usize) -> Vec<(usize, usize)> {
    // NODE STATE STEP STEP-TIME DATA GPU VERDICT, then TREND ALERTS LAG RATE POWER MEM FRESH.
    const PRIORITY: [usize; COLUMNS] = [0, 1, 2, 4, 7, 8, 11, 5, 12, 3, 6, 9, 10, 13];
    const MAX: [usize; COLUMNS] = [18, 5, 13, 7, 10, 8, 10, 5, 5, 6, 9, 30, 10, 9];
    const MIN: [usize; COLUMNS] = [10, 5, 4, 3, 9, 8, 6, 4, 3, 5, 3, 12, 6, 5];
    let all: Vec<[String; COLUMNS]> = rows.iter().map(|r| view_cells(r)).collect();
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    let mut used = 0;
    for col in PRIORITY {
        let w = all
            .iter()
            .map(|c| display::width(&c[col]))
            .chain([display::width(HEADS[col])])
            .max()
            .unwrap_or(0)
            .min(MAX[col]);
        let room = width.saturating_sub(used + 1);
        let w = if w > room && room >= MIN[col] {
            room
        } else {
            w
        };
        if used + w < width {
            chosen.push((col, w));
            used += w + 1;
        }
    }
    chosen.sort_by_key(|c| c.0);
    chosen
}

/// A row's cells as the view shows them: the trend as a sparkline of the last minutes.
fn view_cells(r: &Row) -> [String; COLUMNS] {
    let mut c = cells(r);
    let recent = &r.history[r.history.len().saturating_sub(8)..];
    if recent.iter().flatten().count() >= 2 {
        let max = recent.iter().flatten().fold(0.0_f64, |m, v| m.max(*v));
        c[TREND] = sparkline(recent, max);
    }
    c
}

/// One line of cells in the chosen columns, each in the role `role` gives its column.
fn cells_line(
    theme: &Theme,
    cols: &[(usize, usize)],
    cells: &[String; COLUMNS],
    role: impl Fn(usize) -> Role,
) -> Line<'static> {
    let spans: Vec<Span<'static>> = cols
        .iter()
        .map(|&(col, w)| {
            let text = crate::sink::ui::widgets::fit(&cells[col], w);
            let pad = w.saturating_sub(display::width(&text)) + 1;
            styled(theme, format!("{text}{}", " ".repeat(pad)), role(col))
        })
        .collect();
    Line::from(spans)
}

/// The role of a row's cell: the state and verdict in their severity, the rest as text.
fn role(r: &Row, col: usize) -> Role {
    match col {
        1 => match (r.state, state(r)) {
            (Some(State::Down | State::Gone | State::Stale), _) => Role::Crit,
            (_, "slow" | "lags") => Role::Warn,
            _ => Role::Ok,
        },
        VERDICT => r.verdict_severity.map_or(Role::Muted, severity_role),
        TREND => Role::Chart,
        _ => Role::Text,
    }
}

/// The selected node's alerts, as its metrics publish them: title, evidence, actions.
fn details(f: &mut Frame, area: Rect, theme: &Theme, r: &Row) {
    let inner = overlay(
        f,
        area,
        theme,
        (78, 22),
        " node alerts (↑↓ other nodes, Esc closes) ",
    );
    let mut lines = vec![Line::from(styled(
        theme,
        format!("{} · {} · {}", r.name, r.instance, state(r)),
        Role::Title,
    ))];
    if let Some(why) = &r.why {
        lines.push(Line::from(styled(theme, why.clone(), Role::Warn)));
    }
    let fresh: Vec<String> = [
        r.scrape_age_s.map(|a| format!("scraped {} ago", ago(a))),
        r.step_age_s.map(|a| format!("last step {} ago", ago(a))),
        r.step.map(|s| format!("step {s:.0}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !fresh.is_empty() {
        lines.push(Line::from(styled(theme, fresh.join(" · "), Role::Muted)));
    }
    if let Some(g) = &r.gpu {
        lines.push(Line::from(styled(theme, gpu_line(g), Role::Muted)));
    }
    if !r.history.is_empty() {
        let max = r.history.iter().flatten().fold(0.0_f64, |m, v| m.max(*v));
        lines.push(Line::from(vec![
            styled(theme, "step time, 15 min ", Role::Muted),
            styled(theme, sparkline(&r.history, max), Role::Chart),
        ]));
    }
    if r.alerts.is_empty() {
        lines.push(Line::from(styled(theme, "No active alert.", Role::Muted)));
    }
    for a in &r.alerts {
        lines.push(Line::default());
        lines.push(Line::from(vec![
            styled(
                theme,
                format!("{} ", a.severity.name().to_uppercase()),
                severity_role(a.severity),
            ),
            styled(theme, a.title.clone(), Role::Title),
        ]));
        lines.push(Line::from(styled(
            theme,
            format!("{}{}", a.rule, if a.verdict { " (verdict)" } else { "" }),
            Role::Muted,
        )));
        for e in &a.evidence {
            lines.push(Line::from(styled(theme, format!("  {e}"), Role::Text)));
        }
        for (i, act) in a.actions.iter().enumerate() {
            lines.push(Line::from(styled(
                theme,
                format!("  {}. {act}", i + 1),
                Role::Info,
            )));
        }
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

/// A node's GPUs in one line, naming where the figures come from.
fn gpu_line(g: &crate::nodes::rows::Gpus) -> String {
    use crate::common::units::gib;
    let mut parts = vec![format!(
        "{} GPU{} ({})",
        g.count,
        if g.count == 1 { "" } else { "s" },
        if g.source == "dcgm" {
            "dcgm-exporter"
        } else {
            "steptop"
        }
    )];
    if let Some(u) = g.util {
        parts.push(format!("util {:.0}%", u * 100.0));
    }
    if let Some(a) = g.engine_active {
        parts.push(format!("engine active {:.0}%", a * 100.0));
    }
    match (g.power_w, g.power_limit_w) {
        (Some(p), Some(l)) => parts.push(format!("power {p:.0} W of {l:.0} W")),
        (Some(p), None) => parts.push(format!("power {p:.0} W")),
        _ => {}
    }
    match (g.memory_used_bytes, g.memory_total_bytes) {
        (Some(u), Some(t)) => parts.push(format!("memory {} of {}", gib(u as u64), gib(t as u64))),
        (Some(u), None) => parts.push(format!("memory {}", gib(u as u64))),
        _ => {}
    }
    parts.join(" · ")
}

/// The keys, drawn from the node view's keymap with what they do here.
fn help(f: &mut Frame, area: Rect, theme: &Theme) {
    let inner = overlay(
        f,
        area,
        theme,
        (60, HELP.len() as u16 + 4),
        " keys (Esc closes) ",
    );
    let mut lines: Vec<Line> = HELP
        .iter()
        .filter_map(|(action, what)| {
            let b = KEYMAP.iter().find(|b| b.action == *action)?;
            Some(Line::from(vec![
                styled(theme, format!("{:>9}  ", b.label), Role::Info),
                styled(theme, *what, Role::Text),
            ]))
        })
        .collect();
    lines.push(Line::from(styled(
        theme,
        format!("theme: {} (t for the next)", theme.name),
        Role::Muted,
    )));
    f.render_widget(Paragraph::new(lines), inner);
}
