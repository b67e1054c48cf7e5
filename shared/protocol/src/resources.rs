//! What a server offers to read (2025-11-25 server/resources): direct resources and
//! RFC 6570 resource templates, each with the scopes a caller must hold. The engine reads
//! them under the same rules as tool calls (scopes, deadline, response budget); the bodies
//! only fetch.

use std::sync::Arc;
use std::time::Duration;

use iri_string::template::UriTemplateString;
use iri_string::types::UriStr;
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::prompts::Completer;
use crate::registry::{BoxFuture, DEFAULT_TOOL_MAX_DURATION, add_scopes};
use crate::result::ToolError;
use crate::uri_template::{Part, expand, is_unreserved, match_parts};

/// What a read body returns: the resource's contents (`TextResourceContents` or
/// `BlobResourceContents` objects), or `None` when the URI names nothing that exists.
pub type ReadResult = Result<Option<Vec<Value>>, ToolError>;

type ReadFn = dyn Fn(ResourceRequest, RequestContext) -> BoxFuture<ReadResult> + Send + Sync;

/// Why a resource definition was refused at registration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    #[error("resource URI {uri:?} is not an absolute URI: {message}")]
    BadUri { uri: String, message: String },
    #[error("resource template {template:?} is not an RFC 6570 URI template: {message}")]
    BadTemplate { template: String, message: String },
    /// Reads match a URI back to its template, which is exact only for simple `{name}`
    /// expressions separated by a literal that starts with a reserved character.
    #[error("resource template {template:?} cannot be matched back from a URI: {reason}")]
    Unmatchable {
        template: String,
        reason: &'static str,
    },
    #[error("resource {0:?} is registered twice")]
    Duplicate(String),
    #[error("resource template {template:?} has no variable {variable:?} to complete")]
    UnknownVariable { template: String, variable: String },
}

/// A read request that matched a resource: the URI as the client sent it and, for a
/// template, the decoded value of each variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    pub uri: String,
    vars: Vec<(String, String)>,
}

impl ResourceRequest {
    /// The decoded value of template variable `name`.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone)]
enum Address {
    Uri(String),
    Template {
        template: UriTemplateString,
        parts: Vec<Part>,
    },
}

/// A resource or resource template before registration.
pub struct ResourceDef {
    address: Address,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    required_scopes: Vec<String>,
    max_duration: Duration,
    read: Arc<ReadFn>,
    /// What `completion/complete` suggests for each variable that has a completer.
    completers: Vec<(String, Completer)>,
    /// A template that failed to parse, reported by `register`.
    invalid: Option<ResourceError>,
}

impl ResourceDef {
    /// A direct resource at `uri`, listed by `resources/list`.
    pub fn direct<F, Fut>(uri: impl Into<String>, name: impl Into<String>, read: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        Self::new(Address::Uri(uri.into()), name.into(), None, read)
    }

    /// A resource template (RFC 6570), listed by `resources/templates/list`. Only simple
    /// `{name}` expressions, each followed by the end or by a literal that starts with a
    /// reserved character (`/`, `?`, `#`, ...): those are the templates a URI can be
    /// matched back to without guessing. Checked by `register`.
    pub fn template<F, Fut>(template: &str, name: impl Into<String>, read: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        let (address, invalid) = match parse_template(template) {
            Ok(address) => (address, None),
            Err(e) => (Address::Uri(template.to_owned()), Some(e)),
        };
        Self::new(address, name.into(), invalid, read)
    }

    fn new<F, Fut>(address: Address, name: String, invalid: Option<ResourceError>, read: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        Self {
            address,
            name,
            title: None,
            description: None,
            mime_type: None,
            required_scopes: Vec::new(),
            max_duration: DEFAULT_TOOL_MAX_DURATION,
            read: Arc::new(move |request, ctx| Box::pin(read(request, ctx))),
            completers: Vec::new(),
            invalid,
        }
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// OAuth scopes a caller must hold to see this resource listed and to read it.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The longest a read (or a completion of a variable) may take, whatever the
    /// invocation has left.
    pub fn max_duration(mut self, limit: Duration) -> Self {
        self.max_duration = limit;
        self
    }

    /// Values `completion/complete` suggests for template variable `variable`.
    pub fn complete(mut self, variable: impl Into<String>, completer: Completer) -> Self {
        self.completers.push((variable.into(), completer));
        self
    }
}

/// A registered resource or template.
pub struct Resource {
    def: ResourceDef,
    listing: Value,
}

impl Resource {
    pub fn name(&self) -> &str {
        &self.def.name
    }

    pub fn required_scopes(&self) -> &[String] {
        &self.def.required_scopes
    }

    pub fn max_duration(&self) -> Duration {
        self.def.max_duration
    }

    pub fn is_template(&self) -> bool {
        matches!(self.def.address, Address::Template { .. })
    }

    /// The template has a variable `name`.
    pub fn has_variable(&self, name: &str) -> bool {
        match &self.def.address {
            Address::Uri(_) => false,
            Address::Template { parts, .. } => {
                parts.iter().any(|p| matches!(p, Part::Var(v) if v == name))
            }
        }
    }

