//! Development helpers: `devtoken` mints access tokens signed with the repository's dev key;
//! `doctor` checks that OAuth clients can connect to an MCP URL ([`doctor`]).

pub mod doctor;
