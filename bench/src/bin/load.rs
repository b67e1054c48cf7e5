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
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, Notify};

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
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))
        };
        match flag.as_str() {
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
    }
    anyhow::ensure!(
        !a.url.is_empty() && !a.body.is_empty(),
        "--url and --body are required"
    );
    Ok(a)
}

/// One request; `Err` says what was wrong with the answer.
async fn one(client: &reqwest::Client, a: &Args) -> Result<(), String> {
    let resp = client
        .post(&a.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .bearer_auth(&a.token)
        .body(a.body.clone())
        .send()
        .await
        .map_err(|e| format!("transport: {e}"))?;
    let status = resp.status().as_u16();
    let text = resp.text().await.map_err(|e| format!("body: {e}"))?;
    if status != 200 {
        return Err(format!(
            "HTTP {status}: {}",
            text.chars().take(200).collect::<String>()
        ));
    }
    bench::check_answer(&text, a.expect_count)
}

/// CPU time (user + system) the process has used so far, in clock ticks (1/100 s).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces, hence the last ')').
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
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

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64 / 1000.0
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
    let stop = Arc::new(AtomicBool::new(false));
    // Tickets for a fixed request count; without `--requests`, the clock alone stops.
    let tickets = Arc::new(AtomicU64::new(a.requests.unwrap_or(u64::MAX)));
    let wrong = Arc::new(AtomicU64::new(0));
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let first_error = Arc::new(Mutex::new(None::<String>));
    let running = Arc::new(AtomicUsize::new(a.concurrency));
    let all_done = Arc::new(Notify::new());
    let last_done = Arc::new(Mutex::new(None::<Instant>));
    let cpu_before = a.pid.and_then(cpu_ticks);
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..a.concurrency {
        let (running, all_done, last_done) = (running.clone(), all_done.clone(), last_done.clone());
        let (client, a, stop, tickets, wrong, latencies, first_error) = (
            client.clone(),
            a.clone(),
            stop.clone(),
            tickets.clone(),
            wrong.clone(),
            latencies.clone(),
            first_error.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while !stop.load(Ordering::Relaxed)
                && tickets
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_ok()
            {
                let t = Instant::now();
                if let Err(e) = one(&client, &a).await {
                    wrong.fetch_add(1, Ordering::Relaxed);
                    first_error.lock().await.get_or_insert(e);
                }
                mine.push(t.elapsed().as_micros() as u64);
            }
            latencies.lock().await.extend(mine);
            let mut last = last_done.lock().await;
            *last = Some(last.map_or(Instant::now(), |t| t.max(Instant::now())));
            if running.fetch_sub(1, Ordering::AcqRel) == 1 {
                all_done.notify_one();
            }
        }));
    }
    let mut rss = Vec::new();
    let mut conns = Vec::new();
    let bound = started + Duration::from_secs(a.seconds);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let mut finished = false;
    while !finished && Instant::now() < bound {
        tokio::select! {
            _ = tick.tick() => {}
            () = tokio::time::sleep_until(bound.into()) => {}
            () = all_done.notified() => finished = true,
        }
        if let Some(kib) = a.pid.and_then(|p| bench::status_kib(p, "VmRSS")) {
            rss.push(kib);
        }
        if let Some(n) = a.pg_db.as_deref().and_then(pg_connections) {
            conns.push(n);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await?;
    }
    let ended = last_done.lock().await.unwrap_or_else(Instant::now);
    let elapsed = (ended - started).as_secs_f64();
    let mut l = latencies.lock().await.clone();
    l.sort_unstable();
    let wrong = wrong.load(Ordering::Relaxed);
    let peak_kib = a.pid.and_then(|p| bench::status_kib(p, "VmHWM"));
    // The server's CPU per request (10 ms ticks: meaningful over thousands of requests).
    let cpu_us = match (cpu_before, a.pid.and_then(cpu_ticks)) {
        (Some(before), Some(after)) if !l.is_empty() => {
            Some((after - before) as f64 * 10_000.0 / l.len() as f64)
        }
        _ => None,
    };
    let incomplete = a.requests.is_some_and(|n| (l.len() as u64) < n);
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "requests": l.len(),
                "seconds": elapsed,
                "rps": l.len() as f64 / elapsed,
                "p50_ms": percentile(&l, 0.50),
                "p90_ms": percentile(&l, 0.90),
                "p99_ms": percentile(&l, 0.99),
                "max_ms": percentile(&l, 1.0),
                "peak_rss_kib": peak_kib,
                "cpu_us_per_request": cpu_us,
                "wrong": wrong,
                "incomplete": incomplete,
                "first_error": *first_error.lock().await,
            })
        );
        if wrong > 0 || incomplete {
            std::process::exit(1);
        }
        return Ok(());
    }
    println!(
        "requests {} in {elapsed:.1}s at concurrency {}: {:.0} req/s; latency ms p50 {:.2} p90 {:.2} p99 {:.2} max {:.2}; wrong answers {wrong}",
        l.len(),
        a.concurrency,
        l.len() as f64 / elapsed,
        percentile(&l, 0.50),
        percentile(&l, 0.90),
        percentile(&l, 0.99),
        percentile(&l, 1.0),
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
    if let Some(us) = cpu_us {
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
    if let Some(e) = first_error.lock().await.as_ref() {
        println!("first wrong answer: {e}");
    }
    if incomplete {
        println!(
            "only {} of the requests finished within {}s",
            l.len(),
            a.seconds
        );
    }
    if wrong > 0 || incomplete {
        std::process::exit(1);
    }
    Ok(())
}
