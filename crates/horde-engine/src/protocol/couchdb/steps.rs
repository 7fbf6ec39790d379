//! The CouchDB steps as a virtual user runs them: Iron Cushion's bulk insert and CRUD steps on
//! the user's own keep-alive connection (the user is Iron Cushion's "connection"), with its
//! accounting of where each connection's time went. Every operation is also a row of the usual
//! statistics (HDR latency, errors by kind). A failed operation is counted and the step goes
//! on, as Iron Cushion does: the step always attempts all of its operations.

use super::program::{BulkInsertProgram, CouchdbTarget, CrudProgram};
use super::{bulk_outcome, document_id, error_kind, error_message, CrudOp, CrudPlanner, DocumentRef, Reply};
use crate::failure::Failure;
use crate::protocol::http::client::Response;
use crate::protocol::http::program::Target;
use crate::protocol::http::request::Prepared;
use crate::user::{Flow, VirtualUser};
use bytes::Bytes;
use horde_metrics::{ConnectionPhases, CouchdbStepKind, RequestTiming};
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use http::Method;
use rand::Rng;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Where one connection's time went during one step (Iron Cushion's connection statistics).
struct PhaseAccount {
    started: Instant,
    local_processing: Duration,
    send_us: u64,
    remote_us: [u64; 4],
    receive_us: u64,
    json_bytes_sent: u64,
    json_bytes_received: u64,
    documents: [u64; 4],
}

impl PhaseAccount {
    fn new() -> PhaseAccount {
        PhaseAccount {
            started: Instant::now(),
            local_processing: Duration::ZERO,
            send_us: 0,
            remote_us: [0; 4],
            receive_us: 0,
            json_bytes_sent: 0,
            json_bytes_received: 0,
            documents: [0; 4],
        }
    }

    fn wire(&mut self, operation: usize, timing: &RequestTiming, sent: usize, received: usize) {
        self.send_us += timing.send_us;
        self.remote_us[operation] += timing.wait_us;
        self.receive_us += timing.receive_us;
        self.json_bytes_sent += sent as u64;
        self.json_bytes_received += received as u64;
    }

    fn into_phases(self, step: Arc<str>, kind: CouchdbStepKind) -> ConnectionPhases {
        ConnectionPhases {
            step,
            kind,
            time_taken_us: self.started.elapsed().as_micros() as u64,
            local_processing_us: self.local_processing.as_micros() as u64,
            send_us: self.send_us,
            remote_us: self.remote_us,
            receive_us: self.receive_us,
            json_bytes_sent: self.json_bytes_sent,
            json_bytes_received: self.json_bytes_received,
            documents: self.documents,
        }
    }
}

/// The document the user last created or read: updates and deletes act on it.
struct CurrentDocument {
    /// Its place in the user's pool of existing documents.
    pool_index: usize,
    id: String,
    rev: String,
    document: Value,
}

/// A document's URL under the database: `{database}/{id}`, with `?rev=` for a delete.
fn document_target(database: &Target, id: &str, rev: Option<&str>) -> Arc<Target> {
    let mut origin_form = String::with_capacity(database.origin_form.len() + id.len() + 48);
    origin_form.push_str(database.origin_form.trim_end_matches('/'));
    origin_form.push('/');
    origin_form.push_str(id);
    if let Some(rev) = rev {
        origin_form.push_str("?rev=");
        origin_form.push_str(rev);
    }
    Arc::new(Target {
        url: database.url.clone(),
        authority: database.authority.clone(),
        host: database.host.clone(),
        tls: database.tls,
        host_header: database.host_header.clone(),
        origin_form,
    })
}

