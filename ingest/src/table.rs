//! Rows of a CSV file (with a header) or a JSON Lines file (an object per line) into
//! passages' sources: each row's text, its title and its id from named columns; its `kind` and
//! `url` from the columns of those names, and every other column a field (a CSV cell as a
//! string; a JSON value if a string, number, boolean or a list of those), all within the
//! corpus's bounds or the row is bad.

use std::cell::Cell;
use std::io::{BufRead, Read};
use std::ops::ControlFlow;

use serde_json::Value;
use turnstile_corpus::metadata::{check_fields, check_url};

use crate::files::MAX_ROW_BYTES;
use crate::meta::{Fields, check_kind, flat};

/// The column holding a row's kind.
const KIND: &str = "kind";
/// The column holding a row's url.
const URL: &str = "url";

/// Which columns hold what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Columns {
    /// The row's id (optional: without it, or when a row's is empty, `path#row-N`).
    pub id: String,
    /// The row's title (optional: without it, the id).
    pub title: String,
    /// The row's text (required).
    pub text: String,
}

/// One row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    /// 1-based: the data row (CSV) or the line (JSON Lines); `PATH#row-N`'s `N`.
    pub number: usize,
    /// 1-based: the line of the file the row starts on.
    pub line: usize,
    pub id: Option<String>,
    pub title: Option<String>,
    pub text: String,
    /// Its `kind` column (checked), if it has one.
    pub kind: Option<String>,
    /// Its `url` column (checked), if it has one.
    pub url: Option<String>,
    /// Its other columns (checked).
    pub fields: Fields,
}

impl Columns {
    /// Whether `name` is the id's, the title's or the text's column.
    fn named(&self, name: &str) -> bool {
        name == self.id || name == self.title || name == self.text
    }
}

/// A row's kind, url and fields checked: `Err` says which breaks the corpus's bounds, quoting
/// none of them.
fn checked(
    kind: Option<String>,
    url: Option<String>,
    fields: Fields,
) -> Result<(Option<String>, Option<String>, Fields), String> {
    if let Some(kind) = &kind {
        check_kind(kind).map_err(|why| format!("`{KIND}`: {why}"))?;
    }
    if let Some(url) = &url {
        check_url(url).map_err(|why| format!("`{URL}`: {why}"))?;
    }
    if !fields.is_empty() {
        check_fields(&fields).map_err(|why| format!("its other columns: {why}"))?;
    }
    Ok((kind, url, fields))
}

/// A row that cannot be read, and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRow {
    /// 1-based: the line of the file the row starts on.
    pub line: usize,
    /// What is wrong, in words (never the row's content).
    pub why: String,
}

impl std::fmt::Display for BadRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.why)
    }
}

/// Where each row read goes, good or bad; `Break` stops the reading.
pub(crate) type RowSink<'a> = dyn FnMut(Result<Row, BadRow>) -> ControlFlow<()> + 'a;

/// A reader of rows ([`csv_rows`], [`jsonl_rows`]): every row of the table `input`, in order,
/// handed to the sink. `Err` only when `input` itself cannot be read.
pub(crate) type Rows = fn(&mut dyn BufRead, &Columns, &mut RowSink<'_>) -> std::io::Result<()>;

fn over_bound() -> String {
    format!("over {} MiB", MAX_ROW_BYTES >> 20)
}

/// The rows of a CSV file (a header, then records): a record of the wrong width or not UTF-8
/// is a bad row and reading goes on; a header without the text column, or a record over
/// [`MAX_ROW_BYTES`] (its end cannot be found without reading it), is a bad row that ends the
/// file. `\r\n` within a quoted field is read as `\n`.
pub(crate) fn csv_rows(
    input: &mut dyn BufRead,
    columns: &Columns,
    row: &mut RowSink<'_>,
) -> std::io::Result<()> {
    let record_start = Cell::new(0);
    let bounded = Bounded {
        inner: input,
        record_start: &record_start,
        read: 0,
    };
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(bounded);
    let headers = match reader.headers() {
        Ok(headers) => headers.clone(),
        Err(e) => {
            let why = match csv_problem(e)? {
                Problem::TooLong => format!("the header is {}", over_bound()),
                Problem::Other(why) => format!("the header: {why}"),
            };
            let _ = row(Err(BadRow { line: 1, why }));
            return Ok(());
        }
    };
    let find = |name: &str| headers.iter().position(|h| h.trim() == name);
    let Some(text) = find(&columns.text) else {
        let why = format!("no `{}` column", columns.text);
        let _ = row(Err(BadRow { line: 1, why }));
        return Ok(());
    };
    let (id, title) = (find(&columns.id), find(&columns.title));
    let (kind, url) = (
        find(KIND).filter(|_| !columns.named(KIND)),
        find(URL).filter(|_| !columns.named(URL)),
    );
    // The other columns, by name (a column without a name, as an index written by pandas, is
    // left out).
    let others: Vec<(usize, String)> = headers
        .iter()
        .map(str::trim)
        .enumerate()
        .filter(|(_, h)| !h.is_empty() && !columns.named(h) && *h != KIND && *h != URL)
        .map(|(at, h)| (at, h.to_owned()))
        .collect();
    let mut record = csv::StringRecord::new();
    for number in 1.. {
        let before = reader.position().clone();
        record_start.set(before.byte());
        let read = match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {
                let field = |at: Option<usize>| {
                    at.and_then(|at| record.get(at))
                        .map(|v| v.trim().replace("\r\n", "\n"))
                        .filter(|v| !v.is_empty())
                };
                let line = line_of(record.position().unwrap_or(&before));
                let fields = others
                    .iter()
                    .filter_map(|(at, name)| Some((name.clone(), Value::String(field(Some(*at))?))))
                    .collect();
                match checked(field(kind), field(url), fields) {
                    Ok((kind, url, fields)) => Ok(Row {
                        number,
                        line,
                        id: field(id),
                        title: field(title),
                        text: field(Some(text)).unwrap_or_default(),
                        kind,
                        url,
                        fields,
                    }),
                    Err(why) => Err(BadRow { line, why }),
                }
            }
            Err(e) => {
                let line = match e.position() {
                    Some(at) => line_of(at),
                    None => line_of(&before),
                };
                let last = matches!(e.kind(), csv::ErrorKind::Io(_));
                let why = match csv_problem(e)? {
                    Problem::TooLong => {
                        format!("{} (the rest of the file is not read)", over_bound())
                    }
                    Problem::Other(why) => why,
                };
                if row(Err(BadRow { line, why })).is_break() || last {
                    return Ok(());
                }
                continue;
            }
        };
        if row(read).is_break() {
            break;
        }
    }
    Ok(())
}

