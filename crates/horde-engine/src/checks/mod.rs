//! Checks, as every protocol runs them: a source's values (what the protocol's subject shows:
//! an HTTP response, a socket's message, a statement's result), the one `select` picks,
//! transformed, validated against expected values rendered from the session, and saved.
//! Each protocol gives its subject ([`CheckSubject`]); the rest is here, once.

mod body;
pub(crate) mod xpath;

pub use body::{BodyExtractor, BodyView};

use crate::lower::LoweringContext;
use crate::session::expression::{abridged, compare, EvalError, Template};
use crate::session::{Session, Value};
use horde_plan::{CompareOp, Select, Transform};
use std::borrow::Cow;

/// A check as lowered. `S` is the protocol's own sources (an HTTP status, a SQL column): the
/// type keeps each protocol's checks to the sources it has.
pub struct CheckProgram<S> {
    pub extractor: Extractor<S>,
    pub select: Select,
    pub transforms: Vec<Transform>,
    /// When nothing is found (`with_default`).
    pub default: Option<Expected>,
    pub validation: ValidationProgram,
    pub optional: bool,
    pub save_as: Option<usize>,
    /// How the check reads in an error message: `regex("value=\"([^\"]*)\"")`.
    pub description: String,
}

/// A check's validation, its expected values compiled: they are templates, rendered from the
/// session when the check runs.
pub enum ValidationProgram {
    Exists,
    NotExists,
    Is(Expected),
    Not(Expected),
    In(Vec<Expected>),
    /// `lt`, `lte`, `gt`, `gte`.
    Compare(CompareOp, Expected),
}

/// An expected value (or a default): its template, and its text in the plan for messages.
pub struct Expected {
    pub template: Template,
    pub source: String,
}

/// Where a check's values come from: the body, the exchange's response time (the core's), or
/// a source of the protocol's own.
pub enum Extractor<S> {
    Body(BodyExtractor),
    ResponseTimeInMillis,
    Own(S),
}

impl<S> Extractor<S> {
    pub fn reads_body(&self) -> bool {
        matches!(self, Extractor::Body(_))
    }
}

/// A protocol's own check sources, lowered from the plan's.
pub(crate) trait OwnSource: Sized {
    /// The source lowered, with how it reads in messages (`header("Location")`). `None`: no
    /// check, because the source is bad (the error is recorded at `path`) or is not this
    /// protocol's (validation names that).
    fn lower(source: &horde_plan::CheckSource, path: &str, cx: &mut LoweringContext) -> Option<(Self, String)>;
}

/// The sources of a protocol that has none of its own (a socket's message has only a body).
pub enum NoSource {}

impl OwnSource for NoSource {
    fn lower(_: &horde_plan::CheckSource, _: &str, _: &mut LoweringContext) -> Option<(Self, String)> {
        None
    }
}

/// What checks read: a protocol's response, message or result.
pub trait CheckSubject {
    /// The protocol's own sources.
    type Own;

    /// A body source's values, at most `limit` of them; an error is an expression that failed
    /// on this subject. A subject without a body has none (validation keeps body sources off
    /// its steps).
    fn body_values(&mut self, _source: &BodyExtractor, _limit: usize) -> Result<Vec<Value>, String> {
        Ok(Vec::new())
    }

    /// How long the exchange took, in whole milliseconds, when the subject is one.
    fn response_time_ms(&self) -> Option<u64> {
        None
    }

    /// One of the protocol's own sources' values, at most `limit` of them.
    fn own_values(&mut self, source: &Self::Own, limit: usize) -> Result<Vec<Value>, String>;

    /// The detail a failed check of this source is counted under, when the source has one of
    /// its own (an HTTP status); otherwise the check's position.
    fn failure_detail(&self, _source: &Self::Own) -> Option<u32> {
        None
    }
}

