//! The errors a run can end with, each mapped to its exit code.

use std::fmt;

/// Why steptop stopped: usage and config mistakes exit 2, runtime failures exit 1.
#[derive(Debug)]
pub enum Error {
    /// Bad arguments or a bad config file: the user must change what they typed.
    Usage(String),
    /// Something failed while running (an unreadable file, a closed output).
    Runtime(String),
    /// A batch check failed: `--fail-on` met an alert. Not a failure of steptop.
    Alerted(String),
    /// The job `steptop run` started failed with this exit code, which becomes steptop's.
    Job(u8),
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => 2,
            Error::Runtime(_) | Error::Alerted(_) => 1,
            Error::Job(code) => *code,
        }
    }
}

/// An error's words as a terminal may show them: a message that quotes a file's name or
/// content, a label or a line (`display::terminal`) never sends its control characters.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Runtime(m) | Error::Alerted(m) => {
                f.write_str(&super::display::terminal(m))
            }
            Error::Job(code) => write!(f, "the job exited with code {code}"),
        }
    }
}

impl std::error::Error for Error {}