/// The 1-based line a CSV position is on (after a header, never 0).
fn line_of(at: &csv::Position) -> usize {
    usize::try_from(at.line()).unwrap_or(usize::MAX).max(1)
}

enum Problem {
    TooLong,
    Other(String),
}

/// What a CSV error says about the row, without its content; a failed read of the file is
/// returned as the error it is.
fn csv_problem(e: csv::Error) -> std::io::Result<Problem> {
    Ok(Problem::Other(match e.into_kind() {
        csv::ErrorKind::Io(e) => {
            return if e.get_ref().is_some_and(|inner| inner.is::<TooLong>()) {
                Ok(Problem::TooLong)
            } else {
                Err(e)
            };
        }
        csv::ErrorKind::Utf8 { .. } => "not UTF-8".to_owned(),
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields where the header has {expected_len}"),
        // Only reading (not serde's (de)serializing, nor seeking) is done here.
        _ => "not readable as CSV".to_owned(),
    }))
}

/// A record read past [`MAX_ROW_BYTES`] from its start.
#[derive(Debug)]
struct TooLong;

impl std::fmt::Display for TooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a record over the bound")
    }
}

impl std::error::Error for TooLong {}

/// The CSV reader's input, refusing to read on once the record being read passes
/// [`MAX_ROW_BYTES`] (with the reader's own buffer to spare): the CSV reader holds a record whole,
/// so an unclosed quote would otherwise take the rest of a 4 GiB file.
struct Bounded<'a> {
    inner: &'a mut dyn BufRead,
    record_start: &'a Cell<u64>,
    read: u64,
}

/// The CSV reader's read-ahead, and more: what `Bounded` lets through past a record's bound.
const READ_AHEAD: u64 = 1 << 20;

impl Read for Bounded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let limit = self.record_start.get() + MAX_ROW_BYTES as u64 + READ_AHEAD;
        let left = limit.saturating_sub(self.read);
        if left == 0 {
            return Err(std::io::Error::other(TooLong));
        }
        let most = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..most])?;
        self.read += n as u64;
        Ok(n)
    }
}

/// The rows of a JSON Lines file (blank lines skipped), one line at a time: a line that is not
/// UTF-8, not a JSON object, over [`MAX_ROW_BYTES`], without the text field or with a field of
/// another type than a string or a number is a bad row, and reading goes on.
pub(crate) fn jsonl_rows(
    input: &mut dyn BufRead,
    columns: &Columns,
    row: &mut RowSink<'_>,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = (&mut *input)
            .take(MAX_ROW_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        let read = if line.last() != Some(&b'\n') && read > MAX_ROW_BYTES {
            skip_line(input)?;
            Err(BadRow {
                line: number,
                why: over_bound(),
            })
        } else {
            match jsonl_row(&line, number, columns) {
                Ok(None) => continue,
                Ok(Some(r)) => Ok(r),
                Err(why) => Err(BadRow { line: number, why }),
            }
        };
        if row(read).is_break() {
            break;
        }
    }
    Ok(())
}

