//! Cold start: configuration, the engine, then the runtime loop.

/// A tools/call builds and serialises a tree of small JSON values per request; glibc's
/// malloc took about a fifth of the handler's CPU under load (perf, `bench/run`), mimalloc
/// a tenth of that. Built without transparent huge pages (the `no_thp` feature): the
/// 2 MiB pages the kernel gave its madvised arenas were a third of the peak RSS of bench's
/// 16 sandboxes, for no measurable CPU. Every binary that serves or measures this handler
/// (bench's `serve`, `floor` and `hot_path`) declares the same allocator, built the same way.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mcp::init_tracing();
    mcp::run(mcp::app_from_env().await?).await
}
