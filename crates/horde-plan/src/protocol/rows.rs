//! The check sources of a result made of rows, which SQL and CQL statements share: one family of
//! [`crate::CheckSource`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a statement's result of rows shows checks (a SQL or a CQL statement's).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum RowsSource {
    /// A statement's rows: how many a query returned, or a SQL `execute` changed.
    RowCount,
    /// A query's values in the column of this name (case as the database gives it), one per
    /// row in order; NULL is no value. Numbers, dates and the like as the database writes them
    /// as text.
    Column { name: String },
}
