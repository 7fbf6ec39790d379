//! `${name}` templates: the only expression language a plan has.
//!
//! `$${` stands for a literal `${`. A name is letters, digits, `_`, `-` and `.`.

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Literal(String),
    Variable(String),
}

/// Splits `text` into literal and variable segments, or says what is malformed.
///
/// ```
/// use horde_plan::{parse_template, Segment};
/// let parts = parse_template("/items/${id}?x=1").unwrap();
/// assert_eq!(parts, vec![
///     Segment::Literal("/items/".into()),
///     Segment::Variable("id".into()),
///     Segment::Literal("?x=1".into()),
/// ]);
/// ```
pub fn parse_template(text: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('$') {
        literal.push_str(&rest[..start]);
        let after = &rest[start..];
        if let Some(escaped) = after.strip_prefix("$${") {
            literal.push_str("${");
            rest = escaped;
        } else if let Some(open) = after.strip_prefix("${") {
            let end = open
                .find('}')
                .ok_or_else(|| format!("unclosed '${{' at byte {start} in {text:?}"))?;
            let name = &open[..end];
            if !is_variable_name(name) {
                return Err(format!("bad variable name {name:?} in {text:?}"));
            }
            if !literal.is_empty() {
                segments.push(Segment::Literal(std::mem::take(&mut literal)));
            }
            segments.push(Segment::Variable(name.to_string()));
            rest = &open[end + 1..];
        } else {
            literal.push('$');
            rest = &after[1..];
        }
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        segments.push(Segment::Literal(literal));
    }
    Ok(segments)
}

/// A session variable name: used for `save_as`, loop counters and inside templates.
pub fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_one_literal() {
        assert_eq!(parse_template("abc").unwrap(), vec![Segment::Literal("abc".into())]);
        assert_eq!(parse_template("").unwrap(), vec![]);
        assert_eq!(parse_template("cost $5").unwrap(), vec![Segment::Literal("cost $5".into())]);
    }

    #[test]
    fn escaped_dollar_brace_is_literal() {
        assert_eq!(parse_template("$${x}").unwrap(), vec![Segment::Literal("${x}".into())]);
    }

    #[test]
    fn variables_between_literals() {
        assert_eq!(
            parse_template("${a}${b}c").unwrap(),
            vec![
                Segment::Variable("a".into()),
                Segment::Variable("b".into()),
                Segment::Literal("c".into())
            ]
        );
    }

    #[test]
    fn malformed_templates_are_refused() {
        assert!(parse_template("${unclosed").unwrap_err().contains("unclosed"));
        assert!(parse_template("${}").unwrap_err().contains("bad variable name"));
        assert!(parse_template("${a b}").unwrap_err().contains("bad variable name"));
    }
}
