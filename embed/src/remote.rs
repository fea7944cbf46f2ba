//! An embedding model behind an OpenAI-compatible server (`POST {URL}/v1/embeddings`): OpenAI's
//! own, Hugging Face's text-embeddings-inference, Ollama, vLLM, LiteLLM. The operator names it
//! (`--embeddings URL`, `--embeddings-model NAME`); naming it is its grant, and the credential the
//! operator bound to its origin is added here, by the host: no plugin ever holds it.
//!
//! One [`RemoteModel`] per process, shared: a blocking HTTP client (its calls come from index
//! builds and from plugin calls, both on blocking threads), the dimensions learnt from the server
//! at start (or the operator's, checked against the server's answer), and a bounded cache of
//! question vectors ([`QuestionCache`]). Every vector is L2-normalised here, whatever the server
//! does, so that `nearest`'s dot product is the cosine similarity.

use std::io::Read;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::question_cache::QuestionCache;

/// Most texts one request carries (the operator's batch size is at most this).
pub const MAX_BATCH: usize = 2048;
/// Most dimensions a model's vectors may have.
pub const MAX_DIMENSIONS: usize = 8192;
/// Longest text sent, in bytes (cut at a character boundary), as the shipped model reads.
pub const MAX_REMOTE_TEXT_BYTES: usize = super::MAX_TEXT_BYTES;
/// Longest error message kept from a server's answer, in bytes.
const MAX_MESSAGE_BYTES: usize = 300;
/// Longest `Retry-After` honoured: a server asking for more is waited this long.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// The operator's settings of a remote model.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// The server's base URL (`http(s)://host[:port][/prefix]`); requests go to
    /// `{url}/v1/embeddings` (a URL ending in `/v1` is taken as that prefix already).
    pub url: String,
    /// The model the server is asked for (`model` in the request).
    pub model: String,
    /// Dimensions asked for (`dimensions` in the request, for models that can shorten their
    /// vectors); `None`: the model's own, learnt from its first answer.
    pub dimensions: Option<usize>,
    /// Headers added to every request (the credential bound to the server's origin), values
    /// never shown.
    pub headers: Vec<(String, String)>,
    /// Texts per request when an index is built (1..=[`MAX_BATCH`]).
    pub batch: usize,
    /// Requests in flight at once when an index is built.
    pub in_flight: usize,
    /// Longest wait to connect.
    pub connect_timeout: Duration,
    /// Longest a request may take, from sending to the end of the answer.
    pub timeout: Duration,
    /// Retries of one batch when an index is built (a 408, 429, 5xx, a timeout or a refused
    /// connection), with exponential backoff that honours `Retry-After`.
    pub retries: u32,
    /// Question vectors kept (most recently used), 0 for none.
    pub question_cache: usize,
}

/// Defaults a team would start from: batches of 64, two in flight, a minute per request, eight
/// retries (about 4 minutes of backoff, longer if the server asks for it), 4,096 questions kept.
impl RemoteOptions {
    /// Settings for `model` at `url`, every bound at its default.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            model: model.into(),
            dimensions: None,
            headers: Vec::new(),
            batch: 64,
            in_flight: 2,
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(60),
            retries: 8,
            question_cache: 4096,
        }
    }
}

/// Why a remote model could not embed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RemoteError {
    /// The settings are wrong (a URL that is not one, a header that cannot be sent).
    #[error("--embeddings: {0}")]
    Settings(String),
    /// No connection (refused, no route, the name does not resolve).
    #[error("the embedding server {origin} could not be reached")]
    Unreachable {
        /// The server's origin.
        origin: String,
    },
    /// No answer in time.
    #[error("the embedding server {origin} did not answer within {} ms", .after.as_millis())]
    Timeout {
        /// The server's origin.
        origin: String,
        /// The request's timeout.
        after: Duration,
    },
    /// An answer that is not a success.
    #[error("the embedding server {origin} answered {status}{}", message_suffix(.message))]
    Status {
        /// The server's origin.
        origin: String,
        /// The HTTP status.
        status: u16,
        /// How long it asked to be left alone (`Retry-After`), at most [`MAX_RETRY_AFTER`].
        retry_after: Option<Duration>,
        /// Its error message (OpenAI's `error.message`), cut short.
        message: Option<String>,
    },
    /// A success that is not an embeddings answer for the texts sent.
    #[error("the embedding server {origin} answered what is not an embeddings response: {reason}")]
    Malformed {
        /// The server's origin.
        origin: String,
        /// What was wrong with it.
        reason: String,
    },
}

