//! Arbitrary bytes never panic the parser, and whatever it returns is well-formed.

use std::sync::Arc;

use proptest::prelude::*;
use steptop::Feed;
use steptop::Record;
use steptop::{Model, ModelConfig};

/// Bytes biased towards what logs are made of, so the parsers' deeper paths are reached.
fn logish() -> impl Strategy<Value = Vec<u8>> {
    let pieces = prop::collection::vec(
        prop_oneof![
            Just(b"step ".to_vec()),
            Just(b"Epoch(train) [".to_vec()),
            Just(b"iteration ".to_vec()),
            Just(b"%|".to_vec()),
            Just(b" [".to_vec()),
            Just(b"it/s".to_vec()),
            Just(b"loss: ".to_vec()),
            Just(b"ms (".to_vec()),
            Just(b" : ".to_vec()),
            Just(b"{'loss': '".to_vec()),
            Just(b"[rank".to_vec()),
            Just(b"2025-01-02 03:04:05,678 - ".to_vec()),
            Just("━".as_bytes().to_vec()),
            Just(b"\x1b[".to_vec()),
            Just(b"/".to_vec()),
            "[0-9.e:,=|()%-]{0,12}".prop_map(String::into_bytes),
            prop::collection::vec(any::<u8>(), 0..16),
        ],
        0..24,
    );
    pieces.prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn arbitrary_lines_never_panic_and_numbers_are_finite(lines in prop::collection::vec(logish(), 1..20)) {
        let mut feed = Feed::new(0, "prop.log", Arc::default());
        let mut model = Model::new(ModelConfig::default());
        for (i, line) in lines.iter().enumerate() {
            feed.line(i as u64 + 1, line, None, &mut |stamp, rec| {
                if let Record::Step(s) = &rec {
                    for v in [s.step_time_ms, s.data_time_ms, s.loss, s.lr, s.samples_per_s, s.iters_per_s, s.eta_s].into_iter().flatten() {
                        assert!(v.is_finite(), "{v} from {:?}", String::from_utf8_lossy(line));
                    }
                }
                if let Record::Event { text, .. } = &rec {
                    assert!(!text.chars().any(|c| c.is_control() && c != '\t'));
                }
                model.apply(stamp, rec);
            });
        }
        model.finish();
    }
}
