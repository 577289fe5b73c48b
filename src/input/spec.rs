//! Inputs named on the command line: a plain path, or a wildcard in the file name only.
//!
//! Wildcards stop at the last path component on purpose: following a glob means watching one
//! directory for new matches, which stays cheap and predictable; a `*` in a directory would
//! mean watching a tree.

use std::fs;
use std::path::{Path, PathBuf};

/// Characters that make a file name a pattern.
const WILDCARDS: [char; 3] = ['*', '?', '['];

/// Compressed files are old rotations and never hold the bytes we are still owed.
const COMPRESSED: [&str; 4] = [".gz", ".xz", ".zst", ".bz2"];

/// One input as the user gave it, resolved into what to open or what to match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputSpec {
    /// A single file, followed by path even before it exists.
    File(PathBuf),
    /// Every file in `dir` whose name matches `pattern`, including ones created later.
    Glob {
        /// Directory the pattern is matched in (`.` when the input had none).
        dir: PathBuf,
        /// Pattern for the file name: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`.
        pattern: String,
    },
}

impl InputSpec {
    /// Reads one input, refusing wildcards in directories with a message naming the input.
    pub fn parse(input: &str) -> Result<InputSpec, String> {
        if input.is_empty() {
            return Err("empty input path".to_string());
        }
        let path = Path::new(input);
        let parent = path.parent().unwrap_or(Path::new(""));
        if is_glob(&parent.to_string_lossy()) {
            return Err(format!(
                "'{input}': wildcards are allowed only in the file name, not in directories"
            ));
        }
        match path.file_name().map(|n| n.to_string_lossy()) {
            Some(name) if is_glob(&name) => Ok(InputSpec::Glob {
                dir: dir_or_dot(parent),
                pattern: name.into_owned(),
            }),
            _ => Ok(InputSpec::File(path.to_path_buf())),
        }
    }

    /// The directory to watch for this input: changes to it are our wake-ups.
    pub fn dir(&self) -> PathBuf {
        match self {
            InputSpec::File(path) => dir_or_dot(path.parent().unwrap_or(Path::new(""))),
            InputSpec::Glob { dir, .. } => dir.clone(),
        }
    }

    /// The files this input names now, sorted; a plain file is listed even if missing so the
    /// reader can report it by name.
    pub fn expand(&self) -> Vec<PathBuf> {
        match self {
            InputSpec::File(path) => vec![path.clone()],
            InputSpec::Glob { dir, pattern } => {
                let Ok(entries) = fs::read_dir(dir) else {
                    return Vec::new();
                };
                let mut found: Vec<PathBuf> = entries
                    .filter_map(Result::ok)
                    .filter(|e| matches(pattern, &e.file_name().to_string_lossy()))
                    .map(|e| e.path())
                    .filter(|p| p.is_file())
                    .collect();
                found.sort();
                found
            }
        }
    }
}

/// `dir/name` without a directory means the current one.
fn dir_or_dot(parent: &Path) -> PathBuf {
    if parent.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        parent.to_path_buf()
    }
}

/// Tells a pattern from a plain name, so plain names are never matched character by character.
pub fn is_glob(s: &str) -> bool {
    s.contains(WILDCARDS)
}

/// Whether `name` is a rotated copy of `base` (`train.log.1`, `train.log-20250101`) that may
/// still hold bytes we have not read; compressed rotations are skipped.
pub fn is_rotated_sibling(base: &str, name: &str) -> bool {
    let Some(rest) = name.strip_prefix(base) else {
        return false;
    };
    let separated = rest.len() > 1 && (rest.starts_with('.') || rest.starts_with('-'));
    separated && !COMPRESSED.iter().any(|ext| rest.ends_with(ext))
}

/// Matches one file name against a pattern of `*`, `?`, `[set]`, `[a-z]` and `[!set]`.
///
/// As in a shell, a leading `.` in the name must be matched by a literal `.`, so `*.log` does
/// not pick up an editor's hidden swap files.
pub fn matches(pattern: &str, name: &str) -> bool {
    let pat: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = name.chars().collect();
    if text.first() == Some(&'.') && pat.first() != Some(&'.') {
        return false;
    }
    let (mut p, mut t) = (0, 0);
    // Where to resume after the last `*`: pattern just past it, and the text it swallowed to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        let step = match pat.get(p) {
            Some('*') => {
                star = Some((p + 1, t));
                p += 1;
                continue;
            }
            Some('?') => Some(p + 1),
            Some('[') => match class(&pat, p + 1, text[t]) {
                Some((hit, end)) => hit.then_some(end),
                // An unclosed `[` is an ordinary character.
                None => (text[t] == '[').then_some(p + 1),
            },
            Some(&c) => (c == text[t]).then_some(p + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                p = next;
                t += 1;
            }
            (None, Some((after_star, swallowed))) => {
                // Let the last `*` take one more character and try again from there.
                p = after_star;
                t = swallowed + 1;
                star = Some((after_star, swallowed + 1));
            }
            (None, None) => return false,
        }
    }
    pat[p..].iter().all(|&c| c == '*')
}

