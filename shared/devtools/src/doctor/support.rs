//! Fetching documents within bounds, and reading their fields.

use mcp_auth::{canonical_resource, is_loopback_url as is_loopback};
use serde_json::Value;

use super::{MAX_DOCUMENT_BYTES, Outcome, Report};

pub(super) fn reachability(url: &str) -> Option<String> {
    is_loopback(url).then(|| {
        "the URL is loopback: claude.ai, Claude Desktop and ChatGPT connect from their vendors' clouds and need a public https URL; the verdicts above say what happens once it is deployed as configured".into()
    })
}

/// Why two URLs that should be equal differ, when it is one of the usual reasons.
pub(super) fn hint(got: &str, want: &str) -> String {
    if got.trim_end_matches('/') == want.trim_end_matches('/') {
        " (they differ only in a trailing slash)".into()
    } else if got.eq_ignore_ascii_case(want) {
        " (they differ only in letter case)".into()
    } else if canonical_resource(got).map(|g| split_origin(&g).0)
        != canonical_resource(want).map(|w| split_origin(&w).0)
    {
        " (another host: custom domain or stage URL?)".into()
    } else {
        " (another path: stage prefix?)".into()
    }
}

pub(super) fn split_origin(url: &str) -> (String, String) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let path = path.trim_end_matches('/');
    (format!("{scheme}://{authority}"), path.to_owned())
}

pub(super) fn strings(doc: &Value, field: &str) -> Vec<String> {
    doc.get(field)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A parameter of a `WWW-Authenticate` challenge (RFC 9110 §11.2 auth-param, quoted or not).
pub(super) fn param(header: &str, name: &str) -> Option<String> {
    let mut rest = header.split_once(' ').map_or("", |(_, r)| r);
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let key = key.trim().trim_start_matches(',').trim();
        let after = after.trim_start();
        let (value, remainder) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_owned(), &after[end..])
        };
        if key.eq_ignore_ascii_case(name) {
            return Some(value);
        }
        rest = remainder.trim_start().trim_start_matches(',').trim_start();
    }
    None
}

/// How a location that holds no document is reported, and why it matters.
#[derive(Clone, Copy)]
pub(super) struct Missing(pub(super) Outcome, pub(super) &'static str);

/// Fetches the JSON document `what` at each location in turn (label, URL, how its absence is
/// reported), reports every one, and returns the first found: clients try the same places.
pub(super) async fn first_document(
    http: &reqwest::Client,
    report: &mut Report,
    prefix: &str,
    what: &str,
    locations: Vec<(&str, String, Missing)>,
) -> Option<Value> {
    let mut found = None;
    for (label, at, Missing(outcome, why)) in locations {
        match fetch_json(http, &at).await {
            Ok(doc) => {
                report.pass(format!("{prefix}{label} {what} at {at}"));
                found.get_or_insert(doc);
            }
            Err(e) => report.push(
                outcome,
                format!("{prefix}no {label} {what} at {at} ({e}){why}"),
            ),
        }
    }
    found
}

pub(super) async fn fetch_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    let bytes = fetch(http, url).await?;
    serde_json::from_slice(&bytes).map_err(|_| "not JSON".to_owned())
}

pub(super) async fn fetch(http: &reqwest::Client, url: &str) -> Result<Vec<u8>, String> {
    let mut response = http.get(url).send().await.map_err(|e| cause(&e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("HTTP {}", status.as_u16()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| cause(&e))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
    }
    Ok(body)
}

/// A fetch error in one line: what failed and its innermost cause.
pub(super) fn cause(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(next) = source.source() {
        source = next;
    }
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        format!("cannot connect ({source})")
    } else {
        source.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters_are_read_quoted_or_not() {
        let h = r#"Bearer error="invalid_token", error_description="a \"b\", c", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp", scope=events:read"#;
        assert_eq!(
            param(h, "resource_metadata").as_deref(),
            Some("https://x/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            param(h, "error_description").as_deref(),
            Some(r#"a "b", c"#)
        );
        assert_eq!(param(h, "scope").as_deref(), Some("events:read"));
        assert_eq!(param(h, "realm"), None);
    }

    #[test]
    fn hints_name_the_usual_mismatches() {
        assert!(hint("https://a.example/mcp/", "https://a.example/mcp").contains("trailing slash"));
        assert!(hint("https://A.example/mcp", "https://a.example/mcp").contains("case"));
        assert!(hint("https://b.example/mcp", "https://a.example/mcp").contains("host"));
        assert!(hint("https://a.example/prod/mcp", "https://a.example/mcp").contains("path"));
    }

    #[test]
    fn origins_and_paths() {
        assert_eq!(
            split_origin("https://h.example/a/b/"),
            ("https://h.example".into(), "/a/b".into())
        );
        assert_eq!(
            split_origin("http://127.0.0.1:9100"),
            ("http://127.0.0.1:9100".into(), String::new())
        );
    }
}
