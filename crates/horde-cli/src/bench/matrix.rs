//! Parameter matrices: `-p NAME=V1,V2` and `-L NAME=V1,V2` (each repeatable), and every
//! combination of the values, as JMH's @Param and hyperfine's -L.

use serde_json::Value;

/// A parameter and its values, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub values: Vec<Value>,
}

/// A value as typed: a whole number, a decimal number, or text.
pub fn parse_value(text: &str) -> Value {
    if let Ok(n) = text.parse::<i64>() {
        return Value::from(n);
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && !text.is_empty() => Value::from(x),
        _ => Value::from(text),
    }
}

/// `NAME=V1,V2,...`; `flag` names the option in messages.
pub fn parse_param(flag: &str, text: &str) -> Result<Param, String> {
    let Some((name, values)) = text.split_once('=') else {
        return Err(format!("{flag} {text:?}: expected NAME=V1,V2,... (as {flag} level=1,6,9)"));
    };
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("{flag} {text:?}: a parameter's name is letters, digits and _"));
    }
    if values.trim().is_empty() {
        return Err(format!("{flag} {text:?}: no values for {name}"));
    }
    let values: Vec<Value> = values.split(',').map(|v| parse_value(v.trim())).collect();
    Ok(Param { name: name.to_string(), values })
}

/// Parses each flag, refusing a name given twice.
pub fn parse_params(flag: &str, texts: &[String]) -> Result<Vec<Param>, Vec<String>> {
    let mut params: Vec<Param> = Vec::new();
    let mut problems = Vec::new();
    for text in texts {
        match parse_param(flag, text) {
            Ok(p) if params.iter().any(|q| q.name == p.name) => {
                problems.push(format!("{flag} {}: given twice", p.name));
            }
            Ok(p) => params.push(p),
            Err(e) => problems.push(e),
        }
    }
    if problems.is_empty() {
        Ok(params)
    } else {
        Err(problems)
    }
}

/// Replaces the declared values of the parameters the command line names (JMH's -p); a name
/// the benchmark does not declare is an error.
pub fn override_params(declared: &[Param], overrides: &[Param], benchmark: &str) -> Result<Vec<Param>, String> {
    let mut params = declared.to_vec();
    for o in overrides {
        match params.iter_mut().find(|p| p.name == o.name) {
            Some(p) => p.values = o.values.clone(),
            None => {
                let known: Vec<&str> = declared.iter().map(|p| p.name.as_str()).collect();
                return Err(format!(
                    "-p {}: benchmark {benchmark} has no parameter {:?} (it has: {})",
                    o.name,
                    o.name,
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ));
            }
        }
    }
    if let Some(empty) = params.iter().find(|p| p.values.is_empty()) {
        return Err(format!("benchmark {benchmark}: parameter {} has no values", empty.name));
    }
    Ok(params)
}

/// Every combination of the values, the first parameter varying slowest.
pub fn combinations(params: &[Param]) -> Vec<serde_json::Map<String, Value>> {
    let mut result = vec![serde_json::Map::new()];
    for param in params {
        let mut next = Vec::with_capacity(result.len() * param.values.len());
        for partial in &result {
            for value in &param.values {
                let mut m = partial.clone();
                m.insert(param.name.clone(), value.clone());
                next.push(m);
            }
        }
        result = next;
    }
    result
}

/// Replaces `{name}` in a command or URL by the cell's values; a `{name}` that is no
/// parameter is an error, so a typo is not run as it is.
pub fn substitute(template: &str, values: &serde_json::Map<String, Value>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) if is_name(&after[..end]) => {
                let name = &after[..end];
                match values.get(name) {
                    Some(v) => out.push_str(&super::result::value_text(v)),
                    None => return Err(format!("{template:?} names {{{name}}}, which is no parameter")),
                }
                rest = &after[end + 1..];
            }
            // Not a placeholder (a shell brace, JSON): kept as it is.
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn is_name(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_values_by_their_look() {
        let p = parse_param("-L", "level=1, 6,x,2.5").unwrap();
        assert_eq!(p.values, vec![Value::from(1), Value::from(6), Value::from("x"), Value::from(2.5)]);
        assert!(parse_param("-L", "level").is_err());
        assert!(parse_param("-L", "level=").is_err());
        assert!(parse_param("-L", "=1").is_err());
        assert!(parse_params("-L", &["a=1".into(), "a=2".into()]).is_err());
    }

    #[test]
    fn combinations_are_cartesian_first_slowest() {
        let params = vec![
            Param { name: "a".into(), values: vec![1.into(), 2.into()] },
            Param { name: "b".into(), values: vec!["x".into(), "y".into(), "z".into()] },
        ];
        let all = combinations(&params);
        assert_eq!(all.len(), 6);
        assert_eq!(all[0]["a"], 1);
        assert_eq!(all[0]["b"], "x");
        assert_eq!(all[1]["b"], "y");
        assert_eq!(all[3]["a"], 2);
        assert_eq!(combinations(&[]).len(), 1);
    }

    #[test]
    fn overrides_replace_declared_values_and_unknown_names_fail() {
        let declared = vec![Param { name: "n".into(), values: vec![1.into()] }];
        let over = vec![Param { name: "n".into(), values: vec![5.into(), 6.into()] }];
        assert_eq!(override_params(&declared, &over, "b").unwrap()[0].values.len(), 2);
        let bad = vec![Param { name: "m".into(), values: vec![1.into()] }];
        assert!(override_params(&declared, &bad, "b").unwrap_err().contains("no parameter \"m\""));
    }

    #[test]
    fn substitutes_placeholders_and_keeps_other_braces() {
        let mut values = serde_json::Map::new();
        values.insert("level".into(), 6.into());
        assert_eq!(substitute("gzip -{level} -c f", &values).unwrap(), "gzip -6 -c f");
        assert_eq!(substitute("echo {} { a }", &values).unwrap(), "echo {} { a }");
        assert!(substitute("x {levle}", &values).is_err());
    }
}
