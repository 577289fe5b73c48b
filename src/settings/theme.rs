//! Themes: TOML files of semantic roles (ok, warn, crit, muted, ...). Panes ask for a role and
//! never name a colour. The built-in themes are the files in `themes/`, compiled in and parsed
//! by the same code as a user's `--theme FILE`, which may set a few roles and inherits the rest.

use std::path::{Path, PathBuf};

use ratatui::style::{Color, Modifier, Style};

use crate::common::error::Error;

/// What a piece of the screen means; each theme gives every role a style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Text,
    Muted,
    Title,
    Ok,
    Info,
    Warn,
    Crit,
    Border,
    BorderFocused,
    Selected,
    Chart,
    ChartAlt,
    Data,
    Forward,
    Unlogged,
}

/// Every role with its key in a theme file, in the order of `Role`.
const ROLES: [(Role, &str); 15] = [
    (Role::Text, "text"),
    (Role::Muted, "muted"),
    (Role::Title, "title"),
    (Role::Ok, "ok"),
    (Role::Info, "info"),
    (Role::Warn, "warn"),
    (Role::Crit, "crit"),
    (Role::Border, "border"),
    (Role::BorderFocused, "border-focused"),
    (Role::Selected, "selected"),
    (Role::Chart, "chart"),
    (Role::ChartAlt, "chart-alt"),
    (Role::Data, "data"),
    (Role::Forward, "forward"),
    (Role::Unlogged, "unlogged"),
];

/// The themes that ship with steptop, by name; `default` is the base of all others.
pub const BUILTIN: [(&str, &str); 4] = [
    ("default", include_str!("../../themes/default.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("mono", include_str!("../../themes/mono.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

/// A style for every role, and the name the user knows the theme by.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub name: String,
    styles: [Style; ROLES.len()],
}

impl Theme {
    pub fn style(&self, role: Role) -> Style {
        self.styles[role as usize]
    }

    /// A built-in theme by name, a theme file by path, or one of the user's themes by name
    /// (`~/.config/steptop/themes/NAME.toml`): what `--theme` takes.
    pub fn load(name_or_file: &str) -> Result<Theme, Error> {
        let user = crate::settings::user_files::Env::from_env().theme_file(name_or_file);
        Theme::load_with(name_or_file, user)
    }

    /// `load`, with the user's theme file for that name given (None: no config directory).
    pub fn load_with(name_or_file: &str, user: Option<PathBuf>) -> Result<Theme, Error> {
        if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_file) {
            return Theme::parse(name, text);
        }
        let mut path = Path::new(name_or_file).to_path_buf();
        if !path.exists()
            && !name_or_file.contains('/')
            && let Some(p) = user.as_ref().filter(|p| p.exists())
        {
            path.clone_from(p);
        }
        if !path.exists() {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            let mine = user.map_or_else(String::new, |p| format!(", nor {}", p.display()));
            return Err(Error::Usage(format!(
                "--theme '{name_or_file}': not a built-in theme ({}) nor a file{mine}",
                names.join(", ")
            )));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::Usage(format!("cannot read theme {}: {e}", path.display())))?;
        Theme::parse(name_or_file, &text)
    }

    /// The theme to start with: `--theme` if given, else `mono` when NO_COLOR is set
    /// (no-color.org: any non-empty value), else the default.
    pub fn choose(arg: Option<&str>, no_color: Option<&str>) -> Result<Theme, Error> {
        match arg {
            Some(a) => Theme::load(a),
            None if no_color.is_some_and(|v| !v.is_empty()) => Theme::load("mono"),
            None => Theme::load("default"),
        }
    }

    /// Parses a theme file's text. `name` (the built-in name or the path) goes into errors.
    pub fn parse(name: &str, text: &str) -> Result<Theme, Error> {
        let bad = |what: String| Error::Usage(format!("theme {name}: {what}"));
        let table: toml::Table = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        let mut base = match table.get("inherits") {
            None if name == "default" => Theme {
                name: String::new(),
                styles: [Style::new(); ROLES.len()],
            },
            None => Theme::load("default")?,
            Some(toml::Value::String(b)) if b != name && BUILTIN.iter().any(|(n, _)| n == b) => {
                Theme::load(b)?
            }
            Some(v) => {
                return Err(bad(format!(
                    "inherits = {}: must name a built-in theme (default, light, mono, high-contrast)",
                    shown(v)
                )));
            }
        };
        for key in table.keys() {
            if key != "roles" && key != "inherits" {
                return Err(bad(format!(
                    "unknown key '{key}' (a theme has `inherits` and a [roles] table)"
                )));
            }
        }
        let roles = match table.get("roles") {
            Some(toml::Value::Table(t)) => t.clone(),
            Some(_) => return Err(bad("'roles' must be a table: [roles]".into())),
            None => toml::Table::new(),
        };
        for (key, value) in &roles {
            let Some((role, _)) = ROLES.iter().find(|(_, k)| k == key) else {
                let known: Vec<&str> = ROLES.iter().map(|(_, k)| *k).collect();
                return Err(bad(format!(
                    "unknown role 'roles.{key}' (roles: {})",
                    known.join(", ")
                )));
            };
            let words = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                other => {
                    return Err(bad(format!(
                        "roles.{key} = {}: a role is a string like \"bold red\"",
                        shown(other)
                    )));
                }
            };
            base.styles[*role as usize] =
                parse_style(&words).map_err(|e| bad(format!("roles.{key} = '{words}': {e}")))?;
        }
        base.name = name.to_string();
        Ok(base)
    }
}

