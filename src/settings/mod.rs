//! What the user sets: the config file (`config`: patterns, model and rule knobs), the colour
//! themes (`theme`), and where both are looked for (`user_files`). Every key is checked when it
//! is read, and a bad one is named with what to write instead.

pub mod config;
pub mod theme;
pub mod user_files;
