//! Rows of a CSV file (with a header) or a JSON Lines file (an object per line) into
//! passages' sources: each row's text, its title and its id from named columns.

use serde_json::Value;

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
    /// 1-based: the data row (CSV) or the line (JSON Lines).
    pub number: usize,
    pub id: Option<String>,
    pub title: Option<String>,
    pub text: String,
}

/// The rows of a CSV file, each handed to `row` in order; an error names the row and what is
/// wrong (rows before it were handed on: see [`rows_then`]).
pub(crate) fn csv_rows(
    source: &str,
    columns: &Columns,
    row: &mut dyn FnMut(Row),
) -> Result<(), String> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(source.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| format!("header: {e}"))?
        .clone();
    let find = |name: &str| headers.iter().position(|h| h.trim() == name);
    let text = find(&columns.text).ok_or_else(|| format!("no `{}` column", columns.text))?;
    let (id, title) = (find(&columns.id), find(&columns.title));
    let mut record = csv::StringRecord::new();
    for i in 0.. {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(format!("row {}: {e}", i + 1)),
        }
        let field = |at: Option<usize>| {
            at.and_then(|at| record.get(at))
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        row(Row {
            number: i + 1,
            id: field(id),
            title: field(title),
            text: field(Some(text)).unwrap_or_default(),
        });
    }
    Ok(())
}

/// The rows of a JSON Lines file (blank lines skipped), each handed to `row` in order; an error
/// names the line (rows before it were handed on: see [`rows_then`]).
pub(crate) fn jsonl_rows(
    source: &str,
    columns: &Columns,
    row: &mut dyn FnMut(Row),
) -> Result<(), String> {
    for (i, line) in source.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |what: String| format!("line {}: {what}", i + 1);
        let value: Value = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        let Value::Object(object) = value else {
            return Err(at("not a JSON object".to_owned()));
        };
        let field = |name: &str| -> Result<Option<String>, String> {
            match object.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
                Some(Value::Number(n)) => Ok(Some(n.to_string())),
                Some(_) => Err(at(format!("`{name}` must be a string"))),
            }
        };
        row(Row {
            number: i + 1,
            id: field(&columns.id)?,
            title: field(&columns.title)?,
            text: field(&columns.text)?
                .ok_or_else(|| at(format!("no `{}` field", columns.text)))?,
        });
    }
    Ok(())
}

/// A reader of rows ([`csv_rows`], [`jsonl_rows`]).
pub(crate) type Rows = fn(&str, &Columns, &mut dyn FnMut(Row)) -> Result<(), String>;

/// The rows `read` finds in `source`, each handed to `row` only once the whole file is known
/// to read: it is read twice (the first time only checked), never held whole — a file of
/// millions of short rows would take many times its size as rows.
pub(crate) fn rows_then(
    read: Rows,
    source: &str,
    columns: &Columns,
    row: &mut dyn FnMut(Row),
) -> Result<(), String> {
    read(source, columns, &mut |_| {})?;
    read(source, columns, row)
}

/// Every row `read` finds in `source` (for tests and the fuzz target's checks).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn all_rows(read: Rows, source: &str, columns: &Columns) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    read(source, columns, &mut |r| rows.push(r))?;
    Ok(rows)
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
            "no `body` column"
        );
        assert!(
            all_rows(csv_rows, "body\na,b\n", &columns())
                .unwrap_err()
                .starts_with("row 1")
        );
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