fn message_suffix(message: &Option<String>) -> String {
    message
        .as_ref()
        .map(|m| format!(": {m}"))
        .unwrap_or_default()
}

impl RemoteError {
    /// Whether trying again later may succeed: the server was busy, down or slow.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Unreachable { .. } | Self::Timeout { .. } => true,
            Self::Status { status, .. } => {
                matches!(status, 408 | 425 | 429 | 500 | 502 | 503 | 504)
            }
            Self::Settings(_) | Self::Malformed { .. } => false,
        }
    }

    /// How long the server asked to be left alone.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// What is sent.
#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [&'a str],
    encoding_format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<usize>,
}

/// What is read back (other fields are ignored).
#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: ErrorDetail,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorDetail {
    Object { message: String },
    Text(String),
}

/// A model behind an OpenAI-compatible embeddings server.
pub struct RemoteModel {
    options: RemoteOptions,
    endpoint: String,
    origin: String,
    client: reqwest::blocking::Client,
    dims: usize,
    identity: String,
    fingerprint: String,
    questions: QuestionCache,
}

impl std::fmt::Debug for RemoteModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the headers: they hold the credential.
        f.debug_struct("RemoteModel")
            .field("endpoint", &self.endpoint)
            .field("model", &self.options.model)
            .field("dims", &self.dims)
            .finish_non_exhaustive()
    }
}

impl RemoteModel {
    /// Connects to the server and learns the model's dimensions from one request (a short
    /// text), retried as an index build's batches are: a start waits for a server that is
    /// starting too.
    pub fn connect(options: RemoteOptions) -> Result<Self, RemoteError> {
        let (endpoint, origin) = endpoint_of(&options.url)?;
        if options.model.is_empty() {
            return Err(RemoteError::Settings("--embeddings-model is empty".into()));
        }
        if options.batch == 0 || options.batch > MAX_BATCH {
            return Err(RemoteError::Settings(format!(
                "batch of {}: 1..={MAX_BATCH}",
                options.batch
            )));
        }
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &options.headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| RemoteError::Settings(format!("header {name:?} is not a name")))?;
            let mut value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| RemoteError::Settings(format!("header {name} has no valid value")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let client = reqwest::blocking::Client::builder()
            .default_headers(headers)
            .connect_timeout(options.connect_timeout)
            .timeout(options.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(options.in_flight.max(1) * 2)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| RemoteError::Settings(format!("HTTP client: {e}")))?;
        let mut model = Self {
            endpoint,
            origin,
            client,
            dims: 0,
            identity: String::new(),
            fingerprint: String::new(),
            questions: QuestionCache::new(options.question_cache),
            options,
        };
        let probe = model.embed_retrying(&["dimensions"], &mut |_, _| {})?;
        let dims = probe.first().map_or(0, Vec::len);
        if dims == 0 || dims > MAX_DIMENSIONS {
            return Err(model.malformed(format!(
                "vectors of {dims} dimensions (1..={MAX_DIMENSIONS})"
            )));
        }
        model.dims = dims;
        // The model's identity: what it is asked for and what it answers, not where it runs
        // (a server moved keeps its vectors).
        model.identity = format!(
            "openai-compatible model={} dimensions={dims}",
            model.options.model
        );
        model.fingerprint = hex::encode(Sha256::digest(model.identity.as_bytes()));
        Ok(model)
    }

    /// The model's name, as asked of the server.
    pub fn name(&self) -> &str {
        &self.options.model
    }

    /// Where requests go (no credential in it: a URL with userinfo is refused).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The server's origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Dimensions of every vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The model's identity (its name and dimensions), which keys its vectors.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// sha256 (hex) of [`Self::identity`].
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The settings it runs with.
    pub fn options(&self) -> &RemoteOptions {
        &self.options
    }

    /// The question cache's counts: (hits, misses, entries).
    pub fn question_cache_counts(&self) -> (u64, u64, usize) {
        self.questions.counts()
    }

