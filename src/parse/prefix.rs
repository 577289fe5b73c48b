//! Wrappers in front of a log payload: launcher rank tags, line numbers, timestamps and logger
//! headers. They nest (`[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: ...`), so
//! they are stripped in a loop; what they say (time, rank, logger name) is kept.

use super::trace::{self, Kind, Val};
use crate::common::dates::{civil_from_days, days_from_civil};

/// What the prefixes of one line said.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prefix<'a> {
    pub time: Option<LogTime>,
    pub rank: Option<u32>,
    /// The logger name when the header has one (fairseq's `train_inner` / `train` / `valid`).
    pub logger: Option<&'a str>,
}

/// A timestamp as a header wrote it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogTime {
    /// Seconds since the Unix epoch; in the year 2000 when the header had no year.
    pub secs: f64,
    /// The header had no year (`03/25 23:58:44`): the feed that knows when the file was
    /// written moves the time to its real year with `place_yearless`.
    pub yearless: bool,
}

/// Strips every known prefix and returns what they said and the payload.
pub fn strip(mut s: &str) -> (Prefix<'_>, &str) {
    let mut p = Prefix::default();
    // Each pass removes one wrapper; the bound guards against a pathological line.
    for _ in 0..8 {
        let t = s.trim_start_matches(' ');
        let Some(&first) = t.as_bytes().first() else {
            return (p, s);
        };
        let next = match first {
            b'[' => bracketed(t, &mut p),
            b'0'..=b'9' => timestamp(t)
                .map(|(time, rest)| {
                    p.time = Some(time);
                    logger_header(rest, &mut p)
                })
                .or_else(|| srun_label(t, &mut p)),
            // NVIDIA's dllogger: `DLL 2021-05-19 10:22:28.249054 - `, the time next.
            b'D' if t.starts_with("DLL ")
                && t.as_bytes().get(4).is_some_and(u8::is_ascii_digit) =>
            {
                Some(&t[4..])
            }
            b'I' | b'W' | b'E' | b'D' | b'C' => {
                python_default(t, &mut p).or_else(|| glog(t, &mut p))
            }
            _ => None,
        };
        match next {
            Some(rest) => s = rest,
            None => return (p, s),
        }
    }
    (p, s)
}

/// Slurm's `srun --label`: ` 0: `, `31: `, the task's number (its global rank) before the
/// line.
fn srun_label<'a>(t: &'a str, p: &mut Prefix<'a>) -> Option<&'a str> {
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let rest = t[digits..].strip_prefix(": ")?;
    if digits > 5 {
        return None;
    }
    // Darknet's `6001: 5.44, 5.44 avg, ...` is an iteration and its loss, not a task's line.
    if rest.starts_with(|c: char| c.is_ascii_digit()) && rest.contains(" avg") {
        return None;
    }
    p.rank = Some(rank(&t[..digits])?);
    Some(rest)
}

/// A rank number. Noted for the shape memo even when it fails: whether it overflows depends
/// on the digits.
pub(crate) fn rank(digits: &str) -> Option<u32> {
    let rank = digits.parse().ok();
    trace::note(digits, Kind::Rank, rank.map(|r| Val::U(u64::from(r))));
    rank
}

