//! What one sandbox holds on the heap: the bytes `mcp::app_from_env` leaves allocated (the
//! engine: tools and their compiled schemas, keys, settings), then what the first
//! `tools/call` adds and keeps (the database connection with its TLS session, caches), and
//! what one further call allocates in all (its request, rows and reply). Counted by
//! `stats_alloc` around the system allocator, so these are requested bytes, not RSS.
//!
//! Environment as for the function (bench/run's, or `scripts/dev`'s); arguments: the token
//! and the request body.
//!
//! ```text
//! cargo run --profile harness -p bench --example sandbox_memory -- "$TOKEN" "$BODY"
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::System;

use lambda_http::RequestExt;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn held(region: &Region<'_, System>) -> isize {
    let change = region.change();
    change.bytes_allocated as isize - change.bytes_deallocated as isize + change.bytes_reallocated
}

fn request(token: &str, body: &str) -> lambda_http::Request {
    let mut ctx = lambda_http::lambda_runtime::Context::default();
    ctx.deadline = u64::MAX / 2;
    http::Request::builder()
        .method("POST")
        .uri("http://127.0.0.1/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .body(lambda_http::Body::from(body.to_owned()))
        .unwrap()
        .with_lambda_context(ctx)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let token = args.next().expect("usage: sandbox_memory TOKEN BODY");
    let body = args.next().expect("usage: sandbox_memory TOKEN BODY");

    // The first engine also fills what a process initialises once (lazy statics); the
    // second is what each further sandbox costs.
    let region = Region::new(GLOBAL);
    let first = mcp::app_from_env()
        .await
        .expect("configured as the function");
    let first_engine = held(&region);
    let region = Region::new(GLOBAL);
    let app = mcp::app_from_env()
        .await
        .expect("configured as the function");
    let engine = held(&region);
    drop(first);

    let region = Region::new(GLOBAL);
    let first = app.handle(request(&token, &body)).await;
    assert_eq!(first.status(), 200, "{:?}", first.body());
    drop(first);
    let after_first = held(&region);

    let region = Region::new(GLOBAL);
    let answer = app.handle(request(&token, &body)).await;
    let reply_bytes = answer.body().len();
    let change = region.change();
    drop(answer);
    println!(
        "engine {first_engine} B (the first, with the process's one-time state), {engine} B (another); kept after the first call {after_first} B; one more call: {} allocations, {} B allocated in all, reply {reply_bytes} B",
        change.allocations + change.reallocations,
        change.bytes_allocated + change.bytes_reallocated.max(0) as usize,
    );
}
