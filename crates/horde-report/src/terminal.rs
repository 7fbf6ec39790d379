//! Text that reaches a terminal: names from a plan (maybe someone else's summary.json) and
//! text a server sent (a CouchDB reason, a value a check saw) can hold control characters
//! that set the window title, clear the screen or forge lines. They are shown escaped.

use std::borrow::Cow;
use unicode_width::UnicodeWidthStr;

/// `text` with every control character (C0, DEL, C1, and the bidirectional overrides that
/// reorder what is shown) escaped as `\n`, `\t`, `\u{1b}`: safe to print on one line.
pub fn printable(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// As [`printable`], but line breaks stay: for messages horde itself spreads over lines.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// The columns `text` takes on a terminal: two for a CJK character or an emoji.
pub fn width(text: &str) -> usize {
    text.width()
}

/// `text` in at most `columns` columns: whole when it fits, else its start and end with `…`
/// between them (the end of a URL or a name tells rows apart as often as its start).
pub fn fitted(text: &str, columns: usize) -> Cow<'_, str> {
    if width(text) <= columns {
        return Cow::Borrowed(text);
    }
    let room = columns.saturating_sub(1);
    let (mut head, mut tail) = (String::new(), Vec::new());
    let (mut head_room, mut tail_room) = (room - room / 2, room / 2);
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w > head_room {
            break;
        }
        head_room -= w;
        head.push(c);
    }
    for c in text.chars().rev() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w > tail_room {
            break;
        }
        tail_room -= w;
        tail.push(c);
    }
    Cow::Owned(format!("{head}…{}", tail.into_iter().rev().collect::<String>()))
}

fn needs_escape(c: char, keep_newlines: bool) -> bool {
    (c.is_control() && !(keep_newlines && c == '\n')) || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| needs_escape(c, keep_newlines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs_escape(c, keep_newlines) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(printable("plain name"), "plain name");
        assert!(matches!(printable("plain"), Cow::Borrowed(_)));
        assert_eq!(printable("\u{1b}]0;pwned\u{7}x"), "\\u{1b}]0;pwned\\u{7}x");
        assert_eq!(printable("a\nFAKE LINE\r"), "a\\nFAKE LINE\\r");
        assert_eq!(printable("\u{9b}2J"), "\\u{9b}2J");
        assert_eq!(printable("abc\u{202e}cba"), "abc\\u{202e}cba");
        assert_eq!(printable_lines("one\ntwo\u{1b}[2J"), "one\ntwo\\u{1b}[2J");
    }

    #[test]
    fn text_is_fitted_to_columns_keeping_both_ends() {
        assert_eq!(fitted("GET https://127.0.0.1:18443/", 40), "GET https://127.0.0.1:18443/");
        assert_eq!(fitted("GET https://example.org/api/v1/orders/items", 20), "GET https:…ers/items");
        assert_eq!(width(&fitted("GET https://example.org/api/v1/orders/items", 20)), 20);
        // Wide characters count as two columns.
        assert_eq!(width("注文の一覧"), 10);
        assert_eq!(width(&fitted("注文の一覧を取得する", 9)), 9);
    }
}
