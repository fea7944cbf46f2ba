//! Every document's id and title in memory, in one block: what a search returns with each
//! document, and what checks a plugin's answer names documents that exist.
//!
//! One string holds them all, one after another, with where each starts (two allocations in
//! all, instead of two per document and a set of ids beside them): about the text itself plus
//! 20 bytes per document — 180 MB at a million passages instead of about 330 MB.

/// The ids and titles of a corpus's documents, by position (rowid order).
#[derive(Default)]
pub(crate) struct Labels {
    text: String,
    /// Where each document's id and title start in `text` (2 per document), and its end.
    starts: Vec<usize>,
    /// Positions ordered by id, for lookups by id.
    by_id: Vec<u32>,
}

impl Labels {
    /// Adds the next document's id and title.
    pub(crate) fn push(&mut self, id: &str, title: &str) {
        self.starts.push(self.text.len());
        self.text.push_str(id);
        self.starts.push(self.text.len());
        self.text.push_str(title);
    }

    /// Done adding: orders the ids for lookups, and gives back the room not used.
    pub(crate) fn finish(mut self) -> Self {
        self.text.shrink_to_fit();
        self.starts.push(self.text.len());
        self.starts.shrink_to_fit();
        let documents = u32::try_from(self.len()).unwrap_or(u32::MAX);
        let mut by_id: Vec<u32> = (0..documents).collect();
        by_id.sort_unstable_by(|a, b| self.id(*a as usize).cmp(self.id(*b as usize)));
        self.by_id = by_id;
        self
    }

    /// Documents held.
    pub(crate) fn len(&self) -> usize {
        self.starts.len() / 2
    }

    fn id(&self, position: usize) -> &str {
        &self.text[self.starts[2 * position]..self.starts[2 * position + 1]]
    }

    /// The id and title of the document at `position`, if any.
    pub(crate) fn get(&self, position: usize) -> Option<(&str, &str)> {
        if position >= self.len() {
            return None;
        }
        let title = &self.text[self.starts[2 * position + 1]..self.starts[2 * position + 2]];
        Some((self.id(position), title))
    }

    /// Whether a document has this id.
    pub(crate) fn has_id(&self, id: &str) -> bool {
        self.position_of(id).is_some()
    }

    /// The position of the document with this id, if any.
    pub(crate) fn position_of(&self, id: &str) -> Option<usize> {
        self.by_id
            .binary_search_by(|p| self.id(*p as usize).cmp(id))
            .ok()
            .map(|at| self.by_id[at] as usize)
    }

    /// Bytes held, for reports.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.starts.capacity() * 8 + self.by_id.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::Labels;

    #[test]
    fn labels_come_back_by_position_and_ids_are_found() {
        let mut labels = Labels::default();
        for (id, title) in [
            ("os.path", "os.path - paths"),
            ("json", ""),
            ("é", "accent"),
        ] {
            labels.push(id, title);
        }
        let labels = labels.finish();
        assert_eq!(labels.len(), 3);
        assert_eq!(labels.get(0), Some(("os.path", "os.path - paths")));
        assert_eq!(labels.get(1), Some(("json", "")));
        assert_eq!(labels.get(2), Some(("é", "accent")));
        assert_eq!(labels.get(3), None);
        for id in ["os.path", "json", "é"] {
            assert!(labels.has_id(id), "{id}");
        }
        for id in ["", "os", "os.path - paths", "JSON", "accent"] {
            assert!(!labels.has_id(id), "{id}");
        }
        assert!(!Labels::default().finish().has_id("x"));
    }
}
