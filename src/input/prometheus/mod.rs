//! Prometheus's HTTP API, as `steptop cluster` reads it: instant and range queries, sent as
//! forms (a selector of many hosts outgrows a URL), with basic auth or a bearer token, over
//! http or https. `answer` turns the JSON into typed series; this file does the I/O.

pub mod answer;

use std::time::Duration;

use std::sync::Arc;

use base64::Engine;
pub use ureq::tls::Certificate;
use ureq::tls::{PemItem, parse_pem};

pub use answer::{Answer, Series};

/// How a request proves who sends it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Auth {
    #[default]
    None,
    Basic {
        user: String,
        password: String,
    },
    Bearer(String),
}

/// Why a query gave no answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub message: String,
    /// No answer came (refused, reset, timed out): worth another try. An answer that says
    /// no (a bad query, refused credentials) will say it again.
    pub transient: bool,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// One Prometheus server.
pub struct Prometheus {
    agent: ureq::Agent,
    /// The URL with no trailing slash: `/api/v1/query` is added to it.
    base: String,
    authorization: Option<String>,
}

/// The largest answer read: a range query over thousands of series stays far under it.
const MAX_ANSWER: u64 = 256 * 1024 * 1024;

impl Prometheus {
    /// A client for `url` (`http://prom:9090`, `https://host/prometheus`); nothing is sent yet.
    /// `ca`: the certificates an https server's must chain to, for a cluster's own CA (else
    /// the public roots of webpki-roots).
    pub fn new(
        url: &str,
        auth: Auth,
        ca: Option<Vec<Certificate<'static>>>,
        timeout: Duration,
    ) -> Result<Prometheus, String> {
        let base = url.trim().trim_end_matches('/');
        let rest = base
            .strip_prefix("http://")
            .or_else(|| base.strip_prefix("https://"))
            .ok_or_else(|| {
                format!("--prometheus {url}: not an http:// or https:// URL (try http://HOST:9090)")
            })?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(format!("--prometheus {url}: the URL names no host"));
        }
        let mut config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            // Prometheus answers errors (a bad query, a timeout) in JSON with a 4xx or 5xx:
            // they are read, not turned into a bare status.
            .http_status_as_error(false);
        if let Some(certs) = ca {
            config = config.tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::Specific(Arc::new(certs)))
                    .build(),
            );
        }
        let agent = config.build().new_agent();
        let authorization = match auth {
            Auth::None => None,
            Auth::Basic { user, password } => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            )),
            Auth::Bearer(token) => Some(format!("Bearer {}", token.trim())),
        };
        Ok(Prometheus {
            agent,
            base: base.to_string(),
            authorization,
        })
    }

    pub fn url(&self) -> &str {
        &self.base
    }

    /// An instant query, evaluated at Prometheus's own now.
    pub fn instant(&self, query: &str) -> Result<Answer, Failure> {
        self.post("query", &[("query", query)])
    }

    /// A range query from `start` to `end` (Unix seconds) every `step` seconds.
    pub fn range(&self, query: &str, start: f64, end: f64, step: f64) -> Result<Answer, Failure> {
        let (start, end, step) = (
            format!("{start:.3}"),
            format!("{end:.3}"),
            format!("{step}"),
        );
        self.post(
            "query_range",
            &[
                ("query", query),
                ("start", &start),
                ("end", &end),
                ("step", &step),
            ],
        )
    }

    fn post(&self, endpoint: &str, form: &[(&str, &str)]) -> Result<Answer, Failure> {
        let url = format!("{}/api/v1/{endpoint}", self.base);
        let mut req = self.agent.post(&url);
        if let Some(a) = &self.authorization {
            req = req.header("Authorization", a);
        }
        let no_answer = |message: String| Failure {
            message,
            transient: true,
        };
        let mut resp = req.send_form(form.iter().copied()).map_err(|e| {
            let hint = if e.to_string().contains("certificate") {
                " (signed by the cluster's own CA? give its PEM file as STEPTOP_PROMETHEUS_CA \
                 or [cluster] ca-file)"
            } else {
                ""
            };
            Failure {
                message: format!("{}: {e}{hint}", self.base),
                transient: transient(&e),
            }
        })?;
        let status = resp.status();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .lossy_utf8(true)
            .read_to_string()
            .map_err(|e| no_answer(format!("{url}: reading the answer: {e}")))?;
        let said_no = |message: String| Failure {
            message,
            // A gateway or an overloaded Prometheus may answer the next time.
            transient: matches!(status.as_u16(), 502..=504),
        };
        answer::parse(&body).map_err(|e| {
            said_no(match status.as_u16() {
                401 | 403 => format!(
                    "{url}: HTTP {status}: Prometheus refused the credentials (set \
                 STEPTOP_PROMETHEUS_TOKEN, or STEPTOP_PROMETHEUS_USER and \
                 STEPTOP_PROMETHEUS_PASSWORD)"
                ),
                200 => format!("{url}: {e}"),
                _ => format!("{url}: HTTP {status}: {e}"),
            })
        })
    }
}

/// The certificates of a PEM file (its keys, if any, left aside).
pub fn certificates(pem: &[u8]) -> Result<Vec<Certificate<'static>>, String> {
    let mut out = Vec::new();
    for item in parse_pem(pem) {
        match item.map_err(|e| format!("not a PEM file: {e}"))? {
            PemItem::Certificate(c) => out.push(c),
            _ => continue,
        }
    }
    if out.is_empty() {
        return Err("no certificate in it (a PEM file of BEGIN CERTIFICATE blocks)".into());
    }
    Ok(out)
}

/// Whether another try may get an answer: a connection refused, reset or timed out may; a
/// certificate that does not verify (rustls says so as invalid data) or a bad URL will not.
fn transient(e: &ureq::Error) -> bool {
    use ureq::Error as E;
    match e {
        E::Io(io) => io.kind() != std::io::ErrorKind::InvalidData,
        E::Timeout(_) | E::HostNotFound | E::ConnectionFailed | E::BodyStalled => true,
        _ => false,
    }
}