/// How one CouchDB request ended; failures are already counted when this is returned.
// Returned by value once per request and matched at once: boxing the big variant would only
// add an allocation per request.
#[allow(clippy::large_enum_variant)]
enum Exchanged {
    /// A 2xx: the caller records it once it has understood the reply (with the request's
    /// target, for the request log's URL).
    Success { started: Instant, timing: RequestTiming, response: Response, target: Arc<Target> },
    /// An error status, recorded as a KO of its kind.
    Refused { status: u16, kind: &'static str },
    /// No response at all (refused, reset, timed out), recorded.
    Failed,
}

/// The `rev` of a write's reply (`{"ok":true,"id":..,"rev":..}`); decoding is local processing.
fn written_rev(account: &mut PhaseAccount, body: &[u8]) -> Option<String> {
    let local = Instant::now();
    let reply: Reply = serde_json::from_slice(body).unwrap_or_default();
    account.local_processing += local.elapsed();
    reply.rev
}

impl VirtualUser {
    /// Sends one JSON request on the user's connection, adds its wire time and bytes to
    /// `account` under operation `slot`, and counts whatever went wrong on row `row_id`.
    async fn couchdb_operation(
        &mut self,
        account: &mut PhaseAccount,
        slot: usize,
        row_id: usize,
        method: Method,
        target: Arc<Target>,
        body: Bytes,
    ) -> Exchanged {
        let mut headers = HeaderMap::new();
        if !body.is_empty() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let sent = body.len();
        let max_redirects = self.ctx.program.protocols.http.max_redirects;
        let mut prepared = Prepared { method, target, headers, body, sets_host: false, max_redirects };
        let started = Instant::now();
        let (result, timing) = self.exchange(row_id, &mut prepared, started, started, true).await;
        account.wire(slot, &timing, sent, result.as_ref().map_or(0, |r| r.body.len()));
        let url = Some(prepared.target.url.as_str());
        match result {
            Err(failure) => {
                self.record_failure(row_id, started, &timing, &failure, 0, url);
                Exchanged::Failed
            }
            Ok(response) if response.status.is_success() => {
                Exchanged::Success { started, timing, response, target: prepared.target }
            }
            Ok(response) => {
                let status = response.status.as_u16();
                let reply: Reply = serde_json::from_slice(&response.body).unwrap_or_default();
                let kind = error_kind(status, &reply);
                let failure = Failure::new(kind, error_message(status, &reply));
                self.record_failure(row_id, started, &timing, &failure, u32::from(status), url);
                Exchanged::Refused { status, kind }
            }
        }
    }

    /// An operation that did what it should: one more document for its slot, OK on its row.
    fn operation_done(
        &mut self,
        account: &mut PhaseAccount,
        slot: usize,
        row_id: usize,
        started: Instant,
        timing: &RequestTiming,
        target: &Target,
    ) {
        account.documents[slot] += 1;
        self.record_ok(row_id, started, timing, Some(target.url.as_str()));
    }

    /// A new document from the step's schema, with its `_id`.
    fn new_document(&mut self, target: &CouchdbTarget, id: &str) -> Value {
        let mut document = self.generator(target.schema_id, &target.schema).document();
        if let Value::Object(map) = &mut document {
            map.insert("_id".into(), Value::String(id.to_string()));
        }
        document
    }

    fn finish_step(&self, account: PhaseAccount, name: &Arc<str>, kind: CouchdbStepKind) {
        if self.ctx.measures(account.started) {
            self.ctx.metrics.borrow_mut().couchdb_connections.push(account.into_phases(name.clone(), kind));
        }
    }

