//! Running a load: users started at the spawn rate, the clock, live progress, the end (a clean
//! drain or an interrupt), the summary and the files.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use super::args::LoadArgs;
use super::chart::SVG_FILE;
use super::plan::{FlagError, Plan};
use super::progress::{Phase, Progress};
use super::report::{SUMMARY_FILE, table};
use super::summary::{ChatSettings, Ending, Summary};
use super::user::{ChatRun, REQUESTS_FILE, Shared};
use super::{chart, chat, report, user};

/// How often the live display and the per-second records are refreshed.
const TICK: Duration = Duration::from_millis(250);
/// Beyond the request timeout, how long the end of the run waits for users to finish.
const DRAIN_GRACE: Duration = Duration::from_secs(5);

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
        .default_headers(plan.headers.clone())
        .timeout(plan.timeout)
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(plan.users as usize)
        .build()?;
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let (chat_run, chat_settings) = match &plan.chat {
        None => (None, None),
        Some(asked) => {
            let model = match &asked.model {
                Some(model) => model.clone(),
                None => chat::discover_model(&client, &asked.models).await?,
            };
            let path = plan.output.join(REQUESTS_FILE);
            let log = std::fs::File::create(&path)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            // Unique in the run, and across runs against the same backend: the start, in ms.
            let tag_prefix = format!("t{:x}", (started_unix_s * 1e3) as u64);
            let settings = ChatSettings {
                model: model.clone(),
                stream: asked.stream,
                question: asked.question.clone(),
                tag_prefix: tag_prefix.clone(),
                models_url: asked.models.to_string(),
                requests_log: REQUESTS_FILE.into(),
            };
            let run = ChatRun::new(model, asked.stream, asked.question.clone(), tag_prefix, log);
            (Some(run), Some(settings))
        }
    };
    let shared = Arc::new(Shared::new(
        client,
        plan.url.clone(),
        plan.bodies.clone(),
        plan.duration,
        chat_run,
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
    if let Some(chat) = &shared.chat {
        chat.flush().map_err(|e| {
            anyhow::anyhow!(
                "cannot write {}: {e}",
                plan.output.join(REQUESTS_FILE).display()
            )
        })?;
    }

    let ending = Ending {
        started_unix_s,
        interrupted,
        load_end,
        in_flight_at_end,
        abandoned,
        users_started: shared.started.load(Ordering::Acquire),
        chat: chat_settings,
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
