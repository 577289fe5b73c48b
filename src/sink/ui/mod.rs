//! The live terminal view: `steptop LOG...`. One loop on the main thread waits on the inbox,
//! drains what came, and draws only when something changed, at most every `FRAME`; a 1 s tick
//! keeps the clocks honest. The follow (or replay) thread, the sampler, the input and the
//! signals are threads that send into the same inbox; keys change `UiState` only.

pub mod action;
pub mod coalesce;
pub mod layout;
pub mod panes;
pub mod producers;
pub mod state;
pub mod terminal;
pub mod widgets;

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender};
use std::time::{Duration, Instant};

use ratatui::Frame;

use crate::common::error::Error;
use crate::input::replay::pacer::{Control, Speed};
use crate::monitor::Monitor;
use crate::monitor::keys::UiEvent;
use crate::monitor::msg::{Msg, unix_now};
use crate::settings::theme::Theme;
use crate::sink::exposition::Publisher;
use panes::View;
use state::UiState;

/// Shortest time between two frames: a burst of lines becomes one frame.
const FRAME: Duration = Duration::from_millis(100);
/// How long a change waits for the rest of its burst before it is drawn: the lines one write
/// of the trainer appends arrive as messages a few microseconds apart, and a frame drawn
/// after the first of them scrolled the log pane once for each (twice the bytes, on a real
/// Megatron log whose step prints a timer block before its iteration line).
const SETTLE: Duration = Duration::from_millis(25);
/// The clock tick: "last step 12s ago" moves even when nothing arrives.
const TICK: Duration = Duration::from_secs(1);
/// Longest the loop spends on messages before it draws and reads keys again, so reading a
/// long history never freezes the view.
const DRAIN: Duration = Duration::from_millis(50);

/// What the live view needs to start: the input and probe threads already send into the inbox.
pub struct LiveOptions {
    pub mon: Monitor,
    /// For the view's own producers: keys and signals.
    pub tx: SyncSender<Msg>,
    pub inbox: Receiver<Msg>,
    /// A replay's controls and starting speed: the replay keys work and the header shows
    /// its position.
    pub replay: Option<(Sender<Control>, Speed)>,
    /// The theme to start with first, then the others `t` moves through.
    pub themes: Vec<Theme>,
    /// Where to publish the metrics, if they are served.
    pub metrics: Option<Publisher>,
    /// Why no probe runs, if none does: the GPU and host panes say it.
    pub probes_off: Option<&'static str>,
}

/// Draws one whole frame: the panes the layout places, then any overlay.
pub fn draw(f: &mut Frame, v: &View) {
    let area = f.area();
    let alerts = panes::alerts::rows(&v.mon.diagnosis);
    for (pane, rect) in layout::layout(area, v.ui, alerts, v.mon.model.stacks.any()) {
        panes::render(f, pane, rect, v);
    }
    if v.ui.details {
        panes::details::render(f, area, v);
    }
    if v.ui.help {
        panes::help::render(f, area, v);
    }
}

/// Runs the live view until `q`, Ctrl-C, SIGTERM or SIGHUP. The caller has checked that
/// stdout is a terminal.
pub fn run(opts: LiveOptions) -> Result<(), Error> {
    let fail = |what: &str, e: std::io::Error| Error::Runtime(format!("cannot start {what}: {e}"));
    producers::spawn_signals(opts.tx.clone(), true).map_err(|e| fail("the signal thread", e))?;
    let (mut screen, guard) =
        terminal::enter().map_err(|e| fail("the terminal's full-screen mode", e))?;
    producers::spawn_input(opts.tx).map_err(|e| fail("the input thread", e))?;
    // Fault injection for the end-to-end test: a panic on a background thread must still
    // give the terminal back.
    if std::env::var_os("STEPTOP_INJECT_PANIC").is_some() {
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            panic!("injected by STEPTOP_INJECT_PANIC");
        });
    }
    let mut ui = UiState {
        probes_off: opts.probes_off,
        ..UiState::default()
    };
    if let Some((_, speed)) = opts.replay {
        ui.replay = Some(state::ReplayUi {
            speed,
            ..state::ReplayUi::default()
        });
    }
    let mut app = App {
        mon: opts.mon,
        ui,
        themes: opts.themes,
        frozen: None,
        last_step: None,
        steps_seen: 0,
        control: opts.replay.map(|r| r.0),
        metrics: opts.metrics,
    };
    let result = app.main_loop(&mut screen, &opts.inbox);
    drop(guard);
    result
}

/// The loop's state: the monitor, the view's state, and what the clock adds.
struct App {
    mon: Monitor,
    ui: UiState,
    themes: Vec<Theme>,
    /// The monitor as it was when `p` paused the view.
    frozen: Option<Box<Monitor>>,
    /// When the newest live step arrived, by this loop's clock.
    last_step: Option<Instant>,
    steps_seen: u64,
    /// A replay's controls.
    control: Option<Sender<Control>>,
    metrics: Option<Publisher>,
}

