//! JSON built and written without copying what is already there: tool results are the bulk
//! of every reply, so they are moved into place and written once.

use serde_json::{Map, Value};

/// The object of `members`, in that order of insertion, with each value moved in.
///
/// Not `serde_json::json!` for values that are already `Value`s or `String`s: the macro turns
/// every interpolated expression into a `Value` with `serde_json::to_value(&expr)`, which
/// copies it (a whole list of events, a whole text mirror) only to drop the original. In a
/// 50-event `query_events` call the copies took about a fifth of the server's CPU (issue 18).
pub fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect::<Map<String, Value>>(),
    )
}

/// The bytes `json`, compact JSON text as serde_json writes it, gains when written again as a
/// JSON string (a text mirror): one backslash per quote and per backslash. Nothing else is
/// escaped: control characters in it are escaped already, and serde_json leaves non-ASCII
/// as is.
pub fn string_escapes(json: &[u8]) -> usize {
    count_bytes(json, |b| b == b'"' || b == b'\\')
}

/// How many bytes of `text` are `hit`. Counted in byte-wide lanes: a chunk of 255 bytes
/// cannot count past `u8::MAX`, and a `u8` sum vectorises 16 or 32 bytes to an instruction;
/// a `usize` count per byte (`filter().count()`) widened every byte first, about 4% of a
/// 50-event call (issue 18's profile).
fn count_bytes(text: &[u8], hit: impl Fn(u8) -> bool) -> usize {
    text.chunks(255)
        .map(|chunk| usize::from(chunk.iter().fold(0u8, |n, &b| n + u8::from(hit(b)))))
        .sum()
}

/// Writes `json` as a JSON string, byte for byte as `serde_json::to_writer(out, json)` would.
/// Compact JSON as serde_json writes it has no raw control characters, so only its quotes
/// and backslashes gain a backslash (text that holds a control character after all is
/// written again by serde_json). Each 8-byte word is tested for quotes and backslashes at
/// once and stored whole; for each one it holds (lowest first) a backslash is stored where
/// that byte went and the rest of the word again one place on. A 50-event result has a quote
/// every seven bytes: serde_json copies each run between escapes and each escape separately;
/// a byte-at-a-time loop tested and stored every byte in turn (7% of a call's CPU in issue
/// 18's profile); storing every byte of a word with escapes at its shifted place took half
/// that, and a store per escape (no count of the word's escapes, which has no instruction in
/// baseline x86-64) an eighth less again.
pub(crate) fn write_json_as_string(out: &mut Vec<u8>, json: &str) {
    let bytes = json.as_bytes();
    let start = out.len();
    let len = bytes.len() + string_escapes(bytes) + 2;
    // Slack for the last word: each store writes a whole word, up to 8 bytes past the text.
    out.resize(start + len + WORD, 0);
    let room = &mut out[start + 1..];
    let mut at = 0;
    let mut control = 0;
    let mut words = bytes.chunks_exact(WORD);
    for word in &mut words {
        let mut le = [0u8; WORD];
        le.copy_from_slice(word);
        let w = u64::from_le_bytes(le);
        control |= zero_bytes(w & 0xe0e0_e0e0_e0e0_e0e0);
        let mut escapes =
            zero_bytes(w ^ 0x2222_2222_2222_2222) | zero_bytes(w ^ 0x5c5c_5c5c_5c5c_5c5c);
        room[at..at + WORD].copy_from_slice(&le);
        // Bytes of the word already in place: those before the escape last handled.
        let mut placed = 0;
        while escapes != 0 {
            let i = (escapes.trailing_zeros() / 8) as usize;
            at += i - placed;
            room[at] = b'\\';
            at += 1;
            room[at..at + WORD].copy_from_slice(&(w >> (8 * i)).to_le_bytes());
            placed = i;
            escapes &= escapes - 1;
        }
        at += WORD - placed;
    }
    for &b in words.remainder() {
        control |= u64::from(b < 0x20);
        if b == b'"' || b == b'\\' {
            room[at] = b'\\';
            at += 1;
        }
        room[at] = b;
        at += 1;
    }
    out.truncate(start + len);
    if control != 0 {
        out.truncate(start);
        let _ = serde_json::to_writer(&mut *out, json);
        return;
    }
    out[start] = b'"';
    out[start + len - 1] = b'"';
}

const WORD: usize = 8;

