//! A table (HTML's or Markdown's) as text that says which column each value belongs to: one
//! line a row, `Plan: Seedling; Price: free; Plants: 5`, so a passage holding any of its rows
//! can be read without the header row above it.

/// A row's labelled text may be at most this many times the table's cells (characters, and one
/// for each cell): a long header over many short cells would otherwise grow without bound (a
/// 16 MiB file of one-character rows under an 8 MiB header). Past it, the table is written
/// unlabelled, its header as the first line.
const MOST_LABELLED: usize = 8;

/// `rows` under `header` (empty, or as many cells as a row, or fewer), one line a row: each
/// cell as `Header: cell`, cells joined by `; ` (a cell whose column has no header: the cell
/// alone). Without a header row, cells are joined by ` | `. Empty cells are left out, a row with
/// no text is dropped; a table of only a header row is that row.
pub(crate) fn rows(header: &[String], rows: &[Vec<String>]) -> String {
    let has_header = header.iter().any(|h| !h.is_empty());
    let plain = |cells: &[String]| {
        cells
            .iter()
            .filter(|c| !c.is_empty())
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let unlabelled = || {
        std::iter::once(plain(header))
            .chain(rows.iter().map(|r| plain(r)))
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    if !has_header || rows.iter().all(|r| r.iter().all(String::is_empty)) {
        return unlabelled();
    }
    let cells: usize = std::iter::once(header)
        .chain(rows.iter().map(Vec::as_slice))
        .flatten()
        .map(|c| c.chars().count() + 1)
        .sum();
    let mut out = String::new();
    for row in rows {
        let line = row
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.is_empty())
            .map(|(i, cell)| match header.get(i).filter(|h| !h.is_empty()) {
                Some(h) => format!("{h}: {cell}"),
                None => cell.clone(),
            })
            .collect::<Vec<_>>()
            .join("; ");
        if line.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&line);
        if out.len() > MOST_LABELLED * cells {
            return unlabelled();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    fn strings(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn each_value_says_its_column() {
        let header = strings(&["Plan", "Price", "", "Plants"]);
        let rows = [
            strings(&["Seedling", "free", "x", "5"]),
            strings(&["Grove", "", "", "50"]),
            strings(&["", "", "", ""]),
            strings(&["Forest", "$9", "y", "500", "extra"]),
        ];
        assert_eq!(
            super::rows(&header, &rows),
            "Plan: Seedling; Price: free; x; Plants: 5\nPlan: Grove; Plants: 50\n\
             Plan: Forest; Price: $9; y; Plants: 500; extra"
        );
    }

    #[test]
    fn without_a_header_cells_are_joined_by_bars() {
        let rows = [
            strings(&["a", "", "b"]),
            strings(&["", ""]),
            strings(&["c"]),
        ];
        assert_eq!(super::rows(&[], &rows), "a | b\nc");
        assert_eq!(super::rows(&strings(&["A", "B"]), &[]), "A | B");
    }

    /// A header far longer than the cells under it is not repeated on every row: the table's
    /// text stays within a bound of its cells.
    #[test]
    fn a_long_header_over_short_cells_is_written_once() {
        let header = vec!["h".repeat(1000)];
        let rows: Vec<Vec<String>> = (0..100).map(|_| strings(&["x"])).collect();
        let text = super::rows(&header, &rows);
        assert!(text.starts_with(&format!("{}\nx\nx", "h".repeat(1000))));
        assert_eq!(text.lines().count(), 101);
    }
}
