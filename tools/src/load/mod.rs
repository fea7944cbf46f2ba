//! `turnstile load`: a closed-loop HTTP load generator, like Locust users with no wait time.
//!
//! `--users` users are started at `--spawn-rate` per second; each POSTs the JSON `--body` to
//! `--url`, waits for the whole response, records it, and at once sends the next, until
//! `--duration` (ramp-up included) has passed. Requests still in flight then are awaited (bounded
//! by `--timeout-s`) and counted. Progress is shown live on stderr; at the end a table is
//! printed and `DIR/summary.json`, `DIR/chart.svg` (and `DIR/chart.png` when a font is
//! available) are written. See `docs/LOAD.md`.
//!
//! - [`plan`]: the flags, validated;
//! - `user`: the closed loop;
//! - `stats`: bounded measurements (HDR histograms, 100 ms bins, per-second records);
//! - `progress`: the live display;
//! - [`summary`]: what a run produced; `report`: the table and the JSON file; `chart`: the chart.

mod chart;
pub mod plan;
mod progress;
mod report;
mod stats;
pub mod summary;
mod user;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Args;
use tokio::sync::watch;

pub use chart::{PNG_FILE, SVG_FILE};
pub use plan::{DEFAULT_BODY, FlagError};
pub use report::{SUMMARY_FILE, table};
pub use summary::Summary;

use plan::Plan;
use progress::{Phase, Progress};
use summary::Ending;
use user::Shared;

/// How often the live display and the per-second records are refreshed.
const TICK: Duration = Duration::from_millis(250);
/// Beyond the request timeout, how long the end of the run waits for users to finish.
const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// Flags of `turnstile load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// URL to POST to (http:// only), e.g. http://127.0.0.1:8080/retrieve.
    #[arg(long, value_name = "URL", value_parser = plan::url)]
    pub url: String,

    /// Concurrent users, 1..=10000; each sends its next request as soon as the last one ends.
    #[arg(long, value_name = "N", value_parser = plan::users, allow_negative_numbers = true)]
    pub users: u32,

    /// Users started per second (more than 0, at most 10000); user i starts at i / RATE seconds.
    #[arg(long = "spawn-rate", value_name = "RATE", default_value = "1", value_parser = plan::spawn_rate, allow_negative_numbers = true)]
    pub spawn_rate: f64,

    /// Total run time in seconds, ramp-up included (more than 0, at most 86400).
    #[arg(long, value_name = "SECONDS", value_parser = plan::duration, allow_negative_numbers = true)]
    pub duration: f64,

    /// JSON body of every request (sent as is, with content-type application/json).
    #[arg(long, value_name = "JSON", default_value = DEFAULT_BODY, value_parser = plan::body)]
    pub body: String,

    /// A question mix instead of `--body`: a file of JSON bodies, one per line (each sent as is,
    /// e.g. `{"question": "...", "limit": 5}`; blank lines skipped; at most 100,000 lines). The
    /// users take them in turn: request n of the run sends line n modulo their number.
    #[arg(long, value_name = "FILE.jsonl", conflicts_with = "body")]
    pub bodies: Option<PathBuf>,

    /// Directory for summary.json, chart.svg and chart.png (created if missing).
    #[arg(long, value_name = "DIR")]
    pub output: PathBuf,

    /// Per-request timeout in seconds, connect to last body byte (more than 0, at most 3600).
    #[arg(long = "timeout-s", value_name = "SECONDS", default_value = "60", value_parser = plan::timeout, allow_negative_numbers = true)]
    pub timeout_s: f64,

    /// No live progress (the final table is still printed).
    #[arg(long)]
    pub quiet: bool,
}

/// Runs `turnstile load` from the command line: a first Ctrl-C stops sending early (the run is
/// still reported), a second one abandons the requests in flight.
pub fn run(args: &LoadArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let summary = runtime.block_on(run_load_until(args, || async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }))?;
    print!("{}", table(&summary));
    Ok(())
}