/// The high bit of each byte of `x` that is zero, and no other bit: the exact test, with no
/// false positives from borrows. Applied to a word XOR a byte repeated, it marks that byte;
/// to a word masked with `0xe0` repeated, the bytes below 0x20 (control characters).
fn zero_bytes(x: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// Writes `object` as `serde_json::to_writer` would (members in the map's order), except
/// that `special` may write a member's value itself (already serialised bytes) and return
/// true: how a result reuses JSON it has written once.
pub fn write_object(
    out: &mut Vec<u8>,
    object: &Map<String, Value>,
    mut special: impl FnMut(&mut Vec<u8>, &str, &Value) -> bool,
) {
    out.push(b'{');
    for (i, (name, value)) in object.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, name);
        out.push(b':');
        if !special(out, name, value) {
            let _ = serde_json::to_writer(&mut *out, value);
        }
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_object_equals_what_json_builds() {
        let events = vec![json!({"id": 1, "tags": ["a"]}), json!({"id": 2})];
        let built = object([
            ("count", events.len().into()),
            ("events", Value::Array(events.clone())),
            ("next", Value::from(None::<String>)),
            ("say", "hi".into()),
        ]);
        assert_eq!(
            built,
            json!({"count": 2, "events": events, "next": null, "say": "hi"})
        );
    }

    #[test]
    fn string_escapes_are_what_a_json_string_of_the_text_adds() {
        let value =
            json!({"say": "a \"quote\", a \\ backslash, a\nnewline, a \u{1} control, ünïcode"});
        let text = serde_json::to_string(&value).unwrap();
        let as_string = serde_json::to_string(&text).unwrap();
        assert_eq!(
            as_string.len(),
            text.len() + 2 + string_escapes(text.as_bytes())
        );
    }

    #[test]
    fn string_escapes_count_every_quote_and_backslash_of_long_text() {
        for text in [
            "\"".repeat(1000),
            "\\".repeat(600) + &"ab\"".repeat(300),
            "plain".repeat(99),
        ] {
            let expected = text.bytes().filter(|b| matches!(b, b'"' | b'\\')).count();
            assert_eq!(string_escapes(text.as_bytes()), expected);
        }
    }

    #[test]
    fn json_written_as_a_string_is_what_serde_json_writes() {
        let compact = serde_json::to_string(&json!({
            "say": "a \"quote\", a \\ backslash, a\nnewline, a \u{1} control, ünïcode \u{2028}",
            "n": [1, 2.5, null], "e": ""
        }))
        .unwrap();
        // The last two are not compact JSON: raw control characters are escaped all the same.
        for text in [
            compact.as_str(),
            "",
            "\"\\",
            "raw\nnewline",
            "tab\t and \u{7f}",
            &"\"\\ab\"cdefgh\\\"".repeat(50),
            &format!("{}\"", "x".repeat(63)),
        ] {
            let mut out = b"x".to_vec();
            write_json_as_string(&mut out, text);
            let expected = [b"x".as_slice(), &serde_json::to_vec(text).unwrap()].concat();
            assert_eq!(out, expected, "{text:?}");
        }
    }

    #[test]
    fn json_of_every_length_and_mix_is_written_as_serde_json_writes_it() {
        // Quotes, backslashes and other bytes at every offset in and across 8-byte words;
        // one text in five also holds control characters (written by serde_json instead).
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize % n
        };
        for len in 0..70 {
            for k in 0..25 {
                let kinds = if k % 5 == 0 { 8 } else { 6 };
                let text: String = (0..len)
                    .map(|_| ['"', '\\', 'a', 'é', '}', ' ', '\n', '\u{1f}'][next(kinds)])
                    .collect();
                let mut out = b"x".to_vec();
                write_json_as_string(&mut out, &text);
                assert_eq!(out[1..], serde_json::to_vec(&text).unwrap(), "{text:?}");
            }
        }
    }

    #[test]
    fn write_object_writes_what_serde_json_writes_unless_told_otherwise() {
        let value = json!({"a": [1, 2], "b": "\"q\"", "c": {"d": null}});
        let Value::Object(map) = &value else {
            unreachable!()
        };
        let mut plain = Vec::new();
        write_object(&mut plain, map, |_, _, _| false);
        assert_eq!(plain, serde_json::to_vec(&value).unwrap());
        let mut spliced = Vec::new();
        write_object(&mut spliced, map, |out, name, _| {
            name == "a" && {
                out.extend_from_slice(b"[1,2]");
                true
            }
        });
        assert_eq!(spliced, plain);
    }
}
