//! A TCP proxy on 127.0.0.1 that can misbehave on demand, put between the endpoint and
//! PgBouncer or PostgreSQL (toxiproxy and tc netem are not available here).
//!
//! Faults: `blackhole` (bytes are accepted and held, nothing is delivered either way, as
//! when a network path or a proxy hangs; released when the blackhole lifts), `reset`
//! (every open connection is dropped at once) and `down` (new connections are closed as
//! soon as they arrive, as when the service behind is stopped), `latency` (every chunk is
//! delayed, both ways) and `cut_after` (a new connection's server-to-client stream is closed
//! after that many bytes, as when a path dies mid-result). `live()` counts open connections, so a test
//! can show that nothing leaks; `turns()` counts round trips (see [`Turns`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

pub(crate) struct FaultProxy {
    pub(crate) port: u16,
    blackhole: watch::Sender<bool>,
    reset: watch::Sender<u64>,
    live: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    latency_ms: Arc<AtomicUsize>,
    cut_after: Arc<AtomicUsize>,
    turns: Arc<Turns>,
    accept: tokio::task::JoinHandle<()>,
}

/// Round trips the clients started: a chunk from a client that follows a chunk from the
/// server (or is the first) is a new turn. TLS hides the statements, but not who speaks
/// when: a client that pipelines its statements speaks once and then only listens.
#[derive(Default)]
struct Turns {
    client_spoke_last: AtomicBool,
    count: AtomicUsize,
}

impl Turns {
    fn heard(&self, from_client: bool) {
        if self.client_spoke_last.swap(from_client, Ordering::SeqCst) != from_client && from_client
        {
            self.count.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl FaultProxy {
    /// Starts a proxy to `127.0.0.1:target`.
    pub(crate) async fn start(target: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (blackhole, _) = watch::channel(false);
        let (reset, _) = watch::channel(0u64);
        let live = Arc::new(AtomicUsize::new(0));
        let down = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let latency_ms = Arc::new(AtomicUsize::new(0));
        let cut_after = Arc::new(AtomicUsize::new(usize::MAX));
        let turns = Arc::new(Turns::default());
        let (hole, resets, count) = (blackhole.clone(), reset.clone(), live.clone());
        let (is_down, seen) = (down.clone(), accepted.clone());
        let (delay, cut, said) = (latency_ms.clone(), cut_after.clone(), turns.clone());
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                seen.fetch_add(1, Ordering::SeqCst);
                if is_down.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let (hole, mut reset_rx) = (hole.subscribe(), resets.subscribe());
                let count = count.clone();
                let delay = delay.clone();
                let limit = cut.load(Ordering::SeqCst);
                let said = said.clone();
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    let mut pumps = JoinSet::new();
                    let to_server = Side {
                        hole: hole.clone(),
                        delay: delay.clone(),
                        budget: usize::MAX,
                        from_client: true,
                        turns: said.clone(),
                    };
                    let to_client = Side {
                        hole,
                        delay,
                        budget: limit,
                        from_client: false,
                        turns: said,
                    };
                    pumps.spawn(pump(cr, sw, to_server));
                    pumps.spawn(pump(sr, cw, to_client));
                    tokio::select! {
                        // Either side closing ends the connection, as a real proxy would.
                        _ = pumps.join_next() => {}
                        _ = reset_rx.changed() => {}
                    }
                    pumps.abort_all();
                    count.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Self {
            port,
            blackhole,
            reset,
            live,
            down,
            accepted,
            latency_ms,
            cut_after,
            turns,
            accept,
        }
    }

    /// Delays every chunk by `ms` milliseconds, both ways (0: no delay).
    pub(crate) fn latency(&self, ms: usize) {
        self.latency_ms.store(ms, Ordering::SeqCst);
    }

    /// Connections made from now on close their server-to-client stream after `bytes`
    /// (`usize::MAX`: never).
    pub(crate) fn cut_after(&self, bytes: usize) {
        self.cut_after.store(bytes, Ordering::SeqCst);
    }

    /// Closes new connections at once (`true`), as when the service behind is stopped, or
    /// serves them again (`false`).
    pub(crate) fn down(&self, on: bool) {
        self.down.store(on, Ordering::SeqCst);
    }

    /// Connections accepted so far, served or not.
    pub(crate) fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Holds every byte in both directions (`true`) or delivers again (`false`).
    pub(crate) fn blackhole(&self, on: bool) {
        self.blackhole.send_replace(on);
    }

    /// Drops every open connection.
    pub(crate) fn reset(&self) {
        self.reset.send_modify(|n| *n += 1);
    }

    /// Round trips started by clients so far, over every connection (see [`Turns`]).
    pub(crate) fn turns(&self) -> usize {
        self.turns.count.load(Ordering::SeqCst)
    }

    /// Open connections through the proxy.
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.reset();
    }
}

/// One direction of a proxied connection.
struct Side {
    hole: watch::Receiver<bool>,
    delay: Arc<AtomicUsize>,
    /// Bytes this direction delivers before it closes.
    budget: usize,
    from_client: bool,
    turns: Arc<Turns>,
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    side: Side,
) {
    let Side {
        mut hole,
        delay,
        mut budget,
        from_client,
        turns,
    } = side;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let Ok(n) = from.read(&mut buf).await else {
            return;
        };
        if n == 0 {
            return;
        }
        turns.heard(from_client);
        // Held, not dropped: TCP would retransmit until the path comes back.
        if hole.wait_for(|on| !on).await.is_err() {
            return;
        }
        let ms = delay.load(Ordering::SeqCst);
        if ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(ms as u64)).await;
        }
        let n = n.min(budget);
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
        budget -= n;
        if budget == 0 {
            return;
        }
    }
}
