//! One computation per figure: every scenario of fixtures/runs through `steptop report` in its
//! four formats, and every figure the text, the markdown and the HTML print must be the JSON's,
//! in the same words (the step breakdown's rows, the data share, the stages' shares, the cache's rate,
//! the step count). A figure computed twice, or once differently per format, fails here.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;
use steptop::testing::display::{self, Tabs};
use steptop::testing::units::{ms, pct};

fn report(args: &[PathBuf], format: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["report", "--format", format])
        .args(args)
        .output()
        .expect("steptop runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The scenarios' argument lists, from their expected.toml.
fn scenarios() -> Vec<(String, Vec<PathBuf>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixtures/runs")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|dir| {
            let expected: toml::Table =
                toml::from_str(&std::fs::read_to_string(dir.join("expected.toml")).expect("read"))
                    .expect("toml");
            let args = expected["args"]
                .as_array()
                .expect("args")
                .iter()
                .map(|a| dir.join(a.as_str().expect("a path")))
                .collect();
            (dir.display().to_string(), args)
        })
        .collect()
}

/// Text as the HTML report writes it.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The line of `text` that starts with `head`, if any.
fn line_of<'a>(text: &'a str, head: &str) -> Option<&'a str> {
    text.lines().find(|l| l.starts_with(head))
}