    /// Iron Cushion's bulk insert step: `inserts` POSTs to `_bulk_docs`, each with
    /// `documents_per_insert` new documents with ids the CRUD step can find.
    pub(super) async fn couchdb_bulk_insert(&mut self, step: &BulkInsertProgram) -> Flow {
        let mut account = PhaseAccount::new();
        let per_insert = u64::from(step.documents_per_insert);
        let per_user = u64::from(step.inserts) * per_insert;
        let run_token = self.ctx.run_token.clone();
        let mut id = String::new();
        for insert in 0..u64::from(step.inserts) {
            if !self.ctx.limits.take_request() {
                return Flow::Exhausted;
            }
            // As in the CRUD step: a failure without a wait must not hold the worker.
            tokio::task::consume_budget().await;
            let local = Instant::now();
            let mut body = Vec::with_capacity(256 * per_insert as usize);
            body.extend_from_slice(b"{\"docs\":[");
            for k in 0..per_insert {
                document_id(&mut id, &run_token, self.number(), per_user, DocumentRef::Bulk(insert * per_insert + k));
                let document = self.new_document(&step.target, &id);
                if k > 0 {
                    body.push(b',');
                }
                serde_json::to_writer(&mut body, &document).expect("generated documents serialize");
            }
            body.extend_from_slice(b"]}");
            account.local_processing += local.elapsed();
            let sent = self
                .couchdb_operation(&mut account, 0, step.row_id, Method::POST, step.bulk_docs.clone(), body.into())
                .await;
            let Exchanged::Success { started, timing, response, target } = sent else { continue };
            let url = Some(target.url.as_str());
            let local = Instant::now();
            let outcome = bulk_outcome(&response.body);
            account.local_processing += local.elapsed();
            let failure = match outcome {
                Ok((stored, 0, _)) => {
                    account.documents[0] += stored;
                    self.record_ok(step.row_id, started, &timing, url);
                    continue;
                }
                Ok((stored, refused, first_error)) => {
                    // A 201 can still refuse some documents (a conflict per document).
                    account.documents[0] += stored;
                    let reply = first_error.unwrap_or_default();
                    let kind = if reply.error.as_deref() == Some("conflict") {
                        "bulk_conflict"
                    } else {
                        "bulk_document_error"
                    };
                    let first = error_message(409, &reply);
                    Failure::new(kind, format!("{refused} of {per_insert} documents refused; first: {first}"))
                }
                Err(err) => Failure::new("invalid_reply", format!("_bulk_docs reply is not a JSON array: {err}")),
            };
            self.record_failure(step.row_id, started, &timing, &failure, 0, url);
        }
        self.finish_step(account, &step.target.name, CouchdbStepKind::BulkInsert);
        Flow::Next
    }

