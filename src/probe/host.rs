//! The machine from /proc: CPU time per core (with iowait), memory and swap, swap-ins, load
//! and disk traffic. Each file is parsed by a pure function; rates come from the difference
//! between this reading and the previous one.

use std::path::{Path, PathBuf};

use super::HostReading;

/// Reads the host; keeps the counters of the previous reading for rates.
pub struct HostProbe {
    root: PathBuf,
    prev: Option<(f64, Counters)>,
}

/// The cumulative counters rates are made from.
#[derive(Clone, Debug, Default, PartialEq)]
struct Counters {
    total: CpuTimes,
    per_cpu: Vec<CpuTimes>,
    swap_in_pages: Option<u64>,
    disk_sectors: Option<(u64, u64)>,
}

/// Jiffies of one CPU line of /proc/stat.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTimes {
    pub busy: u64,
    pub idle: u64,
    pub iowait: u64,
}

impl CpuTimes {
    fn total(&self) -> u64 {
        self.busy + self.idle + self.iowait
    }
}

impl HostProbe {
    /// `root` is /proc, or a directory laid out like it.
    pub fn new(root: &Path) -> Self {
        HostProbe {
            root: root.to_path_buf(),
            prev: None,
        }
    }

    /// Reads the host at `now` (Unix seconds). None when /proc/stat or /proc/meminfo cannot be
    /// read (not Linux).
    pub fn read(&mut self, now: f64) -> Option<HostReading> {
        let read = |name: &str| std::fs::read_to_string(self.root.join(name)).ok();
        let (total, per_cpu) = parse_stat(&read("stat")?)?;
        let mem = parse_meminfo(&read("meminfo")?)?;
        let counters = Counters {
            total,
            per_cpu,
            swap_in_pages: read("vmstat").and_then(|t| parse_vmstat_pswpin(&t)),
            disk_sectors: read("diskstats").map(|t| parse_diskstats(&t)),
        };
        let mut r = HostReading {
            cpus: u32::try_from(counters.per_cpu.len()).unwrap_or(u32::MAX),
            mem_total_bytes: mem.total,
            mem_available_bytes: mem.available,
            mem_used_bytes: mem.total.saturating_sub(mem.available),
            swap_total_bytes: mem.swap_total,
            swap_used_bytes: mem.swap_total.saturating_sub(mem.swap_free),
            load_avg: read("loadavg").and_then(|t| parse_loadavg(&t)),
            ..HostReading::default()
        };
        if let Some((then, prev)) = &self.prev {
            rates(&mut r, prev, &counters, now - then);
        }
        self.prev = Some((now, counters));
        Some(r)
    }
}

/// The rates between two readings `dt` seconds apart.
fn rates(r: &mut HostReading, prev: &Counters, now: &Counters, dt: f64) {
    let (busy, iowait) = shares(&prev.total, &now.total);
    r.cpu_pct = busy;
    r.iowait_pct = iowait;
    if prev.per_cpu.len() == now.per_cpu.len() {
        r.per_cpu_pct = prev
            .per_cpu
            .iter()
            .zip(&now.per_cpu)
            .map(|(a, b)| shares(a, b).0.unwrap_or(0.0))
            .collect();
    }
    if dt <= 0.0 {
        return;
    }
    if let (Some(a), Some(b)) = (prev.swap_in_pages, now.swap_in_pages) {
        r.swap_in_pages_per_s = Some(b.saturating_sub(a) as f64 / dt);
    }
    if let (Some((ra, wa)), Some((rb, wb))) = (prev.disk_sectors, now.disk_sectors) {
        // /proc/diskstats counts 512-byte sectors whatever the device's sector size.
        r.disk_read_bytes_per_s = Some(rb.saturating_sub(ra) as f64 * 512.0 / dt);
        r.disk_write_bytes_per_s = Some(wb.saturating_sub(wa) as f64 * 512.0 / dt);
    }
}

/// Busy and iowait shares (0-100) of the time between two readings of one CPU line.
fn shares(a: &CpuTimes, b: &CpuTimes) -> (Option<f64>, Option<f64>) {
    let total = b.total().saturating_sub(a.total());
    if total == 0 {
        return (None, None);
    }
    let pct = |x: u64, y: u64| Some(100.0 * y.saturating_sub(x) as f64 / total as f64);
    (pct(a.busy, b.busy), pct(a.iowait, b.iowait))
}

/// The `cpu` line and the `cpuN` lines of /proc/stat.
pub fn parse_stat(text: &str) -> Option<(CpuTimes, Vec<CpuTimes>)> {
    let mut total = None;
    let mut per_cpu = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        let (name, fields) = rest.split_once(' ')?;
        let f: Vec<u64> = fields
            .split_whitespace()
            .map_while(|v| v.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
        // already inside user and nice.
        if f.len() < 4 {
            return None;
        }
        let at = |i: usize| f.get(i).copied().unwrap_or(0);
        let t = CpuTimes {
            busy: at(0) + at(1) + at(2) + at(5) + at(6) + at(7),
            idle: at(3),
            iowait: at(4),
        };
        if name.is_empty() {
            total = Some(t);
        } else {
            per_cpu.push(t);
        }
    }
    Some((total?, per_cpu))
}

/// The figures of /proc/meminfo steptop uses, in bytes.
#[derive(Debug, Default, PartialEq)]
pub struct MemInfo {
    pub total: u64,
    pub available: u64,
    pub swap_total: u64,
    pub swap_free: u64,
}

