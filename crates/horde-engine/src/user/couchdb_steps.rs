//! The CouchDB steps as a virtual user runs them: Iron Cushion's bulk insert and CRUD steps on
//! the user's own keep-alive connection (the user is Iron Cushion's "connection"), with its
//! accounting of where each connection's time went. Every operation is also a row of the usual
//! statistics (HDR latency, errors by kind). A failed operation is counted and the step goes
//! on, as Iron Cushion does: the step always attempts all of its operations.

use super::{Flow, Prepared, VirtualUser};
use crate::client::{Failure, Response};
use crate::couchdb::{bulk_outcome, document_id, error_kind, error_message, CrudOp, CrudPlanner, DocumentRef, Reply};
use crate::lower::{BulkInsertProgram, CrudProgram, Target};
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
        host_header: database.host_header.clone(),
        origin_form,
    })
}

/// The reply of a request that got an HTTP response: success, or an error to count.
enum Answer {
    Success(Response),
    /// The server answered with an error status; the reply says why, when it is JSON.
    Refused {
        status: u16,
        reply: Reply,
    },
}

impl VirtualUser {
    /// Sends one JSON request and reads the whole response.
    async fn couchdb_exchange(
        &mut self,
        method: Method,
        target: Arc<Target>,
        body: Bytes,
    ) -> (Instant, Result<Response, Failure>, RequestTiming) {
        let mut headers = HeaderMap::new();
        if !body.is_empty() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let mut prepared = Prepared { method, target, headers, body };
        let started = Instant::now();
        let (result, timing) = self.exchange(&mut prepared, started, started, true).await;
        (started, result, timing)
    }

    /// Sorts a response into success or a counted error; transport failures are recorded here.
    fn answer(
        &mut self,
        row_id: usize,
        started: Instant,
        timing: &RequestTiming,
        result: Result<Response, Failure>,
    ) -> Option<Answer> {
        match result {
            Err(failure) => {
                self.record_failure(row_id, started, timing, &failure, 0);
                None
            }
            Ok(response) if response.status.is_success() => Some(Answer::Success(response)),
            Ok(response) => {
                let reply = serde_json::from_slice(&response.body).unwrap_or_default();
                Some(Answer::Refused { status: response.status.as_u16(), reply })
            }
        }
    }

