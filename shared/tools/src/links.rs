//! Where a result links to: the stable, citable URL of one event. ChatGPT makes a citation
//! only from a non-empty `url`, so every search and fetch result carries one.

use iri_string::types::UriStr;

/// One event by id, as a resource (`resources/read`).
pub const EVENT_TEMPLATE: &str = "event-store://events/{id}";

/// The URL of an event: the deployment's own incident UI when it has one
/// (`EVENT_URL_TEMPLATE`, with `{id}` where the event id goes), else the event's resource
/// URI, which `resources/read` answers.
#[derive(Debug, Clone)]
pub struct EventLinks {
    template: String,
}

impl Default for EventLinks {
    fn default() -> Self {
        Self {
            template: EVENT_TEMPLATE.to_owned(),
        }
    }
}

/// A template that cannot make a URL.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LinkTemplateError {
    #[error("EVENT_URL_TEMPLATE must contain {{id}} exactly once, where the event id goes")]
    NoId,
    #[error("EVENT_URL_TEMPLATE must be an absolute https URL once {{id}} is filled in")]
    NotHttps,
}

impl EventLinks {
    /// Links from `template` (`None`: the resource URI).
    ///
    /// # Errors
    ///
    /// A template without exactly one `{id}`, or that does not make an absolute `https`
    /// URL (plain `http` is accepted for loopback hosts only, for local runs).
    pub fn new(template: Option<&str>) -> Result<Self, LinkTemplateError> {
        let Some(template) = template.filter(|t| !t.is_empty()) else {
            return Ok(Self::default());
        };
        if template.matches("{id}").count() != 1 {
            return Err(LinkTemplateError::NoId);
        }
        let sample = template.replace("{id}", "1");
        let uri = UriStr::new(&sample).map_err(|_| LinkTemplateError::NotHttps)?;
        let loopback = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .any(|h| uri.authority_components().is_some_and(|a| a.host() == *h));
        let secure = match uri.scheme_str() {
            "https" => true,
            "http" => loopback,
            _ => false,
        };
        if !secure || uri.authority_str().is_none_or(str::is_empty) {
            return Err(LinkTemplateError::NotHttps);
        }
        Ok(Self {
            template: template.to_owned(),
        })
    }

    /// The URL of event `id`.
    pub fn url(&self, id: i64) -> String {
        self.template.replace("{id}", &id.to_string())
    }

    /// The event id in `text`: a bare id (`"42"`) or this deployment's URL of one.
    pub(crate) fn id_in(&self, text: &str) -> Option<i64> {
        let text = text.trim();
        let bare = match self.template.split_once("{id}") {
            Some((before, after)) => text
                .strip_prefix(before)
                .and_then(|rest| rest.strip_suffix(after))
                .unwrap_or(text),
            None => text,
        };
        let bare = EVENT_TEMPLATE
            .strip_suffix("{id}")
            .and_then(|prefix| bare.strip_prefix(prefix))
            .unwrap_or(bare);
        bare.parse::<i64>().ok().filter(|id| *id >= 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_make_absolute_https_urls_or_are_refused() {
        let links =
            EventLinks::new(Some("https://incidents.example.com/events/{id}?src=mcp")).unwrap();
        assert_eq!(
            links.url(42),
            "https://incidents.example.com/events/42?src=mcp"
        );
        assert_eq!(
            EventLinks::new(None).unwrap().url(7),
            "event-store://events/7"
        );
        assert_eq!(
            EventLinks::new(Some("")).unwrap().url(7),
            "event-store://events/7"
        );
        assert!(EventLinks::new(Some("http://127.0.0.1:8080/e/{id}")).is_ok());
        for (bad, why) in [
            (
                "https://incidents.example.com/events/",
                LinkTemplateError::NoId,
            ),
            ("https://x.example/{id}/{id}", LinkTemplateError::NoId),
            (
                "http://incidents.example.com/{id}",
                LinkTemplateError::NotHttps,
            ),
            ("/events/{id}", LinkTemplateError::NotHttps),
            ("javascript:alert({id})", LinkTemplateError::NotHttps),
            ("https:///{id}", LinkTemplateError::NotHttps),
            ("https://exa mple.com/{id}", LinkTemplateError::NotHttps),
        ] {
            assert_eq!(EventLinks::new(Some(bad)).unwrap_err(), why, "{bad}");
        }
    }

    #[test]
    fn ids_are_read_bare_or_from_either_url() {
        let links =
            EventLinks::new(Some("https://incidents.example.com/events/{id}/view")).unwrap();
        assert_eq!(links.id_in("42"), Some(42));
        assert_eq!(links.id_in(" 42 "), Some(42));
        assert_eq!(
            links.id_in("https://incidents.example.com/events/42/view"),
            Some(42)
        );
        assert_eq!(links.id_in("event-store://events/42"), Some(42));
        for bad in [
            "",
            "0",
            "-1",
            "4x",
            "https://evil.example/events/42/view",
            "9223372036854775808",
        ] {
            assert_eq!(links.id_in(bad), None, "{bad}");
        }
    }
}
