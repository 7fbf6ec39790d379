//! Templates, expressions and conditions, compiled once when the plan is lowered and
//! evaluated natively against a user's session: no parsing, no name lookup, and for a plain
//! `${name}` nothing but a copy of the variable's text.

use super::value::Value;
use super::Session;
use crate::segment::RunCounter;
use base64::Engine as _;
use horde_plan::{CompareOp, Condition, Expr, Function, Method, Segment};
use rand::Rng;
use std::sync::Arc;

/// Why an expression has no value.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// The variable in this slot is not set.
    Undefined(usize),
    /// A value of the wrong shape, an index out of range: the message says which.
    Invalid(String),
}

/// What compiling needs from the plan: where each variable lives, and the run's counters.
pub trait Names {
    /// The slot of the variable a dotted path starts with, and how many of the path's parts
    /// name it (`a.b.c` is the variable `a.b` when the plan sets one, then field `c`).
    fn variable(&mut self, path: &[String]) -> (usize, usize);
    /// The same, for `exists()`: testing whether a variable is set is no use of it, and a
    /// name no step sets is no mistake there.
    fn probe(&mut self, path: &[String]) -> (usize, usize) {
        self.variable(path)
    }
    /// The run-wide counter of this name, shared by every worker.
    fn counter(&mut self, name: &str) -> Arc<RunCounter>;
}

/// A string with `${...}` expressions.
#[derive(Debug, Clone)]
pub struct Template {
    segments: Vec<TemplateSegment>,
}

#[derive(Debug, Clone)]
enum TemplateSegment {
    Literal(String),
    /// `${name}`: the fast path.
    Variable(usize),
    Expression {
        expression: Box<Compiled>,
        source: Arc<str>,
    },
}

impl Template {
    pub fn literal(text: &str) -> Template {
        Template { segments: vec![TemplateSegment::Literal(text.to_string())] }
    }

    pub fn compile(segments: Vec<Segment>, names: &mut dyn Names) -> Result<Template, String> {
        let segments = segments
            .into_iter()
            .map(|segment| match segment {
                Segment::Literal(text) => Ok(TemplateSegment::Literal(text)),
                Segment::Expression(expression) => {
                    let source: Arc<str> = describe(&expression).into();
                    match Compiled::compile(expression, names)? {
                        Compiled::Variable(slot) => Ok(TemplateSegment::Variable(slot)),
                        compiled => Ok(TemplateSegment::Expression { expression: Box::new(compiled), source }),
                    }
                }
            })
            .collect::<Result<_, String>>()?;
        Ok(Template { segments })
    }

    /// The text when the template has no expressions.
    pub fn as_static(&self) -> Option<&str> {
        match self.segments.as_slice() {
            [] => Some(""),
            [TemplateSegment::Literal(text)] => Some(text),
            _ => None,
        }
    }

    /// Appends the rendered template to `out`.
    pub fn render_into(&self, session: &mut Session, out: &mut String) -> Result<(), EvalError> {
        for segment in &self.segments {
            match segment {
                TemplateSegment::Literal(text) => out.push_str(text),
                TemplateSegment::Variable(slot) => match &session.variables[*slot] {
                    Some(value) => value.render_into(out),
                    None => return Err(EvalError::Undefined(*slot)),
                },
                TemplateSegment::Expression { expression, source } => {
                    expression.eval(session).map_err(|e| e.within(source))?.render_into(out)
                }
            }
        }
        Ok(())
    }

    pub fn render(&self, session: &mut Session) -> Result<String, EvalError> {
        let mut out = String::new();
        self.render_into(session, &mut out)?;
        Ok(out)
    }

    /// The value of a template that is one expression (a list stays a list); the rendered
    /// text of any other.
    pub fn value(&self, session: &mut Session) -> Result<Value, EvalError> {
        match self.segments.as_slice() {
            [TemplateSegment::Variable(slot)] => session.variables[*slot].clone().ok_or(EvalError::Undefined(*slot)),
            [TemplateSegment::Expression { expression, source }] => {
                expression.eval(session).map_err(|e| e.within(source))
            }
            _ => self.render(session).map(Value::from),
        }
    }
}

impl EvalError {
    /// The message names the expression it came from.
    fn within(self, source: &str) -> EvalError {
        match self {
            EvalError::Invalid(message) if !message.starts_with("${") => {
                EvalError::Invalid(format!("{source}: {message}"))
            }
            other => other,
        }
    }
}