    /// Iron Cushion's CRUD step: the weighted operations in a random order; updates and
    /// deletes act on the document last created or read, with the `_rev` that gave.
    pub(super) async fn couchdb_crud(&mut self, step: &CrudProgram) -> Flow {
        let mut account = PhaseAccount::new();
        let mut planner = CrudPlanner::new(step.counts, step.bulk_documents_per_user);
        let mut pool: Vec<DocumentRef> = (0..step.bulk_documents_per_user).map(DocumentRef::Bulk).collect();
        let mut created = 0u64;
        let mut current: Option<CurrentDocument> = None;
        let run_token = self.ctx.run_token.clone();
        let database = step.target.database.clone();
        let mut id = String::new();
        // The planner has its own stream, so the order of operations depends on the seed only.
        let mut order_rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(self.session.rng.random());
        while let Some(op) = planner.next(&mut order_rng) {
            if !self.ctx.limits.take_request() {
                return Flow::Exhausted;
            }
            // Operations can fail without any wait (no descriptor, no document): now and then
            // the worker's other tasks, its ticker and its stop signal get their turn.
            tokio::task::consume_budget().await;
            let slot = op as usize;
            let row_id = step.rows[slot];
            match op {
                CrudOp::Create => {
                    current = None;
                    let local = Instant::now();
                    let reference = DocumentRef::Created(created);
                    created += 1;
                    document_id(&mut id, &run_token, self.number(), step.bulk_documents_per_user, reference);
                    let document = self.new_document(&step.target, &id);
                    let body = serde_json::to_vec(&document).expect("generated documents serialize");
                    account.local_processing += local.elapsed();
                    let target = document_target(&database, &id, None);
                    let sent =
                        self.couchdb_operation(&mut account, slot, row_id, Method::PUT, target, body.into()).await;
                    let Exchanged::Success { started, timing, response, target } = sent else { continue };
                    match written_rev(&mut account, &response.body) {
                        Some(rev) => {
                            pool.push(reference);
                            let pool_index = pool.len() - 1;
                            current = Some(CurrentDocument { pool_index, id: id.clone(), rev, document });
                            self.operation_done(&mut account, slot, row_id, started, &timing, &target);
                        }
                        None => {
                            self.record_invalid_reply(row_id, started, &timing, &target, "a create reply without rev")
                        }
                    }
                }
                CrudOp::Read => {
                    current = None;
                    if pool.is_empty() {
                        self.record_no_document(row_id, "read");
                        continue;
                    }
                    let pool_index = self.session.rng.random_range(0..pool.len());
                    document_id(&mut id, &run_token, self.number(), step.bulk_documents_per_user, pool[pool_index]);
                    let target = document_target(&database, &id, None);
                    match self.couchdb_operation(&mut account, slot, row_id, Method::GET, target, Bytes::new()).await {
                        // Gone (an earlier bulk insert or create failed): stop picking it.
                        Exchanged::Refused { kind: "not_found", .. } => {
                            pool.swap_remove(pool_index);
                        }
                        Exchanged::Success { started, timing, response, target } => {
                            let local = Instant::now();
                            let document: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
                            account.local_processing += local.elapsed();
                            match document.get("_rev").and_then(Value::as_str).map(str::to_string) {
                                Some(rev) => {
                                    current = Some(CurrentDocument { pool_index, id: id.clone(), rev, document });
                                    self.operation_done(&mut account, slot, row_id, started, &timing, &target);
                                }
                                None => self.record_invalid_reply(
                                    row_id,
                                    started,
                                    &timing,
                                    &target,
                                    "a document without _rev",
                                ),
                            }
                        }
                        Exchanged::Refused { .. } | Exchanged::Failed => {}
                    }
                }
                CrudOp::Update => {
                    let Some(mut doc) = current.take() else {
                        self.record_no_document(row_id, "update");
                        continue;
                    };
                    let local = Instant::now();
                    self.generator(step.target.schema_id, &step.target.schema).update(&mut doc.document);
                    if let Value::Object(map) = &mut doc.document {
                        map.insert("_rev".into(), Value::String(doc.rev.clone()));
                    }
                    let body = serde_json::to_vec(&doc.document).expect("documents serialize");
                    account.local_processing += local.elapsed();
                    let target = document_target(&database, &doc.id, None);
                    let sent =
                        self.couchdb_operation(&mut account, slot, row_id, Method::PUT, target, body.into()).await;
                    if let Exchanged::Success { started, timing, response, target } = sent {
                        match written_rev(&mut account, &response.body) {
                            Some(rev) => {
                                doc.rev = rev;
                                self.operation_done(&mut account, slot, row_id, started, &timing, &target);
                            }
                            None => self.record_invalid_reply(
                                row_id,
                                started,
                                &timing,
                                &target,
                                "an update reply without rev",
                            ),
                        }
                    }
                    // Still the current document, with its newest _rev when the update took.
                    current = Some(doc);
                }
                CrudOp::Delete => {
                    let Some(doc) = current.take() else {
                        self.record_no_document(row_id, "delete");
                        continue;
                    };
                    let target = document_target(&database, &doc.id, Some(&doc.rev));
                    match self.couchdb_operation(&mut account, slot, row_id, Method::DELETE, target, Bytes::new()).await
                    {
                        Exchanged::Success { started, timing, target, .. } => {
                            pool.swap_remove(doc.pool_index);
                            self.operation_done(&mut account, slot, row_id, started, &timing, &target);
                        }
                        Exchanged::Refused { status: 404, .. } => {
                            pool.swap_remove(doc.pool_index);
                        }
                        Exchanged::Refused { .. } | Exchanged::Failed => {}
                    }
                }
            }
        }
        self.finish_step(account, &step.target.name, CouchdbStepKind::Crud);
        Flow::Next
    }

    fn record_invalid_reply(
        &mut self,
        row_id: usize,
        started: Instant,
        timing: &RequestTiming,
        target: &Target,
        what: &str,
    ) {
        let failure = Failure::new("invalid_reply", format!("CouchDB sent {what}"));
        self.record_failure(row_id, started, timing, &failure, 0, Some(target.url.as_str()));
    }

    /// An update or delete with no document (the create or read before it failed), or a read
    /// with none left: counted, nothing sent.
    fn record_no_document(&mut self, row_id: usize, operation: &str) {
        let failure = Failure::unsent(
            "no_document",
            format!("no document to {operation}: the operation that should have provided one failed"),
        );
        self.record_unsent(row_id, &failure, 0, None);
    }
}
