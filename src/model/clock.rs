//! This machine's clock as the live inputs read it: the probes' samples and the live loop's
//! ticks. The model has no clock of its own; this is the latest time those messages said, so
//! that a stall is judged by the clock that stops for nobody, with or without probes, and a
//! replay of the same messages judges it the same way.

/// The first and the latest reading of this machine's clock, in Unix seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WallClock {
    /// When the first reading came: about when steptop started watching.
    pub first: Option<f64>,
    /// The latest reading (readings that go back are not taken: the clock only moves on).
    pub now: Option<f64>,
}

impl WallClock {
    /// Takes one reading.
    pub fn read(&mut self, t: f64) {
        if !t.is_finite() {
            return;
        }
        self.first.get_or_insert(t);
        self.now = Some(self.now.map_or(t, |n| n.max(t)));
    }

    /// Seconds since the first reading.
    pub fn watched_s(&self) -> Option<f64> {
        Some(self.now? - self.first?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_keeps_its_first_reading_and_only_moves_on() {
        let mut c = WallClock::default();
        assert_eq!(c.watched_s(), None);
        c.read(100.0);
        c.read(103.5);
        c.read(101.0);
        c.read(f64::NAN);
        assert_eq!((c.first, c.now), (Some(100.0), Some(103.5)));
        assert_eq!(c.watched_s(), Some(3.5));
    }
}
