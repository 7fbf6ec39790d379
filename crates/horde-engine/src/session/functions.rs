//! Session functions: code of the front end (Python's `exec(lambda session: ...)`) that reads
//! and sets a user's variables. The engine knows them only by key and calls them through
//! [`SessionFunctions`], which the front end that defined them supplies; everything else in a
//! plan stays native. Each call is counted and timed, so their cost shows in the summary.

use super::{Session, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// What a front end provides to run its functions.
pub trait SessionFunctions: Send + Sync {
    /// Calls function `key` with the user's variables (a JSON object: name -> value); returns
    /// the changes (a JSON object: name -> new value, null to remove), or the error it raised,
    /// in words.
    fn call(&self, key: &str, user_id: u64, scenario: &str, variables: &str) -> Result<String, String>;
    /// Runs a worker thread's whole life (`run`), so the front end can set the thread up once
    /// for its calls.
    fn on_worker_thread(&self, run: &mut (dyn FnMut() + Send)) {
        run();
    }
    /// Runs once before the run starts (Gatling's `before`).
    fn before_run(&self) -> Result<(), String> {
        Ok(())
    }
    /// Runs once after the run, with the summary's JSON (Gatling's `after`).
    fn after_run(&self, _summary: &str) -> Result<(), String> {
        Ok(())
    }
}

/// Calls and time spent in session functions, across every worker.
#[derive(Default, Debug)]
pub struct FunctionCost {
    calls: AtomicU64,
    nanos: AtomicU64,
}

impl FunctionCost {
    /// (calls, seconds) so far.
    pub fn read(&self) -> (u64, f64) {
        (self.calls.load(Ordering::Relaxed), self.nanos.load(Ordering::Relaxed) as f64 / 1e9)
    }
}

/// Calls `key` with the session, applies the changes it returns, and counts its cost.
/// `names` are the variables' names by slot; `slots` the reverse. Names no step of the plan
/// reads are kept in the session's `extra` map, for the next function.
pub fn call(
    functions: &dyn SessionFunctions,
    cost: &FunctionCost,
    key: &str,
    session: &mut Session,
    names: &[String],
    slots: &HashMap<String, usize>,
) -> Result<(), String> {
    let mut variables = serde_json::Map::new();
    for (name, value) in names.iter().zip(&session.variables) {
        if let Some(value) = value {
            variables.insert(name.clone(), value.clone().into_json());
        }
    }
    for (name, value) in session.extra.iter().flat_map(|extra| extra.iter()) {
        variables.insert(name.clone(), value.clone().into_json());
    }
    let variables = serde_json::Value::Object(variables).to_string();
    let started = Instant::now();
    let result = functions.call(key, session.user_id, &session.scenario, &variables);
    cost.calls.fetch_add(1, Ordering::Relaxed);
    cost.nanos.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    let changes: serde_json::Value =
        serde_json::from_str(&result?).map_err(|e| format!("the function's changes are not JSON: {e}"))?;
    let serde_json::Value::Object(changes) = changes else {
        return Err("the function's changes are not a JSON object".into());
    };
    for (name, value) in changes {
        let value = (!value.is_null()).then(|| Value::from_json(value));
        match slots.get(&name) {
            Some(&slot) => session.variables[slot] = value,
            None => {
                let extra = session.extra.get_or_insert_with(Default::default);
                match value {
                    Some(value) => {
                        extra.insert(name, value);
                    }
                    None => {
                        extra.remove(&name);
                    }
                }
            }
        }
    }
    Ok(())
}
