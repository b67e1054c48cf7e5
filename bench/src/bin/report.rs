//! Turns `bench/run`'s measurements into the performance table of docs/performance.md: per server the
//! medians over rounds of throughput, p50 and p99, the peak RSS, the endpoint's throughput
//! ratio, and each issue-7 target with its measured value and whether it is met.
//!
//! With `--warm`, also each server's warm duration per invocation at concurrency 1 (what
//! Lambda bills: one request per sandbox at a time), p50 and p99, medians over rounds.
//!
//! Usage: report --load FILE.jsonl --coldstart FILE.json [--warm FILE.jsonl] [--zip-bytes N]
//! [--machine TEXT]

use std::collections::BTreeMap;

use serde_json::Value;

#[derive(Default)]
struct Server {
    rps: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
    cpu_us: Vec<f64>,
    peak_kib: u64,
}

/// "median (min-max)" of per-round values.
fn spread(v: &[f64], digits: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() {
        return "-".into();
    }
    format!("{:.digits$} ({min:.digits$}-{max:.digits$})", median(v))
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

const ORDER: [(&str, &str); 7] = [
    ("endpoint", "this endpoint (deployed handler)"),
    (
        "endpoint-limited",
        "this endpoint with rate limits (moto DynamoDB, loopback)",
    ),
    (
        "endpoint-traced",
        "this endpoint with traces (OTLP/HTTP to a loopback collector)",
    ),
    ("floor", "bare floor (same read, no MCP)"),
    ("rmcp", "rmcp 3.11 + tokio-postgres + jsonwebtoken"),
    ("ts", "TypeScript SDK 1.32 + pg + jose (Node 22)"),
    ("python", "Python mcp 2.3 + asyncpg + PyJWT"),
];

fn main() -> anyhow::Result<()> {
    let (mut load, mut coldstart, mut zip, mut machine, mut warm) = (None, None, None, None, None);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))?;
        match flag.as_str() {
            "--load" => load = Some(value),
            "--coldstart" => coldstart = Some(value),
            "--zip-bytes" => zip = Some(value.parse::<u64>()?),
            "--machine" => machine = Some(value),
            "--warm" => warm = Some(value),
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    let load = load.ok_or_else(|| anyhow::anyhow!("--load is required"))?;
    let (servers, rounds, requests) = read_rounds(&load)?;

    let get = |name: &str| servers.get(name);
    let stat =
        |name: &str, f: fn(&Server) -> &Vec<f64>| get(name).map_or(f64::NAN, |s| median(f(s)));
    let ours_rps = stat("endpoint", |s| &s.rps);

    println!(
        "Load: query_events (one entity, limit 50, RS256 token), concurrency 16, {requests} requests per server per round, medians over {rounds} rounds{}.\n",
        machine.map(|m| format!("; {m}")).unwrap_or_default()
    );
    println!(
        "| server | req/s | p50 ms | p99 ms | server CPU µs/req | peak RSS MiB | endpoint ÷ server (req/s) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, label) in ORDER {
        let Some(s) = get(name) else { continue };
        let rps = median(&s.rps);
        println!(
            "| {label} | {} | {} | {} | {} | {:.1} | {} |",
            spread(&s.rps, 0),
            spread(&s.p50, 1),
            spread(&s.p99, 1),
            spread(&s.cpu_us, 0),
            s.peak_kib as f64 / 1024.0,
            if name == "endpoint" {
                "1.00".to_owned()
            } else {
                format!("{:.2}", ours_rps / rps)
            }
        );
    }

    println!("\nEach cell: median over rounds (min-max of the rounds).");
    let warm = match warm {
        Some(path) => Some(read_rounds(&path)?),
        None => None,
    };
    if let Some((warm, rounds, requests)) = &warm {
        println!(
            "\nWarm duration per invocation at concurrency 1 (what Lambda bills; {requests} requests per server per round, medians over {rounds} rounds, min-max):\n"
        );
        println!("| server | p50 ms | p99 ms | server CPU µs/req |\n|---|---:|---:|---:|");
        for (name, label) in ORDER {
            let Some(s) = warm.get(name) else { continue };
            println!(
                "| {label} | {} | {} | {} |",
                spread(&s.p50, 2),
                spread(&s.p99, 2),
                spread(&s.cpu_us, 0)
            );
        }
    }

    let mut targets: Vec<(String, String, bool)> = Vec::new();
    // Issue 18's goals: CPU per call within 1.25x of the floor, 1.5x rmcp's throughput,
    // the lowest p50 and p99 of every MCP server, and the process under 24 MiB.
    if get("floor").is_some() {
        let ratio = stat("endpoint", |s| &s.cpu_us) / stat("floor", |s| &s.cpu_us);
        targets.push((
            "server CPU per call ≤ 1.25× the floor's".into(),
            format!("{ratio:.2}×"),
            ratio <= 1.25,
        ));
    }
    if get("rmcp").is_some() {
        let ratio = ours_rps / stat("rmcp", |s| &s.rps);
        targets.push((
            "throughput ≥ 1.5× rmcp".into(),
            format!("{ratio:.2}×"),
            ratio >= 1.5,
        ));
    }
    for (what, f) in [
        ("p50", (|s: &Server| &s.p50) as fn(&Server) -> &Vec<f64>),
        ("p99", |s: &Server| &s.p99),
    ] {
        let ours = stat("endpoint", f);
        let best = ["rmcp", "ts", "python"]
            .iter()
            .filter(|p| get(p).is_some())
            .map(|p| stat(p, f))
            .fold(f64::INFINITY, f64::min);
        targets.push((
            format!("{what} the lowest of every MCP server"),
            format!("{ours:.2} ms vs best peer {best:.2} ms"),
            ours <= best,
        ));
    }
    for (peer, want) in [("ts", 3.0), ("python", 8.0)] {
        if get(peer).is_some() {
            let ratio = ours_rps / stat(peer, |s| &s.rps);
            targets.push((
                format!("throughput ≥ {want}× {peer}"),
                format!("{ratio:.2}×"),
                ratio >= want,
            ));
        }
    }
    let floor_p50 = stat("floor", |s| &s.p50);
    let overhead = (stat("endpoint", |s| &s.p50) / floor_p50 - 1.0) * 100.0;
    targets.push((
        "MCP overhead over the floor < 20% at p50".into(),
        format!("{overhead:.0}%"),
        overhead < 20.0,
    ));
    let ours_peak = get("endpoint").map_or(0, |s| s.peak_kib) as f64 / 1024.0;
    if let Some(path) = coldstart {
        let c: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let f = |k: &str| c[k].as_f64().unwrap_or(f64::NAN);
        targets.push((
            "process ready < 15 ms".into(),
            format!("{:.1} ms", f("ready_ms")),
            f("ready_ms") < 15.0,
        ));
        targets.push((
            "first tools/call incl. TLS connect < 60 ms".into(),
            format!(
                "{:.1} ms (warm call after it {:.2} ms)",
                f("first_call_ms"),
                f("warm_call_ms")
            ),
            f("first_call_ms") < 60.0,
        ));
        targets.push((
            "peak RSS < 20 MiB (one function process, cold start + 2 calls)".into(),
            format!("{:.1} MiB", f("peak_rss_mib")),
            f("peak_rss_mib") < 20.0,
        ));
        println!(
            "\nCold start ({} runs, medians): ready {:.1} ms, first tools/call {:.1} ms after spawn, release binary {:.2} MiB.",
            c["runs"],
            f("ready_ms"),
            f("first_call_ms"),
            f("binary_bytes") / 1048576.0
        );
    }
    targets.push((
        "peak RSS < 24 MiB (16 sandboxes in one process, under load)".into(),
        format!("{ours_peak:.1} MiB"),
        ours_peak < 24.0,
    ));
    if let Some(bytes) = zip {
        let mib = bytes as f64 / 1048576.0;
        targets.push((
            "release zip < 8 MiB".into(),
            format!("{mib:.2} MiB"),
            mib < 8.0,
        ));
    }
    println!("\n| target | measured | met |\n|---|---|---|");
    for (target, measured, met) in targets {
        println!(
            "| {target} | {measured} | {} |",
            if met { "yes" } else { "**no**" }
        );
    }
    Ok(())
}