/// Bracketed wrappers: `[rank3]:`, `[default0]:`, `[1,mpirank:2,algo-1]<stdout>:`, `[1745] `,
/// `[titan] `, `[Rank 0] `, `[2023-07-25 21:03:17,269] [INFO] [timer.py:215:stop] `,
/// `[11/08 10:14:26 d2.utils.events]: `, `[04/14 09:05:02] d2.utils.events INFO: `,
/// `[INFO|trainer.py:2128] 2025-04-24 20:44:49,943 >> `.
fn bracketed<'a>(t: &'a str, p: &mut Prefix<'a>) -> Option<&'a str> {
    let close = t.find(']')?;
    let inner = &t[1..close];
    let after = &t[close + 1..];
    if let Some(rest) = after.strip_prefix(':') {
        let digits = inner.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        if let Some(rank) = rank(digits) {
            p.rank = Some(rank);
            return Some(rest);
        }
    }
    // Open MPI's `--tag-output`: `[jobid,rank]<stderr>:`.
    if let Some((job, r)) = inner.split_once(',')
        && !job.is_empty()
        && job.bytes().all(|b| b.is_ascii_digit())
        && let Some(rest) = ["<stdout>:", "<stderr>:", ":"]
            .iter()
            .find_map(|tag| after.strip_prefix(tag))
        && let Some(rank) = rank(r)
    {
        p.rank = Some(rank);
        return Some(rest);
    }
    // Open MPI's `[jobid,mpirank:N,host]`: the job id is usually 1, but any will do.
    if let Some(mpi) = inner
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .strip_prefix(",mpirank:")
    {
        p.rank = Some(rank(mpi.split(',').next()?)?);
        let rest = after.trim_start_matches(|c| c != ':');
        return rest.strip_prefix(':');
    }
    if inner.bytes().all(|b| b.is_ascii_digit()) && !inner.is_empty() && after.starts_with(' ') {
        return Some(after);
    }
    if inner == "titan" {
        return Some(after);
    }
    if let Some(n) = inner.strip_prefix("Rank ") {
        p.rank = Some(rank(n.trim())?);
        return Some(after);
    }
    if let Some((level, _)) = inner.split_once('|')
        && is_level(level)
    {
        let rest = after.trim_start();
        return match timestamp(rest) {
            Some((time, rest)) => {
                p.time = Some(time);
                Some(rest.trim_start().strip_prefix(">>").unwrap_or(rest))
            }
            None => Some(rest),
        };
    }
    let (time, rest_inner) = timestamp(inner)?;
    p.time = Some(time);
    if rest_inner.is_empty() {
        // `[time] [LEVEL] [file:line:func] `, `[time][LEVEL][fn:line] - `, `[time] name LEVEL: `.
        let mut rest = after;
        while let Some(r) = rest.trim_start().strip_prefix('[') {
            let Some(end) = r.find(']') else { break };
            let field = &r[..end];
            // Hydra's `[time][train_inner][INFO] - `: a logger's name before the level.
            let logger_then_level = is_logger_name(field)
                && r[end + 1..]
                    .strip_prefix('[')
                    .and_then(|n| n.split_once(']'))
                    .is_some_and(|(level, _)| is_level(level));
            if logger_then_level {
                p.logger = Some(field);
            } else if !(is_level(field) || field.contains(':') || field.contains('.')) {
                break;
            }
            rest = &r[end + 1..];
        }
        let rest = rest.strip_prefix(" - ").unwrap_or(rest);
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        if let Some((name, msg)) = rest.trim_start().split_once(": ")
            && let Some((logger, level)) = name.rsplit_once(' ')
            && is_level(level)
            && !logger.contains(' ')
        {
            p.logger = Some(logger);
            return Some(msg);
        }
        return Some(rest);
    }
    // detectron2 terminal: `[MM/DD HH:MM:SS d2.utils.events]: `
    let logger = rest_inner.trim();
    if !logger.contains(' ') {
        p.logger = Some(logger);
        return Some(after.strip_prefix(':').unwrap_or(after));
    }
    None
}

/// `INFO:megatron.core.timers:` (Python logging's default format).
fn python_default<'a>(t: &'a str, p: &mut Prefix<'a>) -> Option<&'a str> {
    let (level, rest) = t.split_once(':')?;
    if !is_level(level) {
        return None;
    }
    let (name, msg) = rest.split_once(':')?;
    if name.is_empty() || name.contains(' ') {
        return None;
    }
    p.logger = Some(name);
    Some(msg)
}

/// glog headers (Caffe's, newer torch's): `I0712 22:28:04.844131 32223 solver.cpp:189] `, the
/// level's letter, the month and day, the time (year-less), the thread and the place.
fn glog<'a>(t: &'a str, p: &mut Prefix<'a>) -> Option<&'a str> {
    let b = t.as_bytes();
    if b.len() < 6 || !b[1..5].iter().all(u8::is_ascii_digit) || b[5] != b' ' {
        return None;
    }
    let end = t.find("] ")?;
    if end > 120 {
        return None;
    }
    // `MMDD HH:MM:SS.ffffff` read as the year-less `MM/DD HH:MM:SS.ffffff`.
    let clock = t.get(6..end)?.split(' ').next()?;
    let text = [&t[1..3], "/", &t[3..5], " ", clock].concat();
    p.time = timestamp(&text).map(|(time, _)| time).or(p.time);
    Some(&t[end + 2..])
}

