//! What a server offers: tools (with their schemas and handlers), resources, prompts and
//! completions. Later crates plug their bodies in here; the engine never knows what a
//! tool does.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::context::RequestContext;
use crate::json::object;
use crate::result::{CallToolResult, Outcome, ToolError};
use crate::text::{elided, excerpt};

/// The longest message [`Tool::validate_arguments`] gives for one mismatch.
pub const MAX_ARGUMENT_ERROR_BYTES: usize = 300;

/// A boxed, sendable future: what every async body returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

type ToolFn = dyn Fn(Map<String, Value>, RequestContext) -> BoxFuture<Result<Outcome<CallToolResult>, ToolError>>
    + Send
    + Sync;

/// Behaviour hints published with a tool (2025-11-25 schema `ToolAnnotations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

impl Default for ToolAnnotations {
    /// Every tool this product ships only reads a closed data set.
    fn default() -> Self {
        Self {
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }
}

/// A tool definition before registration.
pub struct ToolDef {
    name: String,
    title: Option<String>,
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    annotations: ToolAnnotations,
    required_scopes: Vec<String>,
    required_client_capabilities: Vec<String>,
    owner_argument: Option<(String, Owner)>,
    response_budget: Option<usize>,
    max_duration: Duration,
    handler: Arc<ToolFn>,
}

/// The longest a tool call may run unless its definition says otherwise: under API
/// Gateway's 29-30 s integration timeout, so the caller always gets our answer rather
/// than the gateway's 504.
pub const DEFAULT_TOOL_MAX_DURATION: Duration = Duration::from_secs(28);

/// Which identity of the caller an owner argument must equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Subject,
    Tenant,
}

impl ToolDef {
    /// A tool with its name, description, input JSON Schema and async body.
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(Map<String, Value>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome<CallToolResult>, ToolError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
            required_scopes: Vec::new(),
            required_client_capabilities: Vec::new(),
            owner_argument: None,
            response_budget: None,
            max_duration: DEFAULT_TOOL_MAX_DURATION,
            handler: Arc::new(move |args, ctx| Box::pin(handler(args, ctx))),
        }
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The JSON Schema every `structuredContent` of this tool conforms to.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// OAuth scopes a caller must hold to call this tool.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Declares that argument `name` names an owner and must equal the caller's subject or
    /// tenant. A mismatch is an `isError` "not permitted" result and the tool does not run;
    /// an absent argument is filled in with the caller's own value (object-level
    /// authorization, OWASP API1).
    pub fn owner_argument(mut self, name: impl Into<String>, owner: Owner) -> Self {
        self.owner_argument = Some((name.into(), owner));
        self
    }

    /// A response budget for this tool instead of the server's.
    pub fn response_budget(mut self, bytes: usize) -> Self {
        self.response_budget = Some(bytes);
        self
    }

    /// The longest one call of this tool may run, whatever time the invocation has left
    /// (default [`DEFAULT_TOOL_MAX_DURATION`]).
    pub fn max_duration(mut self, limit: Duration) -> Self {
        self.max_duration = limit;
        self
    }

    /// A client capability (e.g. `sampling`) this tool cannot run without.
    pub fn requires_client_capability(mut self, capability: impl Into<String>) -> Self {
        self.required_client_capabilities.push(capability.into());
        self
    }
}

/// A registered tool: its definition (its schemas moved into its listing) plus compiled
/// schema validators.
pub struct Tool {
    def: ToolDef,
    input_validator: jsonschema::Validator,
    output_validator: Option<jsonschema::Validator>,
    listing: Value,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.def.name)
            .finish_non_exhaustive()
    }
}

impl Tool {
    pub fn name(&self) -> &str {
        &self.def.name
    }

    pub fn required_scopes(&self) -> &[String] {
        &self.def.required_scopes
    }

    pub fn required_client_capabilities(&self) -> &[String] {
        &self.def.required_client_capabilities
    }

    pub fn response_budget(&self) -> Option<usize> {
        self.def.response_budget
    }

    pub fn max_duration(&self) -> Duration {
        self.def.max_duration
    }

    pub fn owner_argument(&self) -> Option<(&str, Owner)> {
        self.def
            .owner_argument
            .as_ref()
            .map(|(name, owner)| (name.as_str(), *owner))
    }

