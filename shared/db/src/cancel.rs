//! Cancel requests that survive a pooling proxy.
//!
//! tokio-postgres closes a cancel connection as soon as the request is written. PostgreSQL
//! does not mind, but PgBouncer (and proxies built like it) forwards a cancel over a
//! server connection it opens *after* reading the request, and forgets the request when
//! the requesting client has gone by then: the statement runs on. So the stream handed to
//! tokio-postgres here does not close when asked to; it is given back on drop, and we wait
//! for the proxy to close it, which it does once the cancel is delivered.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::{CancelToken, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::{DbError, TlsMode, tls};

/// Sends `token`'s cancel request to `host:port` and waits for the peer to close the
/// connection (the sign that the request was taken). Unbounded: the caller bounds it.
pub(crate) async fn send(
    token: &CancelToken,
    host: &str,
    port: u16,
    mode: &TlsMode,
) -> Result<(), DbError> {
    let io = |e: io::Error| DbError::Tls(format!("cancel request: {e}"));
    let socket = TcpStream::connect((host, port)).await.map_err(io)?;
    let lost = |_| DbError::Tls("cancel stream lost".into());
    match mode {
        TlsMode::Disable => {
            let (back, returned) = oneshot::channel();
            let stream = Held::new(socket, back);
            token
                .cancel_query_raw(stream, NoTls)
                .await
                .map_err(DbError::Query)?;
            let mut stream = returned.await.map_err(lost)?;
            drain(&mut stream).await;
        }
        TlsMode::VerifyFull { roots } => {
            let mut make = tls::connector(roots)?;
            let (back, returned) = oneshot::channel();
            let Ok(connect) =
                <MakeRustlsConnect as MakeTlsConnect<TcpStream>>::make_tls_connect(&mut make, host);
            token
                .cancel_query_raw(
                    socket,
                    HoldingTls {
                        inner: connect,
                        back,
                    },
                )
                .await
                .map_err(DbError::Query)?;
            let mut stream = returned.await.map_err(lost)?;
            drain(&mut stream).await;
        }
    }
    Ok(())
}

/// Reads until the peer closes (or the read fails).
async fn drain<S: AsyncRead + Unpin>(stream: &mut S) {
    let mut sink = [0u8; 64];
    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
}

/// A stream that ignores `shutdown` and goes back through `back` when dropped.
struct Held<S> {
    inner: Option<S>,
    back: Option<oneshot::Sender<S>>,
}

impl<S> Held<S> {
    fn new(inner: S, back: oneshot::Sender<S>) -> Self {
        Self {
            inner: Some(inner),
            back: Some(back),
        }
    }

    fn get(&mut self) -> io::Result<&mut S> {
        self.inner
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "stream handed back"))
    }
}

impl<S> Drop for Held<S> {
    fn drop(&mut self) {
        if let (Some(inner), Some(back)) = (self.inner.take(), self.back.take()) {
            let _ = back.send(inner);
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Held<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut().get() {
            Ok(inner) => Pin::new(inner).poll_read(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Held<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut().get() {
            Ok(inner) => Pin::new(inner).poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().get() {
            Ok(inner) => Pin::new(inner).poll_flush(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    /// The whole point: the connection stays open until the peer closes it.
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl<S: TlsStream + Unpin> TlsStream for Held<S> {
    fn channel_binding(&self) -> ChannelBinding {
        match &self.inner {
            Some(inner) => inner.channel_binding(),
            None => ChannelBinding::none(),
        }
    }
}

/// A TLS connector whose stream is [`Held`]: the TLS close is skipped as well as the TCP one
/// (PgBouncer takes a TLS close_notify as the client leaving).
struct HoldingTls<T, S> {
    inner: T,
    back: oneshot::Sender<S>,
}

impl<T> TlsConnect<TcpStream> for HoldingTls<T, T::Stream>
where
    T: TlsConnect<TcpStream> + Send + 'static,
    T::Stream: Send + 'static,
    T::Future: Send + 'static,
{
    type Stream = Held<T::Stream>;
    type Error = T::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Stream, T::Error>> + Send>>;

    fn connect(self, stream: TcpStream) -> Self::Future {
        let Self { inner, back } = self;
        Box::pin(async move {
            let stream = inner.connect(stream).await?;
            Ok(Held::new(stream, back))
        })
    }
}
