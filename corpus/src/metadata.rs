//! A document's link back to where it came from (`url`) and its own fields (`fields`): what a
//! corpus line may carry beside its text, checked at load, stored apart from the searched text
//! and returned with each source of `/retrieve`, so an answer can link back.
//!
//! Both are bounded and neither is ever searched: a url is a reference, not an instruction to
//! anyone (only `http`, `https` or a relative reference — never `javascript:`, `data:` or
//! `file:`), and fields are flat (a string, a number, a boolean, or a list of those).

use serde_json::{Map, Value};

/// Longest `kind`, in bytes.
pub const MAX_KIND_BYTES: usize = 64;

/// Longest url, in bytes.
pub const MAX_URL_BYTES: usize = 2048;
/// Most fields a document carries.
pub const MAX_FIELDS: usize = 32;
/// Longest field name, in bytes.
pub const MAX_FIELD_NAME_BYTES: usize = 64;
/// Largest `fields` object, in bytes of compact JSON.
pub const MAX_FIELDS_BYTES: usize = 4096;

/// A document's fields: names to flat JSON values.
pub type Fields = Map<String, Value>;

/// What `/retrieve` returns with a source beside its id and text: the document's url and its
/// fields, as its corpus line gave them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Link {
    /// See [`crate::Document::url`].
    pub url: Option<String>,
    /// See [`crate::Document::fields`].
    pub fields: Option<Fields>,
}

impl Link {
    /// The link as the index stores it: the url, and the fields as compact JSON (an object
    /// that does not parse, which a checked index never holds, is none).
    pub(crate) fn stored(url: Option<String>, fields: Option<String>) -> Self {
        Self {
            url,
            fields: fields.and_then(|f| serde_json::from_str(&f).ok()),
        }
    }
}

/// Whether `kind` may be a document's kind: 1..=[`MAX_KIND_BYTES`] bytes without control
/// characters. `Err` quotes nothing of it.
pub fn check_kind(kind: &str) -> Result<(), String> {
    if kind.is_empty() || kind.len() > MAX_KIND_BYTES || kind.chars().any(char::is_control) {
        return Err(format!(
            "kind must be 1..={MAX_KIND_BYTES} bytes without control characters"
        ));
    }
    Ok(())
}

/// Whether `url` may be a document's link back: 1..=[`MAX_URL_BYTES`] bytes without white space
/// or control characters; an absolute url of the `http` or `https` scheme with a host, or a
/// relative reference (`guide/cancel.html#refunds`, `/help`, `#top`, `?page=2`). `Err` says what
/// is wrong in words that quote nothing of it.
pub fn check_url(url: &str) -> Result<(), String> {
    if url.is_empty() || url.len() > MAX_URL_BYTES {
        return Err(format!("url must be 1..={MAX_URL_BYTES} bytes"));
    }
    // A renderer decodes character references in a link (Markdown's and HTML's both):
    // `javascript&#58;…` is `javascript:…` there. The url is judged as it will be read.
    if url.contains('&') {
        let decoded = decode_references(url);
        if decoded != url {
            return check_decoded(&decoded);
        }
    }
    check_decoded(url)
}

/// [`check_url`] of a url with no character reference left to decode.
fn check_decoded(url: &str) -> Result<(), String> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("url must have no white space or control characters".to_owned());
    }
    match scheme(url) {
        None => Ok(()),
        Some(scheme)
            if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") =>
        {
            let rest = &url[scheme.len() + 1..];
            let host = rest
                .strip_prefix("//")
                .map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
            match host {
                Some(host) if !host.is_empty() && !host.starts_with(':') => Ok(()),
                _ => Err("url of http or https must name a host (`https://host/…`)".to_owned()),
            }
        }
        Some(_) => Err("url must be http, https or relative (no other scheme)".to_owned()),
    }
}

