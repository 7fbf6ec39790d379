//! The CouchDB workload steps (Iron Cushion's bulk insert and CRUD steps) and the arithmetic
//! of their operation mix. The rules live here, once: the plan's validation reports them with
//! plan paths, `horde couchdb` with its own flag names.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::Validator;

/// CouchDB's steps: one family of [`crate::Step`].
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CouchdbStep {
    /// Iron Cushion's bulk insert step against a CouchDB database.
    CouchdbBulkInsert(CouchdbBulkInsert),
    /// Iron Cushion's CRUD step against a CouchDB database.
    CouchdbCrud(CouchdbCrud),
}

/// Iron Cushion's bulk insert step, per virtual user (one user = one connection): `inserts`
/// POSTs to `{database}/_bulk_docs`, each carrying `documents_per_insert` new documents.
/// The documents of user `c` get the ids `{run}-{c·n + k}` (n = inserts × documents_per_insert,
/// `run` a token unique to the run), which a later CRUD step of the same run reads.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CouchdbBulkInsert {
    /// The statistics row of the `_bulk_docs` requests and the name of the step's report.
    pub name: String,
    /// The database URL (`http://127.0.0.1:5984/bench`), absolute or relative to the base URL.
    pub database: String,
    /// A JSON template document or an XML schema (see docs/documents.md).
    pub schema: String,
    pub documents_per_insert: u32,
    pub inserts: u32,
}

/// Iron Cushion's CRUD step, per virtual user: `operations` single-document operations in a
/// random order, in the proportions of the weights. Updates and deletes act on the document
/// the user last created or read (whose `_rev` it then knows); reads pick a document that
/// exists: one of the user's bulk-inserted documents or one it created, not yet deleted.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CouchdbCrud {
    /// Rows are named `{name} create`, `{name} read`, `{name} update`, `{name} delete`.
    pub name: String,
    pub database: String,
    pub schema: String,
    pub operations: u64,
    pub weights: CrudWeights,
    /// Documents a bulk insert step of the same run made for each user (inserts ×
    /// documents_per_insert): the user reads and deletes among its own. 0 when there was none.
    #[serde(default)]
    pub bulk_documents_per_user: u64,
}

/// Relative weights of the four operations, as Iron Cushion's `--create_weight` and others.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct CrudWeights {
    #[serde(default)]
    pub create: u64,
    #[serde(default)]
    pub read: u64,
    #[serde(default)]
    pub update: u64,
    #[serde(default)]
    pub delete: u64,
}

/// How many operations of each kind one user performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CrudCounts {
    pub create: u64,
    pub read: u64,
    pub update: u64,
    pub delete: u64,
}

impl CrudCounts {
    pub fn total(&self) -> u64 {
        self.create + self.read + self.update + self.delete
    }
}

impl CrudWeights {
    pub fn sum(&self) -> u64 {
        self.create + self.read + self.update + self.delete
    }

    /// Iron Cushion's split: creates, reads and deletes are their share rounded down, updates
    /// take what rounding leaves, so the counts always add up to `operations`. 2/8 of 10,000
    /// is 2,500 creates.
    pub fn counts(&self, operations: u64) -> CrudCounts {
        let sum = self.sum();
        if sum == 0 {
            return CrudCounts::default();
        }
        // Exact integer arithmetic: floor(weight × operations / sum).
        let share = |weight: u64| (u128::from(weight) * u128::from(operations) / u128::from(sum)) as u64;
        let (create, read, delete) = (share(self.create), share(self.read), share(self.delete));
        CrudCounts { create, read, delete, update: operations - create - read - delete }
    }
}

/// A rule of seed 003 (Iron Cushion's README) that a CRUD mix breaks. Each front end names the
/// offending fields in its own spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrudRule {
    /// Operations are asked for, but every weight is 0.
    WeightsSumToZero,
    /// Every delete needs a `_rev` from an earlier create or read.
    CreateReadBelowDelete,
    /// Updates need a document from an earlier create or read.
    UpdateWithoutCreateOrRead,
    /// Reads need a document to exist: bulk-inserted or created.
    ReadWithoutDocuments,
    /// More deletes than documents bulk-inserted and created, per user.
    NotEnoughDocumentsToDelete,
}

impl CrudRule {
    /// The rule in words, with the numbers of this mix.
    pub fn explain(self, counts: &CrudCounts, bulk_documents_per_user: u64) -> String {
        match self {
            CrudRule::WeightsSumToZero => {
                "the weights must have a positive sum when CRUD operations are asked for".into()
            }
            CrudRule::CreateReadBelowDelete => format!(
                "create + read must be at least delete: every delete needs the _rev of an earlier create or read \
                 ({} creates + {} reads < {} deletes per connection)",
                counts.create, counts.read, counts.delete
            ),
            CrudRule::UpdateWithoutCreateOrRead => format!(
                "create + read must be more than 0 when update is more than 0: an update needs a document from an \
                 earlier create or read ({} updates, no creates or reads per connection)",
                counts.update
            ),
            CrudRule::ReadWithoutDocuments => format!(
                "{} reads per connection but no document to read: bulk insert some or give create a weight",
                counts.read
            ),
            CrudRule::NotEnoughDocumentsToDelete => format!(
                "{} deletes per connection > {} documents bulk inserted + {} created per connection: bulk insert \
                 more documents, raise the create weight or lower the delete weight",
                counts.delete, bulk_documents_per_user, counts.create
            ),
        }
    }
}

