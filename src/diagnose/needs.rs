//! What a rule cannot raise an alert without. Most rules read something most logs never give
//! (timing blocks, two ranks, hardware samples, a logged setting), and until it comes their
//! check returns at its first test. The engine reads these few facts off the model once an
//! evaluation and passes over such a rule without calling it, while it has no alert and is
//! not on its way to one: what the check would have returned (no symptom) changes nothing
//! then. A rule's `needs` must follow from its check's own early returns, whatever its knobs;
//! the reference (every rule at every step, `DiagnoseConfig::every_rule`) is compared with
//! this over every fixture and generated logs.

use crate::model::Model;

/// A set of facts about the model, as bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs(u16);

impl Needs {
    /// Always checked.
    pub const NOTHING: Needs = Needs(0);
    /// A hardware sample (GPU, host or trainer readings): everything read over the window
    /// of seconds.
    pub const SAMPLES: Needs = Needs(1);
    /// Two ranks or more logged steps.
    pub const RANKS: Needs = Needs(1 << 1);
    /// A timing block closed.
    pub const BLOCKS: Needs = Needs(1 << 2);
    /// A stage was timed (by name, or a part of the step).
    pub const STAGES: Needs = Needs(1 << 3);
    /// Two named stages or more.
    pub const TWO_STAGES: Needs = Needs(1 << 4);
    /// A cache hit rate, counted or printed.
    pub const CACHE: Needs = Needs(1 << 5);
    /// `num_workers` was logged.
    pub const WORKERS: Needs = Needs(1 << 6);
    /// A setting the hints name was logged: pin_memory or cudnn.benchmark off, or the AMP
    /// dtype.
    pub const SETTINGS: Needs = Needs(1 << 7);
    /// A setting was logged twice with different values.
    pub const CHANGED: Needs = Needs(1 << 8);
    /// Two batch sizes or more.
    pub const BATCHES: Needs = Needs(1 << 9);
    /// Every fact: what the reference evaluation assumes.
    pub const ALL: Needs = Needs(u16::MAX);

    /// Either of the two.
    pub const fn or(self, other: Needs) -> Needs {
        Needs(self.0 | other.0)
    }

    /// The facts `m` holds now.
    pub fn of(m: &Model) -> Needs {
        let facts = &m.facts;
        let stages = &m.stages;
        [
            (Needs::SAMPLES, m.hardware.latest().is_some()),
            (Needs::RANKS, m.ranks.len() >= 2),
            (Needs::BLOCKS, stages.blocks > 0),
            (
                Needs::STAGES,
                !stages.by_name.is_empty() || !stages.parts.is_empty(),
            ),
            (Needs::TWO_STAGES, stages.by_name.len() >= 2),
            (
                Needs::CACHE,
                m.cache.recent_hit_rate.is_some() || m.cache.hit_rate().is_some(),
            ),
            (Needs::WORKERS, facts.num_workers.is_some()),
            (
                Needs::SETTINGS,
                facts.pin_memory == Some(false)
                    || facts.cudnn_benchmark == Some(false)
                    || facts.amp_dtype.is_some(),
            ),
            (Needs::CHANGED, !facts.changed.is_empty()),
            (Needs::BATCHES, m.batches.segments.len() >= 2),
        ]
        .into_iter()
        .filter(|(_, held)| *held)
        .fold(Needs::NOTHING, |all, (n, _)| all.or(n))
    }

