//! The CouchDB steps' logic without IO: the order of CRUD operations, the documents a virtual
//! user may read or delete, document ids, and what CouchDB's replies mean. The requests of a
//! run are sent by the user (`user/couchdb_steps.rs`); [`couchdb_request`] at the end is the
//! one exception, a blocking request for `horde couchdb`'s checks outside any run.

pub(crate) mod lower;
pub(crate) mod program;
mod steps;

use horde_plan::CrudCounts;
use rand::Rng;
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CrudOp {
    Create = 0,
    Read = 1,
    Update = 2,
    Delete = 3,
}

const ALL_OPS: [CrudOp; 4] = [CrudOp::Create, CrudOp::Read, CrudOp::Update, CrudOp::Delete];

/// Draws the next CRUD operation of one user: at each step a random kind, weighted by how many
/// of that kind are left, among the kinds that are possible now and leave a remainder that can
/// still be completed. So the counts are exact, the order is random, and every update and
/// delete comes after a create or read that gave it a document (as Iron Cushion requires),
/// every read has a document to read.
///
/// Works on the intended state (as if every operation succeeds), so a seed gives the same order
/// whatever the server answers.
pub(crate) struct CrudPlanner {
    left: [u64; 4],
    /// Documents that exist for this user: its bulk-inserted ones plus those it created,
    /// minus those it deleted.
    alive: u64,
    /// The user holds a document (and its `_rev`) from its last create or read.
    has_current: bool,
}

impl CrudPlanner {
    pub fn new(counts: CrudCounts, bulk_documents: u64) -> CrudPlanner {
        CrudPlanner {
            left: [counts.create, counts.read, counts.update, counts.delete],
            alive: bulk_documents,
            has_current: false,
        }
    }

    pub fn next(&mut self, rng: &mut impl Rng) -> Option<CrudOp> {
        let mut weights = [0u64; 4];
        for op in ALL_OPS {
            if self.left[op as usize] > 0 && self.possible(op) && self.after(op).completable() {
                weights[op as usize] = self.left[op as usize];
            }
        }
        let total: u64 = weights.iter().sum();
        let op = if total == 0 {
            // Only reachable with a mix validation refuses; the user then reports the
            // operation it cannot do rather than stopping.
            *ALL_OPS.iter().find(|op| self.left[**op as usize] > 0)?
        } else {
            let mut draw = rng.random_range(0..total);
            *ALL_OPS
                .iter()
                .find(|op| {
                    let w = weights[**op as usize];
                    if draw < w {
                        true
                    } else {
                        draw -= w;
                        false
                    }
                })
                .expect("the draw is below the total")
        };
        *self = self.after(op);
        Some(op)
    }

    fn possible(&self, op: CrudOp) -> bool {
        match op {
            CrudOp::Create => true,
            CrudOp::Read => self.alive > 0,
            CrudOp::Update | CrudOp::Delete => self.has_current,
        }
    }

    fn after(&self, op: CrudOp) -> CrudPlanner {
        let mut next = CrudPlanner { left: self.left, alive: self.alive, has_current: self.has_current };
        next.left[op as usize] = next.left[op as usize].saturating_sub(1);
        match op {
            CrudOp::Create => {
                next.alive += 1;
                next.has_current = true;
            }
            CrudOp::Read => next.has_current = true,
            CrudOp::Update => {}
            CrudOp::Delete => {
                next.alive = next.alive.saturating_sub(1);
                next.has_current = false;
            }
        }
        next
    }

    /// Whether the operations left can be put in some valid order from this state. They can
    /// exactly when: each delete has its own create or read (or the current document) before
    /// it; there are documents enough to delete; updates have a document; reads have a
    /// document to read. (Order: updates on the current document, unpaired reads while
    /// documents exist, then create/read + delete pairs, creates first.)
    fn completable(&self) -> bool {
        let [create, read, update, delete] = self.left;
        let current = u64::from(self.has_current);
        delete <= create + read + current
            && delete <= self.alive + create
            && (update == 0 || self.has_current || create + read > 0)
            && (read == 0 || self.alive + create > 0)
    }
}

/// The documents one user may read or delete, as compact references (no strings kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DocumentRef {
    /// The k-th document the user bulk-inserted.
    Bulk(u64),
    /// The m-th document the user created in its CRUD step.
    Created(u64),
}

