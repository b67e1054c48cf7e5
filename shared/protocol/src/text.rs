//! Text cut to a size: stored values too long for a result, and what a client sent that an
//! error message repeats back. A client's text is up to the whole body (1 MiB); repeated
//! whole in an error, several times over and escaped again for JSON, it made replies larger
//! than the request and past Lambda's 6 MB response limit.

use std::borrow::Cow;

use serde_json::Value;

/// The longest name a client chose (a method, a tool) that a log line repeats whole: log
/// lines are billed by the byte and CloudWatch cuts an event at 256 KiB.
pub const LOGGED_NAME_BYTES: usize = 128;

/// The largest index at most `index` that is a character boundary of `text`.
fn floor_boundary(text: &str, index: usize) -> usize {
    let mut end = index.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// `text` cut at `max` bytes (at a character boundary) with a marker saying how long it
/// was, if it is longer than that.
pub fn shortened(text: &str, max: usize) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let end = floor_boundary(text, max);
    Some(format!(
        "{}…[cut: {} bytes in all]",
        &text[..end],
        text.len()
    ))
}

/// `text` with its middle left out if it is longer than `max` bytes: its first half and
/// last quarter of `max` stay, so a message keeps both what it is about and what it says
/// of it (`invalid type: string "…", expected a map`).
pub fn elided(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let head = floor_boundary(text, max / 2);
    let mut tail = text.len() - max / 4;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    Cow::Owned(format!(
        "{}…[{} bytes left out]…{}",
        &text[..head],
        tail - head,
        &text[tail..]
    ))
}

/// The longest JSON text of a value [`excerpt`] repeats whole.
const EXCERPT_BYTES: usize = 64;

/// A client's value as a message names it: its JSON text when that is short, else its start
/// (a string) or its kind and size (an array, an object). Serialises no further than the
/// limit, however large the value.
pub fn excerpt(value: &Value) -> String {
    let mut out = Capped(Vec::with_capacity(EXCERPT_BYTES));
    if serde_json::to_writer(&mut out, value).is_ok()
        && let Ok(text) = String::from_utf8(out.0)
    {
        return text;
    }
    match value {
        Value::String(s) => {
            let start = Value::from(&s[..floor_boundary(s, EXCERPT_BYTES - 16)]).to_string();
            let open = &start[..start.len() - 1];
            format!("{open}…\" ({} characters)", s.chars().count())
        }
        Value::Array(items) => format!("an array of {}", count(items.len(), "item")),
        Value::Object(members) => format!("an object of {}", count(members.len(), "member")),
        // Numbers, booleans and null are never that long.
        other => other.to_string(),
    }
}

fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A writer that refuses to grow past [`EXCERPT_BYTES`].
struct Capped(Vec<u8>);

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > EXCERPT_BYTES {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shortened_cuts_at_a_character_boundary_and_says_how_long() {
        assert_eq!(shortened("abc", 3), None);
        assert_eq!(
            shortened("aé€x", 4).as_deref(),
            Some("aé…[cut: 7 bytes in all]")
        );
    }

    #[test]
    fn elided_keeps_the_start_and_the_end() {
        assert_eq!(elided("short", 5), "short");
        let text = format!("Unknown tool: {}, expected a map", "z".repeat(10_000));
        let cut = elided(&text, 100);
        assert!(cut.len() < 150, "{cut}");
        assert!(cut.starts_with("Unknown tool: zzz"), "{cut}");
        assert!(cut.ends_with("zzz, expected a map"), "{cut}");
        let (head, rest) = cut.split_once("…[").unwrap();
        let (left_out, tail) = rest.split_once(" bytes left out]…").unwrap();
        assert!(text.starts_with(head) && text.ends_with(tail));
        assert_eq!(
            head.len() + left_out.parse::<usize>().unwrap() + tail.len(),
            text.len()
        );
        // Just over the bound (the case proptest once shrank a failure to): the cut text is
        // within it, marker included.
        for max in [100, 300, 1024] {
            let over = "q".repeat(max + 1);
            assert!(elided(&over, max).len() <= max, "{max}");
        }
        // Multi-byte characters on both cuts.
        let wide = "€".repeat(1_000);
        let cut = elided(&wide, 100);
        assert!(cut.starts_with("€€") && cut.ends_with("€€"), "{cut}");
    }

    #[test]
    fn excerpt_repeats_short_values_and_sizes_long_ones() {
        assert_eq!(excerpt(&json!("5")), "\"5\"");
        assert_eq!(excerpt(&json!([1, 2])), "[1,2]");
        assert_eq!(excerpt(&json!(2.5)), "2.5");
        let long = "q\"".repeat(50_000);
        let e = excerpt(&json!(long));
        assert!(e.starts_with("\"q\\\"q\\\""), "{e}");
        assert!(e.ends_with("…\" (100000 characters)"), "{e}");
        assert!(e.len() < 100, "{e}");
        assert_eq!(
            excerpt(&json!(["x".repeat(100), 1, 2])),
            "an array of 3 items"
        );
        assert_eq!(
            excerpt(&json!({"a": "x".repeat(100)})),
            "an object of 1 member"
        );
        let wide = "€".repeat(100);
        assert!(excerpt(&json!(wide)).ends_with("…\" (100 characters)"));
    }
}
