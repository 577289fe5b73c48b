//! The words of the diagnosis's knobs: a rule's thresholds (`Param`), what its timing counts
//! (`Basis`), its knobs with their values (`Knobs`), and the windows the signals are read over
//! (`Windows`). `config` fills them from the defaults and the config file.

/// One threshold of a rule, with its default and what it means.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub key: &'static str,
    pub default: f64,
    pub doc: &'static str,
}

/// What a rule's sustain, dwell and cool-down count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// Scored steps (log inputs): warm-up and the steps after eval, checkpoint or epoch
    /// boundaries are not scored.
    Steps,
    /// Seconds of sample time (hardware inputs).
    Seconds,
    /// Raised by the first occurrence (a crash, a NaN loss); clears after steps go on.
    Events,
}

impl Basis {
    /// Default (sustain, dwell, cool-down), in the basis's unit.
    fn timing(self) -> [f64; 3] {
        match self {
            Basis::Steps => [5.0, 10.0, 50.0],
            Basis::Seconds => [10.0, 30.0, 300.0],
            Basis::Events => [1.0, 20.0, 0.0],
        }
    }
}

/// One rule's knobs by key. The engine reads the timing knobs on every evaluation, so they
/// are also kept as fields (a lookup by name costs string compares).
#[derive(Clone, Debug, PartialEq)]
pub struct Knobs {
    values: Vec<(&'static str, f64)>,
    pub sustain: f64,
    pub dwell: f64,
    pub cooldown: f64,
}

impl Knobs {
    /// A rule's knobs at their defaults: its basis's timing and its own thresholds.
    pub fn defaults(basis: Basis, params: &[Param]) -> Knobs {
        let [sustain, dwell, cooldown] = basis.timing();
        let mut values = vec![
            ("sustain", sustain),
            ("dwell", dwell),
            ("cooldown", cooldown),
        ];
        values.extend(params.iter().map(|p| (p.key, p.default)));
        Knobs {
            values,
            sustain,
            dwell,
            cooldown,
        }
    }

    /// The value of `key`; every key a rule reads is in its `params` (a test checks it).
    pub fn get(&self, key: &str) -> f64 {
        self.values
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(f64::NAN, |(_, v)| *v)
    }

    /// Sets `key`; false when the rule has no such knob.
    pub fn set(&mut self, key: &str, v: f64) -> bool {
        match self.values.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => {
                slot.1 = v;
                match key {
                    "sustain" => self.sustain = v,
                    "dwell" => self.dwell = v,
                    "cooldown" => self.cooldown = v,
                    _ => {}
                }
                true
            }
            None => false,
        }
    }

    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.values.iter().map(|(k, _)| *k)
    }
}

/// What the signals are read over: the last steps for what the logs say, the last seconds of
/// samples for what the hardware says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Windows {
    pub steps: usize,
    pub seconds: f64,
}

impl Windows {
    /// The windows once `scored` steps were scored after the warm-up: the steps window holds
    /// no more than those, so the warm-up's steps (a loader's first fetches, a compile) are
    /// never judged as the run's.
    pub fn settled(self, scored: u64) -> Windows {
        Windows {
            steps: self
                .steps
                .min(usize::try_from(scored.max(1)).unwrap_or(usize::MAX)),
            ..self
        }
    }
}
