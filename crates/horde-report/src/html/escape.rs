//! Escaping for the two places text from a run lands in report.html: HTML text and
//! attributes, and JSON inside `<script type="application/json">` blocks. Request names,
//! error messages and plan values come from users and servers: none of them may close a tag,
//! open one, or end a script block.

/// Text for an HTML element or a quoted attribute value.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A value as JSON that can sit inside a `<script>` element: `<`, `>` and `&` become `\u003c`,
/// `\u003e` and `\u0026`, so `</script>` or `<!--` in a string cannot end or change the block,
/// and JSON.parse reads the same value back.
pub fn script_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let json = serde_json::to_string(value).expect("report data serializes");
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ATTACK: &str = "</script><img src=x onerror=alert(1)>";

    #[test]
    fn html_escapes_every_character_that_could_open_a_tag_or_end_an_attribute() {
        assert_eq!(html(ATTACK), "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;");
        assert_eq!(html(r#"a "b" 'c' & d"#), "a &quot;b&quot; &#39;c&#39; &amp; d");
        assert_eq!(html("plain é ✓"), "plain é ✓");
    }

    #[test]
    fn script_json_never_contains_markup_and_reads_back_the_same() {
        let value = serde_json::json!({ "name": ATTACK, "comment": "<!-- & -->" });
        let json = script_json(&value);
        assert!(!json.contains('<') && !json.contains('>') && !json.contains('&'), "{json}");
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back, value);
    }
}
