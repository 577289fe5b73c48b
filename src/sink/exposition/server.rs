//! The `/metrics` endpoint: a plain HTTP/1.1 listener on its own thread that serves the latest
//! published exposition to GET /metrics and nothing else. Each connection gets a short-lived
//! thread with read and write timeouts, and only so many run at once, so a bad request or a
//! slow client costs one connection, never the monitor (which only ever swaps the text).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::Endpoint;
use crate::common::error::Error;

/// Connections served at once; more are closed at once.
const MAX_CONNECTIONS: usize = 16;
/// The longest a request head may be.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request, and to take the answer.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Listens on `addr` and serves `endpoint` from a thread. Returns the address bound (the
/// port, when `addr` asked for port 0).
pub fn serve(addr: SocketAddr, endpoint: Endpoint) -> Result<SocketAddr, Error> {
    let listener = TcpListener::bind(addr).map_err(|e| {
        Error::Usage(format!(
            "--metrics-addr {addr}: cannot listen there ({e}); pick a free port"
        ))
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::Runtime(format!("--metrics-addr {addr}: {e}")))?;
    let busy = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("steptop-metrics".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(stream) = conn else {
                    // Out of descriptors, or a connection reset before accept: wait a moment.
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                };
                if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    busy.fetch_sub(1, Ordering::SeqCst);
                    continue;
                }
                let (busy, endpoint) = (busy.clone(), endpoint.clone());
                let spawned = std::thread::Builder::new()
                    .name("steptop-scrape".into())
                    .spawn(move || {
                        let _ = answer(stream, &endpoint);
                        busy.fetch_sub(1, Ordering::SeqCst);
                    });
                if spawned.is_err() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        })
        .map_err(|e| Error::Runtime(format!("cannot start the metrics thread: {e}")))?;
    Ok(bound)
}

/// Reads one request and answers it; the connection then closes.
fn answer(mut stream: TcpStream, endpoint: &Endpoint) -> std::io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let head = match read_head(&mut stream) {
        Ok(Some(head)) => head,
        Ok(None) => return respond(&mut stream, "431 Request Header Fields Too Large", ""),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            return respond(&mut stream, "408 Request Timeout", "");
        }
        Err(e) => return Err(e),
    };
    match route(&head) {
        Route::Metrics => {
            let body = endpoint.current();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes())?;
            stream.write_all(body.as_bytes())?;
            stream.flush()
        }
        Route::NotFound => respond(&mut stream, "404 Not Found", "only /metrics is served\n"),
        Route::BadMethod => respond(&mut stream, "405 Method Not Allowed", "GET only\n"),
        Route::Bad => respond(&mut stream, "400 Bad Request", "not an HTTP request\n"),
    }
}

/// The request head up to its blank line; None when it is longer than `MAX_HEAD`.
fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(Some(head));
        }
        head.extend_from_slice(&buf[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            return Ok(Some(head));
        }
        if head.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

#[derive(Debug, PartialEq)]
enum Route {
    Metrics,
    NotFound,
    BadMethod,
    Bad,
}

/// What a request head asks for.
fn route(head: &[u8]) -> Route {
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Route::Bad;
    };
    if !version.starts_with("HTTP/1.") {
        return Route::Bad;
    }
    let path = target.split('?').next().unwrap_or(target);
    match (method, path) {
        ("GET", "/metrics") => Route::Metrics,
        (_, "/metrics") => Route::BadMethod,
        _ => Route::NotFound,
    }
}

fn respond(stream: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route(b"GET /metrics HTTP/1.1\r\n\r\n"), Route::Metrics);
        assert_eq!(route(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"), Route::Metrics);
        assert_eq!(route(b"POST /metrics HTTP/1.1\r\n\r\n"), Route::BadMethod);
        assert_eq!(route(b"GET / HTTP/1.1\r\n\r\n"), Route::NotFound);
        assert_eq!(route(b"\x16\x03\x01 garbage"), Route::Bad);
        assert_eq!(route(b""), Route::Bad);
    }
}
