//! The sample event store: a deterministic generator of realistic events (30 days of
//! deploys, alerts, errors, config changes and incidents over 12 services and 20 hosts), the
//! same for every run, so that tests and benchmarks can name what they expect to find.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

/// Event types of the sample: (name, description, field schema of `structured`).
pub const EVENT_TYPES: &[(&str, &str, &str)] = &[
    (
        "deploy.started",
        "A deployment of a service version began",
        r#"{"type":"object","properties":{"version":{"type":"string"},"actor":{"type":"string"}}}"#,
    ),
    (
        "deploy.finished",
        "A deployment completed, successfully or not",
        r#"{"type":"object","properties":{"version":{"type":"string"},"outcome":{"enum":["success","failure","rolled_back"]}}}"#,
    ),
    (
        "alert.fired",
        "A monitoring alert started firing",
        r#"{"type":"object","properties":{"alert":{"type":"string"},"value":{"type":"number"},"threshold":{"type":"number"}}}"#,
    ),
    (
        "alert.resolved",
        "A monitoring alert stopped firing",
        r#"{"type":"object","properties":{"alert":{"type":"string"},"duration_s":{"type":"integer"}}}"#,
    ),
    (
        "error.logged",
        "An application logged an error",
        r#"{"type":"object","properties":{"error_class":{"type":"string"},"count":{"type":"integer"},"message":{"type":"string"}}}"#,
    ),
    (
        "config.changed",
        "A configuration value changed",
        r#"{"type":"object","properties":{"key":{"type":"string"},"actor":{"type":"string"}}}"#,
    ),
    (
        "incident.opened",
        "An incident was declared",
        r#"{"type":"object","properties":{"title":{"type":"string"},"commander":{"type":"string"}}}"#,
    ),
];

/// A small deterministic generator (xorshift64*): sample data must be the same every run.
/// Public for the tests that generate stores of their own from a printed seed.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// One generated event, as the columns of `events` take it.
#[derive(Debug, Clone)]
pub struct SampleEvent {
    pub entity_id: String,
    pub entity_type: &'static str,
    pub event_type: &'static str,
    pub severity: i16,
    pub occurred_at: Timestamp,
    pub tags: Vec<String>,
    pub payload: Value,
    pub structured: Value,
    pub ai_summary: Option<String>,
}

/// The events of one tenant of the sample, oldest first: `n` events spread over the 30 days
/// before `until`. The `tenant`-th tenant of a load gets its own sequence (the generator is
/// seeded from its position), so two loads of the same tenants hold the same events.
#[derive(Debug, Clone)]
pub struct SampleEvents {
    rng: Rng,
    services: Vec<String>,
    hosts: Vec<String>,
    next: usize,
    n: usize,
    until: Timestamp,
}

impl SampleEvents {
    /// The sequence of the `tenant`-th tenant of a load.
    pub fn new(tenant: usize, n: usize, until: Timestamp) -> Self {
        let services = (0..12)
            .map(|i| {
                let name = [
                    "checkout",
                    "payments",
                    "search",
                    "auth",
                    "inventory",
                    "email",
                ][i % 6];
                format!("svc-{name}-{}", i / 6 + 1)
            })
            .collect();
        Self {
            rng: Rng(0x9e37_79b9_7f4a_7c15 ^ (tenant as u64 + 1)),
            services,
            hosts: (0..20).map(|i| format!("host-{:02}", i + 1)).collect(),
            next: 0,
            n,
            until,
        }
    }
}

impl Iterator for SampleEvents {
    type Item = SampleEvent;

    fn next(&mut self) -> Option<SampleEvent> {
        let (i, n) = (self.next, self.n);
        if i >= n {
            return None;
        }
        self.next += 1;
        let rng = &mut self.rng;
        // Spread events over 30 days, newest last, with jitter.
        let back = SignedDuration::from_secs(
            ((n - i) as i64 * 30 * 86_400) / n as i64 + rng.below(600) as i64,
        );
        let occurred_at = self.until.checked_sub(back).unwrap_or(self.until);
        let (entity_id, entity_type) = if rng.below(3) == 0 {
            (rng.pick(&self.hosts).clone(), "host")
        } else {
            (rng.pick(&self.services).clone(), "service")
        };
        let (event_type, _, _) = *rng.pick(EVENT_TYPES);
        let severity: i16 = match event_type {
            "incident.opened" => 5,
            "alert.fired" => [3, 4, 4, 5][rng.below(4) as usize],
            "error.logged" => [3, 4][rng.below(2) as usize],
            "deploy.finished" if rng.below(10) == 0 => 4,
            "config.changed" => 2,
            // Deploy steps are chatty: half of their starts are debug-level, so the
            // sample holds every severity the schema knows (0 = debug).
            "deploy.started" => rng.below(2) as i16,
            _ => 1,
        };
        let region = ["eu-west-1", "us-east-1", "ap-south-1"][rng.below(3) as usize];
        let mut tags = vec![
            format!("region:{region}"),
            format!(
                "team:{}",
                ["core", "growth", "platform"][rng.below(3) as usize]
            ),
        ];
        if severity >= 4 {
            tags.push("paging".into());
        }
        let version = format!("1.{}.{}", rng.below(40), rng.below(10));
        let structured = match event_type {
            "deploy.started" => json!({"version": version, "actor": "ci"}),
            "deploy.finished" => {
                json!({"version": version, "outcome": if severity >= 4 { "failure" } else { "success" }})
            }
            "alert.fired" => {
                json!({"alert": "p99_latency_ms", "value": 200 + rng.below(2000), "threshold": 500})
            }
            "alert.resolved" => json!({"alert": "p99_latency_ms", "duration_s": rng.below(3600)}),
            "error.logged" => {
                let class =
                    ["TimeoutError", "ConnectionReset", "NullPointer"][rng.below(3) as usize];
                // A sentence a person would search for (no draw from the generator, so the
                // rest of the sample is unchanged).
                let message = match class {
                    "TimeoutError" => "upstream timeout after 3000 ms waiting for a response",
                    "ConnectionReset" => "connection reset by peer while talking to the database",
                    _ => "null reference while rendering the order summary",
                };
                json!({"error_class": class, "count": 1 + rng.below(50), "message": message})
            }
            "config.changed" => json!({"key": "pool.max_connections", "actor": "oncall"}),
            _ => json!({"title": format!("Elevated errors on {entity_id}"), "commander": "oncall"}),
        };
        let payload =
            json!({"source": "sample", "seq": i, "raw": {"region": region, "detail": structured}});
        let ai_summary = (severity >= 3).then(|| {
            format!("{event_type} on {entity_id} ({region}), severity {severity}: {structured}")
        });
        Some(SampleEvent {
            entity_id,
            entity_type,
            event_type,
            severity,
            occurred_at,
            tags,
            payload,
            structured,
            ai_summary,
        })
    }
}
