//! `replicas`: the table of MCP clients as they really register and sign in
//! (`devtools::replicas`), for the client replicas outside Rust (`tests/clients/replicas.py`).
//!
//! ```text
//! cargo run -q -p devtools --bin replicas -- --json
//! ```

use std::process::ExitCode;

const USAGE: &str = "usage: replicas --json\n\
  Prints the table of MCP clients (registration, metadata document, DCR request, redirect URI,\n\
  authorization parameters, sources) that the doctor judges by and the replicas replay.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["--json"] => {
            devtools::say(&format!("{:#}\n", devtools::replicas::as_json()));
            ExitCode::SUCCESS
        }
        ["--help" | "-h"] => {
            devtools::say(&format!("{USAGE}\n"));
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