/// A document id, unique to the run: bulk documents `{run}-{global index}` (Iron Cushion
/// numbers them in one sequence across connections), created ones `{run}-{user}c{m}`.
pub(crate) fn document_id(out: &mut String, run_token: &str, user: u64, bulk_per_user: u64, document: DocumentRef) {
    use std::fmt::Write;
    out.clear();
    let _ = match document {
        DocumentRef::Bulk(k) => write!(out, "{run_token}-{}", user * bulk_per_user + k),
        DocumentRef::Created(m) => write!(out, "{run_token}-{user}c{m}"),
    };
}

/// CouchDB's answer to a single-document write (`{"ok":true,"id":"..","rev":".."}`) or its
/// error (`{"error":"conflict","reason":"Document update conflict."}`).
#[derive(Deserialize, Default)]
pub(crate) struct Reply {
    #[serde(default)]
    pub rev: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// The error kind of a CouchDB reply that is not a success.
pub(crate) fn error_kind(status: u16, reply: &Reply) -> &'static str {
    match status {
        409 => "conflict",
        404 if reply.reason.as_deref().is_some_and(|r| r.contains("Database does not exist") || r == "no_db_file") => {
            "missing_database"
        }
        404 => "not_found",
        401 | 403 => "unauthorized",
        400 => "bad_request",
        412 => "precondition_failed",
        500..=599 => "server_error",
        _ => "unexpected_status",
    }
}

/// The message of an error reply: `HTTP 409 conflict: Document update conflict.`
pub(crate) fn error_message(status: u16, reply: &Reply) -> String {
    let mut message = match (&reply.error, &reply.reason) {
        (Some(error), Some(reason)) => format!("HTTP {status} {error}: {reason}"),
        (Some(error), None) => format!("HTTP {status} {error}"),
        _ => format!("HTTP {status}"),
    };
    // pouchdb-server says only `no_db_file`.
    if error_kind(status, reply) == "missing_database" && !message.contains("does not exist") {
        message.push_str(" (the database does not exist)");
    }
    message
}

/// Per-document results of a `_bulk_docs` reply: how many were stored, and the first error.
pub(crate) fn bulk_outcome(body: &[u8]) -> Result<(u64, u64, Option<Reply>), serde_json::Error> {
    let replies: Vec<Reply> = serde_json::from_slice(body)?;
    let mut stored = 0;
    let mut refused = 0;
    let mut first_error = None;
    for reply in replies {
        if reply.error.is_some() {
            refused += 1;
            first_error.get_or_insert(reply);
        } else {
            stored += 1;
        }
    }
    Ok((stored, refused, first_error))
}

/// One request outside any run, for `horde couchdb`'s own checks (is the server there, does the
/// database exist, how many documents it holds): the status and the JSON reply.
pub fn couchdb_request(method: &str, url: &str) -> Result<(u16, serde_json::Value), String> {
    let url = url::Url::parse(url).map_err(|err| format!("{url:?}: {err}"))?;
    let target = crate::protocol::http::program::Target::from_url(url)?;
    let method = http::Method::from_bytes(method.as_bytes()).map_err(|err| err.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|err| err.to_string())?;
    runtime.block_on(async {
        let timeout = std::time::Duration::from_secs(10);
        // CouchDB here is plain http (the flags refuse https); a name is resolved as in runs.
        let resolver = crate::protocol::http::resolve::Resolver::default();
        let destination = crate::protocol::http::client::Destination {
            authority: &target.authority,
            host: &target.host,
            tls: None,
            resolver: &resolver,
        };
        let timeouts = crate::protocol::http::client::OpenTimeouts::both(timeout);
        let (mut connection, _) =
            crate::protocol::http::client::Connection::open(&destination, timeouts).await.map_err(|f| f.message)?;
        let headers = http::HeaderMap::new();
        let head = crate::protocol::http::client::RequestHead {
            method: &method,
            target: &target.origin_form,
            host: Some(&target.host_header),
            headers: &headers,
            body: b"",
        };
        let mut wire = crate::protocol::http::client::WireTiming::default();
        // A status reply is small; this bounds what a misbehaving server can make us keep.
        let max_body_bytes = 1 << 20;
        let exchange = connection.round_trip(
            head,
            true,
            max_body_bytes,
            crate::protocol::http::client::KeepHeaders::CookiesAndLocation,
            &mut wire,
        );
        let response = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| format!("no answer from {} within 10 s", target.url))?
            .map_err(|f| f.message)?;
        let reply = serde_json::from_slice(&response.body).unwrap_or(serde_json::Value::Null);
        Ok((response.status.as_u16(), reply))
    })
}