    /// Whether `has` holds one of these (or these are nothing).
    pub fn met_by(self, has: Needs) -> bool {
        self.0 == 0 || self.0 & has.0 != 0
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Needs;
    use crate::analysis::{Analysis, analyze};
    use crate::diagnose::Diagnosis;
    use crate::diagnose::rules::RULES;
    use crate::input::ingest::Feed;
    use crate::monitor::Monitor;
    use crate::settings::config::Config;
    use crate::sink::report::Report;

    /// The config, passing over rules without their needs or (`every_rule`) not.
    fn config(every_rule: bool) -> Config {
        let mut cfg = Config::default_checked();
        cfg.diagnose.every_rule = every_rule;
        cfg
    }

    /// Every alert change the diagnosis made (its steps and times), and the report's JSON.
    fn outcome(a: &Analysis) -> String {
        format!(
            "{:?}\n{}",
            changes(&a.diagnosis),
            serde_json::to_string_pretty(&Report::build(a)).expect("json")
        )
    }

    fn changes(d: &Diagnosis) -> Vec<String> {
        d.changes_since(0)
            .map(|(n, c)| format!("{n} {c:?}"))
            .collect()
    }

    #[test]
    fn passing_over_gives_what_every_rule_at_every_step_gives_on_every_fixture() {
        let inputs = crate::analysis::fixture_inputs::all();
        assert!(inputs.len() > 100, "{} inputs", inputs.len());
        let (passing, every) = (config(false), config(true));
        let mut raised = 0;
        for paths in &inputs {
            let a = analyze(paths, &passing).expect("analyze");
            let b = analyze(paths, &every).expect("analyze");
            raised += changes(&b.diagnosis).len();
            assert!(
                outcome(&a) == outcome(&b),
                "{paths:?}: the diagnosis differs when rules without their needs are passed over"
            );
        }
        // The comparison means something only where rules raise and clear.
        assert!(raised > 100, "{raised} alert changes in all");
    }

    #[test]
    fn rules_of_a_plain_step_log_are_passed_over() {
        // A log of steps alone: no stages, one rank, no samples, no settings.
        let mut mon = Monitor::new(Default::default(), Default::default());
        let mut feed = Feed::new(0, "train.log", Default::default());
        for s in 1..=50 {
            let line = format!("step {s}/100 | loss=1.0 | data_time=30.0ms | time=100.0ms");
            mon.apply(feed.message(s, line.as_bytes(), None));
        }
        let has = Needs::of(&mon.model);
        assert_eq!(has, Needs::NOTHING);
        let passed: Vec<&str> = RULES
            .iter()
            .filter(|r| !r.needs.met_by(has))
            .map(|r| r.id)
            .collect();
        assert!(passed.contains(&"stage_hotspot") && passed.contains(&"straggler"));
        assert!(!passed.contains(&"data_loading_bound"));
        // With every fact, no rule is passed over.
        assert!(RULES.iter().all(|r| r.needs.met_by(Needs::ALL)));
    }

    /// One line of a generated log: steps of one or two ranks with data and step times that
    /// swing, settings logged and changed, batch sizes, timing blocks, cache counts, events.
    fn render(kind: u8, s: u64, x: u32) -> String {
        let data = f64::from(x % 400) / 3.0;
        let time = 100.0 + f64::from(x % 2000) / 2.0;
        match kind % 14 {
            0..=4 => format!(
                "[rank0]:step {s}/900 | loss={:.4} | data_time={data:.1}ms | time={time:.1}ms\n",
                f64::from(x % 100) / 40.0
            ),
            5 | 6 => format!(
                "[rank1]:step {s}/900 | loss=1.5 | data_time={data:.1}ms | time={:.1}ms\n",
                time * 1.6
            ),
            7 => format!(
                "config: batch_size={} num_workers={}\n",
                8 << (x % 3),
                x % 5
            ),
            8 => format!(
                "setup: cudnn.benchmark={} pin_memory={}\n",
                if x.is_multiple_of(2) { "False" } else { "True" },
                if x.is_multiple_of(3) { "False" } else { "True" }
            ),
            9 => {
                let mut b = format!("[Step {s}]\n");
                for i in 1..=(x % 4) {
                    b.push_str(&format!(
                        "VRT Stage{i} : {:.2}ms (10.0%)\n",
                        time / f64::from(i)
                    ));
                }
                if !x.is_multiple_of(3) {
                    b.push_str(&format!("Total : {:.2}ms\n", time * 2.0));
                }
                b
            }
            10 => format!(
                "[Cache Stats]\nHit Rate: {:.2}% ({s} hits / {x} misses)\n",
                f64::from(x % 100)
            ),
            11 => "Saving model checkpoint to out/checkpoint-500\n".to_string(),
            12 => format!("step {s}/900 | loss=nan | time={time:.1}ms\n"),
            _ => format!("Epoch {} validation: acc=0.5\n", s % 10),
        }
    }

    /// The monitor's outcome of `text` read line by line.
    fn read(text: &str, cfg: &Config) -> String {
        let mut mon = Monitor::new(cfg.model, cfg.diagnose.clone());
        let mut feed = Feed::new(0, "train.log", cfg.patterns.clone());
        for (i, line) in text.lines().enumerate() {
            mon.apply(feed.message(i as u64 + 1, line.as_bytes(), None));
        }
        mon.finish();
        let a = Analysis {
            model: mon.model,
            diagnosis: mon.diagnosis,
            feeds: vec![feed],
        };
        outcome(&a)
    }

    proptest! {
        // A failing case is printed, not written beside the code.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::with_cases(32)
        })]
        #[test]
        fn passing_over_gives_what_every_rule_gives_on_generated_logs(
            lines in prop::collection::vec((any::<u8>(), any::<u32>(), 0u8..20), 100..600),
        ) {
            let mut step = 0u64;
            let mut text = String::new();
            for (kind, x, jump) in lines {
                // Mostly forward; now and then back (a new run).
                step = match jump {
                    0 => step.saturating_sub(u64::from(x % 50)),
                    1..=4 => step,
                    _ => step + 1,
                };
                text.push_str(&render(kind, step, x));
            }
            prop_assert_eq!(read(&text, &config(false)), read(&text, &config(true)));
        }
    }
}
