//! What the benchmark binaries share: how an answer to the workload is judged, and how a
//! server process is measured.

use serde_json::Value;

pub use bulk::bulk_load;
pub use pg::{fresh_database, fresh_database_through, local_pg};

mod bulk;
mod pg;

/// Judges one JSON-RPC answer body to the benchmark's `tools/call`: it must be JSON with a
/// `result` that is not `isError` and, with `expect_count`, whose
/// `structuredContent.count` is that number. `Err` says what was wrong.
pub fn check_answer(body: &str, expect_count: Option<u64>) -> Result<(), String> {
    let v: Value = serde_json::from_str(body).map_err(|_| "not JSON".to_owned())?;
    let result = v.get("result").ok_or_else(|| format!("no result: {v}"))?;
    if result["isError"] == true {
        return Err(format!("isError: {}", result["content"][0]["text"]));
    }
    if let Some(n) = expect_count
        && result["structuredContent"]["count"].as_u64() != Some(n)
    {
        return Err(format!(
            "count {} != {n}",
            result["structuredContent"]["count"]
        ));
    }
    Ok(())
}

/// A `/proc/PID/status` field in KiB: `VmRSS` (now) or `VmHWM` (the peak so far).
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// CPU time (user + system) process `pid` has used so far, in clock ticks (1/100 s).
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces, hence the last ')').
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The `p` quantile (0 to 1) of `sorted` microseconds, in milliseconds.
pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// One client of a load run: each call makes one request and judges its answer (`Err` says
/// what was wrong). A caller may carry state from one answer to the next (a refresh token).
pub trait Caller: Send + 'static {
    fn call(&mut self) -> impl Future<Output = Result<(), String>> + Send;
}

/// How long a load run goes on, and whom it measures.
pub struct Plan {
    /// A fixed number of requests (shared by all callers), bounded by `seconds`; `None`: the
    /// clock alone stops the run.
    pub requests: Option<u64>,
    pub seconds: u64,
    /// The server process: its CPU time over the run is divided by the requests.
    pub pid: Option<u32>,
}

/// What a load run saw.
pub struct Outcome<C> {
    /// The callers, as the run left them.
    pub callers: Vec<C>,
    /// Every request's latency in microseconds, sorted.
    pub latencies_us: Vec<u64>,
    /// From the start to the last caller's last answer.
    pub seconds: f64,
    pub wrong: u64,
    pub first_error: Option<String>,
    /// The server's CPU per request (10 ms ticks: meaningful over thousands of requests).
    pub cpu_us_per_request: Option<f64>,
    /// The run ended before its fixed number of requests.
    pub incomplete: bool,
}

/// What one caller of [`drive`] did.
struct Finished<C> {
    caller: C,
    latencies: Vec<u64>,
    wrong: u64,
    first_error: Option<String>,
    at: std::time::Instant,
}

