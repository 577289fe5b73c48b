//! Numbers as people read them, shared by every sink: milliseconds, shares, durations, bytes.

/// Milliseconds, switching to seconds above 10 s.
pub fn ms(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.2} s", v / 1000.0)
    } else {
        format!("{v:.1} ms")
    }
}

pub fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

/// Three significant figures, without a float's noise.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.3e}")
    }
}

pub fn duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}d {h:02}:{m:02}:{sec:02}")
    } else {
        format!("{h}:{m:02}:{sec:02}")
    }
}

/// Bytes in GiB, or MiB below one GiB.
pub fn gib(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} GiB", b / 1024.0 / 1024.0 / 1024.0)
    } else {
        format!("{:.0} MiB", b / 1024.0 / 1024.0)
    }
}

/// Bytes per second in GB/s, or MB/s below one GB/s.
pub fn rate(bytes_per_s: f64) -> String {
    if bytes_per_s >= 1e9 {
        format!("{:.1} GB/s", bytes_per_s / 1e9)
    } else {
        format!("{:.1} MB/s", bytes_per_s / 1e6)
    }
}
