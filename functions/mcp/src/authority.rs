//! Strict reading of `Host` (RFC 9110 §7.2: `uri-host [ ":" port ]`) and `Origin` (RFC 6454
//! §7: the serialized origin, `scheme "://" host [ ":" port ]` and nothing else) for the
//! DNS-rebinding and cross-origin guards. A value that is not exactly one of these is not
//! guessed at (userinfo, text after an IPv6 literal, a path, a bad port): the guards refuse
//! it with 403.

use std::net::Ipv6Addr;

/// The host of a `Host` value (or of an origin's authority), lowercased, without its port:
/// a bracketed IPv6 literal or a name of letters, digits, dots and hyphens (which covers
/// IPv4 addresses and DNS names). `None` for anything else.
pub(crate) fn host_of(value: &str) -> Option<String> {
    let value = value.trim().to_ascii_lowercase();
    let (host, port) = match value.strip_prefix('[') {
        Some(rest) => {
            let (inner, after) = rest.split_once(']')?;
            inner.parse::<Ipv6Addr>().ok()?;
            let port = match after {
                "" => None,
                after => Some(after.strip_prefix(':')?),
            };
            (format!("[{inner}]"), port)
        }
        None => match value.split_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (value.clone(), None),
        },
    };
    if let Some(port) = port {
        let digits =
            !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
        if !digits || port.parse::<u32>().ok()? > 65_535 {
            return None;
        }
    }
    let name = |h: &str| {
        !h.is_empty()
            && h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    };
    (host.starts_with('[') || name(&host)).then_some(host)
}

/// The scheme and host of a serialized origin, lowercased; `None` for anything that is not
/// one (`null`, a path or trailing slash, userinfo, a bad authority).
pub(crate) fn origin_of(value: &str) -> Option<(String, String)> {
    let value = value.trim().to_ascii_lowercase();
    let (scheme, authority) = value.split_once("://")?;
    let scheme_ok = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return None;
    }
    Some((scheme.to_owned(), host_of(authority)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_exactly_a_host_and_an_optional_port() {
        for (value, host) in [
            ("LocalHost:9000", "localhost"),
            ("127.0.0.1", "127.0.0.1"),
            ("[::1]:9000", "[::1]"),
            ("[::1]", "[::1]"),
            ("api.example.com:443", "api.example.com"),
        ] {
            assert_eq!(host_of(value).as_deref(), Some(host), "{value}");
        }
        for bad in [
            "localhost@evil.example",
            "127.0.0.1:9000@evil.example",
            "[::1]evil.example",
            "[::1]:9000evil",
            "[::1",
            "[not-an-ip]",
            "127.0.0.1:abc",
            "127.0.0.1:",
            "127.0.0.1:99999",
            "::1",
            "localhost/path",
            "local host",
            "",
        ] {
            assert_eq!(host_of(bad), None, "{bad}");
        }
    }

    #[test]
    fn origins_are_exactly_a_scheme_and_an_authority() {
        assert_eq!(
            origin_of("http://LOCALHOST:6274"),
            Some(("http".into(), "localhost".into()))
        );
        assert_eq!(
            origin_of("https://[::1]:3000"),
            Some(("https".into(), "[::1]".into()))
        );
        for bad in [
            "http://127.0.0.1:9000@evil.example",
            "http://localhost@evil.example",
            "http://[::1]evil.example",
            "http://localhost/",
            "http://localhost/path",
            "null",
            "localhost",
            "://localhost",
            "file://",
        ] {
            assert_eq!(origin_of(bad), None, "{bad}");
        }
    }
}