/// Runs a CouchDB step.
pub(crate) async fn run_step(
    step: &program::CouchdbStepProgram,
    user: &mut crate::user::VirtualUser,
) -> crate::user::Flow {
    match step {
        program::CouchdbStepProgram::BulkInsert(step) => user.couchdb_bulk_insert(step).await,
        program::CouchdbStepProgram::Crud(step) => user.couchdb_crud(step).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    /// Plays a sequence against the rules: every op must have what it needs.
    fn replay(ops: &[CrudOp], bulk: u64) -> Result<(), String> {
        let (mut alive, mut current) = (bulk, false);
        for (i, op) in ops.iter().enumerate() {
            match op {
                CrudOp::Create => {
                    alive += 1;
                    current = true;
                }
                CrudOp::Read if alive == 0 => return Err(format!("read at {i} with no document")),
                CrudOp::Read => current = true,
                CrudOp::Update | CrudOp::Delete if !current => return Err(format!("{op:?} at {i} without a document")),
                CrudOp::Update => {}
                CrudOp::Delete => {
                    alive -= 1;
                    current = false;
                }
            }
        }
        Ok(())
    }

    fn plan(counts: CrudCounts, bulk: u64, seed: u64) -> Vec<CrudOp> {
        let mut planner = CrudPlanner::new(counts, bulk);
        let mut rng = SmallRng::seed_from_u64(seed);
        std::iter::from_fn(|| planner.next(&mut rng)).collect()
    }

    proptest! {
        /// Any mix that validation accepts gets exact counts in a valid order.
        #[test]
        fn accepted_mixes_are_always_completed(create in 0u64..5, read in 0u64..5, update in 0u64..5,
                                               delete in 0u64..5, ops in 1u64..60, bulk in 0u64..8, seed: u64) {
            let weights = horde_plan::CrudWeights { create, read, update, delete };
            prop_assume!(horde_plan::crud_rule_violations(&weights, ops, bulk).is_empty());
            let counts = weights.counts(ops);
            let sequence = plan(counts, bulk, seed);
            let count = |op: CrudOp| sequence.iter().filter(|o| **o == op).count() as u64;
            prop_assert_eq!(
                (count(CrudOp::Create), count(CrudOp::Read), count(CrudOp::Update), count(CrudOp::Delete)),
                (counts.create, counts.read, counts.update, counts.delete)
            );
            prop_assert_eq!(replay(&sequence, bulk), Ok(()));
        }
    }

    #[test]
    fn the_order_is_random_and_seeded() {
        let counts = horde_plan::CrudWeights { create: 2, read: 3, update: 2, delete: 1 }.counts(80);
        assert_eq!(plan(counts, 10, 7), plan(counts, 10, 7));
        assert_ne!(plan(counts, 10, 7), plan(counts, 10, 8));
        // Not sorted by kind: creates are spread over the whole sequence.
        let sequence = plan(counts, 10, 7);
        let last_create = sequence.iter().rposition(|o| *o == CrudOp::Create).unwrap();
        assert!(last_create > 40, "creates should reach the second half, last at {last_create}");
    }

    #[test]
    fn ids_are_unique_to_the_run_and_the_user() {
        let mut id = String::new();
        document_id(&mut id, "r1", 2, 100, DocumentRef::Bulk(5));
        assert_eq!(id, "r1-205");
        document_id(&mut id, "r1", 2, 100, DocumentRef::Created(5));
        assert_eq!(id, "r1-2c5");
    }

    #[test]
    fn replies_are_classified_by_kind() {
        let missing: Reply =
            serde_json::from_str(r#"{"error":"not_found","reason":"Database does not exist."}"#).unwrap();
        assert_eq!(error_kind(404, &missing), "missing_database");
        assert_eq!(error_kind(404, &Reply::default()), "not_found");
        assert_eq!(error_kind(409, &Reply::default()), "conflict");
        assert_eq!(error_kind(503, &Reply::default()), "server_error");
        assert_eq!(error_message(404, &missing), "HTTP 404 not_found: Database does not exist.");
        let pouchdb: Reply = serde_json::from_str(r#"{"error":"not_found","reason":"no_db_file"}"#).unwrap();
        assert_eq!(error_message(404, &pouchdb), "HTTP 404 not_found: no_db_file (the database does not exist)");
        let (stored, refused, first) = bulk_outcome(
            br#"[{"ok":true,"id":"a","rev":"1-x"},{"id":"b","error":"conflict","reason":"Document update conflict."}]"#,
        )
        .unwrap();
        assert_eq!((stored, refused, first.unwrap().error.as_deref()), (1, 1, Some("conflict")));
    }
}