    fn record_refusal(&mut self, row_id: usize, started: Instant, timing: &RequestTiming, status: u16, reply: &Reply) {
        let failure = Failure::new(error_kind(status, reply), error_message(status, reply));
        self.record_failure(row_id, started, timing, &failure, u32::from(status));
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
            if !self.ctx.take_request_budget() {
                return Flow::Exhausted;
            }
            let local = Instant::now();
            let mut body = Vec::with_capacity(256 * per_insert as usize);
            body.extend_from_slice(b"{\"docs\":[");
            for k in 0..per_insert {
                document_id(&mut id, &run_token, self.number, per_user, DocumentRef::Bulk(insert * per_insert + k));
                let mut document = self.generator(step.target.schema_id, &step.target.schema).document();
                if let Value::Object(map) = &mut document {
                    map.insert("_id".into(), Value::String(id.clone()));
                }
                if k > 0 {
                    body.push(b',');
                }
                serde_json::to_writer(&mut body, &document).expect("generated documents serialize");
            }
            body.extend_from_slice(b"]}");
            account.local_processing += local.elapsed();
            let sent = body.len();
            let (started, result, timing) =
                self.couchdb_exchange(Method::POST, step.bulk_docs.clone(), Bytes::from(body)).await;
            let received = result.as_ref().map_or(0, |r| r.body.len());
            account.wire(0, &timing, sent, received);
            match self.answer(step.row_id, started, &timing, result) {
                None => {}
                Some(Answer::Refused { status, reply }) => {
                    self.record_refusal(step.row_id, started, &timing, status, &reply)
                }
                Some(Answer::Success(response)) => {
                    let local = Instant::now();
                    let outcome = bulk_outcome(&response.body);
                    account.local_processing += local.elapsed();
                    match outcome {
                        Ok((stored, 0, _)) => {
                            account.documents[0] += stored;
                            self.record_ok(step.row_id, started, &timing);
                        }
                        Ok((stored, refused, first_error)) => {
                            // A 201 can still refuse some documents (a conflict per document).
                            account.documents[0] += stored;
                            let reply = first_error.unwrap_or_default();
                            let kind = error_kind(409, &reply);
                            let failure = Failure::new(
                                if kind == "conflict" { "bulk_conflict" } else { "bulk_document_error" },
                                format!(
                                    "{refused} of {per_insert} documents refused; first: {}",
                                    error_message(409, &reply)
                                ),
                            );
                            self.record_failure(step.row_id, started, &timing, &failure, 0);
                        }
                        Err(err) => {
                            let failure =
                                Failure::new("invalid_reply", format!("_bulk_docs reply is not a JSON array: {err}"));
                            self.record_failure(step.row_id, started, &timing, &failure, 0);
                        }
                    }
                }
            }
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
        let mut order_rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(self.rng.random());
        while let Some(op) = planner.next(&mut order_rng) {
            if !self.ctx.take_request_budget() {
                return Flow::Exhausted;
            }
            let row_id = step.rows[op as usize];
            match op {
                CrudOp::Create => {
                    let local = Instant::now();
                    document_id(
                        &mut id,
                        &run_token,
                        self.number,
                        step.bulk_documents_per_user,
                        DocumentRef::Created(created),
                    );
                    created += 1;
                    let mut document = self.generator(step.target.schema_id, &step.target.schema).document();
                    if let Value::Object(map) = &mut document {
                        map.insert("_id".into(), Value::String(id.clone()));
                    }
                    let body = serde_json::to_vec(&document).expect("generated documents serialize");
                    account.local_processing += local.elapsed();
                    let sent = body.len();
                    let target = document_target(&database, &id, None);
                    let (started, result, timing) = self.couchdb_exchange(Method::PUT, target, Bytes::from(body)).await;
                    account.wire(op as usize, &timing, sent, result.as_ref().map_or(0, |r| r.body.len()));
                    current = None;
                    match self.answer(row_id, started, &timing, result) {
                        None => {}
                        Some(Answer::Refused { status, reply }) => {
                            self.record_refusal(row_id, started, &timing, status, &reply)
                        }
                        Some(Answer::Success(response)) => {
                            let local = Instant::now();
                            let reply: Reply = serde_json::from_slice(&response.body).unwrap_or_default();
                            account.local_processing += local.elapsed();
                            match reply.rev {
                                Some(rev) => {
                                    pool.push(DocumentRef::Created(created - 1));
                                    current = Some(CurrentDocument {
                                        pool_index: pool.len() - 1,
                                        id: id.clone(),
                                        rev,
                                        document,
                                    });
                                    account.documents[op as usize] += 1;
                                    self.record_ok(row_id, started, &timing);
                                }
                                None => {
                                    self.record_invalid_reply(row_id, started, &timing, "a create reply without rev")
                                }
                            }
                        }
                    }
                }
                CrudOp::Read => {
                    current = None;
                    if pool.is_empty() {
                        self.record_no_document(row_id, "read");
                        continue;
                    }
                    let pool_index = self.rng.random_range(0..pool.len());
                    document_id(&mut id, &run_token, self.number, step.bulk_documents_per_user, pool[pool_index]);
                    let target = document_target(&database, &id, None);
                    let (started, result, timing) = self.couchdb_exchange(Method::GET, target, Bytes::new()).await;
                    account.wire(op as usize, &timing, 0, result.as_ref().map_or(0, |r| r.body.len()));
                    match self.answer(row_id, started, &timing, result) {
                        None => {}
                        Some(Answer::Refused { status, reply }) => {
                            if status == 404 && error_kind(status, &reply) == "not_found" {
                                // Gone (an earlier bulk insert or create failed): stop picking it.
                                pool.swap_remove(pool_index);
                            }
                            self.record_refusal(row_id, started, &timing, status, &reply);
                        }
                        Some(Answer::Success(response)) => {
                            let local = Instant::now();
                            let document: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
                            account.local_processing += local.elapsed();
                            match document.get("_rev").and_then(Value::as_str).map(str::to_string) {
                                Some(rev) => {
                                    current = Some(CurrentDocument { pool_index, id: id.clone(), rev, document });
                                    account.documents[op as usize] += 1;
                                    self.record_ok(row_id, started, &timing);
                                }
                                None => self.record_invalid_reply(row_id, started, &timing, "a document without _rev"),
                            }
                        }
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
                    let sent = body.len();
                    let target = document_target(&database, &doc.id, None);
                    let (started, result, timing) = self.couchdb_exchange(Method::PUT, target, Bytes::from(body)).await;
                    account.wire(op as usize, &timing, sent, result.as_ref().map_or(0, |r| r.body.len()));
                    match self.answer(row_id, started, &timing, result) {
                        None => {}
                        Some(Answer::Refused { status, reply }) => {
                            self.record_refusal(row_id, started, &timing, status, &reply)
                        }
                        Some(Answer::Success(response)) => {
                            let local = Instant::now();
                            let reply: Reply = serde_json::from_slice(&response.body).unwrap_or_default();
                            account.local_processing += local.elapsed();
                            match reply.rev {
                                Some(rev) => {
                                    doc.rev = rev;
                                    account.documents[op as usize] += 1;
                                    self.record_ok(row_id, started, &timing);
                                }
                                None => {
                                    self.record_invalid_reply(row_id, started, &timing, "an update reply without rev")
                                }
                            }
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
                    let (started, result, timing) = self.couchdb_exchange(Method::DELETE, target, Bytes::new()).await;
                    account.wire(op as usize, &timing, 0, result.as_ref().map_or(0, |r| r.body.len()));
                    match self.answer(row_id, started, &timing, result) {
                        None => {}
                        Some(Answer::Refused { status, reply }) => {
                            if status == 404 {
                                pool.swap_remove(doc.pool_index);
                            }
                            self.record_refusal(row_id, started, &timing, status, &reply);
                        }
                        Some(Answer::Success(_)) => {
                            pool.swap_remove(doc.pool_index);
                            account.documents[op as usize] += 1;
                            self.record_ok(row_id, started, &timing);
                        }
                    }
                }
            }
        }
        self.finish_step(account, &step.target.name, CouchdbStepKind::Crud);
        Flow::Next
    }

    fn record_invalid_reply(&mut self, row_id: usize, started: Instant, timing: &RequestTiming, what: &str) {
        let failure = Failure::new("invalid_reply", format!("CouchDB sent {what}"));
        self.record_failure(row_id, started, timing, &failure, 0);
    }

    /// An update or delete with no document (the create or read before it failed), or a read
    /// with none left: counted, nothing sent.
    fn record_no_document(&mut self, row_id: usize, operation: &str) {
        let failure = Failure::new(
            "no_document",
            format!("no document to {operation}: the operation that should have provided one failed"),
        );
        self.record_failure(row_id, Instant::now(), &RequestTiming::default(), &failure, 0);
    }
}
