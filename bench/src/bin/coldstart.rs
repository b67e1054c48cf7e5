//! Cold start of the deployed function binary, measured the way Lambda starts it: this
//! program plays the Lambda Runtime API on 127.0.0.1 and spawns the binary with
//! `AWS_LAMBDA_RUNTIME_API` pointing at itself (the rest of the environment is inherited, as
//! the function's configuration). Per run it records
//!   ready: spawn until the runtime's first `GET .../invocation/next` (init done: config,
//!          keys, tools; no database work happens at init),
//!   first: spawn until the answer to the first invocation (a `tools/call`, which makes the
//!          TLS connection to the pooler and runs the query),
//!   warm:  the second, identical invocation on the now-warm sandbox,
//!   peak RSS of the process (VmHWM) after both,
//! checks every answer (HTTP 200, not `isError`, `structuredContent.count`), and prints the
//! medians over the runs (with `--json`, one JSON object).
//!
//! Usage: coldstart --bin PATH --event FILE --token TOKEN --body JSON [--runs 20]
//!                  [--expect-count N] [--json]
//!        coldstart --bin PATH --event FILE --plain [--runs 20] [--json]
//! With `--plain` the event goes as it is (no token, no body) and an answer only has to be
//! HTTP 200 with a JSON body: for the OAuth bridge, which speaks no JSON-RPC.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

/// What the runtime asked for.
enum Call {
    /// `GET /next`: answer with the event.
    Next(oneshot::Sender<(String, Bytes)>),
    /// `POST /{id}/response` or `/{id}/error` or `/init/error`, with its body.
    Posted(String, Bytes),
}

async fn runtime_api(
    calls: mpsc::Sender<Call>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let path = req.uri().path().to_owned();
    let body = req.into_body().collect().await?.to_bytes();
    if path.ends_with("/invocation/next") {
        let (tx, rx) = oneshot::channel();
        if calls.send(Call::Next(tx)).await.is_ok()
            && let Ok((id, event)) = rx.await
        {
            let deadline = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
                + 29_000;
            let mut response = hyper::Response::new(Full::new(event));
            let headers = response.headers_mut();
            for (name, value) in [
                ("lambda-runtime-aws-request-id", id),
                ("lambda-runtime-deadline-ms", deadline.to_string()),
                (
                    "lambda-runtime-invoked-function-arn",
                    "arn:aws:lambda:us-east-1:123456789012:function:mcp".to_owned(),
                ),
                ("content-type", "application/json".to_owned()),
            ] {
                if let Ok(value) = http::HeaderValue::from_str(&value) {
                    headers.insert(name, value);
                }
            }
            return Ok(response);
        }
        // The run is over: the process is about to be killed.
        std::future::pending::<()>().await;
    }
    let _ = calls.send(Call::Posted(path, body)).await;
    let mut response = hyper::Response::new(Full::new(Bytes::new()));
    *response.status_mut() = hyper::StatusCode::ACCEPTED;
    Ok(response)
}

struct Args {
    bin: String,
    event: String,
    token: String,
    body: String,
    runs: usize,
    expect_count: Option<u64>,
    json: bool,
    plain: bool,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        bin: String::new(),
        event: String::new(),
        token: String::new(),
        body: String::new(),
        runs: 20,
        expect_count: None,
        json: false,
        plain: false,
    };
    bench::flags(|flag, value| {
        match flag {
            "--bin" => a.bin = value()?,
            "--event" => a.event = value()?,
            "--token" => a.token = value()?,
            "--body" => a.body = value()?,
            "--runs" => a.runs = value()?.parse()?,
            "--expect-count" => a.expect_count = Some(value()?.parse()?),
            "--json" => a.json = true,
            "--plain" => a.plain = true,
            other => anyhow::bail!("unknown flag {other}"),
        }
        Ok(())
    })?;
    anyhow::ensure!(
        !a.bin.is_empty() && !a.event.is_empty() && (a.plain || !a.body.is_empty()),
        "--bin, --event and --body (or --plain) are required"
    );
    Ok(a)
}

/// The invocation: the API Gateway event from `--event` with the bearer token and body set.
fn event(a: &Args) -> anyhow::Result<Bytes> {
    let mut event: Value = serde_json::from_slice(&std::fs::read(&a.event)?)?;
    if a.plain {
        return Ok(Bytes::from(serde_json::to_vec(&event)?));
    }
    event["headers"]["authorization"] = json!(format!("Bearer {}", a.token));
    event["body"] = json!(a.body);
    Ok(Bytes::from(serde_json::to_vec(&event)?))
}

