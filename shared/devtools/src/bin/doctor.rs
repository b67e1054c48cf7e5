//! `doctor`: can OAuth clients (claude.ai, Claude Desktop, Claude Code, ChatGPT, VS Code,
//! Cursor, MCP Inspector) connect to an MCP URL? Fetches the challenge, the protected resource
//! metadata, the authorization server metadata and the JWKS, and reports each check and a
//! verdict per client (see `devtools::doctor`).
//!
//! ```text
//! cargo run -q -p devtools --bin doctor -- <MCP URL> [--timeout-ms 5000] [--no-register]
//! ```
//! A client that registers by Dynamic Client Registration is registered once with its own
//! request body (so a server that refuses one of its redirect URIs is seen); `--no-register`
//! judges by the server's metadata alone, registering nothing.
//! Exit status: 0 when the hosted clients (claude.ai, Claude Desktop, ChatGPT) can connect on
//! their own, 1 when they cannot, 2 on a usage error.

use std::process::ExitCode;
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut url = None;
    let mut timeout = Duration::from_secs(5);
    let mut register = true;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--timeout-ms" => match args.next().and_then(|v| v.parse().ok()) {
                Some(ms) => timeout = Duration::from_millis(ms),
                None => return usage("--timeout-ms takes milliseconds"),
            },
            "--no-register" => register = false,
            "--help" | "-h" => {
                devtools::say(&format!("{USAGE}\n"));
                return ExitCode::SUCCESS;
            }
            a if a.starts_with("--") => return usage(&format!("unknown option {a}")),
            a if url.is_none() => url = Some(a.to_owned()),
            a => return usage(&format!("one URL only (also got {a})")),
        }
    }
    let Some(url) = url else {
        return usage("the MCP URL is missing");
    };
    let report = devtools::doctor::diagnose(&url, timeout, register).await;
    devtools::say(&report.render());
    if report.hosted_clients_connect() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

const USAGE: &str = "usage: doctor <MCP URL> [--timeout-ms MS] [--no-register]\n\
  Can OAuth clients connect to this MCP URL? Exit 0 when the hosted clients can, 1 when not.\n\
  --timeout-ms MS   bound of each fetch (default 5000)\n\
  --no-register     judge clients by the server's metadata only (registers nothing)";

fn usage(problem: &str) -> ExitCode {
    eprintln!("doctor: {problem}\n{USAGE}");
    ExitCode::from(2)
}
