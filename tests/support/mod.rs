//! Helpers the topic modules share; topic modules import from here and never from each other
//! (crates.io's layout). `aws`: moto clients, tables and keys; `bridge`: the OAuth bridge and its upstream; `http`: requests through `App::handle` and their answers; `auth`: keys,
//! tokens and a JWKS server; `db`: a database per test behind the run's PgBouncer, the tenant
//! fixture and tool calls; `secrets`: database credentials in Secrets Manager and the SCRAM PgBouncer; `faultproxy`: a TCP proxy that holds, resets, delays or cuts;
//! `site`: a loopback HTTP server answering from method and path.

pub(crate) mod auth;
pub(crate) mod aws;
pub(crate) mod bridge;
pub(crate) mod db;
pub(crate) mod faultproxy;
pub(crate) mod http;
pub(crate) mod secrets;
pub(crate) mod site;
