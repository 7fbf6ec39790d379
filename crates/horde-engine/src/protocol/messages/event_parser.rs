//! Server-sent events parsed from the bytes of a stream as they arrive (HTML's "event stream
//! interpretation"), in time linear in those bytes: each byte is looked at once, a line that
//! spans chunks is kept until its end, and an event larger than the limit is refused as its
//! bytes come rather than once it ends (or never).

use bytes::Bytes;

/// The UTF-8 byte order mark a stream may begin with; it is not part of the first line.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An event, as the stream's fields made it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Event {
    /// `message` unless an `event:` field said otherwise.
    pub event: String,
    /// The last `id:` seen on the stream, this event's or an earlier one's.
    pub id: String,
    /// The `data:` lines, joined by line feeds.
    pub data: String,
}

/// More bytes came without the end of an event than an event may have.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct EventTooLarge;

pub(super) struct EventParser {
    max_event_bytes: u64,
    /// The chunk being read, and how far.
    chunk: Bytes,
    position: usize,
    /// A line begun in an earlier chunk, not ended yet.
    line: Vec<u8>,
    /// The last line ended with a CR: an LF right after it ends the same line.
    after_cr: bool,
    /// Whether any byte came yet (a BOM is dropped only at the start).
    started: bool,
    /// Bytes since the end of the last event, line ends included.
    event_bytes: u64,
    event_type: String,
    data: String,
    last_id: String,
}

impl EventParser {
    pub fn new(max_event_bytes: u64) -> EventParser {
        EventParser {
            max_event_bytes,
            chunk: Bytes::new(),
            position: 0,
            line: Vec::new(),
            after_cr: false,
            started: false,
            event_bytes: 0,
            event_type: String::new(),
            data: String::new(),
            last_id: String::new(),
        }
    }

    /// The stream's next bytes; only once [`next_event`](Self::next_event) has used up the
    /// chunk before (it returns `Ok(None)`).
    pub fn feed(&mut self, chunk: Bytes) {
        debug_assert!(self.position >= self.chunk.len(), "the previous chunk is read whole first");
        self.position = 0;
        if !self.started && !chunk.is_empty() {
            self.started = true;
            if chunk.starts_with(BOM) {
                self.position = BOM.len();
            }
        }
        self.chunk = chunk;
    }

    /// The next event the bytes fed so far complete; None when they complete no more.
    pub fn next_event(&mut self) -> Result<Option<Event>, EventTooLarge> {
        // A handle of the chunk (a reference count), so that its lines can be read while the
        // event's fields are written.
        let chunk = self.chunk.clone();
        while self.position < chunk.len() {
            let rest = &chunk[self.position..];
            if std::mem::take(&mut self.after_cr) && rest[0] == b'\n' {
                self.position += 1;
                self.event_bytes += 1;
                continue;
            }
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                self.count(rest.len())?;
                self.line.extend_from_slice(rest);
                self.position = chunk.len();
                break;
            };
            self.count(end + 1)?;
            self.after_cr = rest[end] == b'\r';
            self.position += end + 1;
            let event = if self.line.is_empty() {
                self.end_line(&rest[..end])
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&rest[..end]);
                let event = self.end_line(&line);
                line.clear();
                self.line = line;
                event
            };
            if event.is_some() {
                return Ok(event);
            }
        }
        Ok(None)
    }

    /// Counts `bytes` more of the event being read.
    fn count(&mut self, bytes: usize) -> Result<(), EventTooLarge> {
        self.event_bytes += bytes as u64;
        if self.event_bytes > self.max_event_bytes {
            return Err(EventTooLarge);
        }
        Ok(())
    }

    /// One whole line (without its end): a field, a comment, or the blank line that ends an
    /// event, which is returned when it has data.
    fn end_line(&mut self, line: &[u8]) -> Option<Event> {
        if line.is_empty() {
            self.event_bytes = 0;
            return self.dispatch();
        }
        if line[0] == b':' {
            return None; // a comment
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match name {
            b"event" => {
                self.event_type.clear();
                self.event_type.push_str(&value);
            }
            b"data" => {
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"id" if !value.contains('\0') => {
                self.last_id.clear();
                self.last_id.push_str(&value);
            }
            // `retry` tells a browser when to reconnect; a virtual user does not.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<Event> {
        let mut data = std::mem::take(&mut self.data);
        let event_type = std::mem::take(&mut self.event_type);
        if data.is_empty() {
            return None;
        }
        data.pop(); // the line feed after the last data line
        let event = if event_type.is_empty() { "message".to_string() } else { event_type };
        Some(Event { event, id: self.last_id.clone(), data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event: &str, id: &str, data: &str) -> Event {
        Event { event: event.into(), id: id.into(), data: data.into() }
    }

    /// Every event the chunks make, fed in order.
    fn parse(chunks: &[&[u8]], limit: u64) -> Result<Vec<Event>, EventTooLarge> {
        let mut parser = EventParser::new(limit);
        let mut events = Vec::new();
        for chunk in chunks {
            parser.feed(Bytes::copy_from_slice(chunk));
            while let Some(event) = parser.next_event()? {
                events.push(event);
            }
        }
        Ok(events)
    }

    #[test]
    fn fields_comments_and_line_ends_as_the_html_standard_reads_them() {
        let stream: &[u8] = b"\xEF\xBB\xBF: a comment\ndata: first\r\n\r\nevent: tick\rid: 7\rdata:two\rdata\r\r\
                              id: 8\0\ndata:  three\nretry: 10\nunknown: x\n\nevent: empty\n\ndata: last";
        let expected =
            vec![event("message", "", "first"), event("tick", "7", "two\n"), event("message", "7", " three")];
        assert_eq!(parse(&[stream], 1 << 20).unwrap(), expected);
        // The same bytes one at a time: lines and CRLFs split across chunks.
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(parse(&bytes, 1 << 20).unwrap(), expected);
    }

    #[test]
    fn an_event_past_the_limit_is_refused_before_it_ends() {
        let big = vec![b'x'; 100];
        assert_eq!(parse(&[b"data: ", &big], 64), Err(EventTooLarge));
        // The limit is per event: many small ones pass.
        let many = b"data: 0123456789\n\n".repeat(100);
        assert_eq!(parse(&[&many], 64).unwrap().len(), 100);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_refused() {
        assert_eq!(parse(&[b"data: a\xFFb\n\n"], 64).unwrap(), vec![event("message", "", "a\u{FFFD}b")]);
    }
}
