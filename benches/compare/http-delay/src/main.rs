//! W9's server (`benches/compare/remote.py`): serves the files under ROOT on
//! 127.0.0.1 (a free port, printed as `port N` on stdout), with HTTP ranges
//! (tower-http's `ServeDir`), and holds every request back DELAY_MS milliseconds
//! before answering it: the "proxy that adds 20 ms to every request",
//! without a Python relay of every byte competing with zarrow for the two cores.
//! `GET /__requests` answers how many requests were served (not counting itself).
//! Stops when its standard input closes (the harness exiting or closing it).
//!
//!     http-delay ROOT DELAY_MS

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::Response;
use axum::routing::get;
use tokio::io::AsyncReadExt;
use tower_http::services::ServeDir;

#[derive(Clone)]
struct Delay {
    delay: Duration,
    served: Arc<AtomicUsize>,
}

async fn delayed(State(state): State<Delay>, request: Request, next: Next) -> Response {
    state.served.fetch_add(1, Ordering::Relaxed);
    tokio::time::sleep(state.delay).await;
    next.run(request).await
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, root, delay_ms] = args.as_slice() else {
        eprintln!("usage: http-delay ROOT DELAY_MS");
        std::process::exit(2);
    };
    let delay_ms: u64 = delay_ms.parse().map_err(std::io::Error::other)?;
    let state = Delay {
        delay: Duration::from_millis(delay_ms),
        served: Arc::default(),
    };
    let served = state.served.clone();
    let files = Router::new()
        .fallback_service(ServeDir::new(root).with_buf_chunk_size(1 << 20))
        .layer(from_fn_with_state(state, delayed));
    let app = Router::new()
        .route(
            "/__requests",
            get(move || async move { served.load(Ordering::Relaxed).to_string() }),
        )
        .merge(files);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("port {}", listener.local_addr()?.port());
    let stdin_closed = async {
        let mut sink = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    };
    axum::serve(listener, app)
        .with_graceful_shutdown(stdin_closed)
        .await
}