/// The text report's breakdown: from its heading to the next blank line.
fn breakdown_of(text: &str) -> &str {
    let start = text
        .find("where a step's time goes")
        .or_else(|| text.find("no step times in these logs"))
        .unwrap_or(text.len());
    let rest = &text[start..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

#[test]
fn text_markdown_and_json_give_the_same_figures() {
    let mut failures = Vec::new();
    for (name, args) in scenarios() {
        let json: Json = serde_json::from_str(&report(&args, "json")).expect("json");
        let text = report(&args, "text");
        let md = report(&args, "markdown");
        let html = report(&args, "html");
        let mut fail = |what: String| failures.push(format!("{name}: {what}"));
        // The breakdown, row by row.
        for p in json["breakdown"]["parts"].as_array().expect("parts") {
            let shown = |x: &Json, f: fn(f64) -> String| x.as_f64().map_or("-".into(), f);
            let (value, share) = (shown(&p["ms"], ms), shown(&p["share"], pct));
            let label = match p["role"].as_str().expect("role") {
                "data" => "data loading".to_string(),
                "forward" => "forward".to_string(),
                "unlogged" => "unlogged".to_string(),
                _ => display::shown(p["name"].as_str().expect("name"), Tabs::Space).into_owned(),
            };
            let cut = format!("  {}", display::truncate(&label, 17));
            match line_of(breakdown_of(&text), &cut) {
                Some(l) if l.contains(&value) && l.contains(&share) => {}
                other => fail(format!("text row {label:?} {value} {share}: {other:?}")),
            }
            if !md
                .lines()
                .any(|l| l.starts_with('|') && l.contains(&format!("| {value} | {share} |")))
            {
                fail(format!("markdown row {label:?} {value} {share}"));
            }
            let name = escape(p["name"].as_str().expect("name"));
            if !html.contains(&format!("<td>{name}</td><td>{value}</td><td>{share}</td>")) {
                fail(format!("html row {name:?} {value} {share}"));
            }
        }
        // The data share: printed only when the JSON has one.
        let share = json["data_share"].as_f64().map(pct);
        let text_share = line_of(&text, "throughput").and_then(|l| {
            l.split("data share ")
                .nth(1)
                .map(|s| s.trim().trim_end_matches(',').to_string())
        });
        if text_share != share {
            fail(format!("text data share {text_share:?}, json {share:?}"));
        }
        let md_share = line_of(&md, "| data share |").map(|l| {
            l.trim_start_matches("| data share |")
                .trim_end_matches('|')
                .trim()
                .to_string()
        });
        if md_share != share {
            fail(format!("markdown data share {md_share:?}, json {share:?}"));
        }
        // The stages' shares of the forward.
        for s in json["stages"].as_array().expect("stages").iter().take(12) {
            let (Some(mean), Some(share)) = (s["mean_ms"].as_f64(), s["share"].as_f64()) else {
                continue;
            };
            let stage = display::shown(s["name"].as_str().expect("name"), Tabs::Space).into_owned();
            let row = format!("{} {}", ms(mean), "");
            let in_text = text.lines().any(|l| {
                l.trim_start().starts_with(display::truncate(&stage, 20))
                    && l.contains(row.trim())
                    && l.contains(&pct(share))
            });
            if !in_text {
                fail(format!("text stage {stage} {} {}", ms(mean), pct(share)));
            }
            if !md.contains(&format!("| {} |", ms(mean))) || !md.contains(&pct(share)) {
                fail(format!("markdown stage {stage}"));
            }
            let name = escape(s["name"].as_str().expect("name"));
            if !html.contains(&format!(">{name}</td>"))
                || !html.contains(&format!("<td>{}</td><td>{}</td>", ms(mean), pct(share)))
            {
                fail(format!("html stage {stage}"));
            }
        }
        // The cache's hit rate and the step count.
        if let Some(rate) = json["cache"]["hit_rate"].as_f64() {
            if !line_of(&text, "cache").is_some_and(|l| l.contains(&pct(rate))) {
                fail(format!("text cache rate {}", pct(rate)));
            }
            if !md.contains(&format!("| cache hit rate | {} |", pct(rate))) {
                fail(format!("markdown cache rate {}", pct(rate)));
            }
        }
        let count = json["steps"]["count"].as_u64().expect("count");
        if !text.contains(&format!("{count} step records"))
            || !md.contains(&format!("{count} step records"))
            || !html.contains(&format!("{count} step records"))
        {
            fail(format!("step count {count}"));
        }
        // The verdict, in the page's own words, escaped.
        if let Some(title) = json["verdict"]["title"].as_str()
            && !html.contains(&escape(title))
        {
            fail(format!("html verdict {title:?}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// A job of 2,600 ranks interleaved in one log (ten times the ranks a report lists one by
/// one): the report gives their spread and names the slowest by number, in JSON and text,
/// from the same figures.
#[test]
fn many_ranks_are_a_spread_and_the_slowest_by_number() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("train.log");
    let ranks: u32 = 2600;
    let slow: u32 = 1999;
    let mut text = String::new();
    for step in 1..=30 {
        for rank in 0..ranks {
            // Every rank 100-102 ms, rank 1999 140 ms; rank 7 stopped logging at step 20.
            if rank == 7 && step > 20 {
                continue;
            }
            let ms = if rank == slow {
                140.0
            } else {
                100.0 + f64::from(rank % 3)
            };
            text += &format!("[rank{rank}]:step {step}/30 | loss=1.0 | time={ms:.1}ms\n");
        }
    }
    std::fs::write(&log, text).expect("log");
    let json: Json =
        serde_json::from_str(&report(std::slice::from_ref(&log), "json")).expect("json");
    let spread = &json["rank_spread"];
    assert_eq!(spread["ranks"], ranks);
    assert_eq!(spread["slowest"][0]["rank"], slow);
    assert_eq!(spread["slowest"][0]["step_time_ms"], 140.0);
    assert_eq!(spread["step_time_ms"]["p50"], 101.0);
    assert_eq!(spread["step_time_ms"]["max"], 140.0);
    assert_eq!(spread["lag_steps"]["max"], 10.0);
    // Not a list of thousands: the slowest, in rank order.
    let listed: Vec<u64> = json["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .map(|r| r["rank"].as_u64().expect("rank"))
        .collect();
    assert_eq!(listed.len(), 8, "{listed:?}");
    assert!(listed.contains(&u64::from(slow)));
    assert!(listed.windows(2).all(|w| w[0] < w[1]), "{listed:?}");
    // The straggler rule names the same rank.
    assert_eq!(json["verdict"]["rule"], "straggler");
    assert!(
        json["verdict"]["title"]
            .as_str()
            .expect("title")
            .starts_with(&format!("rank {slow} is ")),
        "{}",
        json["verdict"]
    );
    let text = report(&[log], "text");
    let line = line_of(&text, "slowest ranks").expect("a slowest-ranks line");
    assert!(
        line.starts_with(&format!("slowest ranks {slow} at {}", ms(140.0))),
        "{line}"
    );
    // The spread wraps at 80 columns: read it with its lines joined.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("ranks {ranks}; step time p50 {}", ms(101.0))),
        "{text}"
    );
    assert!(
        flat.contains("behind the furthest p50 0, p95 0, max 10 steps"),
        "{text}"
    );
}
