//! What every invocation of a sandbox shares: the settings, the engine, the authenticator
//! and where metrics go. Its own module so that the request path (`transport.rs`) and the
//! app that owns it (`app.rs`) both read it without reading each other.

use mcp_protocol::Server;

use crate::auth::Authenticator;
use crate::config::Config;
use crate::metrics::{Emf, MetricSink};
use crate::telemetry::Exporter;

pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) server: Server,
    pub(crate) auth: Authenticator,
    pub(crate) metrics: MetricSink,
    /// `None` when metrics are off (`METRICS_NAMESPACE=off`).
    pub(crate) emf: Option<Emf>,
    /// `None` when traces are off (no OTLP endpoint configured).
    pub(crate) telemetry: Option<Exporter>,
}