    /// One request for `texts` (at most [`MAX_BATCH`]), no retry: one unit vector (or all
    /// zeros) per text, in order.
    pub fn embed_once(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, RemoteError> {
        let cut: Vec<&str> = texts.iter().map(|t| sent_text(t)).collect();
        let body = EmbeddingsRequest {
            model: &self.options.model,
            input: &cut,
            encoding_format: "float",
            dimensions: self.options.dimensions,
        };
        let response = self
            .client
            .post(&self.endpoint)
            .json(&body)
            .send()
            .map_err(|e| self.transport(&e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        // Bounded: the vectors asked for, as JSON, and room for the rest.
        let dims = if self.dims == 0 {
            MAX_DIMENSIONS
        } else {
            self.dims
        };
        let limit = (texts.len() * dims * 32 + (1 << 20)) as u64;
        let mut bytes = Vec::new();
        response
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| {
                if is_timeout(&e) {
                    RemoteError::Timeout {
                        origin: self.origin.clone(),
                        after: self.options.timeout,
                    }
                } else {
                    self.malformed(format!("the body could not be read: {e}"))
                }
            })?;
        if !status.is_success() {
            let message = serde_json::from_slice::<ErrorResponse>(&bytes)
                .ok()
                .map(|e| match e.error {
                    ErrorDetail::Object { message } | ErrorDetail::Text(message) => message,
                })
                .map(|m| sanitize(&m));
            return Err(RemoteError::Status {
                origin: self.origin.clone(),
                status: status.as_u16(),
                retry_after,
                message,
            });
        }
        if bytes.len() as u64 > limit {
            return Err(self.malformed(format!("a body of more than {limit} bytes")));
        }
        let parsed: EmbeddingsResponse =
            serde_json::from_slice(&bytes).map_err(|e| self.malformed(sanitize(&e.to_string())))?;
        self.vectors_in_order(parsed, texts.len())
    }

    /// [`Self::embed_once`], tried again after a transient failure up to the settings'
    /// retries, waiting as [`backoff`] says; `waiting` hears of each wait before it starts.
    pub fn embed_retrying(
        &self,
        texts: &[&str],
        waiting: &mut dyn FnMut(&RemoteError, Duration),
    ) -> Result<Vec<Vec<f32>>, RemoteError> {
        let mut attempt = 0;
        loop {
            match self.embed_once(texts) {
                Ok(vectors) => return Ok(vectors),
                Err(error) if error.is_transient() && attempt < self.options.retries => {
                    let wait = backoff(attempt, error.retry_after());
                    waiting(&error, wait);
                    std::thread::sleep(wait);
                    attempt += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Questions' vectors: those kept from earlier questions, the others in one request (no
    /// retry: a plugin call holds its slot while it waits).
    pub fn embed_questions(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, RemoteError> {
        let mut vectors: Vec<Option<Vec<f32>>> =
            texts.iter().map(|t| self.questions.get(t)).collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|i| vectors[*i].is_none()).collect();
        if !missing.is_empty() {
            let asked: Vec<&str> = missing.iter().map(|i| texts[*i].as_str()).collect();
            let got = self.embed_once(&asked)?;
            for (i, v) in missing.into_iter().zip(got) {
                self.questions.put(&texts[i], &v);
                vectors[i] = Some(v);
            }
        }
        Ok(vectors.into_iter().map(Option::unwrap_or_default).collect())
    }

    fn vectors_in_order(
        &self,
        parsed: EmbeddingsResponse,
        expected: usize,
    ) -> Result<Vec<Vec<f32>>, RemoteError> {
        if parsed.data.len() != expected {
            return Err(self.malformed(format!(
                "{} vectors for {expected} texts",
                parsed.data.len()
            )));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        for (position, item) in parsed.data.into_iter().enumerate() {
            let at = item.index.unwrap_or(position);
            let slot = slots
                .get_mut(at)
                .ok_or_else(|| self.malformed(format!("a vector for text {at} of {expected}")))?;
            if slot.is_some() {
                return Err(self.malformed(format!("two vectors for text {at}")));
            }
            let want = self.options.dimensions.unwrap_or(self.dims);
            if want != 0 && item.embedding.len() != want {
                return Err(self.malformed(format!(
                    "a vector of {} dimensions, {want} expected",
                    item.embedding.len()
                )));
            }
            if item.embedding.iter().any(|x| !x.is_finite()) {
                return Err(self.malformed("a vector with a value that is not a number".into()));
            }
            *slot = Some(normalized(item.embedding));
        }
        Ok(slots.into_iter().map(Option::unwrap_or_default).collect())
    }

    fn malformed(&self, reason: String) -> RemoteError {
        RemoteError::Malformed {
            origin: self.origin.clone(),
            reason,
        }
    }

    fn transport(&self, error: &reqwest::Error) -> RemoteError {
        if error.is_timeout() {
            RemoteError::Timeout {
                origin: self.origin.clone(),
                after: self.options.timeout,
            }
        } else {
            RemoteError::Unreachable {
                origin: self.origin.clone(),
            }
        }
    }
}

/// The wait before retry `attempt` (0 for the first): 250 ms doubled each time up to 30 s,
/// with up to a quarter more at random (so that builds sharing a server do not retry in step),
/// or what the server asked for when it asked for longer.
pub fn backoff(attempt: u32, retry_after: Option<Duration>) -> Duration {
    let base = Duration::from_millis(250)
        .saturating_mul(1u32 << attempt.min(7))
        .min(Duration::from_secs(30));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let jitter = base.mul_f64(f64::from(nanos % 1000) / 4000.0);
    (base + jitter).max(retry_after.unwrap_or_default())
}

/// `Retry-After` as seconds or an HTTP date, at most [`MAX_RETRY_AFTER`].
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    let wait = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => httpdate::parse_http_date(value)
            .ok()?
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

/// `{url}/v1/embeddings` and the URL's origin; a URL with a credential in it is refused (bind
/// it with `--outbound-bearer` instead: a URL is logged).
fn endpoint_of(url: &str) -> Result<(String, String), RemoteError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| RemoteError::Settings(format!("{url:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(RemoteError::Settings(
            "the URL must be http(s)://host[:port][/prefix]".into(),
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(RemoteError::Settings(
            "the URL must not carry a credential (bind it with --outbound-bearer ORIGIN=...)"
                .into(),
        ));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(RemoteError::Settings(
            "the URL must have no query or fragment".into(),
        ));
    }
    let origin = parsed.origin().ascii_serialization();
    let base = parsed.as_str().trim_end_matches('/');
    let endpoint = if base.ends_with("/v1") {
        format!("{base}/embeddings")
    } else {
        format!("{base}/v1/embeddings")
    };
    Ok((endpoint, origin))
}

fn is_timeout(error: &std::io::Error) -> bool {
    if error.kind() == std::io::ErrorKind::TimedOut {
        return true;
    }
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
        .is_some_and(reqwest::Error::is_timeout)
}

/// `v` scaled to unit length (a zero vector stays zero).
fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        #[allow(clippy::cast_possible_truncation)]
        let scale = (1.0 / norm) as f32;
        for x in &mut v {
            *x *= scale;
        }
    }
    v
}

/// `text` as a remote model is sent it: cut to [`MAX_REMOTE_TEXT_BYTES`] at a character boundary.
pub fn sent_text(text: &str) -> &str {
    cut_at_boundary(text, MAX_REMOTE_TEXT_BYTES)
}

/// `text` cut to at most `max` bytes at a character boundary.
fn cut_at_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A server's message made safe to log: control characters dropped, cut short.
fn sanitize(message: &str) -> String {
    let clean: String = message.chars().filter(|c| !c.is_control()).collect();
    cut_at_boundary(&clean, MAX_MESSAGE_BYTES).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_derived_and_credentials_in_urls_refused() {
        assert_eq!(
            endpoint_of("http://127.0.0.1:8080").unwrap(),
            (
                "http://127.0.0.1:8080/v1/embeddings".to_owned(),
                "http://127.0.0.1:8080".to_owned()
            )
        );
        assert_eq!(
            endpoint_of("https://api.openai.com/v1/").unwrap().0,
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(
            endpoint_of("http://h/prefix").unwrap().0,
            "http://h/prefix/v1/embeddings"
        );
        for bad in [
            "ftp://h",
            "http://user:key@h",
            "not a url",
            "http://h/?key=1",
        ] {
            assert!(endpoint_of(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn retry_after_is_honoured_and_bounded() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("100000"), Some(MAX_RETRY_AFTER));
        assert_eq!(parse_retry_after("soon"), None);
        assert!(backoff(0, None) >= Duration::from_millis(250));
        assert!(backoff(0, None) < Duration::from_millis(320));
        assert!(backoff(30, None) <= Duration::from_millis(37_500));
        assert_eq!(
            backoff(0, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
    }

    #[test]
    fn vectors_are_unit_length_and_texts_cut_at_boundaries() {
        let v = normalized(vec![3.0, 4.0]);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert_eq!(normalized(vec![0.0, 0.0]), vec![0.0, 0.0]);
        assert_eq!(cut_at_boundary("héllo", 2), "h");
        assert_eq!(cut_at_boundary("héllo", 3), "hé");
    }

    #[test]
    fn only_busy_or_absent_servers_are_tried_again() {
        let status = |status| RemoteError::Status {
            origin: "o".into(),
            status,
            retry_after: None,
            message: None,
        };
        assert!(status(429).is_transient() && status(503).is_transient());
        assert!(!status(400).is_transient() && !status(401).is_transient());
        let malformed = RemoteError::Malformed {
            origin: "o".into(),
            reason: "r".into(),
        };
        assert!(!malformed.is_transient());
    }
}