/// Runs `callers` concurrently, one request at a time each, until `plan` says stop; calls
/// `every_second` once a second meanwhile (samples of the server's memory, say).
pub async fn drive<C: Caller>(
    callers: Vec<C>,
    plan: &Plan,
    mut every_second: impl FnMut(),
) -> Outcome<C> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    let stop = Arc::new(AtomicBool::new(false));
    let tickets = Arc::new(AtomicU64::new(plan.requests.unwrap_or(u64::MAX)));
    let cpu_before = plan.pid.and_then(cpu_ticks);
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for (index, mut caller) in callers.into_iter().enumerate() {
        let (stop, tickets) = (stop.clone(), tickets.clone());
        workers.spawn(async move {
            let (mut latencies, mut wrong, mut first_error) = (Vec::new(), 0, None);
            while !stop.load(Ordering::Relaxed)
                && tickets
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_ok()
            {
                let t = Instant::now();
                if let Err(e) = caller.call().await {
                    wrong += 1;
                    first_error.get_or_insert(e);
                }
                latencies.push(t.elapsed().as_micros() as u64);
            }
            let finished = Finished {
                caller,
                latencies,
                wrong,
                first_error,
                at: Instant::now(),
            };
            (index, finished)
        });
    }
    let bound = started + Duration::from_secs(plan.seconds);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let mut done = Vec::new();
    let mut last = started;
    let mut timed_out = false;
    loop {
        tokio::select! {
            _ = tick.tick() => every_second(),
            () = tokio::time::sleep_until(bound.into()), if !timed_out => {
                timed_out = true;
                stop.store(true, Ordering::Relaxed);
            }
            joined = workers.join_next() => match joined {
                Some(Ok((index, finished))) => {
                    last = last.max(finished.at);
                    done.push((index, finished));
                }
                Some(Err(e)) => std::panic::resume_unwind(e.into_panic()),
                None => break,
            },
        }
    }
    done.sort_by_key(|w| w.0);
    let mut outcome = Outcome {
        callers: Vec::with_capacity(done.len()),
        latencies_us: Vec::new(),
        seconds: (last - started).as_secs_f64(),
        wrong: 0,
        first_error: None,
        cpu_us_per_request: None,
        incomplete: false,
    };
    for (_, finished) in done {
        outcome.callers.push(finished.caller);
        outcome.latencies_us.extend(finished.latencies);
        outcome.wrong += finished.wrong;
        if outcome.first_error.is_none() {
            outcome.first_error = finished.first_error;
        }
    }
    outcome.latencies_us.sort_unstable();
    let count = outcome.latencies_us.len();
    outcome.cpu_us_per_request = match (cpu_before, plan.pid.and_then(cpu_ticks)) {
        (Some(before), Some(after)) if count > 0 => {
            Some((after - before) as f64 * 10_000.0 / count as f64)
        }
        _ => None,
    };
    outcome.incomplete = plan.requests.is_some_and(|n| (count as u64) < n);
    outcome
}

impl<C> Outcome<C> {
    /// The run as one JSON object (what `bench/run` and `report` read), with the server's
    /// peak RSS in KiB if known.
    pub fn summary(&self, peak_rss_kib: Option<u64>) -> Value {
        let l = &self.latencies_us;
        serde_json::json!({
            "requests": l.len(),
            "seconds": self.seconds,
            "rps": l.len() as f64 / self.seconds,
            "p50_ms": percentile(l, 0.50),
            "p90_ms": percentile(l, 0.90),
            "p99_ms": percentile(l, 0.99),
            "max_ms": percentile(l, 1.0),
            "peak_rss_kib": peak_rss_kib,
            "cpu_us_per_request": self.cpu_us_per_request,
            "wrong": self.wrong,
            "incomplete": self.incomplete,
            "first_error": self.first_error,
        })
    }

    /// Whether every request was answered rightly and in time.
    pub fn passed(&self) -> bool {
        self.wrong == 0 && !self.incomplete
    }
}

/// A function's handler, as the Lambda runtime calls it.
pub trait Handler: Send + Sync + 'static {
    fn handle(
        &self,
        req: lambda_http::Request,
    ) -> impl Future<Output = http::Response<lambda_http::Body>> + Send;
}

impl Handler for mcp::App {
    async fn handle(&self, req: lambda_http::Request) -> http::Response<lambda_http::Body> {
        mcp::App::handle(self, req).await
    }
}

impl Handler for oauth::App {
    async fn handle(&self, req: lambda_http::Request) -> http::Response<lambda_http::Body> {
        oauth::App::handle(self, req).await
    }
}