/// The header after a timestamp: ` - mmengine - INFO - `, ` - INFO - __main__ - `,
/// ` | INFO | train_inner | `, ` | ` (a user's own separator), `: `, or nothing.
fn logger_header<'a>(rest: &'a str, p: &mut Prefix<'a>) -> &'a str {
    if let Some(msg) = tabbed_header(rest, p) {
        return msg;
    }
    for sep in [" - ", " | "] {
        if let Some(r) = rest.strip_prefix(sep) {
            let mut r = r;
            // Up to two fields before the level (a logger name), then optionally a name after.
            for _ in 0..2 {
                let Some((field, after)) = r.split_once(sep) else {
                    break;
                };
                if is_level(field) {
                    if let Some((name, msg)) = after.split_once(sep)
                        && is_logger_name(name)
                    {
                        p.logger = Some(name);
                        return msg;
                    }
                    // loguru: `LEVEL | module:function:line - message`.
                    if let Some((place, msg)) = after.split_once(" - ")
                        && place.split(':').count() == 3
                        && !place.contains(' ')
                    {
                        return msg;
                    }
                    return after;
                }
                if !is_logger_name(field) {
                    break;
                }
                p.logger = Some(field);
                r = after;
            }
            p.logger = None;
            return rest.strip_prefix(sep).unwrap_or(rest);
        }
    }
    // `2025-02-11 08:30:01 INFO msg` / `... INFO: msg`.
    if let Some(r) = rest.strip_prefix(' ')
        && let Some(end) = r.find([' ', ':'])
    {
        if is_level(&r[..end]) {
            // `... INFO - msg`, `... INFO: msg`.
            let msg = r[end..].trim_start_matches(':');
            return msg.strip_prefix(" - ").unwrap_or(msg);
        }
        // `... ppdet.engine INFO: msg`, `... root INFO: msg` (Python's `%(name)s
        // %(levelname)s:`).
        if r.as_bytes()[end] == b' '
            && is_logger_name(&r[..end])
            && let Some(level_end) = r[end + 1..].find([' ', ':']).map(|i| end + 1 + i)
            && is_level(&r[end + 1..level_end])
        {
            p.logger = Some(&r[..end]);
            return r[level_end..].trim_start_matches(':');
        }
    }
    // `2021-07-29 14:38:40,512:INFO: msg`.
    if let Some(r) = rest.strip_prefix(':')
        && let Some((level, msg)) = r.split_once(':')
        && is_level(level)
    {
        return msg;
    }
    rest.strip_prefix(": ").unwrap_or(rest)
}

/// OLMo's tab-separated header after the time: `\tHOST:RANK\tLOGGER:LINE\tLEVEL\t` then
/// the message.
fn tabbed_header<'a>(rest: &'a str, p: &mut Prefix<'a>) -> Option<&'a str> {
    let r = rest.strip_prefix('\t')?;
    let mut fields = r.splitn(4, '\t');
    let (host, logger, level, msg) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    if !is_level(level) {
        return None;
    }
    if let Some((_, rank_digits)) = host.rsplit_once(':') {
        p.rank = rank(rank_digits);
    }
    p.logger = logger.split(':').next().filter(|l| is_logger_name(l));
    Some(msg)
}

fn is_logger_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() < 48
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

/// A level word, bare or as timm's file handler writes it (`train: [    INFO]`).
fn is_level(s: &str) -> bool {
    let s = s.trim();
    let s = match s.strip_suffix(']') {
        Some(inner) => inner.rsplit('[').next().unwrap_or(inner),
        None => s,
    };
    matches!(
        s.trim(),
        "INFO" | "WARNING" | "WARN" | "ERROR" | "DEBUG" | "CRITICAL" | "FATAL" | "NOTICE"
    )
}

