//! `steptop probe`: one sample as text for a terminal, or as JSON with a schema version.

use std::fmt::Write;

use serde::Serialize;

use crate::common::display::{self, Tabs};
use crate::common::units::{gib, pct, rate};
use crate::model::sample::{GpuReading, HostReading, Sample, TrainerReading};
use crate::model::stacks::StackSummary;

/// Version of the probe JSON; bumped when a field changes meaning or goes away.
pub const PROBE_SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct ProbeJson<'a> {
    schema_version: u32,
    #[serde(flatten)]
    sample: &'a Sample,
    /// The trainer's Python stacks over the last seconds; absent with --no-stacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    stacks: Option<&'a StackSummary>,
}

/// One line of JSON.
pub fn json(s: &Sample, stacks: Option<&StackSummary>) -> Result<String, serde_json::Error> {
    serde_json::to_string(&ProbeJson {
        schema_version: PROBE_SCHEMA_VERSION,
        sample: s,
        stacks,
    })
}

/// Plain text, at most 80 columns.
pub fn text(s: &Sample, stacks: Option<&StackSummary>) -> String {
    let mut o = String::new();
    match &s.gpu_error {
        Some(e) => words(&mut o, "gpus     none: ", 9, e),
        None => s.gpus.iter().for_each(|g| gpu(&mut o, g)),
    }
    for n in &s.gpu_notes {
        words(&mut o, "gpus     ", 9, n);
    }
    match &s.host {
        Some(h) => host(&mut o, h),
        None => o.push_str("host     not readable (steptop reads the host from Linux /proc)\n"),
    }
    match &s.trainer {
        Some(t) => trainer(&mut o, t),
        None => o.push_str(
            "trainer  not found: pass --pid PID, or the log it writes (steptop probe LOG)\n",
        ),
    }
    if let Some(st) = stacks {
        stack_text(&mut o, st);
    }
    o
}

