//! Protocols, each in its own module around the protocol-agnostic core (schedules, workers,
//! virtual users, control flow, recorders): its client, its steps as a user runs them, its
//! checks, its error kinds and its timing phases. The core knows a step only as something a
//! user runs against its session, reporting outcomes to rows; it never parses a wire format.

pub(crate) mod couchdb;
pub(crate) mod http;
pub(crate) mod messages;
pub(crate) mod sql;