/// Runs the load and writes the output files; returns the summary (nothing is printed but the
/// live progress, unless `quiet`).
pub async fn run_load(args: &LoadArgs) -> anyhow::Result<Summary> {
    run_load_until(args, std::future::pending::<()>).await
}

/// [`run_load`], stopping early when `interrupt()` resolves: the first time, users stop sending;
/// the second time (while in-flight requests are awaited), they are abandoned.
pub async fn run_load_until<F, Fut>(args: &LoadArgs, mut interrupt: F) -> anyhow::Result<Summary>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let plan = Plan::from_args(args)?;
    prepare_output(&plan)?;
    let client = reqwest::Client::builder()
        .timeout(plan.timeout)
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(plan.users as usize)
        .build()?;
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let shared = Arc::new(Shared::new(
        client,
        plan.url.clone(),
        plan.bodies.clone(),
        plan.duration,
    )?);
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut driver = tokio::spawn(user::drive(
        Arc::clone(&shared),
        plan.users,
        plan.spawn_rate,
        stop_rx,
    ));
    let mut progress = Progress::new(plan.quiet, plan.users, plan.duration);
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

    // Load: until the duration ends (or an interrupt).
    let interrupted = {
        let deadline = tokio::time::sleep_until(shared.deadline.into());
        let interrupt = interrupt();
        tokio::pin!(deadline, interrupt);
        loop {
            tokio::select! {
                _ = &mut deadline => break false,
                _ = &mut interrupt => break true,
                _ = tick.tick() => progress.update(&shared, Phase::Load),
            }
        }
    };
    shared.stop();
    let _ = stop_tx.send(true);
    let load_end = shared.now().min(plan.duration);
    let in_flight_at_end = u64::from(shared.in_flight.load(Ordering::Acquire));

    // Drain: await the requests in flight (each bounded by the client timeout).
    let abandoned = {
        let limit = tokio::time::sleep(plan.timeout + DRAIN_GRACE);
        let interrupt = interrupt();
        tokio::pin!(limit, interrupt);
        loop {
            tokio::select! {
                joined = &mut driver => {
                    if let Err(e) = joined {
                        tracing::error!(error = %e, "the load driver failed");
                    }
                    break 0;
                }
                _ = &mut limit => break abandon(&mut driver, &shared).await,
                _ = &mut interrupt => break abandon(&mut driver, &shared).await,
                _ = tick.tick() => progress.update(&shared, Phase::Drain),
            }
        }
    };
    progress.finish();

    let ending = Ending {
        started_unix_s,
        interrupted,
        load_end,
        in_flight_at_end,
        abandoned,
        users_started: shared.started.load(Ordering::Acquire),
    };
    let mut summary = {
        let mut stats = shared.stats();
        stats.close_all();
        Summary::build(&plan, &stats, &ending)
    };
    let output = plan.output.clone();
    let for_chart = summary.clone();
    summary.charts = tokio::task::spawn_blocking(move || chart::write(&output, &for_chart)).await?;
    report::write_json(&plan.output, &summary)?;
    if let Some(why) = &summary.charts.svg_error {
        anyhow::bail!(
            "{} written, but {SVG_FILE} failed: {why}",
            plan.output.join(SUMMARY_FILE).display()
        );
    }
    Ok(summary)
}

/// Stops the users still running; returns how many requests were in flight.
async fn abandon(driver: &mut tokio::task::JoinHandle<()>, shared: &Shared) -> u64 {
    let in_flight = u64::from(shared.in_flight.load(Ordering::Acquire));
    driver.abort();
    let _ = driver.await;
    in_flight
}

/// Creates `--output` if missing; refuses a path that is not a directory.
fn prepare_output(plan: &Plan) -> Result<(), FlagError> {
    let dir = &plan.output;
    let refuse = |problem: String| FlagError {
        flag: "--output",
        value: dir.display().to_string(),
        problem,
    };
    if dir.exists() && !dir.is_dir() {
        return Err(refuse("exists and is not a directory".into()));
    }
    std::fs::create_dir_all(dir).map_err(|e| refuse(format!("cannot create the directory: {e}")))
}