/// Every rule the mix breaks (checked on the counts, after rounding, so that a mix that passes
/// can always be put in an order where each operation has the document it needs).
pub fn crud_rule_violations(weights: &CrudWeights, operations: u64, bulk_documents_per_user: u64) -> Vec<CrudRule> {
    let mut broken = Vec::new();
    if operations == 0 {
        return broken;
    }
    if weights.sum() == 0 {
        broken.push(CrudRule::WeightsSumToZero);
        return broken;
    }
    let counts = weights.counts(operations);
    let created_or_read = counts.create + counts.read;
    if weights.create + weights.read < weights.delete || created_or_read < counts.delete {
        broken.push(CrudRule::CreateReadBelowDelete);
    }
    if counts.update > 0 && created_or_read == 0 {
        broken.push(CrudRule::UpdateWithoutCreateOrRead);
    }
    if counts.read > 0 && bulk_documents_per_user + counts.create == 0 {
        broken.push(CrudRule::ReadWithoutDocuments);
    }
    if counts.delete > bulk_documents_per_user + counts.create {
        broken.push(CrudRule::NotEnoughDocumentsToDelete);
    }
    broken
}

// Validation: every problem with its plan path, in the order the plan reads.

pub(crate) fn validate_step(v: &mut Validator, path: &str, step: &CouchdbStep) {
    // CouchDB rides on HTTP: a relative database URL takes the protocol's base_url.
    let has_base_url = v.plan.protocol.base_url.is_some();
    match step {
        CouchdbStep::CouchdbBulkInsert(step) => {
            couchdb_common(v, path, &step.name, &step.database, &step.schema, has_base_url);
            if step.documents_per_insert == 0 {
                v.error(format!("{path}.documents_per_insert"), "must be more than 0");
            }
        }
        CouchdbStep::CouchdbCrud(step) => {
            couchdb_common(v, path, &step.name, &step.database, &step.schema, has_base_url);
            let counts = step.weights.counts(step.operations);
            for rule in crud_rule_violations(&step.weights, step.operations, step.bulk_documents_per_user) {
                v.error(format!("{path}.weights"), rule.explain(&counts, step.bulk_documents_per_user));
            }
        }
    }
}

fn couchdb_common(v: &mut Validator, path: &str, name: &str, database: &str, schema: &str, has_base_url: bool) {
    if name.trim().is_empty() {
        v.error(format!("{path}.name"), "a CouchDB step needs a name");
    }
    let database_path = format!("{path}.database");
    if database.contains("://") {
        if !super::http::is_http_url(database) {
            v.error(&database_path, format!("{database:?}: only http:// URLs are supported"));
        }
    } else if !has_base_url {
        v.error(&database_path, format!("{database:?} is relative but the protocol has no base_url"));
    }
    if database.contains('$') {
        v.error(&database_path, "the database URL cannot hold templates");
    }
    if schema.trim().is_empty() {
        v.error(format!("{path}.schema"), "a CouchDB step needs a schema file");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(create: u64, read: u64, update: u64, delete: u64) -> CrudWeights {
        CrudWeights { create, read, update, delete }
    }

    #[test]
    fn counts_follow_seed_003() {
        let counts = weights(2, 3, 2, 1).counts(10_000);
        assert_eq!(counts, CrudCounts { create: 2_500, read: 3_750, update: 2_500, delete: 1_250 });
        // Rounding goes to updates: 1/3 each of 10.
        let counts = weights(1, 1, 1, 1).counts(10);
        assert_eq!((counts.create, counts.read, counts.update, counts.delete), (2, 2, 4, 2));
        assert_eq!(weights(1, 1, 1, 0).counts(7).total(), 7);
    }

    #[test]
    fn every_rule_of_seed_003_is_enforced() {
        assert!(crud_rule_violations(&weights(2, 3, 2, 1), 10_000, 0).is_empty());
        assert!(crud_rule_violations(&weights(0, 0, 0, 0), 0, 0).is_empty(), "no operations, no rules");
        assert_eq!(crud_rule_violations(&weights(0, 0, 0, 0), 10, 5), vec![CrudRule::WeightsSumToZero]);
        assert!(crud_rule_violations(&weights(1, 1, 0, 3), 10, 100).contains(&CrudRule::CreateReadBelowDelete));
        assert_eq!(crud_rule_violations(&weights(0, 0, 1, 0), 10, 100), vec![CrudRule::UpdateWithoutCreateOrRead]);
        assert_eq!(crud_rule_violations(&weights(0, 1, 0, 0), 10, 0), vec![CrudRule::ReadWithoutDocuments]);
        // 5 deletes but only 2 bulk-inserted + 0 created documents.
        assert_eq!(crud_rule_violations(&weights(0, 1, 0, 1), 10, 2), vec![CrudRule::NotEnoughDocumentsToDelete]);
        // Weights that pass (1 + 1 >= 2) but counts that round badly: of 2 operations, 0 creates,
        // 0 reads and 1 delete.
        assert!(crud_rule_violations(&weights(1, 1, 0, 2), 2, 10).contains(&CrudRule::CreateReadBelowDelete));
    }
}
