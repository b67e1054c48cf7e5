//! What the benchmark binaries share: how an answer to the workload is judged, and how a
//! server process is measured.

use serde_json::Value;

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
