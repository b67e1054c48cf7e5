//! The bridge's only shared state, in DynamoDB (one table, key `pk`, TTL attribute
//! `expires_at`): which codes have been redeemed and where each refresh token family stands.
//! Every sandbox sees the same table, so single use holds across sandboxes; an in-process set
//! would let a code be redeemed once per sandbox.
//!
//! - `code#<jti>`: written when a code is redeemed, on the condition that it is not there
//!   yet. A second redemption fails the condition and revokes the family the first one
//!   started (RFC 6749 §4.1.2, RFC 9700 §4.14: tokens issued from a replayed code should be
//!   revoked).
//! - `state#<jti>`: written when the upstream answers a sign-in, on the same condition: a
//!   sealed `state` completes one sign-in, however often the browser brings it back.
//! - `assertion#<hash>`: a client assertion's `jti` (RFC 7523 §3, item 7), used once.
//! - `family#<id>`: the generation of the family's current refresh token and when it was
//!   last rotated. A rotation moves it on conditionally; presenting an older generation
//!   means the token was copied, and the whole family is revoked (RFC 9700 §4.14.2,
//!   refresh token rotation), unless it is the generation just replaced, presented within
//!   seconds of its rotation: a client refreshing from two requests at once.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

use crate::error::BridgeError;

pub(crate) struct Store {
    client: Client,
    table: String,
}

/// What a rotation found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Rotation {
    /// The presented generation was current; the family moved on to the next.
    Rotated,
    /// The presented generation was rotated out within the reuse window: the family stays
    /// at the generation that rotation made current.
    Concurrent,
    /// The family is revoked, unknown or past its generation: refuse.
    Refused,
}

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn unavailable<E: std::fmt::Debug>(what: &str) -> impl FnOnce(E) -> BridgeError + '_ {
    move |e| BridgeError::unavailable(format!("dynamodb {what}: {e:?}"))
}

impl Store {
    pub(crate) fn new(client: Client, table: String) -> Self {
        Self { client, table }
    }

    /// Records the redemption of code `jti` for `family`. `Ok(false)`: the code was
    /// redeemed before; the family that redemption started is now revoked.
    pub(crate) async fn redeem_code(
        &self,
        jti: &str,
        family: &str,
        expires_at: u64,
    ) -> Result<bool, BridgeError> {
        let key = format!("code#{jti}");
        if self.put_once(&key, Some(family), expires_at).await? {
            return Ok(true);
        }
        let first = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable("get code"))?;
        if let Some(AttributeValue::S(first_family)) =
            first.item().and_then(|item| item.get("family"))
        {
            self.revoke(first_family, expires_at).await?;
        }
        Ok(false)
    }

    /// Records the use of the sign-in `state` numbered `jti`. `Ok(false)`: it was used
    /// before (a replayed callback), and nothing else happens.
    pub(crate) async fn use_state(&self, jti: &str, expires_at: u64) -> Result<bool, BridgeError> {
        self.put_once(&format!("state#{jti}"), None, expires_at)
            .await
    }

    /// Writes item `pk` (with its `family`, if any) unless it is there already: `Ok(false)`
    /// when it was, which is what makes a value single-use across every sandbox.
    async fn put_once(
        &self,
        pk: &str,
        family: Option<&str>,
        expires_at: u64,
    ) -> Result<bool, BridgeError> {
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(pk))
            .item("expires_at", n(expires_at))
            .condition_expression("attribute_not_exists(pk)");
        if let Some(family) = family {
            put = put.item("family", s(family));
        }
        match put.send().await {
            Ok(_) => Ok(true),
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                Ok(false)
            }
            Err(e) => Err(unavailable("put once")(e)),
        }
    }

    /// Records the use of a client assertion (by a hash of its client id and `jti`).
    /// `Ok(false)`: it was used before.
    pub(crate) async fn use_assertion(
        &self,
        key: &str,
        expires_at: u64,
    ) -> Result<bool, BridgeError> {
        self.put_once(&format!("assertion#{key}"), None, expires_at)
            .await
    }

    /// Starts refresh token family `family` at generation 0, ending at `expires_at`.
    pub(crate) async fn start_family(
        &self,
        family: &str,
        expires_at: u64,
    ) -> Result<(), BridgeError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(format!("family#{family}")))
            .item("generation", n(0))
            .item("expires_at", n(expires_at))
            // A family revoked by a replay that raced ahead of this write stays revoked.
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map_err(unavailable("put family"))?;
        Ok(())
    }

    /// Moves `family` from `generation` to the next one, if `generation` is current and the
    /// family is not revoked. The generation just replaced, presented again within `reuse`
    /// of its rotation, is [`Rotation::Concurrent`]; any other older generation revokes the
    /// family.
    pub(crate) async fn rotate(
        &self,
        family: &str,
        generation: u64,
        expires_at: u64,
        reuse: std::time::Duration,
    ) -> Result<Rotation, BridgeError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(format!("family#{family}")))
            .update_expression("SET generation = :next, rotated_at = :now")
            .condition_expression(
                "attribute_exists(pk) AND generation = :current AND attribute_not_exists(revoked)",
            )
            .expression_attribute_values(":current", n(generation))
            .expression_attribute_values(":next", n(generation + 1))
            .expression_attribute_values(":now", n(now))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let failed = match update {
            Ok(_) => return Ok(Rotation::Rotated),
            Err(SdkError::ServiceError(e)) => match e.into_err() {
                UpdateItemError::ConditionalCheckFailedException(failed) => failed,
                e => return Err(unavailable("rotate family")(e)),
            },
            Err(e) => return Err(unavailable("rotate family")(e)),
        };
        let number = |name| match failed.item().and_then(|item| item.get(name)) {
            Some(AttributeValue::N(v)) => v.parse::<u64>().ok(),
            _ => None,
        };
        let revoked = failed
            .item()
            .is_none_or(|item| item.contains_key("revoked"));
        if !revoked
            && number("generation") == Some(generation + 1)
            && number("rotated_at").is_some_and(|at| now < at + reuse.as_secs())
        {
            return Ok(Rotation::Concurrent);
        }
        // Reuse of a rotated-out token, or a revoked family: either way, nobody refreshes
        // in this family again.
        self.revoke(family, expires_at).await?;
        Ok(Rotation::Refused)
    }

    async fn revoke(&self, family: &str, expires_at: u64) -> Result<(), BridgeError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(format!("family#{family}")))
            .update_expression("SET revoked = :yes, expires_at = if_not_exists(expires_at, :exp)")
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .expression_attribute_values(":exp", n(expires_at))
            .send()
            .await
            .map_err(unavailable("revoke family"))?;
        tracing::warn!(family_hash = %short_hash(family), "refresh token family revoked");
        Ok(())
    }
}

/// A log-safe name for an identifier.
pub(crate) fn short_hash(value: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, value.as_bytes());
    digest.as_ref()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
