//! Text that reaches a terminal: names from a plan (maybe someone else's summary.json) and
//! text a server sent (a CouchDB reason, a value a check saw) can hold control characters
//! that set the window title, clear the screen or forge lines. They are shown escaped.

use std::borrow::Cow;

/// `text` with every control character (C0, DEL, C1, and the bidirectional overrides that
/// reorder what is shown) escaped as `\n`, `\t`, `\u{1b}`: safe to print on one line.
pub fn printable(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// As [`printable`], but line breaks stay: for messages horde itself spreads over lines.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
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
}
