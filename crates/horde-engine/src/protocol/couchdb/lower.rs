//! Lowering CouchDB's steps. CouchDB rides on HTTP: its databases resolve against HTTP's base
//! URL, and its documents come from the same generators as HTTP's generated bodies.

use super::program::{BulkInsertProgram, CouchdbStepProgram, CouchdbTarget, CrudProgram};
use crate::lower::{LoweringContext, StepAt};
use crate::protocol::http::lower::HttpLowering;
use crate::protocol::http::program::Target;
use horde_plan::CouchdbStep;
use std::sync::Arc;
use url::Url;

pub(crate) fn lower_step(
    cx: &mut LoweringContext,
    at: StepAt,
    step: &CouchdbStep,
    http: &HttpLowering,
) -> CouchdbStepProgram {
    let path = at.path;
    match step {
        CouchdbStep::CouchdbBulkInsert(step) => {
            let target = couchdb_target(cx, at, &step.name, &step.database, &step.schema, http);
            let bulk_docs = database_url(cx, http, &format!("{path}.database"), &step.database, "_bulk_docs");
            CouchdbStepProgram::BulkInsert(Box::new(BulkInsertProgram {
                row_id: cx.row(target.name.clone()),
                target,
                bulk_docs,
                documents_per_insert: step.documents_per_insert,
                inserts: step.inserts,
            }))
        }
        CouchdbStep::CouchdbCrud(step) => {
            let target = couchdb_target(cx, at, &step.name, &step.database, &step.schema, http);
            let rows = horde_metrics::CRUD_OPERATIONS.map(|op| cx.row(format!("{} {op}", target.name).into()));
            CouchdbStepProgram::Crud(Box::new(CrudProgram {
                target,
                rows,
                counts: step.weights.counts(step.operations),
                bulk_documents_per_user: step.bulk_documents_per_user,
            }))
        }
    }
}

fn couchdb_target(
    cx: &mut LoweringContext,
    at: StepAt,
    name: &str,
    database: &str,
    schema: &str,
    http: &HttpLowering,
) -> CouchdbTarget {
    let path = at.path;
    let database = database_url(cx, http, &format!("{path}.database"), database, "");
    let (schema_id, schema) = cx
        .schema(&format!("{path}.schema"), schema)
        // The error is recorded; an empty schema keeps lowering going to find the rest.
        .unwrap_or_else(|| (0, Arc::new(horde_docgen::Schema::Object(Vec::new()))));
    CouchdbTarget { name: at.row_name(name), database, schema_id, schema }
}

/// The database URL, or a resource under it (`_bulk_docs`), resolved against the base URL.
fn database_url(
    cx: &mut LoweringContext,
    http: &HttpLowering,
    path: &str,
    database: &str,
    resource: &str,
) -> Arc<Target> {
    let mut text = database.trim_end_matches('/').to_string();
    if !resource.is_empty() {
        text.push('/');
        text.push_str(resource);
    }
    let parsed = match &http.base_url {
        Some(base) => base.join(&text),
        None => Url::parse(&text),
    };
    match parsed.map_err(|e| format!("{database:?}: {e}")).and_then(Target::from_url) {
        Ok(target) => Arc::new(target),
        Err(message) => {
            if resource.is_empty() {
                cx.error(path, message);
            }
            Arc::new(Target::from_url(Url::parse("http://invalid.invalid/").expect("a valid URL")).expect("http"))
        }
    }
}
