//! End-to-end tests of the endpoint: API Gateway events and hand-built HTTP requests
//! through the same `App::handle` the Lambda runtime calls. One binary, modules by topic.

// Test helpers may panic: a panic is how a test reports a broken precondition.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Fixtures are multi-statement SQL written here, run as the administrator.
#![allow(clippy::disallowed_methods)]

mod auth;
mod bounds;
mod bridge;
mod bridge_cimd;
mod bridge_consent;
mod docs;
mod doctor;
mod events;
mod faults;
mod gate;
mod handshake;
mod hostile;
mod http_layer;
mod infra;
mod limits;
mod partitions;
mod prompts;
mod properties;
mod resources;
mod rollups;
mod search;
mod secrets;
mod served;
mod smoke;
mod stateless;
mod store;
mod support;
mod telemetry;
mod tools;