impl App {
    fn main_loop(
        &mut self,
        screen: &mut terminal::Screen,
        inbox: &Receiver<Msg>,
    ) -> Result<(), Error> {
        let draw_err = |e: std::io::Error| Error::Runtime(format!("cannot draw: {e}"));
        // The clock is read before any history, so that a run already hung when steptop
        // started is judged from its start.
        self.tick();
        // The first frame comes before any history is read.
        screen.draw(|f| self.frame(f)).map_err(draw_err)?;
        let mut last_draw = Instant::now();
        let mut last_tick = Instant::now();
        let mut dirty = false;
        // When the first change not yet drawn came.
        let mut since = Instant::now();
        loop {
            let wait = if dirty {
                FRAME
                    .saturating_sub(last_draw.elapsed())
                    .max(SETTLE.saturating_sub(since.elapsed()))
            } else {
                TICK.saturating_sub(last_tick.elapsed())
            };
            let was_dirty = dirty;
            match inbox.recv_timeout(wait) {
                Ok(msg) => {
                    dirty |= self.handle(msg);
                    let until = Instant::now() + DRAIN;
                    let mut n = 0u32;
                    while let Ok(msg) = inbox.try_recv() {
                        // A block of history lines is thousands of lines: the clock is read
                        // after each, and after every 256 single messages.
                        let block = matches!(msg, Msg::Lines(_));
                        dirty |= self.handle(msg);
                        n += 1;
                        if (block || n.is_multiple_of(256)) && Instant::now() >= until {
                            break;
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            if self.ui.quit {
                return Ok(());
            }
            dirty |= self.tick();
            if let Some(m) = &mut self.metrics {
                m.tick(&self.mon);
            }
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                // Only the "last step ... ago" figure moves with the clock alone, and only
                // once it is shown.
                dirty |= self
                    .last_step
                    .is_some_and(|t| t.elapsed().as_secs_f64() >= panes::header::QUIET_S);
            }
            if dirty && !was_dirty {
                since = Instant::now();
            }
            if dirty && last_draw.elapsed() >= FRAME && since.elapsed() >= SETTLE {
                screen.draw(|f| self.frame(f)).map_err(draw_err)?;
                last_draw = Instant::now();
                dirty = false;
            }
        }
    }

    /// One message: to the monitor, or to the view's state. True when the screen changes.
    fn handle(&mut self, msg: Msg) -> bool {
        match msg {
            Msg::Ui(UiEvent::Key(k)) => {
                let (paused, replay) = (self.ui.paused, self.ui.replay);
                self.ui.key(&k);
                if self.ui.paused != paused {
                    self.frozen = self.ui.paused.then(|| Box::new(self.mon.clone()));
                }
                self.steer(replay);
                true
            }
            Msg::Replay(pos) => {
                if pos.finished {
                    self.mon.finish();
                }
                if let Some(r) = &mut self.ui.replay {
                    r.position = pos;
                }
                true
            }
            Msg::Ui(UiEvent::Resize) => true,
            Msg::Ui(UiEvent::Stop(_)) => {
                self.ui.quit = true;
                true
            }
            msg => {
                let live = match &msg {
                    Msg::Line { arrival, .. } => arrival.is_some(),
                    Msg::Lines(lines) => lines.heads.iter().any(|h| h.arrival.is_some()),
                    _ => false,
                };
                let changed = self.mon.apply(msg);
                if changed && let Some(m) = &mut self.metrics {
                    m.changed();
                }
                let steps = self.mon.model.merged.records;
                // A replay has no "ago": its steps came long before this clock.
                if live && self.control.is_none() && steps > self.steps_seen {
                    self.last_step = Some(Instant::now());
                }
                self.steps_seen = steps;
                changed && self.frozen.is_none()
            }
        }
    }

    /// Reads the clock into the monitor when nothing else did for a second (the probes'
    /// samples do when they run): time passes for the rules with no sample and no line. A
    /// replay's time is the replayed one. True when the screen changes.
    fn tick(&mut self) -> bool {
        let now = unix_now();
        if self.control.is_some() || !self.mon.tick_due(now) {
            return false;
        }
        self.handle(Msg::Tick(now))
    }

    /// Sends the replay thread what the keys changed of the replay.
    fn steer(&self, before: Option<state::ReplayUi>) {
        let (Some(tx), Some(was), Some(now)) = (&self.control, before, self.ui.replay) else {
            return;
        };
        if now.paused != was.paused {
            let _ = tx.send(Control::Pause(now.paused));
        }
        if now.speed != was.speed {
            let _ = tx.send(Control::Speed(now.speed));
        }
        if now.jumps != was.jumps {
            let _ = tx.send(Control::Jump);
        }
    }

    fn frame(&self, f: &mut Frame) {
        let theme = &self.themes[self.ui.theme % self.themes.len()];
        let view = View {
            mon: self.frozen.as_deref().unwrap_or(&self.mon),
            ui: &self.ui,
            theme,
            step_age: self.last_step.map(|t| t.elapsed().as_secs_f64()),
        };
        draw(f, &view);
    }
}

/// The themes `t` moves through: the chosen one first, then the other built-in ones.
pub fn theme_cycle(first: Theme) -> Result<Vec<Theme>, Error> {
    let mut out = vec![first];
    for (name, _) in crate::settings::theme::BUILTIN {
        if out[0].name != name {
            out.push(Theme::load(name)?);
        }
    }
    Ok(out)
}
