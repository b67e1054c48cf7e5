//! Development helpers: `devtoken` mints access tokens signed with the repository's dev key;
//! `doctor` checks that OAuth clients can connect to an MCP URL ([`doctor`]), judging each client
//! by how it really registers ([`replicas`], whose table `replicas --json` prints for the
//! client replicas in `tests/clients/replicas.py`).

pub mod doctor;
pub mod replicas;
