//! Any string as a pagination cursor: refused or decoded, never a panic; whatever decodes
//! signs back to the same cursor.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_tools::{CursorKey, Position};

fuzz_target!(|data: &[u8]| {
    let key = CursorKey::new(vec![9u8; 32]).unwrap();
    let cursor = String::from_utf8_lossy(data);
    if let Ok(position) = key.verify::<Position>("tenant", "filter", &cursor) {
        assert_eq!(key.sign("tenant", "filter", &position), cursor);
    }
});