/// Matches `c` against the class starting at `pat[start]` (just past `[`); returns whether it
/// matched and the index just past `]`, or None when the class is never closed.
fn class(pat: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start;
    let negated = matches!(pat.get(i), Some('!') | Some('^'));
    if negated {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    loop {
        let &lo = pat.get(i)?;
        // A `]` right after `[` or `[!` is a member, not the end.
        if lo == ']' && !first {
            return Some((hit != negated, i + 1));
        }
        first = false;
        match (pat.get(i + 1), pat.get(i + 2)) {
            (Some('-'), Some(&hi)) if hi != ']' => {
                hit |= lo <= c && c <= hi;
                i += 3;
            }
            _ => {
                hit |= lo == c;
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_one_file_name() {
        assert!(matches("*.log", "train.log"));
        assert!(matches("rank?.log", "rank3.log"));
        assert!(!matches("rank?.log", "rank10.log"));
        assert!(matches("rank[0-3].log", "rank2.log"));
        assert!(!matches("rank[0-3].log", "rank4.log"));
        assert!(matches("rank[!0].log", "rank1.log"));
        assert!(!matches("rank[!0].log", "rank0.log"));
        assert!(matches("[ab]*", "b-run"));
        assert!(matches("a*b*c", "aXbYbZc"));
        assert!(!matches("a*b*c", "aXbYbZ"));
        assert!(matches("*", "x"));
        assert!(matches("run[.log", "run[.log"));
        assert!(matches("[]x]", "]"));
    }

    #[test]
    fn hidden_files_need_an_explicit_dot() {
        assert!(!matches("*.log", ".train.log"));
        assert!(matches(".*.log", ".train.log"));
    }

    #[test]
    fn parse_tells_files_from_globs() {
        assert_eq!(
            InputSpec::parse("logs/train.log"),
            Ok(InputSpec::File(PathBuf::from("logs/train.log")))
        );
        assert_eq!(
            InputSpec::parse("logs/rank*.log"),
            Ok(InputSpec::Glob {
                dir: PathBuf::from("logs"),
                pattern: "rank*.log".into()
            })
        );
        assert_eq!(
            InputSpec::parse("*.log"),
            Ok(InputSpec::Glob {
                dir: PathBuf::from("."),
                pattern: "*.log".into()
            })
        );
        assert_eq!(
            InputSpec::File(PathBuf::from("t.log")).dir(),
            PathBuf::from(".")
        );
    }

    #[test]
    fn parse_refuses_wildcards_in_directories_naming_the_input() {
        let err = InputSpec::parse("runs/*/train.log")
            .err()
            .unwrap_or_default();
        assert!(err.contains("runs/*/train.log"), "{err}");
        assert!(InputSpec::parse("").is_err());
    }

    #[test]
    fn rotated_siblings_are_recognised() {
        assert!(is_rotated_sibling("train.log", "train.log.1"));
        assert!(is_rotated_sibling("train.log", "train.log-20250101"));
        assert!(!is_rotated_sibling("train.log", "train.log.2.gz"));
        assert!(!is_rotated_sibling("train.log", "train.log"));
        assert!(!is_rotated_sibling("train.log", "train.logs"));
        assert!(!is_rotated_sibling("train.log", "train.log."));
    }

    #[test]
    fn expand_lists_sorted_matching_files_only() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        for name in ["b.log", "a.log", "c.txt"] {
            fs::write(dir.path().join(name), b"x\n")?;
        }
        fs::create_dir(dir.path().join("d.log"))?;
        let spec = InputSpec::Glob {
            dir: dir.path().to_path_buf(),
            pattern: "*.log".into(),
        };
        let names: Vec<_> = spec
            .expand()
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_owned())
            .collect();
        assert_eq!(names, ["a.log", "b.log"]);
        Ok(())
    }
}
