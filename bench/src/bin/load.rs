//! A load generator that checks every answer: POSTs one JSON-RPC body at a fixed
//! concurrency, after a warm-up, for a fixed time or (with `--requests`) a fixed number of
//! requests bounded by that time, and counts as wrong any answer that is not HTTP 200 with a
//! JSON-RPC result that is not `isError` (and, with `--expect-count`, whose
//! `structuredContent.count` differs). Samples the server's RSS (`--pid`; the peak is the
//! kernel's high-water mark, VmHWM) and the database's connection count (`--pg-db`) once a
//! second. Exits 1 if any answer was wrong or the requests did not finish in time. With
//! `--json` the summary is one JSON object (for `bench/run`).
//!
//! Usage: load --url URL --token TOKEN --body JSON [--concurrency 16] [--seconds 60]
//!             [--requests N] [--warmup 200] [--expect-count N] [--pid PID] [--pg-db NAME]
//!             [--json]

use std::sync::Arc;
use std::time::Duration;

use bench::percentile;

struct Args {
    url: String,
    token: String,
    body: String,
    concurrency: usize,
    seconds: u64,
    requests: Option<u64>,
    warmup: usize,
    expect_count: Option<u64>,
    pid: Option<u32>,
    pg_db: Option<String>,
    json: bool,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        url: String::new(),
        token: String::new(),
        body: String::new(),
        concurrency: 16,
        seconds: 60,
        requests: None,
        warmup: 200,
        expect_count: None,
        pid: None,
        pg_db: None,
        json: false,
    };
    bench::flags(|flag, value| {
        match flag {
            "--url" => a.url = value()?,
            "--token" => a.token = value()?,
            "--body" => a.body = value()?,
            "--concurrency" => a.concurrency = value()?.parse()?,
            "--seconds" => a.seconds = value()?.parse()?,
            "--requests" => a.requests = Some(value()?.parse()?),
            "--warmup" => a.warmup = value()?.parse()?,
            "--expect-count" => a.expect_count = Some(value()?.parse()?),
            "--pid" => a.pid = Some(value()?.parse()?),
            "--pg-db" => a.pg_db = Some(value()?),
            "--json" => a.json = true,
            other => anyhow::bail!("unknown flag {other}"),
        }
        Ok(())
    })?;
    anyhow::ensure!(
        !a.url.is_empty() && !a.body.is_empty(),
        "--url and --body are required"
    );
    Ok(a)
}

/// One request; `Err` says what was wrong with the answer.
async fn one(client: &reqwest::Client, a: &Args) -> Result<(), String> {
    let text = bench::ok_text(
        client
            .post(&a.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .bearer_auth(&a.token)
            .body(a.body.clone()),
    )
    .await?;
    bench::check_answer(&text, a.expect_count)
}

fn pg_connections(db: &str) -> Option<u64> {
    let out = std::process::Command::new("psql")
        .args(["-h", "127.0.0.1", "-U", "postgres", "-qtA", "-c"])
        .arg(format!(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}' AND usename = 'mcp_endpoint'"
        ))
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// One client of the run: the same request every time.
struct Fixed {
    client: reqwest::Client,
    args: Arc<Args>,
}

impl bench::Caller for Fixed {
    async fn call(&mut self) -> Result<(), String> {
        one(&self.client, &self.args).await
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Arc::new(args()?);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(a.concurrency)
        .timeout(Duration::from_secs(35))
        .build()?;
    for _ in 0..a.warmup {
        one(&client, &a)
            .await
            .map_err(|e| anyhow::anyhow!("warm-up: {e}"))?;
    }
    let callers = (0..a.concurrency)
        .map(|_| Fixed {
            client: client.clone(),
            args: a.clone(),
        })
        .collect();
    let plan = bench::Plan {
        requests: a.requests,
        seconds: a.seconds,
        pid: a.pid,
    };
    let (mut rss, mut conns) = (Vec::new(), Vec::new());
    let run = bench::drive(callers, &plan, || {
        if let Some(kib) = a.pid.and_then(|p| bench::status_kib(p, "VmRSS")) {
            rss.push(kib);
        }
        if let Some(n) = a.pg_db.as_deref().and_then(pg_connections) {
            conns.push(n);
        }
    })
    .await;
    let peak_kib = a.pid.and_then(|p| bench::status_kib(p, "VmHWM"));
    if a.json {
        println!("{}", run.summary(peak_kib));
        if !run.passed() {
            std::process::exit(1);
        }
        return Ok(());
    }
    let l = &run.latencies_us;
    let elapsed = run.seconds;
    let wrong = run.wrong;
    println!(
        "requests {} in {elapsed:.1}s at concurrency {}: {:.0} req/s; latency ms p50 {:.2} p90 {:.2} p99 {:.2} max {:.2}; wrong answers {wrong}",
        l.len(),
        a.concurrency,
        l.len() as f64 / elapsed,
        percentile(l, 0.50),
        percentile(l, 0.90),
        percentile(l, 0.99),
        percentile(l, 1.0),
    );
    if !rss.is_empty() {
        let mb = |k: u64| k as f64 / 1024.0;
        println!(
            "server RSS MiB: first {:.1} min {:.1} max {:.1} last {:.1}",
            mb(rss[0]),
            mb(*rss.iter().min().unwrap_or(&0)),
            mb(*rss.iter().max().unwrap_or(&0)),
            mb(*rss.last().unwrap_or(&0))
        );
    }
    if let Some(us) = run.cpu_us_per_request {
        println!("server CPU per request: {us:.0} µs");
    }
    if let Some(kib) = peak_kib {
        println!("server peak RSS (VmHWM) MiB: {:.1}", kib as f64 / 1024.0);
    }
    if !conns.is_empty() {
        println!(
            "database connections of mcp_endpoint: min {} max {} last {}",
            conns.iter().min().unwrap_or(&0),
            conns.iter().max().unwrap_or(&0),
            conns.last().unwrap_or(&0)
        );
    }
    if let Some(e) = run.first_error.as_ref() {
        println!("first wrong answer: {e}");
    }
    if run.incomplete {
        println!(
            "only {} of the requests finished within {}s",
            l.len(),
            a.seconds
        );
    }
    if !run.passed() {
        std::process::exit(1);
    }
    Ok(())
}