/// Serves `apps` over plain HTTP/1.1 on 127.0.0.1:`port`, in-process, without an emulator in
/// the path. Like Lambda sandboxes, each app answers one request at a time (requests go to
/// them in turn), and each request gets an invocation deadline `timeout_ms` away.
///
/// # Errors
///
/// When the port cannot be bound or a connection cannot be accepted.
pub async fn serve<H: Handler>(port: u16, apps: Vec<H>, timeout_ms: u64) -> anyhow::Result<()> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    let count = apps.len();
    anyhow::ensure!(count > 0, "no sandbox to serve with");
    let apps: Arc<Vec<tokio::sync::Mutex<H>>> =
        Arc::new(apps.into_iter().map(tokio::sync::Mutex::new).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let listener =
        tokio::net::TcpListener::bind(std::net::SocketAddr::from(([127, 0, 0, 1], port))).await?;
    eprintln!("serving {count} sandboxes on http://127.0.0.1:{port}");
    loop {
        let (stream, _) = listener.accept().await?;
        let (apps, next) = (apps.clone(), next.clone());
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let app = apps.clone();
                let i = next.fetch_add(1, Ordering::Relaxed) % count;
                async move { answer(&app[i], req, timeout_ms).await }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer<H: Handler>(
    app: &tokio::sync::Mutex<H>,
    req: hyper::Request<hyper::body::Incoming>,
    timeout_ms: u64,
) -> Result<hyper::Response<http_body_util::Full<bytes::Bytes>>, hyper::Error> {
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use lambda_http::RequestExt;

    let (parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    let mut ctx = lambda_http::lambda_runtime::Context::default();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    ctx.deadline = now + timeout_ms;
    ctx.request_id = format!("local-{now}");
    let request = http::Request::from_parts(parts, lambda_http::Body::from(body.to_vec()))
        .with_lambda_context(ctx);
    let response = app.lock().await.handle(request).await;
    let (parts, body) = response.into_parts();
    // Moved, not copied: the adapter's own work is not the handler's.
    let bytes = match body {
        lambda_http::Body::Empty => Bytes::new(),
        lambda_http::Body::Text(text) => Bytes::from(text),
        lambda_http::Body::Binary(bytes) => Bytes::from(bytes),
        other => Bytes::copy_from_slice(&other),
    };
    Ok(hyper::Response::from_parts(parts, Full::new(bytes)))
}

/// `(port, sandboxes, timeout_ms)` of a serving binary: the port from its one argument,
/// `SANDBOXES` (default 16) and `FUNCTION_TIMEOUT_MS` (default 29000) from the environment.
///
/// # Errors
///
/// A missing or malformed value.
pub fn serve_settings(name: &str) -> anyhow::Result<(u16, usize, u64)> {
    let port: u16 = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: {name} PORT"))?
        .parse()?;
    let count: usize = std::env::var("SANDBOXES").map_or(Ok(16), |v| v.parse())?;
    let timeout_ms: u64 = std::env::var("FUNCTION_TIMEOUT_MS").map_or(Ok(29_000), |v| v.parse())?;
    Ok((port, count, timeout_ms))
}

/// Reads the command line's flags in order: `on(flag, value)` for each, where `value()`
/// takes the next argument as the flag's value.
///
/// # Errors
///
/// What `on` returns, or that a flag's value is missing.
pub fn flags(
    mut on: impl FnMut(&str, &mut dyn FnMut() -> anyhow::Result<String>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))
        };
        on(&flag, &mut value)?;
    }
    Ok(())
}

/// Sends `request` and returns its body if the answer is HTTP 200; `Err` says what was wrong
/// (the status and the body's start otherwise).
pub async fn ok_text(request: reqwest::RequestBuilder) -> Result<String, String> {
    let resp = request
        .send()
        .await
        .map_err(|e| format!("transport: {e}"))?;
    let status = resp.status().as_u16();
    let text = resp.text().await.map_err(|e| format!("body: {e}"))?;
    if status != 200 {
        // Bench servers' error bodies name no secret, so their start can be shown.
        return Err(format!(
            "HTTP {status}: {}",
            text.chars().take(200).collect::<String>()
        ));
    }
    Ok(text)
}
