//! The plan's expression language: `${...}` templates in any text a request sends, and the
//! conditions of `do_if`, `as_long_as` and their kin. This module parses them (so a plan's
//! errors are found before anything is sent); the engine evaluates them natively.
//!
//! Inside `${...}`:
//! - a session variable: `${id}`; into a JSON value or a list: `${order.items[0].sku}`,
//!   `${items[-1]}` (from the end);
//! - methods on any value: `.size()`, `.random()`, `.base64()`, `.base64_decode()`,
//!   `.url_encode()`, `.json_escape()`, `.json()`, `.md5()`, `.sha1()`, `.sha256()`,
//!   `.hmac_sha1(key)`, `.hmac_sha256(key)`, `.pkce_challenge()`, `.jsonpath('$..id')`;
//! - functions: `__uuid()`, `__random_int(1, 100)`, `__random_string(12)`, `__now_ms()`, `__now_s()`,
//!   `__counter(name)`, `__user_id`, `__scenario`;
//! - literals as arguments: `'text'`, `"text"`, numbers.
//!
//! `$${` stands for a literal `${`. A variable name is letters, digits, `_`, `-` and `.`; a name
//! with dots (`${a.b}`) is the variable `a.b` when one is set by that name, else `b` inside `a`.

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    Literal(String),
    Expression(Expr),
}

/// An expression inside `${...}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A session variable and the fields after it, as written: `a.b.c` is `["a", "b", "c"]`.
    /// Which leading part names the variable is decided when the plan is lowered, knowing
    /// every name the plan sets.
    Variable(Vec<String>),
    /// A quoted string or a number, as text.
    Literal(String),
    Call {
        function: Function,
        args: Vec<Expr>,
    },
    Method {
        target: Box<Expr>,
        method: Method,
        args: Vec<Expr>,
    },
    /// `[n]` on a list; negative counts from the end.
    Index {
        target: Box<Expr>,
        index: i64,
    },
    /// `.key` after something that is not a plain variable path (`x[0].id`).
    Field {
        target: Box<Expr>,
        key: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Uuid,
    RandomInt,
    RandomString,
    NowMs,
    NowS,
    Counter,
    UserId,
    Scenario,
}

impl Function {
    const ALL: &'static [(&'static str, Function, Arity)] = &[
        ("__uuid", Function::Uuid, Arity::Call(0)),
        ("__random_int", Function::RandomInt, Arity::Call(2)),
        ("__random_string", Function::RandomString, Arity::Call(1)),
        ("__now_ms", Function::NowMs, Arity::Call(0)),
        ("__now_s", Function::NowS, Arity::Call(0)),
        ("__counter", Function::Counter, Arity::Call(1)),
        ("__user_id", Function::UserId, Arity::Bare),
        ("__scenario", Function::Scenario, Arity::Bare),
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arity {
    /// Called with this many arguments: `__uuid()`.
    Call(usize),
    /// Named without parentheses: `__user_id`.
    Bare,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Size,
    Random,
    Base64,
    Base64Decode,
    UrlEncode,
    JsonEscape,
    Json,
    Md5,
    Sha1,
    Sha256,
    HmacSha1,
    HmacSha256,
    /// OAuth PKCE's S256 code challenge of a code verifier (RFC 7636 4.2).
    PkceChallenge,
    JsonPath,
}

impl Method {
    const ALL: &'static [(&'static str, Method, usize)] = &[
        ("size", Method::Size, 0),
        ("random", Method::Random, 0),
        ("base64", Method::Base64, 0),
        ("base64_decode", Method::Base64Decode, 0),
        ("url_encode", Method::UrlEncode, 0),
        ("json_escape", Method::JsonEscape, 0),
        ("json", Method::Json, 0),
        ("md5", Method::Md5, 0),
        ("sha1", Method::Sha1, 0),
        ("sha256", Method::Sha256, 0),
        ("hmac_sha1", Method::HmacSha1, 1),
        ("hmac_sha256", Method::HmacSha256, 1),
        ("pkce_challenge", Method::PkceChallenge, 0),
        ("jsonpath", Method::JsonPath, 1),
    ];

    pub fn name(self) -> &'static str {
        Method::ALL.iter().find(|(_, m, _)| *m == self).map(|(n, _, _)| *n).expect("every method is listed")
    }
}