/// `url` with its HTML character references decoded — numeric (`&#58;`, `&#x3A;`, with or
/// without the `;`) and the named ones that can make a scheme or hide one (`&colon;`, `&Tab;`,
/// `&NewLine;`, `&sol;`, `&quest;`, `&num;`, `&amp;`) — as a Markdown or HTML renderer reads it.
fn decode_references(url: &str) -> String {
    const NAMED: [(&str, char); 7] = [
        ("colon", ':'),
        ("tab", '\t'),
        ("newline", '\n'),
        ("sol", '/'),
        ("quest", '?'),
        ("num", '#'),
        ("amp", '&'),
    ];
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let numeric = after.strip_prefix('#').and_then(|digits| {
            let (radix, digits) = match digits.strip_prefix(['x', 'X']) {
                Some(hex) => (16, hex),
                None => (10, digits),
            };
            let len = digits.chars().take_while(|c| c.is_digit(radix)).count();
            let value = u32::from_str_radix(&digits[..len.min(8)], radix).ok()?;
            let consumed = after.len() - digits.len() + len;
            let consumed = consumed + usize::from(after[consumed..].starts_with(';'));
            Some((char::from_u32(value).unwrap_or('\u{FFFD}'), consumed))
        });
        let named = || {
            NAMED.iter().find_map(|(name, c)| {
                let end = after.find(';')?;
                after[..end]
                    .eq_ignore_ascii_case(name)
                    .then_some((*c, end + 1))
            })
        };
        match numeric.or_else(named) {
            Some((c, consumed)) => {
                out.push(c);
                rest = &after[consumed..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The scheme of `url` (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`, then `:`,
/// before any `/`, `?` or `#`), if it has one.
fn scheme(url: &str) -> Option<&str> {
    let end = url.find(':')?;
    let candidate = &url[..end];
    let mut chars = candidate.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(candidate)
}

/// Whether `fields` may be a document's: at most [`MAX_FIELDS`] names of
/// 1..=[`MAX_FIELD_NAME_BYTES`] bytes without control characters, each a string, a number, a
/// boolean or a list of those, [`MAX_FIELDS_BYTES`] bytes at most as compact JSON. `Err` names
/// no name and no value.
pub fn check_fields(fields: &Fields) -> Result<(), String> {
    if fields.len() > MAX_FIELDS {
        return Err(format!("fields must be at most {MAX_FIELDS} names"));
    }
    for (name, value) in fields {
        if name.is_empty()
            || name.len() > MAX_FIELD_NAME_BYTES
            || name.chars().any(char::is_control)
        {
            return Err(format!(
                "a field name must be 1..={MAX_FIELD_NAME_BYTES} bytes without control characters"
            ));
        }
        if !is_flat(value) {
            return Err(
                "a field must be a string, a number, a boolean or a list of those".to_owned(),
            );
        }
    }
    if compact_len(fields) > MAX_FIELDS_BYTES {
        return Err(format!("fields over {MAX_FIELDS_BYTES} bytes"));
    }
    Ok(())
}

/// Whether `value` may be a field's: a string, a number, a boolean, or a list of those (an
/// empty list too); not null, an object, or a list holding either.
pub fn is_flat(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().all(is_scalar),
        other => is_scalar(other),
    }
}

fn is_scalar(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// The length of `fields` as compact JSON.
pub fn compact_len(fields: &Fields) -> usize {
    serde_json::to_vec(fields).map_or(usize::MAX, |v| v.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_are_http_https_or_relative() {
        for good in [
            "https://docs.example.com/guide/cancel.html#refunds",
            "HTTP://example.com",
            "http://[::1]:8080/x",
            "guide/cancel.html#refunds",
            "/help",
            "#top",
            "?page=2",
            "../up.md",
            "//cdn.example.com/x",
            "search?q=a&b=c",
            "/a&amp;b",
        ] {
            assert_eq!(check_url(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "data:text/html,x",
            "file:///etc/passwd",
            "a:b/c",
            "https://",
            "https:relative",
            "https://:80/",
            "has space.html",
            "tab\there",
            "line\nbreak",
            "javascript&#58;alert(1)",
            "javascript&#x3A;alert(1)",
            "javascript&#0000058alert(1)",
            "javascript&colon;alert(1)",
            "java&Tab;script:alert(1)",
            "data&#58;text/html,x",
        ] {
            assert!(check_url(bad).is_err(), "{bad:?}");
        }
        assert!(check_url(&"a".repeat(MAX_URL_BYTES)).is_ok());
        assert!(check_url(&"a".repeat(MAX_URL_BYTES + 1)).is_err());
        // The message quotes nothing of the url.
        let err = check_url("canary:x").unwrap_err();
        assert!(!err.contains("canary"), "{err}");
    }

    #[test]
    fn fields_are_flat_few_and_small() {
        let ok =
            json!({"tags": ["billing", "plans"], "version": 3, "draft": false, "author": "Ana"});
        assert_eq!(check_fields(ok.as_object().unwrap()), Ok(()));
        for bad in [
            json!({"nested": {"a": 1}}),
            json!({"list": [[1]]}),
            json!({"null": null}),
            json!({"": "empty name"}),
            json!({"a\u{1}": "control"}),
            json!({"big": "x".repeat(MAX_FIELDS_BYTES)}),
        ] {
            let err = check_fields(bad.as_object().unwrap()).unwrap_err();
            assert!(!err.contains("nested") && !err.contains("big"), "{err}");
        }
        let many: Fields = (0..=MAX_FIELDS)
            .map(|i| (format!("f{i}"), json!(i)))
            .collect();
        assert!(check_fields(&many).is_err());
        let long_name: Fields = [("n".repeat(MAX_FIELD_NAME_BYTES + 1), json!(1))]
            .into_iter()
            .collect();
        assert!(check_fields(&long_name).is_err());
    }
}
