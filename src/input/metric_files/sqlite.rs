//! A tracker's SQLite store opened as steptop opens every one: read-only and immutable, so that
//! reading takes no lock and writes no journal or shared-memory file beside the user's store
//! while the tracker may be writing it. (Rows still in the store's write-ahead log are then
//! not seen: the price of never writing there.)

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// The tables of the SQLite file at `path`, in one query; none for a file SQLite cannot
/// open. Which tracker's store it is follows from them.
pub fn table_names(path: &Path) -> Vec<String> {
    let Ok(c) = open(path) else {
        return Vec::new();
    };
    let Ok(mut query) = c.prepare("SELECT name FROM sqlite_master WHERE type = 'table'") else {
        return Vec::new();
    };
    query
        .query_map([], |r| r.get::<_, String>(0))
        .map(|rows| rows.filter_map(Result::ok).collect())
        .unwrap_or_default()
}

/// Whether `names` (a store's tables) hold every one of `tables`.
pub fn holds(names: &[String], tables: &[&str]) -> bool {
    tables.iter().all(|t| names.iter().any(|n| n == t))
}

pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let uri = format!("file:{}?immutable=1", uri_path(path));
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// A path as a `file:` URI's path: the characters a URI gives a meaning escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '?' | '#' | '%' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The text of the first column of the query's first row; None when it has no row.
pub fn first_text(c: &Connection, sql: &str) -> rusqlite::Result<Option<String>> {
    match c.query_row(sql, [], |r| r.get(0)) {
        Ok(text) => Ok(Some(text)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e),
    }
}
