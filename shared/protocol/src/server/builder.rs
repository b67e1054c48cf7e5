//! How a [`Server`] is put together: its identity, what it offers and its settings.

use super::Server;
use crate::prompts::Prompts;
use crate::registry::Tools;
use crate::resources::Resources;
use crate::server::DEFAULT_RESPONSE_BUDGET;

/// The server's identity (`serverInfo` / `Implementation`).
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    pub title: Option<String>,
    pub instructions: Option<String>,
}

/// Caching hints on cacheable 2026-07-28 results (server/utilities/caching).
#[derive(Debug, Clone, Copy)]
pub struct CacheHints {
    pub ttl_ms: u64,
    /// `private` whenever the answer may depend on the caller's token.
    pub private: bool,
}

impl Default for CacheHints {
    fn default() -> Self {
        Self {
            ttl_ms: 60_000,
            private: true,
        }
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    server: Server,
}

impl ServerBuilder {
    pub fn tools(mut self, tools: Tools) -> Self {
        self.server.tools = tools;
        self
    }

    pub fn resources(mut self, resources: Resources) -> Self {
        self.server.resources = resources;
        self
    }

    /// The prompts, and with them the completion of their arguments (and of template
    /// variables that have completers): `completions` is offered when anything completes.
    pub fn prompts(mut self, prompts: Prompts) -> Self {
        self.server.prompts = prompts;
        self
    }

    /// Advertises `logging` and accepts `logging/setLevel` in the handshake era. A
    /// stateless server can accept a level but has no stream to log on, so production
    /// leaves this off.
    pub fn logging(mut self, on: bool) -> Self {
        self.server.logging = on;
        self
    }

    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.server.info.instructions = Some(text.into());
        self
    }

    pub fn title(mut self, text: impl Into<String>) -> Self {
        self.server.info.title = Some(text.into());
        self
    }

    /// The largest serialised `tools/call` result, in bytes (default [`DEFAULT_RESPONSE_BUDGET`]).
    pub fn response_budget(mut self, bytes: usize) -> Self {
        self.server.response_budget = bytes;
        self
    }

    /// Whether every structured tool result is validated against the tool's output schema
    /// before it is sent (default on). A deployment whose results are built by typed code
    /// may turn it off where tests validate every result instead (see `mcp`'s
    /// `production_server`); a result that fails the check is an internal error.
    pub fn check_outputs(mut self, on: bool) -> Self {
        self.server.check_outputs = on;
        self
    }

    pub fn cache_hints(mut self, cache: CacheHints) -> Self {
        self.server.cache = cache;
        self
    }

    /// The server, if it offers anything.
    ///
    /// # Errors
    ///
    /// [`BuildError::NothingOffered`] when no tool, resource or prompt is registered: such
    /// a server could only answer `initialize`, which would tell a client it is healthy.
    pub fn build(mut self) -> Result<Server, BuildError> {
        let s = &mut self.server;
        if s.tools.is_empty() && s.resources.is_empty() && s.prompts.is_empty() {
            return Err(BuildError::NothingOffered);
        }
        if !s.check_outputs {
            // Nothing would read them: about 75 KB a sandbox for the event-store tools.
            s.tools.forget_output_validators();
        }
        Ok(self.server)
    }
}

/// Why a server was not built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("the server offers no tools, resources or prompts")]
    NothingOffered,
}

impl Server {
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            server: Server {
                info: ServerInfo {
                    name: name.into(),
                    version: version.into(),
                    title: None,
                    instructions: None,
                },
                tools: Tools::new(),
                resources: Resources::new(),
                prompts: Prompts::new(),
                logging: false,
                cache: CacheHints::default(),
                response_budget: DEFAULT_RESPONSE_BUDGET,
                check_outputs: true,
                admission: None,
            },
        }
    }
}