/// An expression ready to evaluate.
#[derive(Debug, Clone)]
pub enum Compiled {
    Variable(usize),
    Literal(Value),
    Uuid,
    RandomInt(Box<Compiled>, Box<Compiled>),
    RandomString(Box<Compiled>),
    NowMs,
    NowS,
    Counter(Arc<RunCounter>),
    UserId,
    Scenario,
    Method { target: Box<Compiled>, method: Method, args: Vec<Compiled> },
    JsonPath(Box<Compiled>, Box<serde_json_path::JsonPath>),
    Index(Box<Compiled>, i64),
    Field(Box<Compiled>, String),
}

impl Compiled {
    pub fn compile(expression: Expr, names: &mut dyn Names) -> Result<Compiled, String> {
        let mut compile = |e: Expr| Compiled::compile(e, names).map(Box::new);
        Ok(match expression {
            Expr::Variable(path) => {
                let (slot, used) = names.variable(&path);
                path[used..]
                    .iter()
                    .fold(Compiled::Variable(slot), |target, key| Compiled::Field(Box::new(target), key.clone()))
            }
            Expr::Literal(text) => Compiled::Literal(Value::from(text)),
            Expr::Index { target, index } => Compiled::Index(compile(*target)?, index),
            Expr::Field { target, key } => Compiled::Field(compile(*target)?, key),
            Expr::Call { function, args } => {
                let mut args = args.into_iter();
                let mut next = || args.next().expect("the parser checked the arity");
                match function {
                    Function::Uuid => Compiled::Uuid,
                    Function::NowMs => Compiled::NowMs,
                    Function::NowS => Compiled::NowS,
                    Function::UserId => Compiled::UserId,
                    Function::Scenario => Compiled::Scenario,
                    Function::RandomInt => {
                        let low = compile(next())?;
                        Compiled::RandomInt(low, compile(next())?)
                    }
                    Function::RandomString => Compiled::RandomString(compile(next())?),
                    Function::Counter => match next() {
                        Expr::Literal(name) => Compiled::Counter(names.counter(&name)),
                        _ => unreachable!("the parser reads a counter's name as a literal"),
                    },
                }
            }
            Expr::Method { target, method: Method::JsonPath, args } => {
                let query = match args.into_iter().next() {
                    Some(Expr::Literal(query)) => query,
                    _ => return Err("jsonpath() takes a quoted query: jsonpath('$.items[0]')".into()),
                };
                let parsed =
                    serde_json_path::JsonPath::parse(&query).map_err(|e| format!("invalid JSONPath {query:?}: {e}"))?;
                Compiled::JsonPath(compile(*target)?, Box::new(parsed))
            }
            Expr::Method { target, method, args } => {
                let target = compile(*target)?;
                let args = args.into_iter().map(|a| Compiled::compile(a, names)).collect::<Result<_, _>>()?;
                Compiled::Method { target, method, args }
            }
        })
    }

