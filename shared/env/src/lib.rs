//! Configuration from environment variables, read once at cold start. Every configuration
//! reader (the function's, the verifier's, the database's) goes through [`Env`], so a value
//! is trimmed, parsed and refused the same way everywhere, and every refusal names its
//! variable and what it expected.
//!
//! Readers take any name → value lookup, so tests pass a map instead of touching the
//! process environment.

use std::str::FromStr;
use std::time::Duration;

/// A variable whose value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} must be {expected}, got {value:?}")]
pub struct EnvError {
    pub name: &'static str,
    pub expected: &'static str,
    pub value: String,
}

/// A name → value lookup with typed readers.
pub struct Env<F> {
    get: F,
}

impl Env<fn(&str) -> Option<String>> {
    /// The process environment.
    pub fn process() -> Self {
        Self {
            get: |name| std::env::var(name).ok(),
        }
    }
}

impl<F: Fn(&str) -> Option<String>> Env<F> {
    pub fn new(get: F) -> Self {
        Self { get }
    }

    /// The value as set, untouched.
    pub fn var(&self, name: &str) -> Option<String> {
        (self.get)(name)
    }

    /// The value, trimmed; unset and blank are both `None`.
    pub fn text(&self, name: &str) -> Option<String> {
        self.var(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// The value parsed as `T`; `expected` says what a good value is, for the error.
    ///
    /// # Errors
    ///
    /// [`EnvError`] when set but not parseable.
    pub fn parsed<T: FromStr>(
        &self,
        name: &'static str,
        expected: &'static str,
    ) -> Result<Option<T>, EnvError> {
        match self.var(name) {
            None => Ok(None),
            Some(value) => value.trim().parse().map(Some).map_err(|_| EnvError {
                name,
                expected,
                value,
            }),
        }
    }

    /// Like [`Env::parsed`], with the value used when unset.
    ///
    /// # Errors
    ///
    /// [`EnvError`] when set but not parseable.
    pub fn parsed_or<T: FromStr>(
        &self,
        name: &'static str,
        expected: &'static str,
        default: T,
    ) -> Result<T, EnvError> {
        Ok(self.parsed(name, expected)?.unwrap_or(default))
    }

    /// A duration given in whole milliseconds.
    ///
    /// # Errors
    ///
    /// [`EnvError`] when set but not a count of milliseconds.
    pub fn millis(&self, name: &'static str, default: Duration) -> Result<Duration, EnvError> {
        Ok(self
            .parsed::<u64>(name, "milliseconds")?
            .map_or(default, Duration::from_millis))
    }

    /// A duration given in whole seconds.
    ///
    /// # Errors
    ///
    /// [`EnvError`] when set but not a count of seconds.
    pub fn seconds(&self, name: &'static str, default: Duration) -> Result<Duration, EnvError> {
        Ok(self
            .parsed::<u64>(name, "seconds")?
            .map_or(default, Duration::from_secs))
    }

    /// A comma-separated list, items trimmed, empty items dropped.
    pub fn list(&self, name: &str) -> Option<Vec<String>> {
        self.var(name).map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
    }

    /// A switch: on for `true`, `1` or `yes` (any case), off otherwise and when unset.
    pub fn flag(&self, name: &str) -> bool {
        self.text(name).is_some_and(|v| {
            ["true", "1", "yes"]
                .iter()
                .any(|on| v.eq_ignore_ascii_case(on))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env<impl Fn(&str) -> Option<String>> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env::new(move |name: &str| map.get(name).cloned())
    }

    #[test]
    fn values_are_trimmed_and_blank_is_unset() {
        let e = env(&[("A", "  x "), ("B", "   ")]);
        assert_eq!(e.text("A").as_deref(), Some("x"));
        assert_eq!(e.text("B"), None);
        assert_eq!(e.text("C"), None);
        assert_eq!(e.var("A").as_deref(), Some("  x "));
    }

    #[test]
    fn parse_errors_name_the_variable_and_the_expectation() {
        let e = env(&[("N", " 42 "), ("BAD", "lots")]);
        assert_eq!(e.parsed::<u32>("N", "a count"), Ok(Some(42)));
        assert_eq!(e.parsed_or::<u32>("UNSET", "a count", 7), Ok(7));
        let err = e.parsed::<u32>("BAD", "a count").unwrap_err();
        assert_eq!(err.to_string(), "BAD must be a count, got \"lots\"");
        assert_eq!(e.millis("N", Duration::ZERO), Ok(Duration::from_millis(42)));
        assert_eq!(e.seconds("N", Duration::ZERO), Ok(Duration::from_secs(42)));
        assert!(
            e.millis("BAD", Duration::ZERO)
                .unwrap_err()
                .to_string()
                .contains("milliseconds")
        );
    }

    #[test]
    fn lists_and_flags() {
        let e = env(&[("L", " a, b ,,c "), ("F", "Yes"), ("G", "no")]);
        assert_eq!(e.list("L"), Some(vec!["a".into(), "b".into(), "c".into()]));
        assert_eq!(e.list("M"), None);
        assert!(e.flag("F"));
        assert!(!e.flag("G"));
        assert!(!e.flag("H"));
    }
}
