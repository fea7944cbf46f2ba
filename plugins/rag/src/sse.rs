//! A server-sent events body, read as its bytes arrive: each event's `data` (its `data:` lines
//! joined by newlines), handed on as soon as the blank line that ends it has arrived — so each
//! token of a streamed answer is passed on at once. Lines end with `\n`, `\r\n` or `\r`; other
//! fields (`event:`, `id:`, comments) are skipped. Bounded: a line or an event longer than
//! [`MAX_EVENT_BYTES`] is an error, whatever the upstream sends.

/// Longest event (or line) taken, in bytes.
pub const MAX_EVENT_BYTES: usize = 1 << 20;

/// The events of a body, as its bytes come.
#[derive(Debug, Default)]
pub struct Events {
    /// The bytes of the line being read.
    line: Vec<u8>,
    /// The data of the event being read.
    data: String,
    has_data: bool,
    /// The last byte was a `\r` (a `\n` right after it ends nothing more).
    after_cr: bool,
}

/// An event longer than [`MAX_EVENT_BYTES`].
#[derive(Debug, PartialEq, Eq)]
pub struct TooLong;

impl Events {
    /// Takes in `bytes`; returns the data of every event they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, TooLong> {
        let mut done = Vec::new();
        for &byte in bytes {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            match byte {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    if let Some(data) = self.end_line()? {
                        done.push(data);
                    }
                }
                _ => {
                    if self.line.len() >= MAX_EVENT_BYTES {
                        return Err(TooLong);
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(done)
    }

    /// Ends the line read: a blank line dispatches the event (if it had data).
    fn end_line(&mut self) -> Result<Option<String>, TooLong> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            let had = std::mem::take(&mut self.has_data);
            let data = std::mem::take(&mut self.data);
            return Ok((had && !data.is_empty()).then_some(data));
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.has_data = true;
            self.data.push_str(value);
            if self.data.len() > MAX_EVENT_BYTES {
                return Err(TooLong);
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_as_soon_as_they_end_whatever_the_pieces() {
        let body = b"data: {\"a\":1}\n\n: a comment\nevent: x\ndata: two\ndata: lines\r\n\r\ndata:[DONE]\r\r";
        let mut whole = Events::default();
        assert_eq!(
            whole.push(body).unwrap(),
            ["{\"a\":1}", "two\nlines", "[DONE]"]
        );
        // Byte by byte: each event as its blank line arrives, never before.
        let mut events = Events::default();
        let mut seen = Vec::new();
        for (i, byte) in body.iter().enumerate() {
            let done = events.push(std::slice::from_ref(byte)).unwrap();
            if !done.is_empty() {
                seen.push((i, done));
            }
        }
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0], (14, vec!["{\"a\":1}".to_owned()]));
    }

    #[test]
    fn an_event_past_the_bound_is_an_error() {
        let mut events = Events::default();
        let long = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert_eq!(events.push(&long), Err(TooLong));
    }
}
