//! What can go wrong, in two kinds: the request's fault (an OAuth error code the client can
//! act on, RFC 6749 §4.1.2.1 and §5.2, RFC 7591 §3.2.2) and a dependency's (KMS, DynamoDB,
//! the upstream issuer), whose details are logged and never sent. `wire.rs` is the one
//! place either becomes a response.

use std::borrow::Cow;

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// An OAuth error code and a description safe to show the client.
    #[error("{code}: {description}")]
    Refused {
        code: &'static str,
        description: Cow<'static, str>,
    },
    /// A dependency failed; the text is for the log only.
    #[error("unavailable: {0}")]
    Unavailable(String),
}

impl BridgeError {
    pub(crate) fn refused(code: &'static str, description: impl Into<Cow<'static, str>>) -> Self {
        Self::Refused {
            code,
            description: description.into(),
        }
    }

    pub(crate) fn invalid_request(description: impl Into<Cow<'static, str>>) -> Self {
        Self::refused("invalid_request", description)
    }

    pub(crate) fn invalid_grant(description: impl Into<Cow<'static, str>>) -> Self {
        Self::refused("invalid_grant", description)
    }

    pub(crate) fn unavailable(what: impl std::fmt::Display) -> Self {
        Self::Unavailable(what.to_string())
    }

    /// The OAuth error code sent for this error.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::Refused { code, .. } => code,
            Self::Unavailable(_) => "temporarily_unavailable",
        }
    }

    /// The description sent for this error: the refusal's own, or a generic one.
    pub(crate) fn description(&self) -> &str {
        match self {
            Self::Refused { description, .. } => description,
            Self::Unavailable(_) => "the authorization server cannot answer now; try again",
        }
    }
}

impl From<crate::seal::SealError> for BridgeError {
    fn from(e: crate::seal::SealError) -> Self {
        Self::unavailable(e)
    }
}