    /// The completer of template variable `name`, if it has one.
    pub fn completer(&self, name: &str) -> Option<&Completer> {
        self.def
            .completers
            .iter()
            .find(|(v, _)| v == name)
            .map(|(_, c)| c)
    }

    /// Its `Resource` or `ResourceTemplate` object, as the lists show it.
    pub fn listing(&self) -> &Value {
        &self.listing
    }

    /// The URI that names this resource, or the template's expansion with `vars`
    /// (RFC 6570 simple string expansion: every value percent-encoded).
    pub fn uri(&self, vars: &[(&str, &str)]) -> String {
        match &self.def.address {
            Address::Uri(uri) => uri.clone(),
            Address::Template { template, .. } => expand(template, vars),
        }
    }

    /// The request `uri` makes of this resource, if it names it.
    fn matches(&self, uri: &str) -> Option<ResourceRequest> {
        let vars = match &self.def.address {
            Address::Uri(own) => (own == uri).then(Vec::new)?,
            Address::Template { parts, .. } => match_parts(parts, uri)?,
        };
        Some(ResourceRequest {
            uri: uri.to_owned(),
            vars,
        })
    }

    pub(crate) fn read(
        &self,
        request: ResourceRequest,
        ctx: RequestContext,
    ) -> BoxFuture<ReadResult> {
        (self.def.read)(request, ctx)
    }
}

/// The resource registry. Direct resources are listed in registration order, then
/// templates in theirs; a URI is matched against direct resources first.
#[derive(Default)]
pub struct Resources {
    entries: Vec<Resource>,
    all_scopes: Vec<String>,
}

impl Resources {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `def`.
    ///
    /// # Errors
    ///
    /// A URI that is not absolute, a template that is not RFC 6570 or cannot be matched
    /// back, or a URI or template registered twice.
    pub fn register(&mut self, def: ResourceDef) -> Result<&mut Self, ResourceError> {
        if let Some(e) = def.invalid.clone() {
            return Err(e);
        }
        let key = match &def.address {
            Address::Uri(uri) => {
                UriStr::new(uri.as_str()).map_err(|e| ResourceError::BadUri {
                    uri: uri.clone(),
                    message: e.to_string(),
                })?;
                uri.clone()
            }
            Address::Template { template, .. } => template.as_str().to_owned(),
        };
        if self.entries.iter().any(|r| r.address_key() == key) {
            return Err(ResourceError::Duplicate(key));
        }
        let variables: Vec<&str> = match &def.address {
            Address::Uri(_) => Vec::new(),
            Address::Template { parts, .. } => parts
                .iter()
                .filter_map(|p| match p {
                    Part::Var(v) => Some(v.as_str()),
                    Part::Literal(_) => None,
                })
                .collect(),
        };
        if let Some((variable, _)) = def
            .completers
            .iter()
            .find(|(v, _)| !variables.contains(&v.as_str()))
        {
            return Err(ResourceError::UnknownVariable {
                template: key,
                variable: variable.clone(),
            });
        }
        let mut listing = match &def.address {
            Address::Uri(uri) => json!({ "uri": uri, "name": def.name }),
            Address::Template { template, .. } => {
                json!({ "uriTemplate": template.as_str(), "name": def.name })
            }
        };
        for (field, value) in [
            ("title", &def.title),
            ("description", &def.description),
            ("mimeType", &def.mime_type),
        ] {
            if let Some(value) = value {
                listing[field] = json!(value);
            }
        }
        add_scopes(&mut self.all_scopes, &def.required_scopes);
        self.entries.push(Resource { def, listing });
        Ok(self)
    }

