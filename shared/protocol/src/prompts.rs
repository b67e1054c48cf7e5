//! What a server offers as prompts (2025-11-25 server/prompts) and how their arguments, and
//! resource-template variables, are completed (server/utilities/completion). The engine
//! holds prompts to the rules tool calls follow (scopes, deadline, response budget, rate
//! limits); a body only renders its messages, and a completer only suggests values.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::registry::{BoxFuture, DEFAULT_TOOL_MAX_DURATION, add_scopes, valid_name};
use crate::result::{Outcome, ToolError};

/// A prompt's arguments as the client sent them: every value is a string
/// (`GetPromptRequestParams.arguments: { [key: string]: string }`).
pub type PromptArguments = BTreeMap<String, String>;

/// What a prompt body returns: a `GetPromptResult` body (`description`, `messages`).
pub type PromptResult = Result<Outcome<Value>, ToolError>;

type PromptFn = dyn Fn(PromptArguments, RequestContext) -> BoxFuture<PromptResult> + Send + Sync;

type CompleteFn = dyn Fn(CompletionRequest, RequestContext) -> BoxFuture<Result<Completion, ToolError>>
    + Send
    + Sync;

/// What the user has typed so far, and the arguments already chosen (2025-06-18
/// `CompleteRequest.context.arguments`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompletionRequest {
    pub value: String,
    pub context: PromptArguments,
}

/// Suggested values, best first. The engine sends at most 100 (the spec's bound) and says
/// `hasMore` when there were more.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    pub values: Vec<String>,
    /// More values match than are listed (a completer that stops at a limit says so).
    pub has_more: bool,
}

/// Suggests values for one prompt argument or template variable.
#[derive(Clone)]
pub struct Completer(Arc<CompleteFn>);

impl Completer {
    pub fn new<F, Fut>(complete: F) -> Self
    where
        F: Fn(CompletionRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, ToolError>> + Send + 'static,
    {
        Self(Arc::new(move |request, ctx| {
            Box::pin(complete(request, ctx))
        }))
    }

    /// The values of a fixed list that start with what was typed, in the list's order.
    pub fn from_list(values: &[&str]) -> Self {
        let values: Arc<[String]> = values.iter().map(|v| (*v).to_owned()).collect();
        Self::new(move |request: CompletionRequest, _| {
            let values = values.clone();
            async move {
                Ok(Completion {
                    values: values
                        .iter()
                        .filter(|v| v.starts_with(&request.value))
                        .cloned()
                        .collect(),
                    has_more: false,
                })
            }
        })
    }

    pub(crate) fn complete(
        &self,
        request: CompletionRequest,
        ctx: RequestContext,
    ) -> BoxFuture<Result<Completion, ToolError>> {
        (self.0)(request, ctx)
    }
}

/// One argument of a prompt (`PromptArgument`).
pub struct ArgumentDef {
    name: String,
    title: Option<String>,
    description: String,
    required: bool,
    completer: Option<Completer>,
}

impl ArgumentDef {
    /// An argument the client must send.
    pub fn required(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self::new(name.into(), description.into(), true)
    }

    /// An argument the client may leave out.
    pub fn optional(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self::new(name.into(), description.into(), false)
    }

