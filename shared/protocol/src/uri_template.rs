//! Matching URIs to RFC 6570 resource templates and expanding them: the simple `{name}`
//! expressions `resources` accepts, each value percent-encoded but for the unreserved
//! characters.

use iri_string::spec::UriSpec;
use iri_string::template::UriTemplateStr;
use iri_string::template::simple_context::SimpleContext;

/// One piece of a template: literal text or a simple `{name}` expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Literal(String),
    Var(String),
}

/// RFC 6570 simple string expansion of `template` with `vars` (iri-string's expander:
/// every value percent-encoded but for the unreserved characters).
pub(crate) fn expand(template: &UriTemplateStr, vars: &[(&str, &str)]) -> String {
    let mut context = SimpleContext::new();
    for (name, value) in vars {
        context.insert(*name, *value);
    }
    template
        .expand::<UriSpec, _>(&context)
        .map(|expanded| expanded.to_string())
        .unwrap_or_default()
}

/// RFC 3986 §2.3: the characters simple string expansion leaves as they are.
pub(crate) fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Matches `uri` against a checked template: each variable takes the unreserved or
/// percent-encoded run up to the next literal, which (by the registration check) starts
/// with a character no expansion produces. Empty values and invalid UTF-8 match nothing.
pub(crate) fn match_parts(parts: &[Part], uri: &str) -> Option<Vec<(String, String)>> {
    let mut rest = uri;
    let mut vars = Vec::new();
    for part in parts {
        match part {
            Part::Literal(text) => rest = rest.strip_prefix(text.as_str())?,
            Part::Var(name) => {
                let end = rest
                    .bytes()
                    .position(|b| !(is_unreserved(b) || b == b'%'))
                    .unwrap_or(rest.len());
                let (raw, after) = rest.split_at(end);
                if raw.is_empty() || !well_encoded(raw) {
                    return None;
                }
                let value = percent_encoding::percent_decode_str(raw)
                    .decode_utf8()
                    .ok()?;
                vars.push((name.clone(), value.into_owned()));
                rest = after;
            }
        }
    }
    rest.is_empty().then_some(vars)
}

/// Every `%` starts a `%XX` triplet.
fn well_encoded(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3);
            if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}