    pub fn eval(&self, session: &mut Session) -> Result<Value, EvalError> {
        Ok(match self {
            Compiled::Variable(slot) => session.variables[*slot].clone().ok_or(EvalError::Undefined(*slot))?,
            Compiled::Literal(value) => value.clone(),
            Compiled::Uuid => {
                let bytes: [u8; 16] = session.rng.random();
                Value::from(uuid::Builder::from_random_bytes(bytes).into_uuid().to_string())
            }
            Compiled::RandomInt(low, high) => {
                let low = integer(&low.eval(session)?)?;
                let high = integer(&high.eval(session)?)?;
                if low > high {
                    return Err(EvalError::Invalid(format!(
                        "__random_int({low}, {high}): the low bound is above the high one"
                    )));
                }
                Value::from(session.rng.random_range(low..=high).to_string())
            }
            Compiled::RandomString(length) => {
                let length = integer(&length.eval(session)?)?;
                let length = usize::try_from(length).ok().filter(|n| *n <= 1 << 20).ok_or_else(|| {
                    EvalError::Invalid(format!("__random_string({length}): a length from 0 to 1048576"))
                })?;
                let text: String =
                    (&mut session.rng).sample_iter(rand::distr::Alphanumeric).take(length).map(char::from).collect();
                Value::from(text)
            }
            Compiled::NowMs => {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                Value::from(now.as_millis().to_string())
            }
            Compiled::NowS => {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                Value::from(now.as_secs().to_string())
            }
            Compiled::Counter(counter) => {
                let value = counter.take().map_err(|cut_off| EvalError::Invalid(cut_off.to_string()))?;
                Value::from((value + 1).to_string())
            }
            Compiled::UserId => Value::from(session.user_id.to_string()),
            Compiled::Scenario => Value::Text(session.scenario.clone()),
            Compiled::Index(target, index) => {
                let value = target.eval(session)?;
                let json = value
                    .to_json()
                    .ok_or_else(|| EvalError::Invalid(format!("[{index}] on a value that is not a list")))?;
                let items = json
                    .as_array()
                    .ok_or_else(|| EvalError::Invalid(format!("[{index}] on a value that is not a list")))?;
                let position = if *index < 0 { items.len() as i64 + index } else { *index };
                let item = usize::try_from(position)
                    .ok()
                    .and_then(|i| items.get(i))
                    .ok_or_else(|| EvalError::Invalid(format!("index {index} is out of a list of {}", items.len())))?;
                Value::from_json(item.clone())
            }
            Compiled::Field(target, key) => {
                let value = target.eval(session)?;
                let json = value.to_json();
                // JSON null is no value: `exists()` is false for it, as for a missing field.
                let field = json.as_deref().and_then(|j| j.get(key.as_str())).filter(|f| !f.is_null());
                match field {
                    Some(field) => Value::from_json(field.clone()),
                    None => {
                        return Err(EvalError::Invalid(format!("no field {key:?} in {}", abridged(&value.as_text()))))
                    }
                }
            }
            Compiled::JsonPath(target, query) => {
                let value = target.eval(session)?;
                let json = value
                    .to_json()
                    .ok_or_else(|| EvalError::Invalid("jsonpath() on a value that is not JSON".into()))?;
                let found = query.query(&json).all().into_iter().find(|v| !v.is_null()).cloned();
                match found {
                    Some(found) => Value::from_json(found),
                    None => {
                        return Err(EvalError::Invalid(format!(
                            "jsonpath() found nothing in {}",
                            abridged(&value.as_text())
                        )))
                    }
                }
            }
            Compiled::Method { target, method, args } => {
                let value = target.eval(session)?;
                let mut arg_values = Vec::with_capacity(args.len());
                for arg in args {
                    arg_values.push(arg.eval(session)?);
                }
                apply(*method, value, &arg_values, session)?
            }
        })
    }
}

fn integer(value: &Value) -> Result<i64, EvalError> {
    let text = value.as_text();
    text.trim().parse::<i64>().map_err(|_| EvalError::Invalid(format!("{text:?} is not a whole number")))
}

/// Text for a message: quoted, and cut after 100 characters.
pub(crate) fn abridged(text: &str) -> String {
    if text.chars().count() > 100 {
        format!("{:?}...", text.chars().take(100).collect::<String>())
    } else {
        format!("{text:?}")
    }
}

