//! A tracker's SQLite store opened as steptop opens every one: read-only and immutable, so that
//! reading takes no lock and writes no journal or shared-memory file beside the user's store
//! while the tracker may be writing it. (Rows still in the store's write-ahead log are then
//! not seen: the price of never writing there.)

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// Whether the SQLite file at `path` holds every one of `tables`.
pub fn has_tables(path: &Path, tables: &[&str]) -> bool {
    open(path).is_ok_and(|c| {
        tables.iter().all(|t| {
            c.query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [t],
                |r| r.get::<_, i64>(0),
            )
            .is_ok_and(|n| n == 1)
        })
    })
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
