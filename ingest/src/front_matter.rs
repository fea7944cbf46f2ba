//! A Markdown document's front matter — YAML between `---` lines or TOML between `+++` lines at
//! its start — kept: `title` names the document, `url` (or `permalink`) is its link back,
//! `kind` its passages' kind, and every other name a field (a string, a number, a boolean or a
//! list of those; a YAML date is a string; nested maps and lists of them are left out).
//!
//! Front matter that does not parse, is not a map, or breaks a bound (a `url` the corpus would
//! refuse, a `kind` over 64 bytes, fields past the corpus's bounds) refuses its file, with a
//! reason that quotes nothing of it.

use serde_json::Value;
use turnstile_corpus::metadata::{check_fields, check_url};

use crate::meta::{Fields, check_kind, flat};
use crate::outline::collapse;

/// How the front matter was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Between `---` lines.
    Yaml,
    /// Between `+++` lines.
    Toml,
}

/// What a document's front matter says of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FrontMatter {
    pub title: Option<String>,
    pub url: Option<String>,
    pub kind: Option<String>,
    pub fields: Fields,
}

/// The front matter `text` (between its fences, whose first line is the file's second) of
/// `style`; `Err` says why the document is refused.
pub(crate) fn parse(style: Style, text: &str) -> Result<FrontMatter, String> {
    let refused = |why: String| format!("front matter: {why}");
    if text.trim().is_empty() {
        return Ok(FrontMatter::default());
    }
    let value = match style {
        Style::Yaml => serde_saphyr::from_str::<Value>(text).map_err(|e| {
            // Its message shows the text: say where, not what.
            let at = e.location().map_or(String::new(), |l| {
                format!(" (line {})", l.line().saturating_add(1))
            });
            refused(format!("not valid YAML{at}"))
        })?,
        Style::Toml => match toml::from_str::<toml::Table>(text) {
            Ok(table) => Value::Object(table.into_iter().map(|(k, v)| (k, json(v))).collect()),
            Err(e) => {
                let at = e.span().map_or(String::new(), |span| {
                    let line = text[..span.start.min(text.len())].matches('\n').count() + 2;
                    format!(" (line {line})")
                });
                return Err(refused(format!("not valid TOML{at}")));
            }
        },
    };
    let map = match value {
        Value::Object(map) => map,
        Value::Null => return Ok(FrontMatter::default()),
        _ => return Err(refused("not a map of names to values".to_owned())),
    };
    let mut front = FrontMatter::default();
    let mut permalink = None;
    for (name, value) in map {
        match name.as_str() {
            "title" => {
                let title = match value {
                    Value::String(s) => collapse(&s),
                    Value::Number(n) => n.to_string(),
                    Value::Null => String::new(),
                    _ => return Err(refused("`title` must be a string".to_owned())),
                };
                front.title = Some(title).filter(|t| !t.is_empty());
            }
            "url" | "permalink" => {
                let Value::String(url) = value else {
                    return Err(refused(format!("`{name}` must be a string")));
                };
                let url = url.trim().to_owned();
                check_url(&url).map_err(|why| refused(format!("`{name}`: {why}")))?;
                if name == "url" {
                    front.url = Some(url);
                } else {
                    permalink = Some(url);
                }
            }
            "kind" => {
                let Value::String(kind) = value else {
                    return Err(refused("`kind` must be a string".to_owned()));
                };
                check_kind(&kind).map_err(|why| refused(format!("`kind`: {why}")))?;
                front.kind = Some(kind);
            }
            _ => {
                if let Some(value) = flat(value) {
                    front.fields.insert(name, value);
                }
            }
        }
    }
    front.url = front.url.or(permalink);
    check_fields(&front.fields).map_err(refused)?;
    Ok(front)
}

/// A TOML value as JSON: a date or time as the string TOML writes, a float that JSON cannot
/// hold (NaN, infinity) as null (left out).
fn json(value: toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.into_iter().map(json).collect()),
        toml::Value::Table(table) => {
            Value::Object(table.into_iter().map(|(k, v)| (k, json(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_names_the_document_and_the_rest_are_fields() {
        let front = parse(
            Style::Yaml,
            "title: Cancelling\nurl: https://docs.example.com/cancel\nkind: faq\n\
             tags: [billing, plans]\nauthor: Ana\ndate: 2024-05-01\nversion: 3\ndraft: false\n\
             nested: {a: 1}\nlisted: [{a: 1}]\nnothing: ~\n",
        )
        .unwrap();
        assert_eq!(front.title.as_deref(), Some("Cancelling"));
        assert_eq!(
            front.url.as_deref(),
            Some("https://docs.example.com/cancel")
        );
        assert_eq!(front.kind.as_deref(), Some("faq"));
        assert_eq!(
            Value::Object(front.fields),
            json!({"tags": ["billing", "plans"], "author": "Ana", "date": "2024-05-01",
                   "version": 3, "draft": false})
        );
    }

    #[test]
    fn toml_too_and_a_permalink_is_a_url() {
        let front = parse(
            Style::Toml,
            "title = \"Cancelling\"\npermalink = \"/cancel/\"\ntags = [\"billing\"]\n\
             date = 2024-05-01\n[extra]\na = 1\n",
        )
        .unwrap();
        assert_eq!(front.title.as_deref(), Some("Cancelling"));
        assert_eq!(front.url.as_deref(), Some("/cancel/"));
        assert_eq!(
            Value::Object(front.fields),
            json!({"tags": ["billing"], "date": "2024-05-01"})
        );
        assert_eq!(parse(Style::Yaml, "\n").unwrap(), FrontMatter::default());
    }

    #[test]
    fn bad_front_matter_is_refused_without_quoting_it() {
        let many: String = (0..40).map(|i| format!("f{i}: canary\n")).collect();
        for (style, text, says) in [
            (Style::Yaml, "title: [canary\n", "not valid YAML"),
            (Style::Toml, "title = canary\n", "not valid TOML (line 2)"),
            (Style::Yaml, "- canary\n", "not a map"),
            (
                Style::Yaml,
                "url: \"javascript:canary\"\n",
                "`url`: url must be",
            ),
            (Style::Yaml, "kind: \"\"\n", "`kind`: kind must be"),
            (
                Style::Yaml,
                "title: {canary: 1}\n",
                "`title` must be a string",
            ),
            (Style::Yaml, many.as_str(), "at most 32 names"),
        ] {
            let why = parse(style, text).unwrap_err();
            assert!(
                why.starts_with("front matter: ") && why.contains(says),
                "{why}"
            );
            assert!(!why.contains("canary"), "{why}");
        }
    }
}