fn list_of(value: &Value, method: &str) -> Result<Vec<serde_json::Value>, EvalError> {
    match value.to_json().map(|j| j.into_owned()) {
        Some(serde_json::Value::Array(items)) => Ok(items),
        _ => {
            Err(EvalError::Invalid(format!("{method}() on a value that is not a list: {}", abridged(&value.as_text()))))
        }
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Characters a URL component keeps as they are (RFC 3986's unreserved).
const URL_COMPONENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn apply(method: Method, value: Value, args: &[Value], session: &mut Session) -> Result<Value, EvalError> {
    use hmac::Mac;
    use sha2::Digest;
    let text = || value.as_text();
    Ok(match method {
        Method::Size => match value.to_json().as_deref() {
            Some(serde_json::Value::Array(items)) => Value::from(items.len().to_string()),
            Some(serde_json::Value::Object(map)) => Value::from(map.len().to_string()),
            _ => {
                return Err(EvalError::Invalid(format!("size() on a value that is not a list: {}", abridged(&text()))))
            }
        },
        Method::Random => {
            let items = list_of(&value, "random")?;
            if items.is_empty() {
                return Err(EvalError::Invalid("random() on an empty list".into()));
            }
            let pick = session.rng.random_range(0..items.len());
            Value::from_json(items.into_iter().nth(pick).expect("in range"))
        }
        Method::Base64 => Value::from(base64::engine::general_purpose::STANDARD.encode(text().as_bytes())),
        Method::Base64Decode => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(text().trim().as_bytes())
                .map_err(|e| EvalError::Invalid(format!("base64_decode(): {e}")))?;
            Value::from(String::from_utf8_lossy(&decoded).into_owned())
        }
        Method::UrlEncode => Value::from(percent_encoding::utf8_percent_encode(&text(), URL_COMPONENT).to_string()),
        Method::JsonEscape => {
            let quoted = serde_json::to_string(&*text()).expect("strings serialize");
            Value::from(quoted[1..quoted.len() - 1].to_string())
        }
        Method::Json => Value::from(serde_json::to_string(&value.clone().into_json()).expect("JSON serializes")),
        Method::Md5 => Value::from(hex(&md5::Md5::digest(text().as_bytes()))),
        Method::Sha1 => Value::from(hex(&sha1::Sha1::digest(text().as_bytes()))),
        Method::Sha256 => Value::from(hex(&sha2::Sha256::digest(text().as_bytes()))),
        Method::HmacSha1 => {
            let mut mac =
                hmac::Hmac::<sha1::Sha1>::new_from_slice(args[0].as_text().as_bytes()).expect("any key length");
            mac.update(text().as_bytes());
            Value::from(hex(&mac.finalize().into_bytes()))
        }
        Method::HmacSha256 => {
            let mut mac =
                hmac::Hmac::<sha2::Sha256>::new_from_slice(args[0].as_text().as_bytes()).expect("any key length");
            mac.update(text().as_bytes());
            Value::from(hex(&mac.finalize().into_bytes()))
        }
        // BASE64URL(SHA-256(verifier)) without padding: each user's own PKCE pair.
        Method::PkceChallenge => Value::from(
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(text().as_bytes())),
        ),
        Method::JsonPath => unreachable!("compiled to Compiled::JsonPath"),
    })
}

/// The expression as written, for messages.
fn describe(expression: &Expr) -> String {
    fn arguments(args: &[Expr], out: &mut String) {
        out.push('(');
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            inner(arg, out);
        }
        out.push(')');
    }
    fn inner(e: &Expr, out: &mut String) {
        match e {
            Expr::Variable(path) => out.push_str(&path.join(".")),
            Expr::Literal(text) => out.push_str(&format!("{text:?}")),
            Expr::Call { function, args } => {
                let name = format!("{function:?}");
                out.push_str("__");
                out.push_str(&to_snake(&name));
                if !matches!(function, Function::UserId | Function::Scenario) {
                    arguments(args, out);
                }
            }
            Expr::Method { target, method, args } => {
                inner(target, out);
                out.push('.');
                out.push_str(method.name());
                arguments(args, out);
            }
            Expr::Index { target, index } => {
                inner(target, out);
                out.push_str(&format!("[{index}]"));
            }
            Expr::Field { target, key } => {
                inner(target, out);
                out.push('.');
                out.push_str(key);
            }
        }
    }
    let mut out = String::from("${");
    inner(expression, &mut out);
    out.push('}');
    out
}

fn to_snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// `left op right`: as numbers when both sides read as numbers (`'10' > '9'`), else as texts.
/// Conditions and checks' comparisons both compare this way.
pub fn compare(left: &str, op: CompareOp, right: &str) -> bool {
    let ordering = match (left.trim().parse::<f64>(), right.trim().parse::<f64>()) {
        (Ok(l), Ok(r)) => l.partial_cmp(&r),
        _ => Some(left.cmp(right)),
    };
    use std::cmp::Ordering::*;
    match (op, ordering) {
        (CompareOp::Eq, o) => o == Some(Equal),
        (CompareOp::Ne, o) => o != Some(Equal),
        (CompareOp::Lt, o) => o == Some(Less),
        (CompareOp::Le, o) => matches!(o, Some(Less | Equal)),
        (CompareOp::Gt, o) => o == Some(Greater),
        (CompareOp::Ge, o) => matches!(o, Some(Greater | Equal)),
    }
}

/// A condition ready to evaluate.
#[derive(Debug, Clone)]
pub enum CompiledCondition {
    Or(Vec<CompiledCondition>),
    And(Vec<CompiledCondition>),
    Not(Box<CompiledCondition>),
    Compare(Template, CompareOp, Template),
    Exists(Compiled),
    Truthy(Template),
}