/// Parses a timestamp at the start of `s`: `2023-06-13 14:03:51`, `2023/06/13 14:03:51`,
/// `2020-05-08 18:56:16,649`, `2026-07-10 05:46:31.627699`, `03/25 23:58:44`,
/// `10/10/2022 22:57:22`, `2025-03-04T10:00:06`. Returns the time and the rest.
pub fn timestamp(s: &str) -> Option<(LogTime, &str)> {
    let b = s.as_bytes();
    let d = |i: usize, n: usize| -> Option<u32> {
        let part = b.get(i..i + n)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(part.iter().fold(0, |acc, c| acc * 10 + u32::from(c - b'0')))
    };
    let (year, month, day, clock_at) = if b.get(4).is_some_and(|&c| c == b'-' || c == b'/') {
        (d(0, 4)?, d(5, 2)?, d(8, 2)?, 10)
    } else if b.get(2) == Some(&b'/') && b.get(5) == Some(&b'/') {
        (d(6, 4)?, d(0, 2)?, d(3, 2)?, 10)
    } else if b.get(2) == Some(&b'/') {
        // A leap year, so that 02/29 reads.
        (YEARLESS, d(0, 2)?, d(3, 2)?, 5)
    } else {
        return None;
    };
    if !matches!(b.get(clock_at), Some(b' ' | b'T' | b'_')) {
        return None;
    }
    let c = clock_at + 1;
    let (h, m, sec) = (d(c, 2)?, d(c + 3, 2)?, d(c + 6, 2)?);
    if b.get(c + 2) != Some(&b':') || b.get(c + 5) != Some(&b':') {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        // Noted: whether this fails depends on the digits, not on the line's shape.
        trace::note(s, Kind::Timestamp, None);
        return None;
    }
    let mut end = c + 8;
    let mut frac = 0.0;
    if matches!(b.get(end), Some(b',' | b'.')) && b.get(end + 1).is_some_and(u8::is_ascii_digit) {
        let start = end + 1;
        end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        frac = s[start..end].parse::<f64>().unwrap_or(0.0) / 10f64.powi((end - start) as i32);
    }
    let days = days_from_civil(i64::from(year), month, day);
    let secs = days as f64 * 86_400.0 + f64::from(h * 3600 + m * 60 + sec) + frac;
    trace::note(s, Kind::Timestamp, Some(Val::F(secs)));
    let time = LogTime {
        secs,
        yearless: clock_at == 5,
    };
    Some((time, &s[end..]))
}

/// The year a header without one is read in.
const YEARLESS: u32 = 2000;

