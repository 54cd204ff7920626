//! `zarrow cluster scheduler` / `zarrow cluster executor` (feature `cluster`):
//! Ballista 55's scheduler and executor processes with zarrow's codecs, so that
//! plans holding Zarr scans and Zarr writes travel between them; and the client
//! session `zarrow sql --cluster df://HOST:PORT` runs its query in.
//!
//! ```text
//! zarrow sql --cluster ──plan (ZarrLogicalCodec)──▶ scheduler: physical plan,
//!     the scan split into chunk-aligned row ranges, each carrying the metadata
//!     ──tasks (ZarrPhysicalCodec)──▶ executors: each reads its ranges' chunks
//! ```
//!
//! Every process opens stores from its own environment (credentials, endpoints):
//! the client and the scheduler read metadata (and a sorted column to prune),
//! the executors read chunks and write.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::{SchedulerConfig, TaskDistributionPolicy};
use ballista_scheduler::scheduler_process::start_server;
use clap::{Args, Subcommand};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use zarrow::datafusion::{ZarrLogicalCodec, ZarrPhysicalCodec};
use zarrow::{Error, Result};

/// The processes of a Ballista cluster.
#[derive(Subcommand, Debug)]
pub(crate) enum ClusterCommand {
    /// Run a scheduler: it plans the queries clients send (`zarrow sql
    /// --cluster df://HOST:PORT`) and hands their tasks to the executors.
    Scheduler(SchedulerArgs),
    /// Run an executor: it registers with the scheduler and runs the tasks it
    /// is given (with RUST_LOG=info, one log line as each starts and ends).
    Executor(ExecutorArgs),
}

/// Options of `cluster scheduler`.
#[derive(Args, Debug)]
pub(crate) struct SchedulerArgs {
    /// Address to listen on (clients and executors connect to it).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
    bind: SocketAddr,
    /// The host executors and clients reach this scheduler by (default: the
    /// --bind address's).
    #[arg(long)]
    external_host: Option<String>,
    /// Seconds without a heartbeat after which an executor counts as lost:
    /// its tasks run again elsewhere.
    #[arg(long, value_name = "SECONDS", default_value_t = 180)]
    executor_timeout: u64,
}

/// Options of `cluster executor`.
#[derive(Args, Debug)]
pub(crate) struct ExecutorArgs {
    /// The scheduler (its --bind address).
    #[arg(long, value_name = "HOST:PORT")]
    scheduler: String,
    /// Address of this executor's Arrow Flight service: other executors and
    /// clients fetch its results there.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50051")]
    bind: SocketAddr,
    /// Port the scheduler sends tasks to (default: --bind's port + 1).
    #[arg(long)]
    grpc_port: Option<u16>,
    /// The host other processes reach this executor by (default: the address
    /// the scheduler sees it connect from).
    #[arg(long)]
    external_host: Option<String>,
    /// Tasks run at once (default: one per core).
    #[arg(long)]
    concurrent_tasks: Option<usize>,
    /// Seconds between heartbeats to the scheduler (it counts an executor
    /// silent for its --executor-timeout as lost).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    heartbeat: u64,
    /// The most memory this executor's tasks may hold in all (K, M, G suffixes):
    /// sorts and joins spill past it (default: 70% of the machine's).
    #[arg(long, short = 'm', value_name = "SIZE", value_parser = zarrow::options::parse_size)]
    memory_limit: Option<u64>,
    /// Directory for shuffle files (default: a temporary one).
    #[arg(long)]
    work_dir: Option<String>,
}

pub(crate) fn run(command: &ClusterCommand) -> Result<()> {
    init_log();
    // A process of its own: the command line's one runtime is the one its
    // services run on.
    let runtime = crate::runtime()?;
    match command {
        ClusterCommand::Scheduler(args) => runtime.block_on(scheduler(args)),
        ClusterCommand::Executor(args) => runtime.block_on(executor(args)),
    }
}

/// Ballista logs through `log`: RUST_LOG filters it (default: info).
fn init_log() {
    let env = env_logger::Env::default().default_filter_or("info");
    // Fails only when a logger is set already.
    let _ = env_logger::Builder::from_env(env).try_init();
}

fn logical_codec() -> Arc<ZarrLogicalCodec> {
    Arc::new(ZarrLogicalCodec::new(Arc::new(
        BallistaLogicalExtensionCodec::default(),
    )))
}

