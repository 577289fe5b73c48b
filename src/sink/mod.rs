//! Where the monitor's state goes: the live view (`ui`), one line per alert change
//! (`headless`, with its hooks), a summary of finished logs (`report`), the Prometheus
//! endpoint beside either live sink (`metrics`), and runs side by side (`compare`). Sinks read
//! the monitor; none of them changes it.

pub mod compare;
pub mod headless;
pub mod metrics;
pub mod report;
pub mod ui;