/// A condition: comparisons of templates, `exists(name)`, joined by `and`, `or`, `not`.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    Or(Vec<Condition>),
    And(Vec<Condition>),
    Not(Box<Condition>),
    Compare {
        left: Vec<Segment>,
        op: CompareOp,
        right: Vec<Segment>,
    },
    /// The variable is set (`exists(token)`).
    Exists(Vec<String>),
    /// A value alone is true when it is `true`.
    Truthy(Vec<Segment>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Splits `text` into literal and expression segments, or says what is malformed.
///
/// ```
/// use horde_plan::{parse_template, Expr, Segment};
/// let parts = parse_template("/items/${id}?x=1").unwrap();
/// assert_eq!(parts, vec![
///     Segment::Literal("/items/".into()),
///     Segment::Expression(Expr::Variable(vec!["id".into()])),
///     Segment::Literal("?x=1".into()),
/// ]);
/// ```
pub fn parse_template(text: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    let mut literal = String::new();
    let mut position = 0;
    while let Some(found) = text[position..].find(['$', '#']) {
        let start = position + found;
        literal.push_str(&text[position..start]);
        let after = &text[start..];
        let sigil = &after[..1];
        if after[1..].starts_with(sigil) && after[2..].starts_with('{') {
            // `$${` and `##{` stand for a literal `${` and `#{`.
            literal.push_str(sigil);
            literal.push('{');
            position = start + 3;
        } else if after[1..].starts_with('{') {
            let mut parser = Parser { text, position: start + 2 };
            let expression = parser.expression().map_err(|e| format!("{e} in {text:?}"))?;
            parser.skip_spaces();
            if !parser.eat('}') {
                return Err(match parser.peek() {
                    None => format!("unclosed '{sigil}{{' at byte {start} in {text:?} (write {sigil}{sigil}{{ for a literal {sigil}{{)"),
                    Some(c) => format!("unexpected {c:?} at byte {} in {text:?}", parser.position),
                });
            }
            if !literal.is_empty() {
                segments.push(Segment::Literal(std::mem::take(&mut literal)));
            }
            segments.push(Segment::Expression(expression));
            position = parser.position;
        } else {
            literal.push_str(sigil);
            position = start + 1;
        }
    }
    literal.push_str(&text[position..]);
    if !literal.is_empty() {
        segments.push(Segment::Literal(literal));
    }
    Ok(segments)
}

/// `text` as a template that renders to exactly `text`: every `${` and `#{` escaped, for
/// text that comes from a user as it is (a URL or a body given on the command line).
///
/// ```
/// use horde_plan::{escape_template, parse_template, Segment};
/// let escaped = escape_template("cost $5, ${not} #{this}");
/// assert_eq!(parse_template(&escaped).unwrap(), vec![Segment::Literal("cost $5, ${not} #{this}".into())]);
/// ```
pub fn escape_template(text: &str) -> String {
    text.replace("${", "$${").replace("#{", "##{")
}

/// Parses a condition.
///
/// ```
/// use horde_plan::{parse_condition, Condition};
/// assert!(matches!(parse_condition("${n} > 3 and not exists(done)").unwrap(), Condition::And(_)));
/// assert!(parse_condition("${n} >").is_err());
/// ```
pub fn parse_condition(text: &str) -> Result<Condition, String> {
    let mut parser = Parser { text, position: 0 };
    let condition = parser.or().map_err(|e| format!("{e} in condition {text:?}"))?;
    parser.skip_spaces();
    match parser.peek() {
        None => Ok(condition),
        Some(_) => Err(format!("unexpected {:?} at byte {} in condition {text:?}", parser.rest(), parser.position)),
    }
}

/// A session variable name: used for `save_as`, loop counters, feeder columns and inside
/// templates.
pub fn is_variable_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-')
}

impl Expr {
    /// Calls `each` with every variable path the expression reads.
    pub fn visit_variables(&self, each: &mut dyn FnMut(&[String])) {
        match self {
            Expr::Variable(path) => each(path),
            Expr::Literal(_) => {}
            Expr::Call { args, .. } => args.iter().for_each(|a| a.visit_variables(each)),
            Expr::Method { target, args, .. } => {
                target.visit_variables(each);
                args.iter().for_each(|a| a.visit_variables(each));
            }
            Expr::Index { target, .. } | Expr::Field { target, .. } => target.visit_variables(each),
        }
    }
}