    /// The entry `tools/list` publishes for this tool.
    pub fn listing(&self) -> &Value {
        &self.listing
    }

    /// Validates arguments against the input schema.
    ///
    /// # Errors
    ///
    /// Returns up to five messages naming where and why the arguments do not match. Each
    /// names the offending value by an excerpt, not whole (it can be most of the body), and
    /// is at most [`MAX_ARGUMENT_ERROR_BYTES`] long.
    pub fn validate_arguments(&self, args: &Value) -> Result<(), Vec<String>> {
        let errors: Vec<String> = self
            .input_validator
            .iter_errors(args)
            .take(5)
            .map(|e| {
                let why = e.masked_with(excerpt(e.instance())).to_string();
                let path = e.instance_path().to_string();
                let message = if path.is_empty() {
                    why
                } else {
                    format!("{path}: {why}")
                };
                // Property names are repeated whole (`additionalProperties`, paths).
                elided(&message, MAX_ARGUMENT_ERROR_BYTES).into_owned()
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Returns true if and only if `result`'s structured content conforms to the declared
    /// output schema (or no output schema was declared, or the server that holds it does not
    /// check results).
    pub fn output_conforms(&self, result: &CallToolResult) -> bool {
        // The structured content is looked at only where there is a schema to check it
        // against: a result held as text is parsed back for it.
        match &self.output_validator {
            None => true,
            Some(v) => result
                .structured_content()
                .is_some_and(|value| v.is_valid(&value)),
        }
    }

    /// Runs the tool body.
    pub fn call(
        &self,
        args: Map<String, Value>,
        ctx: RequestContext,
    ) -> BoxFuture<Result<Outcome<CallToolResult>, ToolError>> {
        (self.def.handler)(args, ctx)
    }
}

/// Why a tool could not be registered. Registration happens at init, so these fail the
/// cold start loudly instead of surfacing per request.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("tool name {0:?} must be 1-64 characters of [A-Za-z0-9_.-]")]
    BadName(String),
    #[error("tool {0:?} is registered twice")]
    Duplicate(String),
    #[error("the {which} schema of tool {tool:?} must be a JSON object with \"type\": \"object\"")]
    NotAnObjectSchema { tool: String, which: &'static str },
    #[error("the {which} schema of tool {tool:?} is not a valid JSON Schema: {message}")]
    InvalidSchema {
        tool: String,
        which: &'static str,
        message: String,
    },
}

/// The tool registry. Order of registration is the order of `tools/list`, which makes the
/// listing deterministic (2026-07-28 tools §Listing Tools: "SHOULD return tools in a
/// deterministic order").
#[derive(Debug, Default)]
pub struct Tools {
    tools: Vec<Tool>,
    /// Every scope any tool requires, sorted and deduplicated; kept up to date by
    /// `register` so calls never recompute it.
    all_scopes: Vec<String>,
}

impl Tools {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool.
    ///
    /// An input schema without `additionalProperties` gets `additionalProperties: false`,
    /// so unknown argument fields are rejected rather than silently ignored.
    ///
    /// # Errors
    ///
    /// Fails on a bad or duplicate name, or a schema that is not an object schema or does
    /// not compile.
    pub fn register(&mut self, mut def: ToolDef) -> Result<&mut Self, RegistryError> {
        if !valid_name(&def.name) {
            return Err(RegistryError::BadName(def.name));
        }
        if self.get(&def.name).is_some() {
            return Err(RegistryError::Duplicate(def.name));
        }
        let Some(input) = def.input_schema.as_object_mut() else {
            return Err(RegistryError::NotAnObjectSchema {
                tool: def.name,
                which: "input",
            });
        };
        if input.get("type") != Some(&Value::from("object")) {
            return Err(RegistryError::NotAnObjectSchema {
                tool: def.name,
                which: "input",
            });
        }
        input
            .entry("additionalProperties")
            .or_insert(Value::Bool(false));
        let input_validator = compile(&def.name, "input", &def.input_schema)?;
        let output_validator = match &def.output_schema {
            Some(schema) => Some(compile(&def.name, "output", schema)?),
            None => None,
        };
        // The schemas move into the listing (the only place they are read from after
        // this): each sandbox holds one copy of them, not two (issue 18).
        let mut listing = object([
            ("name", def.name.clone().into()),
            ("description", def.description.clone().into()),
            ("inputSchema", std::mem::take(&mut def.input_schema)),
            ("annotations", json!(def.annotations)),
        ]);
        if let Value::Object(members) = &mut listing {
            if let Some(title) = &def.title {
                members.insert("title".into(), title.clone().into());
            }
            if let Some(schema) = def.output_schema.take() {
                members.insert("outputSchema".into(), schema);
            }
        }
        add_scopes(&mut self.all_scopes, &def.required_scopes);
        self.tools.push(Tool {
            def,
            input_validator,
            output_validator,
            listing,
        });
        Ok(self)
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.def.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Tool> {
        self.tools.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Drops the compiled output validators, for a server that does not check results
    /// (each tool's schema was still checked when it was registered).
    pub(crate) fn forget_output_validators(&mut self) {
        for tool in &mut self.tools {
            tool.output_validator = None;
        }
    }

    /// Every scope any tool requires, sorted: the `scopes_supported` of the protected
    /// resource metadata, and the challenge for calls the caller may not make.
    pub fn all_scopes(&self) -> &[String] {
        &self.all_scopes
    }
}

/// A tool's or prompt's name: SEP-986 allows 1-128 characters; conformance builds disagree
/// on the upper bound, so we keep to the intersection (1-64 of `[A-Za-z0-9_.-]`).
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Adds `scopes` to a registry's sorted, deduplicated list of every scope it requires.
pub(crate) fn add_scopes(all: &mut Vec<String>, scopes: &[String]) {
    all.extend(scopes.iter().cloned());
    all.sort();
    all.dedup();
}

fn compile(
    tool: &str,
    which: &'static str,
    schema: &Value,
) -> Result<jsonschema::Validator, RegistryError> {
    jsonschema::validator_for(schema).map_err(|e| RegistryError::InvalidSchema {
        tool: tool.to_owned(),
        which,
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noop(name: &str, schema: Value) -> ToolDef {
        ToolDef::new(name, "does nothing", schema, |_, _| async {
            Ok(Outcome::Complete(CallToolResult::text("ok")))
        })
    }

    #[test]
    fn names_outside_the_safe_alphabet_are_refused() {
        for bad in ["", "has space", "slash/name", "é", &"x".repeat(65)] {
            let err = Tools::new()
                .register(noop(bad, json!({"type": "object"})))
                .map(|_| ())
                .expect_err("must refuse");
            assert!(matches!(err, RegistryError::BadName(_)), "{bad:?}: {err}");
        }
        Tools::new()
            .register(noop("a.b-c_D9", json!({"type": "object"})))
            .expect("valid name");
    }

    #[test]
    fn duplicates_and_non_object_schemas_are_refused() {
        let mut tools = Tools::new();
        tools
            .register(noop("t", json!({"type": "object"})))
            .unwrap();
        assert!(matches!(
            tools.register(noop("t", json!({"type": "object"}))),
            Err(RegistryError::Duplicate(_))
        ));
        assert!(matches!(
            tools.register(noop("u", json!({"type": "string"}))),
            Err(RegistryError::NotAnObjectSchema { .. })
        ));
        assert!(matches!(
            tools.register(noop(
                "v",
                json!({"type": "object", "properties": {"a": {"type": 5}}})
            )),
            Err(RegistryError::InvalidSchema { .. })
        ));
    }

    #[test]
    fn unknown_argument_fields_are_rejected_by_default() {
        let mut tools = Tools::new();
        tools
            .register(noop(
                "t",
                json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
            ))
            .unwrap();
        let tool = tools.get("t").unwrap();
        assert_eq!(tool.validate_arguments(&json!({"a": 1})), Ok(()));
        let errors = tool
            .validate_arguments(&json!({"a": 1, "b": 2}))
            .unwrap_err();
        assert!(errors[0].contains("b"), "{errors:?}");
        let errors = tool.validate_arguments(&json!({"a": "x"})).unwrap_err();
        assert!(errors[0].starts_with("/a"), "{errors:?}");
        assert_eq!(
            tool.listing()["inputSchema"]["additionalProperties"],
            json!(false)
        );
        assert_eq!(tool.listing()["annotations"]["readOnlyHint"], json!(true));
    }
}