/// The source's values, at most `limit` of them, in the subject's order.
fn values<S: CheckSubject>(subject: &mut S, extractor: &Extractor<S::Own>, limit: usize) -> Result<Vec<Value>, String> {
    match extractor {
        Extractor::Body(source) => subject.body_values(source, limit),
        Extractor::ResponseTimeInMillis => {
            Ok(subject.response_time_ms().map(|ms| Value::from(ms.to_string())).into_iter().collect())
        }
        Extractor::Own(source) => subject.own_values(source, limit),
    }
}

/// What the check found: the value `select` picks, transformed; `None` when nothing was.
fn find<S: CheckSubject>(subject: &mut S, check: &CheckProgram<S::Own>) -> Result<Option<Value>, String> {
    let limit = match check.select {
        Select::First => 1,
        Select::Nth { index } => index as usize + 1,
        Select::All | Select::Count => usize::MAX,
    };
    let mut values = values(subject, &check.extractor, limit)?;
    let transform = |value: Value| check.transforms.iter().try_fold(value, |value, t| transform(value, *t));
    Ok(match check.select {
        Select::First | Select::Nth { .. } => match values.len() {
            n if n == limit => Some(transform(values.pop().expect("limit is at least 1"))?),
            _ => None,
        },
        Select::All if values.is_empty() => None,
        Select::All => Some(Value::list(values.into_iter().map(transform).collect::<Result<Vec<_>, _>>()?)),
        Select::Count => Some(transform(Value::from(values.len().to_string()))?),
    })
}

/// One of the native transforms; a value it cannot take fails the check.
fn transform(value: Value, transform: Transform) -> Result<Value, String> {
    let number = |n: serde_json::Number| Value::Json(std::sync::Arc::new(serde_json::Value::Number(n)));
    Ok(match transform {
        Transform::Lowercase => Value::from(value.as_text().to_lowercase()),
        Transform::Uppercase => Value::from(value.as_text().to_uppercase()),
        Transform::Trim => match value.as_text() {
            Cow::Borrowed(text) if text.trim().len() == text.len() => value,
            text => Value::from(text.trim()),
        },
        Transform::ToInt => {
            let text = value.as_text();
            match text.trim().parse::<i64>() {
                Ok(n) => number(n.into()),
                Err(_) => return Err(format!("expected an integer, found {}", abridged(&text))),
            }
        }
        Transform::ToNumber => {
            let text = value.as_text();
            let trimmed = text.trim();
            match (trimmed.parse::<i64>(), trimmed.parse::<f64>().ok().and_then(serde_json::Number::from_f64)) {
                (Ok(n), _) => number(n.into()),
                (_, Some(n)) => number(n),
                _ => return Err(format!("expected a number, found {}", abridged(&text))),
            }
        }
        Transform::Length => {
            let length = match &value {
                Value::Json(json) => match &**json {
                    serde_json::Value::Array(items) => items.len(),
                    serde_json::Value::Object(members) => members.len(),
                    _ => value.as_text().chars().count(),
                },
                Value::Text(text) => text.chars().count(),
            };
            number((length as u64).into())
        }
    })
}

/// A failed check: which one, what it saw, and a small detail to count it under.
#[derive(Debug)]
pub struct CheckFailure {
    pub message: String,
    pub detail: u32,
}

/// Runs the checks in order on what a protocol's subject shows them; the first failure stops
/// them. Values are saved only from checks that pass.
pub fn run_checks_on<S: CheckSubject>(
    checks: &[CheckProgram<S::Own>],
    subject: &mut S,
    session: &mut Session,
) -> Result<(), CheckFailure> {
    for (index, check) in checks.iter().enumerate() {
        let detail = match &check.extractor {
            Extractor::Own(source) => subject.failure_detail(source),
            _ => None,
        }
        .unwrap_or(1000 + index as u32);
        let fail = |message: String| CheckFailure { message: format!("{}: {message}", check.description), detail };
        let mut found = find(subject, check).map_err(fail)?;
        if found.is_none() {
            if check.optional {
                continue;
            }
            if let Some(default) = &check.default {
                let value = default.template.value(session);
                found =
                    Some(value.map_err(|e| fail(format!("the default {}", unrenderable_from(e, &default.source))))?);
            }
        }
        verdict(check, found.as_ref(), session).map_err(fail)?;
        if let (Some(slot), Some(value)) = (check.save_as, found) {
            session.variables[slot] = Some(value);
        }
    }
    Ok(())
}