/// Per server, the rounds of one `load.jsonl`-shaped file; also how many rounds and
/// requests per round it holds.
fn read_rounds(path: &str) -> anyhow::Result<(BTreeMap<String, Server>, u64, u64)> {
    let mut servers: BTreeMap<String, Server> = BTreeMap::new();
    let mut rounds = 0;
    let mut requests = 0;
    for line in std::fs::read_to_string(path)?.lines() {
        let v: Value = serde_json::from_str(line)?;
        let s = servers
            .entry(v["server"].as_str().unwrap_or_default().to_owned())
            .or_default();
        let l = &v["load"];
        s.rps.push(l["rps"].as_f64().unwrap_or(f64::NAN));
        s.p50.push(l["p50_ms"].as_f64().unwrap_or(f64::NAN));
        s.p99.push(l["p99_ms"].as_f64().unwrap_or(f64::NAN));
        if let Some(us) = l["cpu_us_per_request"].as_f64() {
            s.cpu_us.push(us);
        }
        s.peak_kib = s.peak_kib.max(l["peak_rss_kib"].as_u64().unwrap_or(0));
        rounds = rounds.max(v["round"].as_u64().unwrap_or(0) + 1);
        requests = l["requests"].as_u64().unwrap_or(0);
    }
    Ok((servers, rounds, requests))
}