/// `"bold light-red on black"`: colour words, modifiers, and `on` before a background.
fn parse_style(words: &str) -> Result<Style, String> {
    let mut style = Style::new();
    let mut on = false;
    let mut any = false;
    for w in words.split_whitespace() {
        any = true;
        if w == "on" {
            on = true;
            continue;
        }
        if let Some(m) = modifier(w) {
            style = style.add_modifier(m);
            continue;
        }
        let c = color(w).ok_or_else(|| {
            format!(
                "'{w}' is not a colour (an ANSI name like red or light-blue, or 0-255) nor a \
                 modifier (bold, dim, italic, underlined, reversed)"
            )
        })?;
        style = if on { style.bg(c) } else { style.fg(c) };
        on = false;
    }
    if on {
        return Err("'on' must be followed by a colour".into());
    }
    if !any {
        return Err("empty; use \"reset\" for the terminal's own colour".into());
    }
    Ok(style)
}

/// A TOML value as the user wrote it, near enough for an error message.
fn shown(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("'{s}'"),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(x) => x.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => format!("a {}", other.type_str()),
    }
}

fn modifier(w: &str) -> Option<Modifier> {
    Some(match w {
        "bold" => Modifier::BOLD,
        "dim" => Modifier::DIM,
        "italic" => Modifier::ITALIC,
        "underlined" => Modifier::UNDERLINED,
        "reversed" => Modifier::REVERSED,
        _ => return None,
    })
}

fn color(w: &str) -> Option<Color> {
    if let Ok(i) = w.parse::<u8>() {
        return Some(Color::Indexed(i));
    }
    Some(match w {
        "reset" | "default" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "dark-gray" | "dark-grey" => Color::DarkGray,
        "light-red" => Color::LightRed,
        "light-green" => Color::LightGreen,
        "light-yellow" => Color::LightYellow,
        "light-blue" => Color::LightBlue,
        "light-magenta" => Color::LightMagenta,
        "light-cyan" => Color::LightCyan,
        "white" => Color::White,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_sets_every_role() {
        for (name, text) in BUILTIN {
            let table: toml::Table = toml::from_str(text).unwrap();
            let roles = table["roles"].as_table().unwrap();
            for (_, key) in ROLES {
                assert!(roles.contains_key(key), "{name} lacks {key}");
            }
            Theme::load(name).unwrap();
        }
    }

    #[test]
    fn builtins_use_only_the_sixteen_ansi_colours() {
        for (name, _) in BUILTIN {
            let t = Theme::load(name).unwrap();
            for s in t.styles {
                for c in [s.fg, s.bg].into_iter().flatten() {
                    assert!(
                        !matches!(c, Color::Indexed(_) | Color::Rgb(..)),
                        "{name}: {c:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_user_theme_sets_a_few_roles_and_inherits_the_rest() {
        let t = Theme::parse(
            "mine.toml",
            "inherits = \"light\"\n[roles]\nwarn = \"208 bold\"\n",
        )
        .unwrap();
        let light = Theme::load("light").unwrap();
        assert_eq!(
            t.style(Role::Warn),
            Style::new()
                .fg(Color::Indexed(208))
                .add_modifier(Modifier::BOLD)
        );
        assert_eq!(t.style(Role::Crit), light.style(Role::Crit));
        let plain = Theme::parse("mine.toml", "[roles]\nok = \"white on blue\"\n").unwrap();
        assert_eq!(
            plain.style(Role::Ok),
            Style::new().fg(Color::White).bg(Color::Blue)
        );
        assert_eq!(
            plain.style(Role::Crit),
            Theme::load("default").unwrap().style(Role::Crit)
        );
    }

    #[test]
    fn a_bad_theme_names_the_file_and_the_key() {
        let err = |text: &str| Theme::parse("t.toml", text).unwrap_err().to_string();
        assert!(err("[roles]\nwarn = \"yelow\"\n").contains("theme t.toml: roles.warn = 'yelow'"));
        assert!(err("[roles]\nwarning = \"red\"\n").contains("unknown role 'roles.warning'"));
        assert!(err("[roles]\nok = true\n").contains("roles.ok = true"));
        assert!(err("colours = 1\n").contains("unknown key 'colours'"));
        assert!(err("inherits = \"solarized\"\n").contains("inherits"));
        assert!(err("[roles]\nok = \"red on\"\n").contains("'on' must be followed"));
        assert!(err("[roles\n").contains("theme t.toml"));
    }

    #[test]
    fn no_color_picks_mono_unless_a_theme_is_named() {
        assert_eq!(Theme::choose(None, Some("1")).unwrap().name, "mono");
        assert_eq!(Theme::choose(None, Some("")).unwrap().name, "default");
        assert_eq!(
            Theme::choose(Some("light"), Some("1")).unwrap().name,
            "light"
        );
        // A bare name is looked for among the user's themes after the built-in ones.
        let dir = tempfile::tempdir().expect("tempdir");
        let dusk = dir.path().join("dusk.toml");
        std::fs::write(&dusk, "inherits = \"light\"\n").expect("write");
        assert!(Theme::load_with("dusk", Some(dusk.clone())).is_ok());
        let e = Theme::load_with("dawn", Some(dir.path().join("dawn.toml")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("dawn.toml"), "{e}");
        let e = Theme::choose(Some("nope"), None).unwrap_err().to_string();
        assert!(
            e.contains("--theme 'nope'") && e.contains("high-contrast"),
            "{e}"
        );
    }
}
