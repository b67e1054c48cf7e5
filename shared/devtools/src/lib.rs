//! Development helpers: `devtoken` mints access tokens signed with the repository's dev key;
//! `doctor` checks that OAuth clients can connect to an MCP URL ([`doctor`]), judging each client
//! by how it really registers ([`replicas`], whose table `replicas --json` prints for the
//! client replicas in `tests/clients/replicas.py`).

pub mod doctor;
pub mod replicas;

/// Writes `text` to stdout. A reader that goes away early (`| head`) is not an error of
/// ours: the write stops quietly instead of panicking as `print!` does on a closed pipe.
pub fn say(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
