//! Code from a library that may panic on data it does not expect (py-spy on a frame that moved
//! while it was read, without pausing the process) is run so that the panic is a failed call:
//! no message on the terminal, no exit of the live view.

use std::cell::Cell;
use std::panic::AssertUnwindSafe;
use std::sync::Once;

thread_local! {
    static CONTAINED: Cell<bool> = const { Cell::new(false) };
}
static HOOK: Once = Once::new();

/// Installs the panic hook that keeps contained panics quiet. Called before any thread starts
/// (`run`), so that no other hook is being installed at the same time.
pub fn install() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !active() {
                previous(info);
            }
        }));
    });
}

/// Whether this thread runs contained code: a panic hook then stays silent.
pub fn active() -> bool {
    CONTAINED.with(Cell::get)
}

/// Runs `f`; a panic in it is None.
pub fn contained<T>(f: impl FnOnce() -> T) -> Option<T> {
    install();
    CONTAINED.with(|c| c.set(true));
    let out = std::panic::catch_unwind(AssertUnwindSafe(f)).ok();
    CONTAINED.with(|c| c.set(false));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contained_panic_is_none_and_the_thread_goes_on() {
        let unexpected: Vec<u32> = Vec::new();
        let v: Option<u32> = contained(|| unexpected[3]);
        assert_eq!(v, None);
        assert!(!active());
        assert_eq!(contained(|| 7), Some(7));
    }
}
