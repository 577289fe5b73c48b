//! The host: CPU (one cell per core where room allows), memory and swap, the trainer and its
//! DataLoader workers (count, CPU, private memory), and the sample cache's hit rate.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::{Pane, View};
use crate::common::units::gib;
use crate::settings::theme::Role;
use crate::sink::ui::widgets::{fit, sparkline};

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let m = &v.mon.model;
    let block = v.block(Pane::Host, String::new());
    let inner = block.inner(area);
    f.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines = Vec::new();
    let latest = m.hardware.latest();
    match latest.and_then(|s| s.host.as_ref()) {
        Some(h) => {
            let mut cpu = vec![v.span("CPU ", Role::Muted)];
            cpu.push(v.span(
                h.cpu_pct.map_or("-".into(), |c| format!("{c:.0}%")),
                Role::Text,
            ));
            if let Some(io) = h.iowait_pct.filter(|io| *io >= 1.0) {
                cpu.push(v.span(format!(" iowait {io:.0}%"), Role::Warn));
            }
            if let Some(load) = h.load_avg {
                cpu.push(v.span(format!(" load {:.1} ", load[0]), Role::Muted));
            } else {
                cpu.push(v.span(" ", Role::Muted));
            }
            let used = 14 + h.cpus.to_string().len();
            if !h.per_cpu_pct.is_empty() && h.per_cpu_pct.len() + used <= width {
                let cores: Vec<Option<f64>> = h.per_cpu_pct.iter().map(|c| Some(*c)).collect();
                cpu.push(v.span(sparkline(&cores, 100.0), Role::Chart));
            } else if h.cpus > 0 {
                cpu.push(v.span(format!("{} cores", h.cpus), Role::Muted));
            }
            lines.push(Line::from(cpu));
            let role = if h.mem_available_bytes * 10 < h.mem_total_bytes {
                Role::Crit
            } else {
                Role::Text
            };
            let mut mem = vec![
                v.span("mem ", Role::Muted),
                v.span(
                    format!("{} of {}", gib(h.mem_used_bytes), gib(h.mem_total_bytes)),
                    role,
                ),
            ];
            if h.swap_total_bytes > 0 {
                let swap_role = if h.swap_used_bytes > 0 {
                    Role::Warn
                } else {
                    Role::Muted
                };
                mem.push(v.span(format!("  swap {}", gib(h.swap_used_bytes)), swap_role));
            }
            lines.push(Line::from(mem));
        }
        None => lines.push(Line::from(v.span(
            v.ui.probes_off.unwrap_or("no host readings yet"),
            Role::Muted,
        ))),
    }
    if let Some(t) = latest.and_then(|s| s.trainer.as_ref()) {
        let mut head = vec![
            v.span("trainer ", Role::Muted),
            v.span(format!("{} ", t.pid), Role::Title),
        ];
        if let Some(c) = t.cpu_pct {
            head.push(v.span(format!("{c:.0}% CPU"), Role::Text));
        }
        if let Some(b) = t.busiest_thread_cpu_pct {
            let role = if b >= 90.0 { Role::Warn } else { Role::Text };
            head.push(v.span(format!(", top thread {b:.0}%"), role));
        }
        if let Some(p) = t.private_bytes {
            head.push(v.span(format!(", private {}", gib(p)), Role::Text));
        }
        lines.push(Line::from(head));
        lines.push(Line::from(v.span(
            format!("  {}", fit(&t.command, width.saturating_sub(2))),
            Role::Muted,
        )));
        let n = t.workers.len();
        let mut w = vec![
            v.span("workers ", Role::Muted),
            v.span(n.to_string(), Role::Text),
        ];
        if n > 0 {
            let cpu: f64 = t.workers.iter().filter_map(|w| w.cpu_pct).sum();
            w.push(v.span(format!(", {cpu:.0}% CPU"), Role::Text));
            if let Some(p) = t.workers_private_bytes {
                w.push(v.span(format!(", private {}", gib(p)), Role::Text));
            }
            let waiting = t.workers.iter().filter(|w| w.state == "D").count();
            if waiting > 0 {
                w.push(v.span(format!(", {waiting} waiting on I/O"), Role::Warn));
            }
        }
        lines.push(Line::from(w));
    } else if latest.is_some() {
        lines.push(Line::from(v.span("trainer not found yet", Role::Muted)));
    }
    let c = &m.cache;
    if let Some(rate) = c.recent_hit_rate.or(c.hit_rate()) {
        let role = if rate < 0.5 { Role::Warn } else { Role::Ok };
        lines.push(Line::from(vec![
            v.span("cache hit ", Role::Muted),
            v.span(format!("{:.0}%", rate * 100.0), role),
            v.span(
                c.items.map(|i| format!(" · {i} items")).unwrap_or_default(),
                Role::Muted,
            ),
        ]));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
