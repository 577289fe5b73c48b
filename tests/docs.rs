//! The README, the changelog and docs/ say only what is true of this tree: every relative link
//! and every path named in backticks exists, every `steptop ...` command line parses with the
//! real command-line definition, every `--flag` named is one of steptop's, every `[section]
//! key` named is a config key, and the changelog's released version is the crate's.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pages checked: the README, the changelog and every page of docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn read(page: &Path) -> String {
    std::fs::read_to_string(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()))
}

/// Markdown link targets `](target)` that are not web addresses or anchors in the page.
fn links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(t, _)| t.to_string()))
        .filter(|t| !t.contains("://") && !t.starts_with('#') && !t.starts_with("mailto:"))
        .map(|t| t.split('#').next().unwrap_or("").to_string())
        .collect()
}

/// Spans in backticks that name a path of this tree (`fixtures/runs/x/*.log`, `src/parse/`),
/// up to the first glob character.
fn tree_paths(text: &str) -> Vec<String> {
    const TOP: [&str; 7] = [
        "src/",
        "tests/",
        "fixtures/",
        "docs/",
        "themes/",
        ".ci/",
        "CHANGELOG.md",
    ];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| !span.contains(char::is_whitespace))
        .filter(|span| TOP.iter().any(|t| span.starts_with(t)))
        .map(|span| {
            let end = span.find(['*', '{', '?', '<']).unwrap_or(span.len());
            let head = &span[..end];
            // A glob's directory: what is before its last `/`.
            if end < span.len() {
                head.rsplit_once('/').map_or(head, |(d, _)| d).to_string()
            } else {
                head.trim_end_matches([':', ',', '.']).to_string()
            }
        })
        .collect()
}

fn missing_paths(page: &Path, text: &str) -> Vec<String> {
    let dir = page.parent().expect("a page's folder");
    let mut missing = Vec::new();
    for link in links(text) {
        if !dir.join(&link).exists() {
            missing.push(format!("{}: link {link}", page.display()));
        }
    }
    for path in tree_paths(text) {
        if !root().join(&path).exists() {
            missing.push(format!("{}: path {path}", page.display()));
        }
    }
    missing
}

#[test]
fn every_link_and_path_exists() {
    let missing: Vec<String> = pages()
        .iter()
        .flat_map(|p| missing_paths(p, &read(p)))
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// A shell line's words, quotes removed, up to what the shell would hand to another command
/// (`|`, `>`, `&&`, `;`, a comment).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut has = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                has = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            (None, c) if c.is_whitespace() => {
                if has || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                has = false;
            }
            (None, '|' | '>' | ';' | '&' | '#') if word.is_empty() && !has => break,
            (None, c) => word.push(c),
        }
    }
    if has || !word.is_empty() {
        out.push(word);
    }
    out
}

/// The `steptop ...` lines of the pages' shell blocks (```sh): whole command lines.
fn commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut shell = None;
    for line in text.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            shell = match shell {
                None => Some(info.trim() == "sh"),
                Some(_) => None,
            };
            continue;
        }
        let l = line.trim().trim_start_matches("$ ");
        if shell == Some(true) && l.starts_with("steptop ") {
            found.push(l.to_string());
        }
    }
    found
}

/// Inline code outside blocks that starts with `steptop `: a command named in prose, which
/// may leave out what it needs (`steptop report` names the subcommand).
fn inline_commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            found.extend(
                line.split('`')
                    .skip(1)
                    .step_by(2)
                    .filter(|s| s.starts_with("steptop "))
                    .map(String::from),
            );
        }
    }
    found
}

/// The flags of the synopses (`steptop report [--format text|json] LOG...`) in the pages'
/// other blocks.
fn synopsis_flags(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut block = None;
    for line in text.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            block = match block {
                None => Some(info.trim() != "sh"),
                Some(_) => None,
            };
            continue;
        }
        if block == Some(true) && line.trim_start().starts_with("steptop ") {
            found.extend(
                line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .filter(|w| {
                        w.starts_with("--") && w[2..].starts_with(|c: char| c.is_ascii_alphabetic())
                    })
                    .map(String::from),
            );
        }
    }
    found
}

/// Why a command line does not parse with steptop's definition, if it does not; `partial`
/// lets it leave out required arguments.
fn parse_error(line: &str, partial: bool) -> Option<String> {
    use clap::error::ErrorKind;
    match steptop::Cli::try_parse_from(words(line)) {
        Ok(_) => None,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => None,
        Err(e) if partial && e.kind() == ErrorKind::MissingRequiredArgument => None,
        Err(e) => Some(e.to_string()),
    }
}