impl CompiledCondition {
    pub fn compile(condition: Condition, names: &mut dyn Names) -> Result<CompiledCondition, String> {
        Ok(match condition {
            Condition::Or(all) => CompiledCondition::Or(
                all.into_iter().map(|c| CompiledCondition::compile(c, names)).collect::<Result<_, _>>()?,
            ),
            Condition::And(all) => CompiledCondition::And(
                all.into_iter().map(|c| CompiledCondition::compile(c, names)).collect::<Result<_, _>>()?,
            ),
            Condition::Not(inner) => CompiledCondition::Not(Box::new(CompiledCondition::compile(*inner, names)?)),
            Condition::Compare { left, op, right } => {
                CompiledCondition::Compare(Template::compile(left, names)?, op, Template::compile(right, names)?)
            }
            Condition::Exists(path) => {
                let (slot, used) = names.probe(&path);
                let compiled = path[used..]
                    .iter()
                    .fold(Compiled::Variable(slot), |target, key| Compiled::Field(Box::new(target), key.clone()));
                CompiledCondition::Exists(compiled)
            }
            Condition::Truthy(value) => CompiledCondition::Truthy(Template::compile(value, names)?),
        })
    }

    /// Whether the condition holds. A comparison whose sides both read as numbers compares
    /// numbers (`${n} > 3`, `'10' > '9'`); otherwise texts.
    pub fn holds(&self, session: &mut Session) -> Result<bool, EvalError> {
        Ok(match self {
            CompiledCondition::Or(all) => {
                for condition in all {
                    if condition.holds(session)? {
                        return Ok(true);
                    }
                }
                false
            }
            CompiledCondition::And(all) => {
                for condition in all {
                    if !condition.holds(session)? {
                        return Ok(false);
                    }
                }
                true
            }
            CompiledCondition::Not(inner) => !inner.holds(session)?,
            CompiledCondition::Exists(path) => path.eval(session).is_ok(),
            CompiledCondition::Truthy(value) => value.render(session)?.trim() == "true",
            CompiledCondition::Compare(left, op, right) => {
                let left = left.render(session)?;
                let right = right.render(session)?;
                compare(&left, *op, &right)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use horde_plan::{parse_condition, parse_template};
    use rand::SeedableRng;
    use std::collections::HashMap;

    #[derive(Default)]
    struct TestNames {
        slots: HashMap<String, usize>,
        counters: HashMap<String, Arc<RunCounter>>,
    }

    impl Names for TestNames {
        fn variable(&mut self, path: &[String]) -> (usize, usize) {
            // The longest prefix already known, else the first part alone.
            for used in (1..=path.len()).rev() {
                if let Some(&slot) = self.slots.get(&path[..used].join(".")) {
                    return (slot, used);
                }
            }
            let next = self.slots.len();
            (*self.slots.entry(path[0].clone()).or_insert(next), 1)
        }
        fn counter(&mut self, name: &str) -> Arc<RunCounter> {
            self.counters
                .entry(name.to_string())
                .or_insert_with(|| Arc::new(RunCounter::new(crate::segment::Stripe::whole())))
                .clone()
        }
    }

    fn session(values: &[(&str, Value)], names: &mut TestNames) -> Session {
        let mut variables = vec![None; values.len()];
        for (name, value) in values {
            let slot = names.variable(&[name.to_string()]).0;
            if slot >= variables.len() {
                variables.resize(slot + 1, None);
            }
            variables[slot] = Some(value.clone());
        }
        Session {
            variables,
            rng: rand::rngs::SmallRng::seed_from_u64(1),
            user_id: 7,
            scenario: "shop".into(),
            extra: None,
        }
    }

    fn render(text: &str, values: &[(&str, Value)]) -> Result<String, EvalError> {
        let mut names = TestNames::default();
        let mut session = session(values, &mut names);
        let template = Template::compile(parse_template(text).unwrap(), &mut names).unwrap();
        session.variables.resize(names.slots.len(), None);
        template.render(&mut session)
    }

    fn json(text: &str) -> Value {
        Value::from_json(serde_json::from_str(text).unwrap())
    }

    #[test]
    fn paths_into_json_and_lists() {
        let order = json(r#"{"items": [{"sku": "a1"}, {"sku": "b2"}], "id": 5}"#);
        assert_eq!(render("${order.items[1].sku}/${order.id}", &[("order", order.clone())]).unwrap(), "b2/5");
        assert_eq!(render("${order.items[-1].sku}", &[("order", order.clone())]).unwrap(), "b2");
        assert_eq!(render("${order.items.size()}", &[("order", order.clone())]).unwrap(), "2");
        let err = render("${order.items[2]}", &[("order", order.clone())]).unwrap_err();
        assert_eq!(err, EvalError::Invalid("${order.items[2]}: index 2 is out of a list of 2".into()));
        assert!(
            matches!(render("${order.nope}", &[("order", order)]), Err(EvalError::Invalid(m)) if m.contains("no field \"nope\""))
        );
        // A dotted name that is a variable is that variable.
        assert_eq!(render("${a.b}", &[("a.b", Value::from("x"))]).unwrap(), "x");
        assert_eq!(render("${missing}", &[]), Err(EvalError::Undefined(0)));
    }

    #[test]
    fn functions_and_encodings() {
        let uuid = render("${__uuid()}", &[]).unwrap();
        assert_eq!(uuid.len(), 36);
        // The clock in seconds and in milliseconds: the same instant, read twice.
        let seconds: u64 = render("${__now_s()}", &[]).unwrap().parse().unwrap();
        let millis: u64 = render("${__now_ms()}", &[]).unwrap().parse().unwrap();
        assert!(millis / 1000 >= seconds && millis / 1000 - seconds <= 1, "{seconds} s, {millis} ms");
        assert!(seconds > 1_700_000_000, "seconds since 1970: {seconds}");
        assert_eq!(&uuid[14..15], "4");
        let n: i64 = render("${__random_int(1, 3)}", &[]).unwrap().parse().unwrap();
        assert!((1..=3).contains(&n));
        assert_eq!(render("${__random_string(12)}", &[]).unwrap().len(), 12);
        assert_eq!(render("${__user_id}-${__scenario}", &[]).unwrap(), "7-shop");
        assert_eq!(render("${__counter(c)},${__counter(c)}", &[]).unwrap(), "1,2");
        let v = |s: &str| [("v", Value::from(s))];
        assert_eq!(render("${v.base64()}", &v("hi there")).unwrap(), "aGkgdGhlcmU=");
        assert_eq!(render("${v.base64_decode()}", &v("aGkgdGhlcmU=")).unwrap(), "hi there");
        assert_eq!(render("${v.url_encode()}", &v("a b&c/é")).unwrap(), "a%20b%26c%2F%C3%A9");
        assert_eq!(render("${v.json_escape()}", &v("say \"hi\"\n")).unwrap(), r#"say \"hi\"\n"#);
        assert_eq!(render("${v.json()}", &v("x")).unwrap(), r#""x""#);
        assert_eq!(render("${v.md5()}", &v("abc")).unwrap(), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(render("${v.sha1()}", &v("abc")).unwrap(), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            render("${v.sha256()}", &v("abc")).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // RFC 4231 test case 2.
        assert_eq!(
            render("${v.hmac_sha256('Jefe')}", &v("what do ya want for nothing?")).unwrap(),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // RFC 7636 appendix B.
        assert_eq!(
            render("${v.pkce_challenge()}", &v("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).unwrap(),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(render("${l.random()}", &[("l", json(r#"["only"]"#))]).unwrap(), "only");
        assert_eq!(render("${d.jsonpath('$.a[1]')}", &[("d", Value::from(r#"{"a": [1, 2]}"#))]).unwrap(), "2");
    }

    fn holds(text: &str, values: &[(&str, Value)]) -> Result<bool, EvalError> {
        let mut names = TestNames::default();
        let mut session = session(values, &mut names);
        let condition = CompiledCondition::compile(parse_condition(text).unwrap(), &mut names).unwrap();
        session.variables.resize(names.slots.len(), None);
        condition.holds(&mut session)
    }

    #[test]
    fn conditions_compare_numbers_as_numbers_and_texts_as_texts() {
        let n = |s: &str| [("n", Value::from(s))];
        assert!(holds("${n} > 3", &n("10")).unwrap());
        assert!(!holds("'${n}' > '3'", &n("10 apples")).unwrap(), "texts compare as texts");
        assert!(holds("${n} == 'ab' or ${n} == 'cd'", &n("cd")).unwrap());
        assert!(holds("not exists(m) and exists(n)", &n("x")).unwrap());
        assert!(holds("${n}", &n("true")).unwrap());
        assert_eq!(holds("${m} == 1", &[]), Err(EvalError::Undefined(0)));
        assert!(!holds("exists(n.a)", &n("{}")).unwrap());
        assert!(!holds("exists(n.a)", &n(r#"{"a": null}"#)).unwrap(), "null is no value");
        assert!(holds("exists(n.a)", &n(r#"{"a": 0}"#)).unwrap());
    }
}