/// Calls `each` with every variable path the template reads.
pub fn template_variables(segments: &[Segment], each: &mut dyn FnMut(&[String])) {
    for segment in segments {
        if let Segment::Expression(expression) = segment {
            expression.visit_variables(each);
        }
    }
}

impl Condition {
    /// Calls `each` with every variable path the condition reads, `exists()` aside: testing
    /// whether a variable is set is no use of it.
    pub fn visit_variables(&self, each: &mut dyn FnMut(&[String])) {
        match self {
            Condition::Or(all) | Condition::And(all) => all.iter().for_each(|c| c.visit_variables(each)),
            Condition::Not(inner) => inner.visit_variables(each),
            Condition::Compare { left, right, .. } => {
                template_variables(left, each);
                template_variables(right, each);
            }
            Condition::Exists(_) => {}
            Condition::Truthy(value) => template_variables(value, each),
        }
    }
}

struct Parser<'a> {
    text: &'a str,
    position: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.position..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_spaces(&mut self) {
        let trimmed = self.rest().trim_start();
        self.position = self.text.len() - trimmed.len();
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.position += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, s: &str) -> bool {
        if self.rest().starts_with(s) {
            self.position += s.len();
            true
        } else {
            false
        }
    }

    /// A keyword (`and`, `not`) that is a whole word.
    fn eat_word(&mut self, word: &str) -> bool {
        let rest = self.rest();
        if rest.starts_with(word) && !rest[word.len()..].starts_with(is_name_char) {
            self.position += word.len();
            true
        } else {
            false
        }
    }

    fn name(&mut self) -> Option<&str> {
        let rest = self.rest();
        let end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        let start = self.position;
        self.position += end;
        Some(&self.text[start..start + end])
    }

    fn required_name(&mut self, what: &str) -> Result<String, String> {
        match self.name() {
            Some(name) => Ok(name.to_string()),
            None => Err(self.expected(what)),
        }
    }

    fn expected(&self, what: &str) -> String {
        match self.peek() {
            None => format!("expected {what} at the end"),
            Some(c) => format!("expected {what} at byte {}, found {c:?}", self.position),
        }
    }

    fn expression(&mut self) -> Result<Expr, String> {
        self.skip_spaces();
        let mut expression = self.primary()?;
        loop {
            if self.eat('.') {
                let name = self.required_name("a field or method name after '.'")?;
                if self.eat('(') {
                    let args = self.arguments()?;
                    let (_, method, arity) = Method::ALL
                        .iter()
                        .find(|(n, _, _)| *n == name)
                        .ok_or_else(|| format!("unknown method {name}() (methods: {})", method_names()))?;
                    if args.len() != *arity {
                        return Err(format!("{name}() takes {arity} argument(s), not {}", args.len()));
                    }
                    expression = Expr::Method { target: Box::new(expression), method: *method, args };
                } else {
                    expression = match expression {
                        Expr::Variable(mut path) => {
                            path.push(name);
                            Expr::Variable(path)
                        }
                        other => Expr::Field { target: Box::new(other), key: name },
                    };
                }
            } else if self.eat('[') {
                self.skip_spaces();
                let start = self.position;
                self.eat('-');
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.position += 1;
                }
                let index = self.text[start..self.position]
                    .parse::<i64>()
                    .map_err(|_| format!("expected a whole number in [...] at byte {start}"))?;
                self.skip_spaces();
                if !self.eat(']') {
                    return Err(self.expected("']'"));
                }
                expression = Expr::Index { target: Box::new(expression), index };
            } else {
                return Ok(expression);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        match self.peek() {
            Some(quote @ ('\'' | '"')) => Ok(Expr::Literal(self.quoted(quote)?)),
            Some(c) if c.is_ascii_digit() || c == '-' => Ok(Expr::Literal(self.number()?)),
            Some(_) => {
                let start = self.position;
                let name = self.required_name("a variable name")?;
                if name.starts_with("__") {
                    return self.call(&name, start);
                }
                Ok(Expr::Variable(vec![name]))
            }
            None => Err(self.expected("an expression")),
        }
    }

    fn call(&mut self, name: &str, start: usize) -> Result<Expr, String> {
        let (_, function, arity) = Function::ALL
            .iter()
            .find(|(n, _, _)| *n == name)
            .ok_or_else(|| format!("unknown function {name} at byte {start} (functions: {})", function_names()))?;
        let args = match (arity, self.eat('(')) {
            (Arity::Bare, false) => Vec::new(),
            (Arity::Bare, true) => return Err(format!("{name} takes no parentheses")),
            (Arity::Call(_), false) => return Err(format!("{name} is a function: {name}(...)")),
            (Arity::Call(count), true) => {
                let args = if *function == Function::Counter {
                    // A counter's name is a name, not a variable read.
                    self.skip_spaces();
                    let counter = self.required_name("a counter name")?;
                    self.skip_spaces();
                    if !self.eat(')') {
                        return Err(self.expected("')'"));
                    }
                    vec![Expr::Literal(counter)]
                } else {
                    self.arguments()?
                };
                if args.len() != *count {
                    return Err(format!("{name}() takes {count} argument(s), not {}", args.len()));
                }
                args
            }
        };
        Ok(Expr::Call { function: *function, args })
    }

    /// Comma-separated expressions up to `)`; the `(` is already read.
    fn arguments(&mut self) -> Result<Vec<Expr>, String> {
        let mut args = Vec::new();
        self.skip_spaces();
        if self.eat(')') {
            return Ok(args);
        }
        loop {
            args.push(self.expression()?);
            self.skip_spaces();
            if self.eat(')') {
                return Ok(args);
            }
            if !self.eat(',') {
                return Err(self.expected("',' or ')'"));
            }
        }
    }

    /// A quoted string: `\` escapes the quote and itself.
    fn quoted(&mut self, quote: char) -> Result<String, String> {
        let start = self.position;
        self.position += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, escaped)) => out.push(escaped),
                    None => break,
                },
                c if c == quote => {
                    self.position += i + 1;
                    return Ok(out);
                }
                c => out.push(c),
            }
        }
        Err(format!("unclosed {quote} at byte {start}"))
    }

    fn number(&mut self) -> Result<String, String> {
        let start = self.position;
        self.eat('-');
        while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
            self.position += 1;
        }
        let text = &self.text[start..self.position];
        text.parse::<f64>().map_err(|_| format!("{text:?} at byte {start} is not a number"))?;
        Ok(text.to_string())
    }

    fn or(&mut self) -> Result<Condition, String> {
        let mut all = vec![self.and()?];
        loop {
            self.skip_spaces();
            if self.eat_word("or") || self.eat_str("||") {
                all.push(self.and()?);
            } else {
                return Ok(if all.len() == 1 { all.remove(0) } else { Condition::Or(all) });
            }
        }
    }

    fn and(&mut self) -> Result<Condition, String> {
        let mut all = vec![self.not()?];
        loop {
            self.skip_spaces();
            if self.eat_word("and") || self.eat_str("&&") {
                all.push(self.not()?);
            } else {
                return Ok(if all.len() == 1 { all.remove(0) } else { Condition::And(all) });
            }
        }
    }

    fn not(&mut self) -> Result<Condition, String> {
        self.skip_spaces();
        if self.eat_word("not") || (self.rest().starts_with('!') && !self.rest().starts_with("!=") && self.eat('!')) {
            return Ok(Condition::Not(Box::new(self.not()?)));
        }
        if self.eat('(') {
            let inner = self.or()?;
            self.skip_spaces();
            if !self.eat(')') {
                return Err(self.expected("')'"));
            }
            return Ok(inner);
        }
        for (word, negated) in [("exists", false), ("not_exists", true)] {
            if self.eat_word(word) {
                self.skip_spaces();
                if !self.eat('(') {
                    return Err(self.expected("'(' after exists"));
                }
                self.skip_spaces();
                let path = match self.expression()? {
                    Expr::Variable(path) => path,
                    _ => return Err(format!("{word}() takes a variable name")),
                };
                self.skip_spaces();
                if !self.eat(')') {
                    return Err(self.expected("')'"));
                }
                let exists = Condition::Exists(path);
                return Ok(if negated { Condition::Not(Box::new(exists)) } else { exists });
            }
        }
        let left = self.operand()?;
        self.skip_spaces();
        let op = [
            ("==", CompareOp::Eq),
            ("!=", CompareOp::Ne),
            ("<=", CompareOp::Le),
            (">=", CompareOp::Ge),
            ("<", CompareOp::Lt),
            (">", CompareOp::Gt),
        ]
        .into_iter()
        .find(|(symbol, _)| self.eat_str(symbol));
        match op {
            Some((_, op)) => {
                let right = self.operand()?;
                Ok(Condition::Compare { left, op, right })
            }
            None => Ok(Condition::Truthy(left)),
        }
    }

    /// One side of a comparison: `${...}`, a quoted template, a number, `true` or `false`.
    fn operand(&mut self) -> Result<Vec<Segment>, String> {
        self.skip_spaces();
        match self.peek() {
            Some(sigil @ ('$' | '#')) => {
                let start = self.position;
                self.position += 1;
                if !self.eat('{') {
                    return Err(format!("expected '{{' after '{sigil}' at byte {start}"));
                }
                let expression = self.expression()?;
                self.skip_spaces();
                if !self.eat('}') {
                    return Err(format!("unclosed '{sigil}{{' at byte {start}"));
                }
                Ok(vec![Segment::Expression(expression)])
            }
            Some(quote @ ('\'' | '"')) => {
                let text = self.quoted(quote)?;
                parse_template(&text)
            }
            Some(c) if c.is_ascii_digit() || c == '-' => Ok(vec![Segment::Literal(self.number()?)]),
            _ => {
                for word in ["true", "false"] {
                    if self.eat_word(word) {
                        return Ok(vec![Segment::Literal(word.to_string())]);
                    }
                }
                Err(self.expected("a value (${...} or #{...}, 'text', a number, true or false)"))
            }
        }
    }
}