fn physical_codec() -> Arc<ZarrPhysicalCodec> {
    Arc::new(ZarrPhysicalCodec::new(Arc::new(
        BallistaPhysicalExtensionCodec::default(),
    )))
}

fn cluster_error(what: String, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Remote {
        location: what,
        source: Box::new(e),
    }
}

async fn scheduler(args: &SchedulerArgs) -> Result<()> {
    let host = args
        .external_host
        .clone()
        .unwrap_or_else(|| args.bind.ip().to_string());
    let mut config = SchedulerConfig::default()
        .with_hostname(host)
        .with_port(args.bind.port())
        // Each executor gets tasks in turn, not the first one all it can take.
        .with_task_distribution(TaskDistributionPolicy::RoundRobin)
        .with_no_executors_grace_period_seconds(args.executor_timeout);
    config.bind_host = args.bind.ip().to_string();
    config.executor_timeout_seconds = args.executor_timeout;
    config.expire_dead_executor_interval_seconds = args.executor_timeout.clamp(1, 15);
    config.override_logical_codec = Some(logical_codec());
    config.override_physical_codec = Some(physical_codec());
    let what = format!("scheduler on {}", args.bind);
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| cluster_error(what.clone(), e))?;
    start_server(cluster, args.bind, Arc::new(config))
        .await
        .map_err(|e| cluster_error(what, e))
}

async fn executor(args: &ExecutorArgs) -> Result<()> {
    let (scheduler_host, scheduler_port) = host_port(&args.scheduler)?;
    let grpc_port = match args.grpc_port {
        Some(port) => port,
        None => args.bind.port().checked_add(1).ok_or_else(|| {
            Error::Option(zarrow::ParseOptionError {
                option: "--bind",
                value: args.bind.to_string(),
                allowed: "a port below 65535, or give --grpc-port (there is no port after it)",
            })
        })?,
    };
    let mut config = ExecutorProcessConfig {
        bind_host: args.bind.ip().to_string(),
        external_host: args.external_host.clone(),
        port: args.bind.port(),
        grpc_port,
        scheduler_host,
        scheduler_port,
        // Keep trying while the scheduler starts.
        scheduler_connect_timeout_seconds: 30,
        executor_heartbeat_interval_seconds: args.heartbeat.max(1),
        work_dir: args.work_dir.clone(),
        memory_pool_size: args.memory_limit,
        override_logical_codec: Some(logical_codec()),
        override_physical_codec: Some(physical_codec()),
        ..Default::default()
    };
    if let Some(n) = args.concurrent_tasks {
        config.vcores = n.max(1);
    }
    let what = format!("executor on {}", args.bind);
    start_executor_process(Arc::new(config))
        .await
        .map_err(|e| cluster_error(what, e))
}

/// `HOST:PORT`, the host a name or an address.
fn host_port(s: &str) -> Result<(String, u16)> {
    let bad = || {
        Error::Option(zarrow::ParseOptionError {
            option: "--scheduler",
            value: s.to_string(),
            allowed: "HOST:PORT",
        })
    };
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let port = port.parse().map_err(|_| bad())?;
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

/// The session of a query run on the cluster whose scheduler is at `url`
/// (`df://HOST:PORT`): zarrow's codecs, `partitions` per scan.
pub(crate) async fn client(url: &str, partitions: Option<usize>) -> Result<SessionContext> {
    if !url.starts_with("df://") {
        return Err(Error::Option(zarrow::ParseOptionError {
            option: "--cluster",
            value: url.to_string(),
            allowed: "df://HOST:PORT (the scheduler's --bind)",
        }));
    }
    let mut config = SessionConfig::new_with_ballista()
        .with_ballista_logical_extension_codec(logical_codec())
        .with_ballista_physical_extension_codec(physical_codec());
    if let Some(n) = partitions {
        config = config.with_target_partitions(n.max(1));
    }
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .build();
    // Ballista's client retries a scheduler that is not up yet; bound it.
    let connect = SessionContext::remote_with_state(url, state);
    match tokio::time::timeout(Duration::from_secs(60), connect).await {
        Ok(ctx) => ctx.map_err(|e| cluster_error(url.to_string(), e)),
        Err(_) => Err(Error::Remote {
            location: url.to_string(),
            source: "no scheduler answered within 60 s".into(),
        }),
    }
}