/// The stacks: where the main threads and the workers were, and the functions that held them.
pub(crate) fn stack_text(o: &mut String, st: &StackSummary) {
    for (who, r) in [("main", &st.main), ("workers", &st.workers)] {
        if r.samples == 0 {
            continue;
        }
        words(
            o,
            &format!("stacks   {who}: "),
            9,
            &format!(
                "{} samples over {:.0} s (shares are estimates); {}",
                r.samples,
                st.seconds,
                r.places
                    .iter()
                    .take(4)
                    .map(|(p, s)| format!("{} {}", p.words(), pct(*s)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        for f in r.functions.iter().take(3) {
            words(
                o,
                "         ",
                11,
                &format!("{} {}  {}:{}", pct(f.share), f.function, f.file, f.line),
            );
        }
    }
    for r in &st.ranks {
        let top = r.shares.functions.iter().max_by_key(|f| f.running);
        let text = top.map_or_else(
            || format!("{} samples", r.shares.samples),
            |f| format!("{} {}  {}:{}", pct(f.share), f.function, f.file, f.line),
        );
        words(o, &format!("         rank pid {}: ", r.pid), 11, &text);
    }
    for why in st.refused.iter().chain(&st.notes) {
        words(o, "stacks   ", 9, why);
    }
    if st.main.samples == 0 && st.workers.samples == 0 && st.refused.is_empty() {
        o.push_str("stacks   no sample yet\n");
    }
}

fn gpu(o: &mut String, g: &GpuReading) {
    let _ = write!(o, "gpu {:<4} {}", g.label(), g.name);
    if g.mig == Some(crate::model::sample::Mig::Parent) {
        o.push_str(
            "\n         MIG mode: power and clocks are the GPU's, shared by its MIG devices",
        );
    }
    if let Some(f) = &g.failed {
        let _ = writeln!(o, "\n         FAILED: {f}");
        return;
    }
    o.push('\n');
    let mut parts = Vec::new();
    if let Some(u) = g.util_pct {
        parts.push(format!("util {u}%"));
    }
    if let (Some(u), Some(t)) = (g.mem_used_bytes, g.mem_total_bytes) {
        let reserved = g
            .mem_reserved_bytes
            .filter(|r| *r > 0)
            .map_or(String::new(), |r| format!(" ({} reserved)", gib(r)));
        parts.push(format!("mem {} / {}{reserved}", gib(u), gib(t)));
    }
    if let Some(p) = g.power_w {
        let limit = g
            .power_limit_w
            .map_or(String::new(), |l| format!(" / {l:.0} W"));
        parts.push(format!("power {p:.0}{limit}"));
    }
    if let Some(t) = g.temp_c {
        parts.push(format!("{t} C"));
    }
    if let Some(c) = g.sm_clock_mhz {
        let max = g
            .sm_clock_max_mhz
            .map_or(String::new(), |m| format!("/{m}"));
        let app = g
            .sm_clock_app_mhz
            .map_or(String::new(), |a| format!(", set to {a}"));
        parts.push(format!("sm {c}{max} MHz{app}"));
    }
    wrap(o, &parts);
    let mut more = Vec::new();
    if let (Some(rx), Some(tx)) = (g.pcie_rx_bytes_per_s, g.pcie_tx_bytes_per_s) {
        more.push(format!(
            "pcie rx {} tx {}",
            rate(rx as f64),
            rate(tx as f64)
        ));
    }
    if let Some(t) = &g.throttle {
        more.push(if t.is_empty() {
            "clocks not held".to_string()
        } else {
            format!("clocks held: {}", t.join(", "))
        });
    }
    if let (Some(sm), Some(tc)) = (g.sm_active_pct, g.tensor_active_pct) {
        more.push(format!("sm active {sm:.0}%, tensor {tc:.0}%"));
    }
    if let Some(ps) = &g.processes {
        let list: Vec<String> = ps
            .iter()
            .map(|p| match p.used_bytes {
                Some(b) => format!("{} ({})", p.pid, gib(b)),
                None => p.pid.to_string(),
            })
            .collect();
        more.push(format!("processes: {}", none_if_empty(&list)));
    }
    wrap(o, &more);
    for e in &g.errors {
        words(o, "         unread: ", 9, e);
    }
}

fn host(o: &mut String, h: &HostReading) {
    let cpu = h.cpu_pct.map_or("-".to_string(), |c| format!("{c:.0}%"));
    let iowait = h
        .iowait_pct
        .map_or(String::new(), |w| format!(", iowait {w:.0}%"));
    let load = h.load_avg.map_or(String::new(), |l| {
        format!(", load {:.2} {:.2} {:.2}", l[0], l[1], l[2])
    });
    let cpus = if h.cpus > 0 {
        format!("{} cpus, ", h.cpus)
    } else {
        String::new()
    };
    let _ = writeln!(o, "host     {cpus}cpu {cpu}{iowait}{load}");
    let mut parts = vec![format!(
        "mem {} used, {} available of {}",
        gib(h.mem_used_bytes),
        gib(h.mem_available_bytes),
        gib(h.mem_total_bytes)
    )];
    if h.swap_total_bytes > 0 {
        parts.push(format!("swap {} used", gib(h.swap_used_bytes)));
    }
    if let Some(s) = h.swap_in_pages_per_s {
        parts.push(format!("swap-in {s:.0} pages/s"));
    }
    if let (Some(r), Some(w)) = (h.disk_read_bytes_per_s, h.disk_write_bytes_per_s) {
        parts.push(format!("disk r {} w {}", rate(r), rate(w)));
    }
    wrap(o, &parts);
}

fn trainer(o: &mut String, t: &TrainerReading) {
    words(o, "trainer  ", 9, &format!("pid {}, {}", t.pid, t.found_by));
    let _ = writeln!(o, "         {}", short(&t.command, 71));
    let mut parts = Vec::new();
    if let Some(c) = t.cpu_pct {
        parts.push(format!("cpu {c:.0}%"));
    }
    if let Some(b) = t.busiest_thread_cpu_pct {
        parts.push(format!("busiest thread {b:.0}%"));
    }
    parts.push(format!("{} threads", t.threads));
    if let Some(p) = t.pss_bytes {
        parts.push(format!("pss {}", gib(p)));
    }
    if let Some(c) = t.usable_cores {
        parts.push(format!("usable cores {c:.1}"));
    }
    wrap(o, &parts);
    if !t.ranks.is_empty() {
        let ranks: Vec<String> = t.ranks.iter().map(u32::to_string).collect();
        words(
            o,
            "         ",
            9,
            &format!(
                "{} ranks from its launcher: {}",
                t.ranks.len(),
                ranks.join(" ")
            ),
        );
    }
    let mut w = vec![crate::common::units::count(
        t.workers.len() as f64,
        "worker",
    )];
    if let (Some(pss), Some(private)) = (t.workers_pss_bytes, t.workers_private_bytes) {
        w.push(format!("pss {} (private {})", gib(pss), gib(private)));
    }
    w.extend(t.workers.iter().map(|w| match w.cpu_pct {
        Some(c) => format!("{} {} {c:.0}%", w.pid, w.state),
        None => format!("{} {}", w.pid, w.state),
    }));
    wrap(o, &w);
    for u in &t.unreadable {
        words(o, "         unread: ", 9, u);
    }
}

/// Parts joined by ", " on indented lines of at most 80 columns.
fn wrap(o: &mut String, parts: &[String]) {
    let mut line = String::new();
    for p in parts {
        if !line.is_empty() && 9 + display::width(&line) + 2 + display::width(p) > 80 {
            let _ = writeln!(o, "         {line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push_str(", ");
        }
        line.push_str(p);
    }
    if !line.is_empty() {
        let _ = writeln!(o, "         {line}");
    }
}

/// `head` then `text`, its words on lines of at most 80 cells; later lines are indented by
/// `indent` spaces. The text is shown (see `display::shown`) before it is measured.
pub(crate) fn words(o: &mut impl Write, head: &str, indent: usize, text: &str) {
    let mut line = head.to_string();
    let mut fresh = true;
    for w in display::shown(text, Tabs::Space).split_whitespace() {
        if !fresh && display::width(&line) + 1 + display::width(w) > 80 {
            let _ = writeln!(o, "{line}");
            line = " ".repeat(indent);
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(w);
        fresh = false;
    }
    let _ = writeln!(o, "{line}");
}

fn none_if_empty(list: &[String]) -> String {
    if list.is_empty() {
        "none".into()
    } else {
        list.join(", ")
    }
}

/// At most `n` cells of `s`, shown, with `...` where it was cut.
fn short(s: &str, n: usize) -> String {
    let s = display::shown(s, Tabs::Space);
    if display::width(&s) <= n {
        s.into_owned()
    } else {
        format!("{}...", display::truncate(&s, n.saturating_sub(3)))
    }
}
