//! What the rate limiter costs the function per call: `DynamoLimiter::admit` as deployed
//! (`from_aws`: one conditional `UpdateItem` through the AWS SDK), called in a loop on one
//! task, CPU time of this process per call. Point it at a DynamoDB that keeps connections
//! alive, as DynamoDB does (moto closes every connection, which adds a TCP connect per call):
//! `bench/fake_dynamodb.py` answers every request `{}` on a kept-alive connection.
//!
//! ```text
//! python3 bench/fake_dynamodb.py 5081 &
//! AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:5081 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=x \
//!   AWS_SECRET_ACCESS_KEY=x cargo run --profile harness -p bench --example limiter_cost -- 2000
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use mcp::{DynamoLimiter, LimitsConfig};
use mcp_protocol::{Admission, Admit, Caller};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// This process's user + system CPU time (clock ticks of 10 ms, as Linux reports them).
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let calls: u32 = std::env::args()
        .nth(1)
        .map_or(2000, |a| a.parse().expect("a count"));
    let config = LimitsConfig {
        table: "limits".into(),
        window: Duration::from_secs(3600),
        per_subject: u64::MAX / 2,
        per_tool: u64::MAX / 2,
        tools: Vec::new(),
        per_tenant: None,
        wait: Duration::from_secs(5),
    };
    let limiter = DynamoLimiter::from_aws(config).await;
    let caller = Caller {
        subject_hash: Some("0123456789abcdef".into()),
        ..Caller::default()
    };
    for _ in 0..100 {
        limiter.admit(&caller, "query_events").await;
    }
    let (cpu0, wall0) = (cpu(), Instant::now());
    for _ in 0..calls {
        let admitted = limiter.admit(&caller, "query_events").await;
        assert_eq!(
            admitted,
            Admit::Allowed,
            "the endpoint must answer every update"
        );
    }
    println!(
        "{calls} calls: {} µs CPU per call, {} µs wall per call",
        (cpu() - cpu0).as_micros() / u128::from(calls),
        wall0.elapsed().as_micros() / u128::from(calls)
    );
}
