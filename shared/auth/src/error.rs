//! Why a token was refused.

/// A refusal, with a stable reason code for logs and metrics and a description safe to
/// send back in `WWW-Authenticate` (it names what was wrong, never key material, claims
/// values or library internals).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("no bearer token was presented")]
    MissingToken,
    #[error("the Authorization header is malformed")]
    MalformedHeader,
    #[error("the access token is too large")]
    TooLarge,
    #[error("the access token is malformed")]
    Malformed,
    #[error("the token's signing algorithm is not accepted")]
    AlgorithmNotAllowed,
    #[error("the token header has no key id (kid)")]
    MissingKeyId,
    #[error("the token was signed by an unknown key")]
    UnknownKey,
    #[error("the token signature is invalid")]
    BadSignature,
    #[error("the access token expired")]
    Expired,
    #[error("the access token is not valid yet")]
    NotYetValid,
    #[error("the access token lives longer than this server accepts")]
    LifetimeTooLong,
    #[error("the token was not issued by the expected issuer")]
    WrongIssuer,
    #[error("the token was not issued for this resource")]
    WrongAudience,
    #[error("the token is not an access token (typ)")]
    WrongType,
    #[error("the token lacks a required claim or has one of the wrong type")]
    InvalidClaims,
    /// The issuer's keys could not be fetched and none are cached: the server cannot
    /// decide, so it refuses (503, retry later) rather than guessing.
    #[error("the issuer's signing keys are unavailable")]
    KeysUnavailable,
    /// No verifier is configured: every request is refused.
    #[error("authentication is not configured on this server")]
    NotConfigured,
}

impl AuthError {
    /// A stable, lowercase code for logs and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::MissingToken => "missing_token",
            Self::MalformedHeader => "malformed_header",
            Self::TooLarge => "too_large",
            Self::Malformed => "malformed",
            Self::AlgorithmNotAllowed => "algorithm_not_allowed",
            Self::MissingKeyId => "missing_kid",
            Self::UnknownKey => "unknown_key",
            Self::BadSignature => "bad_signature",
            Self::Expired => "expired",
            Self::NotYetValid => "not_yet_valid",
            Self::LifetimeTooLong => "lifetime_too_long",
            Self::WrongIssuer => "wrong_issuer",
            Self::WrongAudience => "wrong_audience",
            Self::WrongType => "wrong_type",
            Self::InvalidClaims => "invalid_claims",
            Self::KeysUnavailable => "keys_unavailable",
            Self::NotConfigured => "not_configured",
        }
    }
}
