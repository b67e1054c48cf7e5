//! rustls for the database connection: our roots only, ring provider, no platform store.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::DbError;

/// Parses a PEM bundle into trust roots.
pub fn parse_roots(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &pem[..])
        .collect::<Result<_, _>>()
        .map_err(|e| format!("not a PEM certificate bundle: {e}"))?;
    if certs.is_empty() {
        return Err("holds no certificate".into());
    }
    Ok(certs)
}

pub(crate) fn connector(roots: &[CertificateDer<'static>]) -> Result<MakeRustlsConnect, DbError> {
    let mut store = rustls::RootCertStore::empty();
    for cert in roots {
        store
            .add(cert.clone())
            .map_err(|e| DbError::Tls(format!("a CA certificate was refused: {e}")))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| DbError::Tls(e.to_string()))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_aws_bundle_loads_into_a_connector() {
        let pem = include_bytes!("../../../infra/certs/aws-rds-and-proxy-ca-bundle.pem");
        let roots = parse_roots(pem).expect("the bundle parses");
        assert_eq!(roots.len(), 110);
        assert!(connector(&roots).is_ok());
    }

    #[test]
    fn non_certificates_are_refused() {
        assert!(parse_roots(b"").is_err());
        assert!(
            parse_roots(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").is_err()
        );
    }
}
