//! The check sources of a result of rows, which SQL and CQL share (as the plan's `RowsSource`):
//! each protocol shows its own result through `CheckSubject::own_values`.

use crate::checks::OwnSource;
use crate::lower::LoweringContext;
use horde_plan::{CheckSource, RowsSource};

/// A result's rows as checks read them.
pub enum RowsExtractor {
    /// The rows a statement returned (or, in SQL, changed).
    RowCount,
    /// A query's values in the column of this name.
    Column(String),
}

impl OwnSource for RowsExtractor {
    fn lower(source: &CheckSource, _path: &str, _cx: &mut LoweringContext) -> Option<(Self, String)> {
        match source {
            CheckSource::Rows(RowsSource::RowCount) => Some((RowsExtractor::RowCount, "row_count".to_string())),
            CheckSource::Rows(RowsSource::Column { name }) => {
                Some((RowsExtractor::Column(name.clone()), format!("column({name:?})")))
            }
            _ => None,
        }
    }
}
