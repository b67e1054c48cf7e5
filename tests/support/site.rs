//! A loopback HTTP/1.1 server for tests: each connection carries one request, answered from
//! its method and path (or the whole request) by the handler, or never, when the handler
//! returns `None`.

use std::future::Future;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
    Fut: Future<Output = Option<Reply>> + Send,
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
    Fut: Future<Output = Option<Reply>> + Send,
{
    let handler = Arc::new(handler);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let handler = handler.clone();
            tokio::spawn(async move {
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
            });
        }
    });
}