    /// Direct resources, then templates.
    pub fn iter(&self) -> impl Iterator<Item = &Resource> {
        let direct = self.entries.iter().filter(|r| !r.is_template());
        direct.chain(self.entries.iter().filter(|r| r.is_template()))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every scope any resource requires, sorted.
    pub fn all_scopes(&self) -> &[String] {
        &self.all_scopes
    }

    /// The template registered as `template` (its text exactly, as `ref/resource` names it).
    pub fn template(&self, template: &str) -> Option<&Resource> {
        self.entries
            .iter()
            .find(|r| r.is_template() && r.address_key() == template)
    }

    /// Some variable of some template can be completed.
    pub(crate) fn completes(&self) -> bool {
        self.entries.iter().any(|r| !r.def.completers.is_empty())
    }

    /// The resource `uri` names, and the request it makes of it.
    pub fn find(&self, uri: &str) -> Option<(&Resource, ResourceRequest)> {
        self.iter()
            .find_map(|r| r.matches(uri).map(|request| (r, request)))
    }
}

impl Resource {
    fn address_key(&self) -> &str {
        match &self.def.address {
            Address::Uri(uri) => uri,
            Address::Template { template, .. } => template.as_str(),
        }
    }
}

/// Parses and checks a template: RFC 6570 syntax (iri-string), then the shape a URI can
/// be matched back from, then that its expansion is an absolute URI.
fn parse_template(template: &str) -> Result<Address, ResourceError> {
    let bad = |message: String| ResourceError::BadTemplate {
        template: template.to_owned(),
        message,
    };
    let unmatchable = |reason| ResourceError::Unmatchable {
        template: template.to_owned(),
        reason,
    };
    let parsed = UriTemplateString::try_from(template).map_err(|e| bad(e.to_string()))?;
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Literal(rest[..open].to_owned()));
        }
        // Syntax is valid, so every `{` has its `}`.
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c);
        let expression = &rest[open + 1..close];
        let simple = !expression.is_empty()
            && expression
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !simple {
            return Err(unmatchable(
                "only simple {name} expressions (no operators, modifiers or lists)",
            ));
        }
        if matches!(parts.last(), Some(Part::Var(_))) {
            return Err(unmatchable("two expressions need a literal between them"));
        }
        if parts.contains(&Part::Var(expression.to_owned())) {
            return Err(unmatchable("a variable may appear once"));
        }
        parts.push(Part::Var(expression.to_owned()));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest.to_owned()));
    }
    for pair in parts.windows(2) {
        if let [Part::Var(_), Part::Literal(next)] = pair
            && next.bytes().next().is_some_and(is_unreserved)
        {
            return Err(unmatchable(
                "a variable must be followed by the end or a reserved character such as '/'",
            ));
        }
    }
    // The expansion with a sample value must be an absolute URI (a scheme, at least).
    let vars: Vec<(&str, &str)> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Var(name) => Some((name.as_str(), "x")),
            Part::Literal(_) => None,
        })
        .collect();
    let sample = expand(&parsed, &vars);
    UriStr::new(sample.as_str()).map_err(|e| bad(format!("its expansion {sample:?}: {e}")))?;
    Ok(Address::Template {
        template: parsed,
        parts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(template: &str) -> ResourceDef {
        ResourceDef::template(template, "t", |_, _| async { Ok(None) })
    }

    fn registered(template: &str) -> Resources {
        let mut resources = Resources::new();
        resources.register(def(template)).unwrap();
        resources
    }

    #[test]
    fn templates_must_be_rfc_6570_and_matchable() {
        for (template, expect_unmatchable) in [
            ("event-store://events/{id", false),
            ("event-store://events/{i d}", false),
            ("no scheme/{id}", false),
            ("event-store://events/{+id}", true),
            ("event-store://events/{id*}", true),
            ("event-store://events/{id:3}", true),
            ("event-store://events/{a,b}", true),
            ("event-store://events/{a}{b}", true),
            ("event-store://events/{a}-{b}", true),
            ("event-store://events/{a}/{a}", true),
        ] {
            let err = Resources::new().register(def(template)).err();
            match err {
                Some(ResourceError::Unmatchable { .. }) => {
                    assert!(expect_unmatchable, "{template}")
                }
                Some(ResourceError::BadTemplate { .. }) => {
                    assert!(!expect_unmatchable, "{template}")
                }
                other => panic!("{template}: {other:?}"),
            }
        }
        let mut resources = Resources::new();
        resources
            .register(ResourceDef::direct("not a uri", "x", |_, _| async {
                Ok(None)
            }))
            .err()
            .unwrap();
        resources
            .register(def("event-store://entities/{entity_id}/state"))
            .unwrap();
        assert!(matches!(
            resources.register(def("event-store://entities/{entity_id}/state")),
            Err(ResourceError::Duplicate(_))
        ));
    }

    #[test]
    fn a_uri_matches_back_to_the_values_it_was_expanded_from() {
        let resources = registered("event-store://entities/{entity_id}/state");
        let resource = resources.iter().next().unwrap();
        for value in ["order-42", "a/b", "ünïcode", "50% off?#", "~.-_"] {
            let uri = resource.uri(&[("entity_id", value)]);
            let (_, request) = resources.find(&uri).unwrap();
            assert_eq!(request.var("entity_id"), Some(value), "{uri}");
            assert_eq!(request.uri, uri);
        }
        for miss in [
            "event-store://entities//state",
            "event-store://entities/a/b/state",
            "event-store://entities/a%2/state",
            "event-store://entities/%FF/state",
            "event-store://entities/a/state/",
            "event-store://entities/a",
            "other://entities/a/state",
        ] {
            assert!(resources.find(miss).is_none(), "{miss}");
        }
    }

    #[test]
    fn listings_carry_what_was_declared() {
        let mut resources = Resources::new();
        resources
            .register(
                ResourceDef::direct("event-store://event-types", "event-types", |_, _| async {
                    Ok(None)
                })
                .title("Event types")
                .mime_type("application/json")
                .scopes(["events:read"]),
            )
            .unwrap();
        resources
            .register(def("event-store://events/{id}"))
            .unwrap();
        let listed: Vec<&Value> = resources.iter().map(Resource::listing).collect();
        assert_eq!(
            listed,
            [
                &json!({"uri": "event-store://event-types", "name": "event-types", "title": "Event types", "mimeType": "application/json"}),
                &json!({"uriTemplate": "event-store://events/{id}", "name": "t"}),
            ]
        );
        assert_eq!(resources.all_scopes(), ["events:read"]);
    }
}