/// Moves a year-less time (read in the year 2000) to the latest year in which its date exists
/// and is at most a day after `reference`, the moment its log was last written: the
/// reference's year, or the one before for a log that spans New Year. The day of slack is
/// because log times have no zone while the reference is UTC.
pub fn place_yearless(t: f64, reference: f64) -> f64 {
    const DAY: f64 = 86_400.0;
    let days = (t / DAY).floor();
    let in_day = t - days * DAY;
    let (_, month, day) = civil_from_days(days as i64);
    let (last, _, _) = civil_from_days(((reference + DAY) / DAY).floor() as i64);
    // 02/29 goes back to the last leap year: at most eight years (2096, then 2104).
    for year in (last - 8..=last).rev() {
        let days = days_from_civil(year, month, day);
        if civil_from_days(days) != (year, month, day) {
            continue;
        }
        let placed = days as f64 * DAY + in_day;
        if placed <= reference + DAY {
            return placed;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_epoch_and_a_known_date() {
        assert_eq!(
            timestamp("1970-01-01 00:00:00").map(|x| x.0.secs),
            Some(0.0)
        );
        // 2023-11-29 02:19:30 UTC = 1701224370
        assert_eq!(
            timestamp("2023/11/29 02:19:30 x").map(|x| x.0.secs),
            Some(1_701_224_370.0)
        );
        assert_eq!(timestamp("2020-05-08 18:56:16,649").map(|x| x.1), Some(""));
    }

    /// A time as the parser reads `s`, and whether it had a year.
    fn read(s: &str) -> (f64, bool) {
        let (t, _) = timestamp(s).expect("a timestamp");
        (t.secs, t.yearless)
    }

    /// `MM/DD hh:mm:ss` placed with a reference written as `YYYY-MM-DD hh:mm:ss`.
    fn placed(yearless: &str, reference: &str) -> f64 {
        let (t, flag) = read(yearless);
        assert!(flag, "{yearless} has no year");
        place_yearless(t, read(reference).0)
    }

    #[test]
    fn yearless_times_take_the_reference_year() {
        assert!(!read("2025/04/05 01:32:16").1);
        assert!(!read("10/10/2022 22:57:22").1);
        assert_eq!(
            placed("04/05 01:32:16.25", "2025-06-01 00:00:00"),
            read("2025-04-05 01:32:16.25").0
        );
        // Later in the year than the reference: last year's.
        assert_eq!(
            placed("09/12 14:02:11", "2025-06-01 00:00:00"),
            read("2024-09-12 14:02:11").0
        );
        // Up to a day after it still counts as this year's (log times have no zone).
        assert_eq!(
            placed("06/01 20:00:00", "2025-06-01 00:00:00"),
            read("2025-06-01 20:00:00").0
        );
        assert_eq!(
            placed("06/03 00:00:00", "2025-06-01 00:00:00"),
            read("2024-06-03 00:00:00").0
        );
    }

    #[test]
    fn a_log_across_new_year_keeps_its_order() {
        let reference = "2026-01-01 02:00:00";
        assert_eq!(
            placed("12/31 23:59:50", reference),
            read("2025-12-31 23:59:50").0
        );
        assert_eq!(
            placed("01/01 00:00:10", reference),
            read("2026-01-01 00:00:10").0
        );
        // A log in a zone ahead of UTC: its file was written on Dec 31 by the UTC clock.
        assert_eq!(
            placed("01/01 08:00:00", "2025-12-31 23:00:00"),
            read("2026-01-01 08:00:00").0
        );
    }

    #[test]
    fn leap_days_are_counted_not_assumed() {
        assert_eq!(
            placed("02/29 12:00:00", "2025-06-01 00:00:00"),
            read("2024-02-29 12:00:00").0
        );
        assert_eq!(
            placed("02/29 12:00:00", "2024-03-10 00:00:00"),
            read("2024-02-29 12:00:00").0
        );
        // Before the reference's Feb 29: the leap day four years back.
        assert_eq!(
            placed("02/29 12:00:00", "2024-02-10 00:00:00"),
            read("2020-02-29 12:00:00").0
        );
        // 2100 has no Feb 29.
        assert_eq!(
            placed("02/29 00:00:00", "2103-01-01 00:00:00"),
            read("2096-02-29 00:00:00").0
        );
        // March 1 is one day after Feb 28 in a common year, two in a leap year.
        let day = |a: &str, b: &str, reference: &str| {
            (placed(b, reference) - placed(a, reference)) / 86_400.0
        };
        assert_eq!(
            day("02/28 00:00:00", "03/01 00:00:00", "2025-12-01 00:00:00"),
            1.0
        );
        assert_eq!(
            day("02/28 00:00:00", "03/01 00:00:00", "2024-12-01 00:00:00"),
            2.0
        );
        assert_eq!(
            placed("12/31 00:00:00", "2025-12-31 12:00:00"),
            read("2025-12-31 00:00:00").0
        );
    }

    #[test]
    fn civil_dates_round_trip() {
        for days in [-719_468, -1, 0, 10_957, 11_016, 20_454, 47_540] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn nested_rank_titan_and_logger_header() {
        let (p, rest) = strip("[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200");
        assert_eq!(rest, "step: 200");
        assert_eq!(p.rank, Some(0));
        assert!(p.time.is_some());
    }

    #[test]
    fn fairseq_keeps_the_logger_name() {
        let (p, rest) = strip("2020-07-17 04:08:14 | INFO | train_inner | epoch 001:    100 / 29");
        assert_eq!(rest, "epoch 001:    100 / 29");
        assert_eq!(p.logger, Some("train_inner"));
    }

    #[test]
    fn users_own_timestamp_separator() {
        let (p, rest) = strip("2025-03-04 10:00:06 | step 950/8880 | loss=0.1");
        assert_eq!(rest, "step 950/8880 | loss=0.1");
        assert!(p.time.is_some());
    }

    #[test]
    fn deepspeed_megatron_detectron2_hf_headers() {
        let s = "[2023-07-25 21:03:17,269] [INFO] [timer.py:215:stop] epoch=0/micro_step=34";
        assert_eq!(strip(s).1, "epoch=0/micro_step=34");
        let s = " [2024-04-06 02:59:36] iteration       43/     100 |";
        assert_eq!(strip(s).1, "iteration       43/     100 |");
        assert_eq!(
            strip("[11/08 10:14:26 d2.utils.events]:  eta: 5:56:07").1,
            "  eta: 5:56:07"
        );
        assert_eq!(
            strip("[04/14 09:05:02] d2.utils.events INFO:  eta: 0:11").1,
            " eta: 0:11"
        );
        let s = "[INFO|trainer.py:2128] 2025-04-24 20:44:49,943 >> ***** Running";
        assert_eq!(strip(s).1, " ***** Running");
        assert_eq!(
            strip("[1,mpirank:2,algo-1]<stdout>:epoch 0: {").0.rank,
            Some(2)
        );
        assert_eq!(strip("[1745]   1%|").1, "   1%|");
    }

    #[test]
    fn a_stage_header_is_not_a_prefix() {
        assert_eq!(
            strip("[Step 100] Memory - Process").1,
            "[Step 100] Memory - Process"
        );
        assert_eq!(
            strip("[Cache Stats @ step 10]").1,
            "[Cache Stats @ step 10]"
        );
    }

    #[test]
    fn python_default_and_glog() {
        assert_eq!(
            strip("INFO:megatron.core.timers:(min, max)").1,
            "(min, max)"
        );
        let s = "E0325 20:57:27.620000 2606 site/api.py:869] failed (exitcode: -9)";
        assert_eq!(strip(s).1, "failed (exitcode: -9)");
    }
}