/// Checks the function's answer (an API Gateway response object).
fn check(a: &Args, posted: &str, body: &[u8]) -> anyhow::Result<()> {
    anyhow::ensure!(
        posted.ends_with("/response"),
        "the runtime posted to {posted}"
    );
    let response: Value = serde_json::from_slice(body)?;
    anyhow::ensure!(
        response["statusCode"] == 200,
        "HTTP {}: {}",
        response["statusCode"],
        response["body"]
    );
    if a.plain {
        let body = response["body"].as_str().unwrap_or_default();
        return serde_json::from_str::<Value>(body)
            .map(drop)
            .map_err(|_| anyhow::anyhow!("not JSON: {body}"));
    }
    bench::check_answer(
        response["body"].as_str().unwrap_or_default(),
        a.expect_count,
    )
    .map_err(|e| anyhow::anyhow!(e))
}

struct Run {
    ready: Duration,
    first: Duration,
    warm: Duration,
    peak_kib: u64,
}

async fn one_run(a: &Args, event: &Bytes) -> anyhow::Result<Run> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let api = listener.local_addr()?;
    let (calls_tx, mut calls) = mpsc::channel(4);
    let server = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let calls_tx = calls_tx.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| runtime_api(calls_tx.clone(), req));
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    let spawned = Instant::now();
    let mut child = tokio::process::Command::new(&a.bin)
        .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", "mcp")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().unwrap_or(0);
    let result = async {
        let mut ready = None;
        let mut answered = Vec::new();
        for i in 0..2 {
            let deliver = match tokio::time::timeout(Duration::from_secs(30), calls.recv()).await {
                Ok(Some(Call::Next(deliver))) => deliver,
                Ok(Some(Call::Posted(path, body))) => anyhow::bail!(
                    "the runtime posted to {path} before asking for work: {}",
                    String::from_utf8_lossy(&body)
                ),
                Ok(None) | Err(_) => anyhow::bail!("the function never asked for an invocation"),
            };
            ready.get_or_insert_with(|| spawned.elapsed());
            let asked = Instant::now();
            let _ = deliver.send((format!("cold-{i}"), event.clone()));
            match tokio::time::timeout(Duration::from_secs(30), calls.recv()).await {
                Ok(Some(Call::Posted(path, body))) => {
                    check(a, &path, &body)?;
                    answered.push((spawned.elapsed(), asked.elapsed()));
                }
                _ => anyhow::bail!("the function did not answer invocation {i}"),
            }
        }
        // Wait for the runtime to ask again, so the peak includes both answers' cleanup.
        if let Ok(Some(Call::Next(_))) =
            tokio::time::timeout(Duration::from_secs(5), calls.recv()).await
        {}
        Ok(Run {
            ready: ready.unwrap_or_default(),
            first: answered[0].0,
            warm: answered[1].1,
            peak_kib: bench::status_kib(pid, "VmHWM").unwrap_or(0),
        })
    }
    .await;
    let _ = child.kill().await;
    server.abort();
    result
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = args()?;
    let event = event(&a)?;
    let size = std::fs::metadata(&a.bin)?.len();
    let mut runs = Vec::with_capacity(a.runs);
    for _ in 0..a.runs {
        runs.push(one_run(&a, &event).await?);
    }
    let ms =
        |f: fn(&Run) -> Duration| median(runs.iter().map(|r| f(r).as_secs_f64() * 1e3).collect());
    let (ready, first, warm) = (ms(|r| r.ready), ms(|r| r.first), ms(|r| r.warm));
    let peak_mib = runs.iter().map(|r| r.peak_kib).max().unwrap_or(0) as f64 / 1024.0;
    if a.json {
        println!(
            "{}",
            json!({"runs": a.runs, "ready_ms": ready, "first_call_ms": first, "warm_call_ms": warm,
                   "peak_rss_mib": peak_mib, "binary_bytes": size})
        );
    } else {
        println!(
            "cold start over {} runs (medians): ready {ready:.1} ms, first invocation answered {first:.1} ms after spawn, warm call {warm:.2} ms; peak RSS {peak_mib:.1} MiB; binary {:.2} MiB",
            a.runs,
            size as f64 / 1048576.0
        );
    }
    Ok(())
}