fn method_names() -> String {
    Method::ALL.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ")
}

fn function_names() -> String {
    Function::ALL.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(path: &[&str]) -> Expr {
        Expr::Variable(path.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn plain_text_is_one_literal() {
        assert_eq!(parse_template("abc").unwrap(), vec![Segment::Literal("abc".into())]);
        assert_eq!(parse_template("").unwrap(), vec![]);
        assert_eq!(parse_template("cost $5").unwrap(), vec![Segment::Literal("cost $5".into())]);
    }

    #[test]
    fn escaped_dollar_brace_is_literal() {
        assert_eq!(parse_template("$${x}").unwrap(), vec![Segment::Literal("${x}".into())]);
        assert_eq!(parse_template("##{x}").unwrap(), vec![Segment::Literal("#{x}".into())]);
        assert_eq!(parse_template("a # b #1 $$5").unwrap(), vec![Segment::Literal("a # b #1 $$5".into())]);
    }

    #[test]
    fn gatling_hash_brace_is_a_template_too() {
        assert_eq!(parse_template("#{viewState}").unwrap(), parse_template("${viewState}").unwrap());
        assert_eq!(
            parse_template("/items/#{id}?q=${q.url_encode()}").unwrap(),
            vec![
                Segment::Literal("/items/".into()),
                Segment::Expression(var(&["id"])),
                Segment::Literal("?q=".into()),
                Segment::Expression(Expr::Method {
                    target: Box::new(var(&["q"])),
                    method: Method::UrlEncode,
                    args: vec![]
                }),
            ]
        );
        assert_eq!(parse_condition("#{n} > 3").unwrap(), parse_condition("${n} > 3").unwrap());
        let unclosed = parse_template("color: #{red").unwrap_err();
        assert!(unclosed.contains("unclosed '#{'") && unclosed.contains("##{"), "{unclosed}");
    }

    #[test]
    fn escaping_gives_back_the_text() {
        for text in ["${a}", "#{a}", "$${a}", "##{a}", "$#{", "#${x}", "cost $5 #1", "$", "#", "${", "#{"] {
            let escaped = escape_template(text);
            let rendered: String = parse_template(&escaped)
                .unwrap()
                .into_iter()
                .map(|segment| match segment {
                    Segment::Literal(text) => text,
                    Segment::Expression(e) => panic!("{text:?} gave an expression {e:?}"),
                })
                .collect();
            assert_eq!(rendered, text);
        }
    }

    #[test]
    fn variables_between_literals() {
        assert_eq!(
            parse_template("${a}${b}c").unwrap(),
            vec![Segment::Expression(var(&["a"])), Segment::Expression(var(&["b"])), Segment::Literal("c".into())]
        );
    }

    #[test]
    fn paths_methods_and_functions() {
        let [Segment::Expression(e)] = &parse_template("${order.items[0].sku}").unwrap()[..] else { panic!() };
        assert_eq!(
            *e,
            Expr::Field {
                target: Box::new(Expr::Index { target: Box::new(var(&["order", "items"])), index: 0 }),
                key: "sku".into()
            }
        );
        let [Segment::Expression(e)] = &parse_template("${ids.random()}").unwrap()[..] else { panic!() };
        assert_eq!(*e, Expr::Method { target: Box::new(var(&["ids"])), method: Method::Random, args: vec![] });
        let [Segment::Expression(e)] = &parse_template("${__random_int(1, 100)}").unwrap()[..] else { panic!() };
        assert_eq!(
            *e,
            Expr::Call {
                function: Function::RandomInt,
                args: vec![Expr::Literal("1".into()), Expr::Literal("100".into())]
            }
        );
        let [Segment::Expression(e)] = &parse_template("${body.hmac_sha256('k}ey')}").unwrap()[..] else { panic!() };
        assert!(
            matches!(e, Expr::Method { method: Method::HmacSha256, args, .. } if args == &[Expr::Literal("k}ey".into())])
        );
        assert!(matches!(
            parse_template("${__user_id}").unwrap()[0],
            Segment::Expression(Expr::Call { function: Function::UserId, .. })
        ));
        assert!(matches!(
            parse_template("${__counter(orders)}").unwrap()[0],
            Segment::Expression(Expr::Call { function: Function::Counter, .. })
        ));
    }

    #[test]
    fn malformed_templates_are_refused() {
        assert!(parse_template("${unclosed").unwrap_err().contains("unclosed"));
        assert!(parse_template("${}").unwrap_err().contains("expected a variable name"));
        assert!(parse_template("${a b}").unwrap_err().contains("unexpected 'b'"));
        assert!(parse_template("${x.nope()}").unwrap_err().contains("unknown method nope()"));
        assert!(parse_template("${__nope()}").unwrap_err().contains("unknown function __nope"));
        assert!(parse_template("${__uuid(1)}").unwrap_err().contains("takes 0 argument"));
        assert!(parse_template("${__user_id()}").unwrap_err().contains("no parentheses"));
        assert!(parse_template("${x[a]}").unwrap_err().contains("whole number"));
    }

    #[test]
    fn conditions_parse_with_precedence() {
        let c = parse_condition("${a} == 'x' or ${n} > 3 and not exists(t)").unwrap();
        let Condition::Or(parts) = c else { panic!("{c:?}") };
        assert!(matches!(parts[0], Condition::Compare { op: CompareOp::Eq, .. }));
        let Condition::And(inner) = &parts[1] else { panic!() };
        assert!(matches!(inner[1], Condition::Not(_)));
        assert!(matches!(parse_condition("!(${a} != '${b}')").unwrap(), Condition::Not(_)));
        assert_eq!(parse_condition("true").unwrap(), Condition::Truthy(vec![Segment::Literal("true".into())]));
        assert!(parse_condition("not_exists(x)").is_ok());
        assert!(parse_condition("${a} ==").unwrap_err().contains("expected a value"));
        assert!(parse_condition("${a} == 'x' junk").unwrap_err().contains("unexpected"));
        assert!(parse_condition("a == 1").unwrap_err().contains("expected a value"));
    }

    #[test]
    fn variables_are_visited() {
        let mut seen = Vec::new();
        parse_condition("${a.b} == '${c[0].size()}' and exists(d)")
            .unwrap()
            .visit_variables(&mut |p| seen.push(p.join(".")));
        assert_eq!(seen, ["a.b", "c"]);
    }
}
