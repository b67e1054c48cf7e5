//! Rate limits shared by every sandbox, counted in DynamoDB (a limit each sandbox kept for
//! itself would be no limit: a burst lands on many sandboxes at once).
//!
//! Fixed windows (`RATE_LIMIT_WINDOW_SECS`, 60 by default). Per caller and window there is
//! one item holding the caller's total and a counter per tool, so a call costs one
//! conditional `UpdateItem` that checks and counts both limits at once: it adds one to each
//! only if both are under their maximum. With `RATE_LIMIT_PER_TENANT` set, a second update
//! counts the tenant's calls. Items expire by TTL (`expires_at`) a minute after their window.
//!
//! When DynamoDB does not answer within `RATE_LIMIT_WAIT_MS` (150 by default) or fails, the
//! call is allowed and recorded as unchecked (a warning, the `RateLimitUnchecked` metric
//! and its alarm): a read-only endpoint stays available, and the API stage's throttle
//! remains the outer limit.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use mcp_env::{Env, EnvError};
use mcp_protocol::{Admission, Admit, BoxFuture, Caller};

/// The limits, from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsConfig {
    /// `RATE_LIMIT_TABLE`: the DynamoDB table; limits are off without it.
    pub table: String,
    pub window: Duration,
    /// Tool calls per caller and window, all tools together.
    pub per_subject: u64,
    /// Calls of one tool per caller and window, unless `tools` names the tool.
    pub per_tool: u64,
    /// `RATE_LIMIT_TOOLS=count_events=20,summarize_window=30`: per-tool maximums.
    pub tools: Vec<(String, u64)>,
    /// Tool calls per tenant and window, if limited.
    pub per_tenant: Option<u64>,
    /// How long a call waits for DynamoDB before it runs unchecked.
    pub wait: Duration,
}

impl LimitsConfig {
    /// `None` when `RATE_LIMIT_TABLE` is unset.
    ///
    /// # Errors
    ///
    /// Names the variable that is set but malformed.
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Option<Self>, EnvError> {
        let Some(table) = env.text("RATE_LIMIT_TABLE") else {
            return Ok(None);
        };
        let count = "a whole number of calls, at least 1";
        let positive = |name: &'static str, default: u64| -> Result<u64, EnvError> {
            let value = env.parsed_or(name, count, default)?;
            if value == 0 {
                return Err(EnvError {
                    name,
                    expected: count,
                    value: "0".into(),
                });
            }
            Ok(value)
        };
        let window = env.seconds("RATE_LIMIT_WINDOW_SECS", Duration::from_secs(60))?;
        if window.is_zero() {
            return Err(EnvError {
                name: "RATE_LIMIT_WINDOW_SECS",
                expected: "seconds, at least 1",
                value: "0".into(),
            });
        }
        let mut tools = Vec::new();
        for entry in env.list("RATE_LIMIT_TOOLS").unwrap_or_default() {
            let parsed = entry
                .split_once('=')
                .and_then(|(tool, max)| Some((tool.trim().to_owned(), max.trim().parse().ok()?)))
                .filter(|(tool, max): &(String, u64)| !tool.is_empty() && *max > 0);
            let Some(pair) = parsed else {
                return Err(EnvError {
                    name: "RATE_LIMIT_TOOLS",
                    expected: "tool=calls pairs separated by commas, such as count_events=20",
                    value: entry,
                });
            };
            tools.push(pair);
        }
        let per_tenant = match env.parsed::<u64>("RATE_LIMIT_PER_TENANT", count)? {
            Some(0) => {
                return Err(EnvError {
                    name: "RATE_LIMIT_PER_TENANT",
                    expected: count,
                    value: "0".into(),
                });
            }
            other => other,
        };
        Ok(Some(Self {
            table,
            window,
            per_subject: positive("RATE_LIMIT_PER_SUBJECT", 120)?,
            per_tool: positive("RATE_LIMIT_PER_TOOL", 60)?,
            tools,
            per_tenant,
            wait: env.millis("RATE_LIMIT_WAIT_MS", Duration::from_millis(150))?,
        }))
    }

    fn tool_max(&self, tool: &str) -> u64 {
        self.tools
            .iter()
            .find(|(name, _)| name == tool)
            .map_or(self.per_tool, |(_, max)| *max)
    }
}

/// The DynamoDB-backed [`Admission`].
#[derive(Clone)]
pub struct DynamoLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    client: aws_sdk_dynamodb::Client,
    config: LimitsConfig,
}

impl DynamoLimiter {
    pub fn new(client: aws_sdk_dynamodb::Client, config: LimitsConfig) -> Self {
        Self {
            inner: Arc::new(Inner { client, config }),
        }
    }

    /// A limiter on the process's AWS configuration (`AWS_ENDPOINT_URL_DYNAMODB` points it
    /// at an emulator). The SDK's defaults are kept: turning its retries and stalled-stream
    /// protection off made no measurable difference to the cost of a call
    /// (`bench/examples/limiter_cost.rs`, interleaved runs), and a call waits at most
    /// `RATE_LIMIT_WAIT_MS` whatever the SDK does.
    pub async fn from_aws(config: LimitsConfig) -> Self {
        let client = aws_sdk_dynamodb::Client::new(&mcp_db::aws_sdk_config().await);
        Self::new(client, config)
    }
}