/// Reads on past the next line end (or to the end).
fn skip_line(input: &mut dyn BufRead) -> std::io::Result<()> {
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        if let Some(at) = buf.iter().position(|&b| b == b'\n') {
            input.consume(at + 1);
            return Ok(());
        }
        let n = buf.len();
        input.consume(n);
    }
}

/// One line of JSON Lines (with its line end, if any): `None` when blank.
fn jsonl_row(line: &[u8], number: usize, columns: &Columns) -> Result<Option<Row>, String> {
    let line = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_owned())?;
    if line.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(line).map_err(|e| {
        // serde's message, less its "at line 1 column N" (the line is the file's, said by the
        // caller): parsing into a `Value` quotes nothing of the input.
        let message = e.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(&*message, |(m, _)| m);
        format!("not JSON: {message} (column {})", e.column())
    })?;
    let Value::Object(object) = value else {
        return Err("not a JSON object".to_owned());
    };
    let field = |name: &str| -> Result<Option<String>, String> {
        match object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(format!("`{name}` must be a string")),
        }
    };
    let string = |name: &str| -> Result<Option<String>, String> {
        match object.get(name) {
            _ if columns.named(name) => Ok(None),
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
            Some(_) => Err(format!("`{name}` must be a string")),
        }
    };
    let (id, title) = (field(&columns.id)?, field(&columns.title)?);
    let text = field(&columns.text)?.ok_or_else(|| format!("no `{}` field", columns.text))?;
    let (kind, url) = (string(KIND)?, string(URL)?);
    let fields = object
        .into_iter()
        .filter(|(name, _)| !columns.named(name) && name != KIND && name != URL)
        .filter_map(|(name, value)| Some((name, flat(value)?)))
        .collect();
    let (kind, url, fields) = checked(kind, url, fields)?;
    Ok(Some(Row {
        number,
        line: number,
        id,
        title,
        text,
        kind,
        url,
        fields,
    }))
}

/// Every row `read` finds in `source`, or the first bad one's line and why (for tests and the
/// fuzz target's checks).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn all_rows(read: Rows, source: &str, columns: &Columns) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    let mut bad = None;
    read(&mut source.as_bytes(), columns, &mut |r| match r {
        Ok(r) => {
            rows.push(r);
            ControlFlow::Continue(())
        }
        Err(b) => {
            bad = Some(b.to_string());
            ControlFlow::Break(())
        }
    })
    .map_err(|e| e.to_string())?;
    bad.map_or(Ok(rows), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> Columns {
        Columns {
            id: "id".into(),
            title: "title".into(),
            text: "body".into(),
        }
    }

    #[test]
    fn csv_rows_come_from_named_columns() {
        let rows = all_rows(
            csv_rows,
            "title,body,id\nCancel,\"Stop paying, any time.\",cancel\n,Just text,\n",
            &columns(),
        )
        .unwrap();
        assert_eq!(rows[0].id.as_deref(), Some("cancel"));
        assert_eq!(rows[0].text, "Stop paying, any time.");
        assert_eq!(
            (rows[1].id.as_deref(), rows[1].title.as_deref()),
            (None, None)
        );
        assert_eq!(
            all_rows(csv_rows, "title,text\na,b\n", &columns()).unwrap_err(),
            "line 1: no `body` column"
        );
        assert!(
            all_rows(csv_rows, "body\na,b\n", &columns())
                .unwrap_err()
                .starts_with("line 2: 2 fields where the header has 1")
        );
    }

    #[test]
    fn a_csv_rows_url_kind_and_cells_are_checked() {
        let rows = all_rows(
            csv_rows,
            "body,url,kind,,tag\nA,/a,faq,7,x\nB,,,,\n",
            &columns(),
        )
        .unwrap();
        assert_eq!(
            (rows[0].url.as_deref(), rows[0].kind.as_deref()),
            (Some("/a"), Some("faq"))
        );
        assert_eq!(
            Value::Object(rows[0].fields.clone()),
            serde_json::json!({"tag": "x"})
        );
        assert!(rows[1].fields.is_empty() && rows[1].url.is_none());
        let why = all_rows(
            csv_rows,
            "body,url\nA,/a\nB,\"javascript:canary\"\n",
            &columns(),
        )
        .unwrap_err();
        assert!(why.starts_with("line 3: `url`: "), "{why}");
        assert!(!why.contains("canary"), "{why}");
    }

    #[test]
    fn jsonl_rows_come_from_named_fields() {
        let rows = all_rows(
            jsonl_rows,
            "{\"id\": 7, \"body\": \"Text\"}\n\n{\"body\": \"More\"}\n",
            &columns(),
        )
        .unwrap();
        assert_eq!(rows[0].id.as_deref(), Some("7"));
        assert_eq!(rows[1].number, 3);
        assert_eq!(
            all_rows(jsonl_rows, "{\"id\": 1}\n", &columns()).unwrap_err(),
            "line 1: no `body` field"
        );
        assert!(
            all_rows(jsonl_rows, "[1]\n", &columns())
                .unwrap_err()
                .contains("not a JSON object")
        );
    }
}
