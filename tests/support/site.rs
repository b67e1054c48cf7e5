//! A loopback HTTP/1.1 server for tests: each connection carries one request, answered from
//! its method and path (or the whole request) by the handler, or never, when the handler
//! returns `None`.

use std::future::Future;
use std::process::Command;
use std::sync::{Arc, OnceLock};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// A response: status, extra headers (content type and length are added), body.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn json(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }
}

/// A request as the server read it.
pub(crate) struct Incoming {
    pub(crate) method: String,
    pub(crate) path: String,
    /// The request line and headers, as sent.
    pub(crate) head: String,
    pub(crate) body: String,
}

impl Incoming {
    /// A header's value (names compare without case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Serves `listener` until the test ends. The handler gets the method and the path.
pub(crate) fn serve<F, Fut>(listener: TcpListener, handler: F)
where
    F: Fn(String, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Reply>> + Send + 'static,
{
    serve_requests(listener, move |incoming| {
        handler(incoming.method, incoming.path)
    });
}

/// Serves `listener` until the test ends. The handler gets the whole request, its body read
/// as far as `content-length` says.
pub(crate) fn serve_requests<F, Fut>(listener: TcpListener, handler: F)
where
    F: Fn(Incoming) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Reply>> + Send + 'static,
{
    let handler = Arc::new(handler);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer(socket, handler.clone()));
        }
    });
}

/// As [`serve_requests`], over TLS with [`certificate`] (valid for 127.0.0.1 and localhost).
pub(crate) fn serve_requests_tls<F, Fut>(listener: TcpListener, handler: F)
where
    F: Fn(Incoming) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Reply>> + Send + 'static,
{
    let handler = Arc::new(handler);
    let acceptor = tls_acceptor();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (acceptor, handler) = (acceptor.clone(), handler.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(socket).await {
                    answer(tls, handler).await;
                }
            });
        }
    });
}

/// A throwaway certificate authority and a server certificate it issued for 127.0.0.1 and
/// localhost (made with `openssl` once per run; rustls refuses a self-signed CA certificate
/// as a server's own): (the CA's PEM, the server certificate PEM, its private key PEM).
pub(crate) fn certificate() -> &'static (Vec<u8>, Vec<u8>, Vec<u8>) {
    static CERT: OnceLock<(Vec<u8>, Vec<u8>, Vec<u8>)> = OnceLock::new();
    CERT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("site-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
        std::fs::write(
            path("leaf.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ];
        let run = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .output()
                .expect("openssl is installed");
            assert!(out.status.success(), "openssl {args:?}: {out:?}");
        };
        let (ca, ca_key, leaf, leaf_key, csr) = (
            path("ca.pem"),
            path("ca.key"),
            path("leaf.pem"),
            path("leaf.key"),
            path("leaf.csr"),
        );
        run(&[
            &["req", "-x509"][..],
            &ec,
            &["-subj", "/CN=site test CA", "-days", "1"],
            &["-keyout", &ca_key, "-out", &ca],
        ]
        .concat());
        run(&[
            &["req"][..],
            &ec,
            &["-subj", "/CN=127.0.0.1", "-keyout", &leaf_key, "-out", &csr],
        ]
        .concat());
        run(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            &path("leaf.ext"),
            "-out",
            &leaf,
        ]);
        (
            std::fs::read(ca).unwrap(),
            std::fs::read(leaf).unwrap(),
            std::fs::read(leaf_key).unwrap(),
        )
    })
}

fn tls_acceptor() -> tokio_rustls::TlsAcceptor {
    let (_, cert, key) = certificate();
    let certs: Vec<_> = rustls_pemfile::certs(&mut cert.as_slice())
        .collect::<Result<_, _>>()
        .unwrap();
    let key = rustls_pemfile::private_key(&mut key.as_slice())
        .unwrap()
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// Reads one request from `socket` and writes the handler's answer.
async fn answer<S, F, Fut>(mut socket: S, handler: Arc<F>)
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: Fn(Incoming) -> Fut,
    Fut: Future<Output = Option<Reply>>,
{
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0) + 4;
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut words = head.split_whitespace();
    let (Some(method), Some(path)) = (words.next(), words.next()) else {
        return;
    };
    let (method, path) = (method.to_owned(), path.to_owned());
    let mut incoming = Incoming {
        method,
        path,
        head,
        body: String::new(),
    };
    let length: usize = incoming
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[end..].to_vec();
    while body.len() < length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    incoming.body = String::from_utf8_lossy(&body).into_owned();
    let Some(reply) = handler(incoming).await else {
        return;
    };
    let extra: String = reply
        .headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let response = format!(
        "HTTP/1.1 {} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{}",
        reply.status,
        reply.body.len(),
        reply.body
    );
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
}