pub fn parse_meminfo(text: &str) -> Option<MemInfo> {
    let mut m = MemInfo::default();
    let (mut total, mut available) = (false, false);
    for (key, bytes) in super::kib_lines(text) {
        match key {
            "MemTotal" => (m.total, total) = (bytes, true),
            "MemAvailable" => (m.available, available) = (bytes, true),
            "SwapTotal" => m.swap_total = bytes,
            "SwapFree" => m.swap_free = bytes,
            _ => {}
        }
    }
    (total && available).then_some(m)
}

/// Pages swapped in since boot (`pswpin` of /proc/vmstat).
pub fn parse_vmstat_pswpin(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("pswpin "))
        .and_then(|v| v.trim().parse().ok())
}

pub fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|v| v.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// Sectors read and written since boot by the whole disks (partitions, loop, ram and
/// device-mapper devices are left out so that no byte counts twice).
pub fn parse_diskstats(text: &str) -> (u64, u64) {
    let mut read = 0;
    let mut written = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 || !is_whole_disk(f[2]) {
            continue;
        }
        read += f[5].parse::<u64>().unwrap_or(0);
        written += f[9].parse::<u64>().unwrap_or(0);
    }
    (read, written)
}

fn is_whole_disk(name: &str) -> bool {
    let skip = ["loop", "ram", "dm-", "zram", "sr", "md"];
    if skip.iter().any(|p| name.starts_with(p)) {
        return false;
    }
    // nvme0n1 is a disk, nvme0n1p1 a partition; sda a disk, sda1 a partition.
    if name.starts_with("nvme") || name.starts_with("mmcblk") {
        return !name.contains('p') || !name.rsplit('p').next().is_some_and(is_number);
    }
    !name.ends_with(|c: char| c.is_ascii_digit())
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT_A: &str = "cpu  100 0 100 700 100 0 0 0 0 0\n\
        cpu0 50 0 50 350 50 0 0 0 0 0\n\
        cpu1 50 0 50 350 50 0 0 0 0 0\n\
        intr 12345\nctxt 999\n";
    const STAT_B: &str = "cpu  250 0 150 800 200 0 0 0 0 0\n\
        cpu0 150 0 50 350 50 0 0 0 0 0\n\
        cpu1 100 0 100 450 150 0 0 0 0 0\n";

    #[test]
    fn cpu_shares_come_from_the_difference_of_two_readings() {
        let (a, ca) = parse_stat(STAT_A).expect("a");
        let (b, cb) = parse_stat(STAT_B).expect("b");
        assert_eq!(ca.len(), 2);
        // 200 busy, 100 idle, 100 iowait jiffies passed.
        let (busy, iowait) = shares(&a, &b);
        assert_eq!(busy, Some(50.0));
        assert_eq!(iowait, Some(25.0));
        assert_eq!(shares(&ca[0], &cb[0]).0, Some(100.0));
        assert_eq!(shares(&ca[1], &cb[1]).0, Some(100.0 * 100.0 / 300.0));
        assert_eq!(shares(&a, &a), (None, None));
    }

    #[test]
    fn meminfo_needs_total_and_available() {
        let text = "MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    4000000 kB\n\
                    SwapTotal:       2000000 kB\nSwapFree:        1500000 kB\n";
        let m = parse_meminfo(text).expect("meminfo");
        assert_eq!(m.total, 16_000_000 * 1024);
        assert_eq!(m.available, 4_000_000 * 1024);
        assert_eq!(m.swap_total - m.swap_free, 500_000 * 1024);
        assert_eq!(parse_meminfo("MemTotal: 10 kB\n"), None);
    }

    #[test]
    fn vmstat_loadavg_and_disks() {
        assert_eq!(
            parse_vmstat_pswpin("pgpgin 5\npswpin 42\npswpout 7\n"),
            Some(42)
        );
        assert_eq!(
            parse_loadavg("0.50 1.25 2.00 3/456 7890\n"),
            Some([0.5, 1.25, 2.0])
        );
        let disks = "   8       0 sda 10 0 100 0 20 0 200 0 0 0 0\n\
                       8       1 sda1 10 0 100 0 20 0 200 0 0 0 0\n\
                     259       0 nvme0n1 1 0 1000 0 2 0 2000 0 0 0 0\n\
                     259       1 nvme0n1p1 1 0 1000 0 2 0 2000 0 0 0 0\n\
                       7       0 loop0 1 0 5000 0 0 0 0 0 0 0 0\n";
        assert_eq!(parse_diskstats(disks), (1100, 2200));
    }

    #[test]
    fn the_real_proc_reads_and_the_second_reading_has_rates() {
        let mut probe = HostProbe::new(Path::new("/proc"));
        let first = probe.read(1.0).expect("this test runs on Linux");
        assert!(first.cpus >= 1);
        assert!(first.mem_total_bytes > first.mem_available_bytes);
        assert_eq!(first.cpu_pct, None);
        // Burn a little CPU so that jiffies pass.
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 50 {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        assert_ne!(x, 1);
        let second = probe.read(1.05).expect("second");
        assert!(second.cpu_pct.is_some_and(|p| (0.0..=100.0).contains(&p)));
        assert_eq!(second.per_cpu_pct.len(), second.cpus as usize);
    }
}
