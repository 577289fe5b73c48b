//! `steptop replay LOG...`: plays finished logs or a recording back through the live sinks.

use super::cli::ReplayArgs;
use super::live_output::{Feeding, Mode, check_output, sink};
use super::{expand_inputs, load_config};
use crate::common::error::Error;
use crate::input::replay;
use crate::monitor::msg;

/// Replays the inputs at their pace (or `--speed`) into the live view or headless lines.
pub fn run(args: &ReplayArgs) -> Result<(), Error> {
    let config = load_config(args.config.as_deref())?;
    let paths = expand_inputs(&args.logs)?;
    check_output(&args.out)?;
    let (tx, inbox) = msg::inbox();
    let (control, controls) = std::sync::mpsc::channel();
    replay::pacer::spawn(
        replay::pacer::Replay {
            paths,
            patterns: config.patterns.clone(),
            tags: config.tags.clone(),
            speed: args.speed,
            from: args.from,
        },
        tx.clone(),
        controls,
    )
    .map_err(|e| Error::Runtime(format!("cannot start the replay thread: {e}")))?;
    // Headless, nothing steers the replay: its controls hang up and it only keeps time.
    let feeding = Feeding {
        tx,
        inbox,
        mode: Mode::Replay {
            control: (!args.out.headless).then_some((control, args.speed)),
            from: args.from,
        },
        // A recording brings its readings with it; plain logs have none.
        probes_off: Some("no probe in a replay of logs"),
    };
    sink(&args.out, args.theme.as_deref(), config, feeding)
}
