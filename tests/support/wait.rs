//! Waiting on state with a deadline: a test polls what it expects and fails, naming what it last
//! saw, when the deadline passes — never a sleep standing in for a state.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long a test waits for a state it expects before it fails.
pub const STATE_DEADLINE: Duration = Duration::from_secs(20);

/// Polls `probe` until it returns `Ok`, failing the test after [`STATE_DEADLINE`] with
/// `what` and the last thing seen.
pub async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    eventually_within(STATE_DEADLINE, what, probe).await
}

/// [`eventually`] with a deadline of its own, for a state that takes a process of its own
/// time to reach (an adaptive limit's re-measurements).
pub async fn eventually_within<T, F, Fut>(within: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + within;
    loop {
        match probe().await {
            Ok(found) => return found,
            Err(last) => assert!(
                Instant::now() < deadline,
                "never reached within {within:?}: {what}; last seen: {last}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