/// Whether `found` passes the check's validation; if not, what was expected and found. The
/// message is written only for a failure: checks that pass allocate nothing for it.
fn verdict<S>(check: &CheckProgram<S>, found: Option<&Value>, session: &mut Session) -> Result<(), String> {
    let text = || found.map(Value::as_text);
    let render = |expected: &Expected, session: &mut Session| -> Result<String, String> {
        expected
            .template
            .render(session)
            .map_err(|e| format!("the expected value {}", unrenderable_from(e, &expected.source)))
    };
    let wanted = match &check.validation {
        ValidationProgram::Exists if found.is_some() => return Ok(()),
        ValidationProgram::NotExists if found.is_none() => return Ok(()),
        ValidationProgram::Exists => "to exist".to_string(),
        ValidationProgram::NotExists => "not to exist".to_string(),
        ValidationProgram::Is(expected) | ValidationProgram::Not(expected) => {
            let is = matches!(check.validation, ValidationProgram::Is(_));
            // The common case, a fixed expected text, compares without rendering anything.
            if let (Some(literal), Some(found), false) =
                (expected.template.as_static(), found, check.select == Select::All)
            {
                if (*found.as_text() == *literal) == is {
                    return Ok(());
                }
            }
            let value = expected
                .template
                .value(session)
                .map_err(|e| format!("the expected value {}", unrenderable_from(e, &expected.source)))?;
            let equal = found.is_some_and(|found| {
                // A list equals a JSON array however it is spaced.
                *found.as_text() == *value.as_text()
                    || (check.select == Select::All
                        && found.to_json().is_some_and(|f| value.to_json().is_some_and(|v| f == v)))
            });
            if found.is_some() && equal == is {
                return Ok(());
            }
            let wanted = describe(&value.as_text(), expected);
            if is {
                wanted
            } else {
                format!("not {wanted}")
            }
        }
        ValidationProgram::In(values) => {
            let mut rendered = Vec::with_capacity(values.len());
            for expected in values {
                rendered.push(render(expected, session)?);
            }
            if text().is_some_and(|text| rendered.iter().any(|v| *v == *text)) {
                return Ok(());
            }
            format!("one of {rendered:?}")
        }
        ValidationProgram::Compare(op, expected) => {
            let value = render(expected, session)?;
            if text().is_some_and(|text| compare(&text, *op, &value)) {
                return Ok(());
            }
            let relation = match op {
                CompareOp::Lt => "less than",
                CompareOp::Le => "at most",
                CompareOp::Gt => "more than",
                CompareOp::Ge => "at least",
                CompareOp::Eq | CompareOp::Ne => unreachable!("is and not are validations of their own"),
            };
            format!("{relation} {}", describe(&value, expected))
        }
    };
    let found = match text() {
        None => "nothing".to_string(),
        Some(value) => abridged(&value),
    };
    Err(format!("expected {wanted}, found {found}"))
}

/// An expected value as a message shows it: its text, and the template it came from when
/// that differs.
fn describe(value: &str, expected: &Expected) -> String {
    match expected.template.as_static() {
        Some(_) => format!("{value:?}"),
        None => format!("{value:?} (from {:?})", expected.source),
    }
}

fn unrenderable(error: EvalError) -> String {
    match error {
        EvalError::Undefined(_) => "has a variable that is not set".to_string(),
        EvalError::Invalid(message) => format!("cannot be computed: {message}"),
    }
}

fn unrenderable_from(error: EvalError, source: &str) -> String {
    format!("{source:?} {}", unrenderable(error))
}