#[test]
fn every_command_line_parses() {
    let mut broken = Vec::new();
    let mut seen = 0;
    for page in pages() {
        let text = read(&page);
        let lines = commands(&text).into_iter().map(|l| (l, false));
        for (line, partial) in lines.chain(inline_commands(&text).into_iter().map(|l| (l, true))) {
            seen += 1;
            if let Some(why) = parse_error(&line, partial) {
                broken.push(format!("{}: `{line}`: {why}", page.display()));
            }
        }
    }
    assert!(seen >= 40, "only {seen} command lines found");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// Every long flag of steptop and of its subcommands.
fn flags() -> Vec<String> {
    fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
        out.extend(
            cmd.get_arguments()
                .filter_map(clap::Arg::get_long)
                .map(|l| format!("--{l}")),
        );
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out = vec!["--help".to_string(), "--version".to_string()];
    walk(&steptop::Cli::command(), &mut out);
    out
}

/// `--flag` spans in backticks, alone or leading a span (`--format json`).
fn named_flags(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|span| {
            let first = span.split(|c: char| c.is_whitespace() || c == '=').next()?;
            (first.starts_with("--")
                && first.len() > 2
                && first[2..].starts_with(char::is_alphabetic))
            .then(|| first.to_string())
        })
        .collect()
}

/// `[section] key` as the pages name config keys (`[diagnose] target-samples-per-s`).
fn named_keys(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for span in text.split('`').skip(1).step_by(2) {
        let Some(rest) = span.strip_prefix('[') else {
            continue;
        };
        let Some((section, key)) = rest.split_once("] ") else {
            continue;
        };
        let key = key.split([' ', '=']).next().unwrap_or("");
        let simple = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-' || b == b'.')
        };
        if simple(section) && simple(key) {
            out.push((section.to_string(), key.to_string()));
        }
    }
    out
}

/// Every `[section] key` of the documented config, the keys left commented out included.
fn config_keys(text: &str) -> Vec<(String, String)> {
    let mut section = String::new();
    let mut keys = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(s) = l.strip_prefix('[') {
            section = s.trim_end_matches(']').to_string();
            continue;
        }
        let l = l.trim_start_matches('#').trim();
        if let Some((key, _)) = l.split_once(" = ")
            && !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            keys.push((section.clone(), key.to_string()));
        }
    }
    keys
}

#[test]
fn every_flag_and_config_key_named_exists() {
    let flags = flags();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_steptop"))
        .args(["config", "--default"])
        .output()
        .expect("steptop config --default");
    let keys = config_keys(&String::from_utf8_lossy(&out.stdout));
    assert!(keys.len() >= 15, "{keys:?}");
    let mut unknown = Vec::new();
    for page in pages() {
        let text = read(&page);
        for flag in named_flags(&text) {
            // Cargo's, the trainer's and other tools' flags are named as commands' too.
            let others = [
                "--release",
                "--profile",
                "--test",
                "--lib",
                "--bin",
                "--all-targets",
                "--check",
            ];
            if !flags.contains(&flag) && !others.contains(&flag.as_str()) {
                unknown.push(format!("{}: flag {flag}", page.display()));
            }
        }
        for flag in synopsis_flags(&text) {
            if !flags.contains(&flag) {
                unknown.push(format!("{}: synopsis flag {flag}", page.display()));
            }
        }
        for (section, key) in named_keys(&text) {
            if !keys.contains(&(section.clone(), key.clone())) {
                unknown.push(format!("{}: config key [{section}] {key}", page.display()));
            }
        }
    }
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
}

#[test]
fn the_changelog_names_the_version_steptop_prints() {
    let text = read(&root().join("CHANGELOG.md"));
    let released = text
        .lines()
        .filter_map(|l| l.strip_prefix("## ["))
        .map(|l| l.split(']').next().unwrap_or(""))
        .find(|v| *v != "Unreleased")
        .expect("a released version");
    assert_eq!(released, env!("CARGO_PKG_VERSION"));
    let version = steptop::Cli::command().render_version();
    assert!(version.contains(released), "{version}");
}

/// The checks fail where they should: a broken link, a removed flag, a mistyped command.
#[test]
fn the_checks_catch_a_broken_link_and_a_removed_flag() {
    let page = root().join("README.md");
    let broken = missing_paths(
        &page,
        "see [the guide](docs/no-such-page.md) and `src/nowhere/`",
    );
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(parse_error("steptop report --fromat json run1.log", false).is_some());
    assert!(parse_error("steptop report --format json run1.log", false).is_none());
    assert!(parse_error("steptop report", false).is_some());
    assert!(parse_error("steptop report", true).is_none());
    assert!(
        parse_error(
            "steptop replay --speed max --headless 'logs/rank*.log' | jq .",
            false
        )
        .is_none()
    );
    assert_eq!(
        synopsis_flags("```\nsteptop report [--no-such-flag] LOG\n```\n"),
        ["--no-such-flag"]
    );
    assert!(!flags().contains(&"--no-such-flag".to_string()));
    assert_eq!(
        named_flags("use `--no-such-flag` or `--format json`"),
        ["--no-such-flag", "--format"]
    );
}

/// The README's capture of the live view is the render test's, so it is what steptop draws now.
#[test]
fn the_readme_shows_the_view_steptop_draws() {
    let readme = read(&root().join("README.md"));
    let capture = read(&root().join("tests/snapshots/data_loading_bound_80x24.txt"));
    assert!(
        readme.contains(&format!("```text\n{capture}```")),
        "README.md's capture differs from tests/snapshots/data_loading_bound_80x24.txt"
    );
}