    fn new(name: String, description: String, required: bool) -> Self {
        Self {
            name,
            title: None,
            description,
            required,
            completer: None,
        }
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Values `completion/complete` suggests for this argument.
    pub fn complete_with(mut self, completer: Completer) -> Self {
        self.completer = Some(completer);
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn is_required(&self) -> bool {
        self.required
    }

    pub fn completer(&self) -> Option<&Completer> {
        self.completer.as_ref()
    }
}

/// A prompt before registration.
pub struct PromptDef {
    name: String,
    title: Option<String>,
    description: String,
    arguments: Vec<ArgumentDef>,
    required_scopes: Vec<String>,
    max_duration: Duration,
    body: Arc<PromptFn>,
}

impl PromptDef {
    /// A prompt with its name, a description a person understands, and its body.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, body: F) -> Self
    where
        F: Fn(PromptArguments, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = PromptResult> + Send + 'static,
    {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
            required_scopes: Vec::new(),
            max_duration: DEFAULT_TOOL_MAX_DURATION,
            body: Arc::new(move |args, ctx| Box::pin(body(args, ctx))),
        }
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an argument; arguments are listed in the order they are added.
    pub fn argument(mut self, argument: ArgumentDef) -> Self {
        self.arguments.push(argument);
        self
    }

    /// OAuth scopes a caller must hold to see this prompt listed, get it and complete its
    /// arguments.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The longest rendering (or a completion of its arguments) may take.
    pub fn max_duration(mut self, limit: Duration) -> Self {
        self.max_duration = limit;
        self
    }
}

/// Why a prompt could not be registered (at init: a cold-start failure, caught by tests).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("prompt name {0:?} must be 1-64 characters of [A-Za-z0-9_.-]")]
    BadName(String),
    #[error("prompt {0:?} is registered twice")]
    Duplicate(String),
    #[error("prompt {prompt:?} names argument {argument:?} twice, or with an empty name")]
    BadArgument { prompt: String, argument: String },
}

/// A registered prompt.
pub struct Prompt {
    def: PromptDef,
    listing: Value,
}

impl Prompt {
    pub fn name(&self) -> &str {
        &self.def.name
    }

    pub fn required_scopes(&self) -> &[String] {
        &self.def.required_scopes
    }

    pub fn max_duration(&self) -> Duration {
        self.def.max_duration
    }

    /// Its `Prompt` object, as `prompts/list` shows it.
    pub fn listing(&self) -> &Value {
        &self.listing
    }

    pub fn arguments(&self) -> &[ArgumentDef] {
        &self.def.arguments
    }

    pub fn argument(&self, name: &str) -> Option<&ArgumentDef> {
        self.def.arguments.iter().find(|a| a.name == name)
    }

    pub(crate) fn render(
        &self,
        arguments: PromptArguments,
        ctx: RequestContext,
    ) -> BoxFuture<PromptResult> {
        (self.def.body)(arguments, ctx)
    }
}

/// The prompt registry, listed in registration order.
#[derive(Default)]
pub struct Prompts {
    entries: Vec<Prompt>,
    all_scopes: Vec<String>,
}

impl Prompts {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `def`.
    ///
    /// # Errors
    ///
    /// A name outside the tools' alphabet, a name registered twice, or an argument named
    /// twice or not at all.
    pub fn register(&mut self, def: PromptDef) -> Result<&mut Self, PromptError> {
        if !valid_name(&def.name) {
            return Err(PromptError::BadName(def.name));
        }
        if self.get(&def.name).is_some() {
            return Err(PromptError::Duplicate(def.name));
        }
        for (i, argument) in def.arguments.iter().enumerate() {
            let repeated = def.arguments[..i].iter().any(|a| a.name == argument.name);
            if argument.name.is_empty() || repeated {
                return Err(PromptError::BadArgument {
                    prompt: def.name,
                    argument: argument.name.clone(),
                });
            }
        }
        let mut listing = json!({ "name": def.name, "description": def.description });
        if let Some(title) = &def.title {
            listing["title"] = json!(title);
        }
        if !def.arguments.is_empty() {
            let arguments: Vec<Value> = def
                .arguments
                .iter()
                .map(|a| {
                    let mut v = json!({
                        "name": a.name,
                        "description": a.description,
                        "required": a.required,
                    });
                    if let Some(title) = &a.title {
                        v["title"] = json!(title);
                    }
                    v
                })
                .collect();
            listing["arguments"] = Value::Array(arguments);
        }
        add_scopes(&mut self.all_scopes, &def.required_scopes);
        self.entries.push(Prompt { def, listing });
        Ok(self)
    }

    pub fn get(&self, name: &str) -> Option<&Prompt> {
        self.entries.iter().find(|p| p.def.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Prompt> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Some argument of some prompt can be completed.
    pub(crate) fn completes(&self) -> bool {
        self.entries
            .iter()
            .any(|p| p.def.arguments.iter().any(|a| a.completer.is_some()))
    }

    /// Every scope any prompt requires, sorted.
    pub fn all_scopes(&self) -> &[String] {
        &self.all_scopes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello() -> PromptDef {
        PromptDef::new("hello", "Says hello", |_, _| async {
            Ok(Outcome::Complete(json!({ "messages": [] })))
        })
    }

    #[test]
    fn listings_carry_arguments_in_order_and_registration_checks_names() {
        let mut prompts = Prompts::new();
        prompts
            .register(
                hello()
                    .title("Hello")
                    .argument(ArgumentDef::required("who", "Whom to greet"))
                    .argument(ArgumentDef::optional("how", "In which tone").title("Tone")),
            )
            .unwrap();
        let listing = prompts.get("hello").unwrap().listing();
        assert_eq!(listing["title"], "Hello");
        assert_eq!(listing["arguments"][0]["name"], "who");
        assert_eq!(listing["arguments"][0]["required"], true);
        assert_eq!(listing["arguments"][1]["required"], false);
        assert_eq!(listing["arguments"][1]["title"], "Tone");
        assert!(!prompts.completes());
        assert_eq!(
            prompts.register(hello()).map(|_| ()),
            Err(PromptError::Duplicate("hello".into()))
        );
        let twice = PromptDef::new("twice", "d", |_, _| async {
            Ok(Outcome::Complete(json!({})))
        })
        .argument(ArgumentDef::required("a", "x"))
        .argument(ArgumentDef::optional("a", "y"));
        assert!(matches!(
            prompts.register(twice),
            Err(PromptError::BadArgument { .. })
        ));
        let bad = PromptDef::new("has space", "d", |_, _| async {
            Ok(Outcome::Complete(json!({})))
        });
        assert!(matches!(
            prompts.register(bad),
            Err(PromptError::BadName(_))
        ));
    }

    #[tokio::test]
    async fn a_list_completer_offers_the_values_that_start_with_the_input() {
        let completer = Completer::from_list(&["paris", "park", "hello"]);
        let request = CompletionRequest {
            value: "par".into(),
            ..CompletionRequest::default()
        };
        let got = completer
            .complete(
                request,
                RequestContext::anonymous(crate::ProtocolVersion::LATEST_HANDSHAKE),
            )
            .await
            .unwrap();
        assert_eq!(got.values, ["paris", "park"]);
        assert!(!got.has_more);
    }
}
