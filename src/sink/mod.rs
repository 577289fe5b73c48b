//! Where the monitor's state goes: the live view (`ui`), one line per alert change
//! (`headless`, with its hooks), a summary of finished logs (`report`), the Prometheus
//! endpoint beside either live sink (`metrics`), runs side by side (`compare`), and the
//! cluster's table from Prometheus (`cluster`, once or live; it has no monitor). A live
//! sink owns the loop that feeds its monitor from the inbox; what any sink shows is read from
//! the monitor, and keys change only the live view's own state.

pub mod cluster;
pub mod compare;
pub mod exposition;
pub mod headless;
pub mod probe_sample;
pub mod report;
pub mod ui;
