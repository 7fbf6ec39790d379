//! CouchDB's part of the Program: its two steps as lowered. Lowering them is `lower.rs`'s.

use crate::protocol::http::program::Target;
use std::sync::Arc;

/// A CouchDB step as a user runs it.
pub enum CouchdbStepProgram {
    BulkInsert(Box<BulkInsertProgram>),
    Crud(Box<CrudProgram>),
}

/// What both CouchDB steps need.
pub struct CouchdbTarget {
    /// The step's name: its report and the prefix of its rows.
    pub name: Arc<str>,
    /// The database; documents are `{database}/{id}`.
    pub database: Arc<Target>,
    /// Index into the user's generators (shared with generated bodies).
    pub schema_id: usize,
    pub schema: Arc<horde_docgen::Schema>,
}

pub struct BulkInsertProgram {
    pub target: CouchdbTarget,
    /// `{database}/_bulk_docs`.
    pub bulk_docs: Arc<Target>,
    pub row_id: usize,
    pub documents_per_insert: u32,
    pub inserts: u32,
}

pub struct CrudProgram {
    pub target: CouchdbTarget,
    /// Rows of create, read, update and delete, in that order.
    pub rows: [usize; 4],
    pub counts: horde_plan::CrudCounts,
    pub bulk_documents_per_user: u64,
}
