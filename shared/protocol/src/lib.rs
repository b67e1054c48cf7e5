//! The MCP protocol engine of the event-store endpoint, for both protocol eras.
//!
//! * Handshake era (2025-03-26, 2025-06-18, 2025-11-25), served statelessly: `initialize`
//!   is answered and forgotten, the revision of later requests comes from the
//!   `MCP-Protocol-Version` header.
//! * Stateless era (2026-07-28): per-request `_meta`, `server/discover`, `resultType`,
//!   caching hints, `Mcp-Method`/`Mcp-Name` header checks.
//!
//! This crate does no I/O and knows nothing of HTTP servers, Lambda or databases (it only
//! needs a tokio runtime with timers, to stop a tool body at its deadline): it takes
//! a body plus the few transport headers the protocol defines and returns a status and a
//! JSON body. Tool, resource and prompt bodies are plugged in through [`registry`],
//! [`resources`] and [`prompts`]; what they
//! return is in [`result`]. Modules stand in layers: `json`, `text`, `version` and
//! `uri_template` import nothing of the crate, `result` adds `json` and `budget`, `context`
//! only those, `registry` adds `context` and `text`, `prompts` adds `registry`, `resources`
//! adds `prompts` and `uri_template`, `server` uses them all.
//! Its invariants are tested in each module and, end to end, in the `tests/` crate.

pub mod admission;
pub mod budget;
pub mod context;
pub mod error;
pub mod json;
pub mod jsonrpc;
pub mod method;
pub mod prompts;
pub mod registry;
pub mod resources;
pub mod result;
pub mod schema;
pub mod server;
pub mod telemetry;
pub mod text;
mod uri_template;
pub mod version;

pub use admission::{Admission, Admit};
pub use budget::{Budget, BudgetSource};
pub use context::{Caller, RequestContext};
pub use error::RpcError;
pub use json::{object, string_escapes, write_object};
pub use method::Method;
pub use prompts::{
    ArgumentDef, Completer, Completion, CompletionRequest, PromptArguments, PromptDef, PromptError,
    PromptResult, Prompts,
};
pub use registry::{
    BoxFuture, DEFAULT_TOOL_MAX_DURATION, Owner, RegistryError, ToolAnnotations, ToolDef, Tools,
};
pub use resources::{ResourceDef, ResourceError, ResourceRequest, Resources};
pub use result::CallRecord;
pub use result::{CallStats, CallToolResult, InputRequired, Outcome, ToolError, structured_cost};
pub use schema::input_schema;
pub use server::{BuildError, CacheHints, HeaderField, Incoming, Reply, Server, ServerBuilder};
pub use version::ProtocolVersion;
