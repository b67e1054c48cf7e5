//! `doctor`: can OAuth clients (claude.ai, Claude Desktop, Claude Code, ChatGPT, VS Code,
//! Cursor, MCP Inspector) connect to an MCP URL? Fetches the challenge, the protected resource
//! metadata, the authorization server metadata and the JWKS, and reports each check and a
//! verdict per client (see `devtools::doctor`).
//!
//! ```text
//! cargo run -q -p devtools --bin doctor -- <MCP URL> [--timeout-ms 5000]
//! ```
//! Exit status: 0 when the hosted clients (claude.ai, Claude Desktop, ChatGPT) can connect on
//! their own, 1 when they cannot, 2 on a usage error.

use std::process::ExitCode;
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut url = None;
    let mut timeout = Duration::from_secs(5);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--timeout-ms" => match args.next().and_then(|v| v.parse().ok()) {
                Some(ms) => timeout = Duration::from_millis(ms),
                None => return usage("--timeout-ms takes milliseconds"),
            },
            a if a.starts_with("--") => return usage(&format!("unknown option {a}")),
            a if url.is_none() => url = Some(a.to_owned()),
            a => return usage(&format!("one URL only (also got {a})")),
        }
    }
    let Some(url) = url else {
        return usage("the MCP URL is missing");
    };
    let report = devtools::doctor::diagnose(&url, timeout).await;
    print!("{}", report.render());
    if report.hosted_clients_connect() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("doctor: {problem}\nusage: doctor <MCP URL> [--timeout-ms MS]");
    ExitCode::from(2)
}