impl Admission for DynamoLimiter {
    fn admit(&self, caller: &Caller, tool: &str) -> BoxFuture<Admit> {
        let inner = self.inner.clone();
        // Keys carry the subject's hash, never the subject: the table is as safe to read
        // as the logs.
        let principal = caller
            .subject_hash
            .clone()
            .unwrap_or_else(|| "-".to_owned());
        let tenant = caller.tenant.clone();
        let tool = tool.to_owned();
        Box::pin(async move {
            let c = &inner.config;
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let window = c.window.as_secs();
            let start = now.as_secs() - now.as_secs() % window;
            let retry_after = Duration::from_secs(start + window).saturating_sub(now);
            let limited = |limit, max| Admit::Limited {
                limit,
                max,
                window: c.window,
                retry_after,
            };
            let caller_key = format!("caller#{principal}#{start}");
            let tool_max = c.tool_max(&tool);
            let counted = tokio::time::timeout(
                c.wait,
                inner.count(
                    &caller_key,
                    start + window,
                    c.per_subject,
                    Some((&tool, tool_max)),
                ),
            )
            .await;
            match counted {
                Ok(Ok(Count::Counted)) => {}
                Ok(Ok(Count::Over { total })) => {
                    return if total >= c.per_subject {
                        limited("subject", c.per_subject)
                    } else {
                        limited("tool", tool_max)
                    };
                }
                Ok(Err(e)) => return unchecked(&e),
                Err(_) => return unchecked("no answer within RATE_LIMIT_WAIT_MS"),
            }
            if let (Some(max), Some(tenant)) = (c.per_tenant, tenant) {
                let key = format!("tenant#{tenant}#{start}");
                let counted =
                    tokio::time::timeout(c.wait, inner.count(&key, start + window, max, None))
                        .await;
                match counted {
                    Ok(Ok(Count::Counted)) => {}
                    Ok(Ok(Count::Over { .. })) => return limited("tenant", max),
                    Ok(Err(e)) => return unchecked(&e),
                    Err(_) => return unchecked("no answer within RATE_LIMIT_WAIT_MS"),
                }
            }
            Admit::Allowed
        })
    }
}

fn unchecked(why: &str) -> Admit {
    tracing::warn!(
        error = why,
        "rate limits unchecked: the call runs uncounted"
    );
    Admit::Unchecked
}

enum Count {
    Counted,
    /// Not counted: a maximum was reached. `total` is the item's total before the call.
    Over {
        total: u64,
    },
}

impl Inner {
    /// One conditional update: adds one to `calls` (and to the tool's counter) only if
    /// each is under its maximum.
    async fn count(
        &self,
        key: &str,
        window_end: u64,
        max: u64,
        tool: Option<(&str, u64)>,
    ) -> Result<Count, String> {
        let n = |v: u64| AttributeValue::N(v.to_string());
        let mut update = self
            .client
            .update_item()
            .table_name(&self.config.table)
            .key("pk", AttributeValue::S(key.to_owned()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(max))
            .expression_attribute_values(":expires", n(window_end + 60))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        update = match tool {
            Some((name, tool_max)) => update
                .update_expression("ADD calls :one, #tool :one SET expires_at = :expires")
                .condition_expression(
                    "(attribute_not_exists(calls) OR calls < :max) AND \
                     (attribute_not_exists(#tool) OR #tool < :tool_max)",
                )
                .expression_attribute_names("#tool", format!("tool:{name}"))
                .expression_attribute_values(":tool_max", n(tool_max)),
            None => update
                .update_expression("ADD calls :one SET expires_at = :expires")
                .condition_expression("attribute_not_exists(calls) OR calls < :max"),
        };
        match update.send().await {
            Ok(_) => Ok(Count::Counted),
            Err(SdkError::ServiceError(e)) => match e.into_err() {
                UpdateItemError::ConditionalCheckFailedException(failed) => {
                    let total = failed
                        .item()
                        .and_then(|item| item.get("calls"))
                        .and_then(|v| v.as_n().ok())
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(max);
                    Ok(Count::Over { total })
                }
                other => Err(other.to_string()),
            },
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Option<LimitsConfig>, EnvError> {
        let env = Env::new(|name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        });
        LimitsConfig::from_env(&env)
    }

    #[test]
    fn limits_are_off_without_a_table_and_checked_with_one() {
        assert_eq!(config(&[]).unwrap(), None);
        let c = config(&[
            ("RATE_LIMIT_TABLE", "limits"),
            ("RATE_LIMIT_TOOLS", "count_events=20, summarize_window=5"),
            ("RATE_LIMIT_PER_TENANT", "1000"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.window, Duration::from_secs(60));
        assert_eq!((c.per_subject, c.per_tool), (120, 60));
        assert_eq!(c.tool_max("count_events"), 20);
        assert_eq!(c.tool_max("summarize_window"), 5);
        assert_eq!(c.tool_max("query_events"), 60);
        assert_eq!(c.per_tenant, Some(1000));
        for (name, value) in [
            ("RATE_LIMIT_PER_SUBJECT", "0"),
            ("RATE_LIMIT_PER_TOOL", "many"),
            ("RATE_LIMIT_TOOLS", "count_events"),
            ("RATE_LIMIT_TOOLS", "count_events=0"),
            ("RATE_LIMIT_WINDOW_SECS", "0"),
            ("RATE_LIMIT_PER_TENANT", "0"),
        ] {
            let err = config(&[("RATE_LIMIT_TABLE", "limits"), (name, value)]).unwrap_err();
            assert_eq!(err.name, name);
        }
    }
}
