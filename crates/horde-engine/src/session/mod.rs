//! The protocol-agnostic part of a virtual user's session: its variables and what templates
//! and conditions read (`expression`), the values they hold (`value`), and the records
//! feeders hand out (`feeder`).

pub(crate) mod expression;
pub(crate) mod feeder;
pub mod functions;
pub(crate) mod value;

use rand::rngs::SmallRng;
use std::sync::Arc;

pub use value::Value;

/// What expressions read and write: the user's variables by slot, its random stream (which
/// a seeded run reproduces), and who it is.
pub struct Session {
    pub variables: Vec<Option<Value>>,
    pub rng: SmallRng,
    /// `${__user_id}`: the user's number within its scenario.
    pub user_id: u64,
    /// `${__scenario}`.
    pub scenario: Arc<str>,
    /// Variables session functions set that no step of the plan reads (so they have no
    /// slot), kept for the next function; None until one is set.
    pub extra: Option<Box<std::collections::HashMap<String, Value>>>,
}
