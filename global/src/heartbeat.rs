//! The replica's background work: renewing its leases and places (the heartbeat), and waking its
//! waiters when any replica releases a lease.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::StreamExt;

use crate::config::{BREAKER_OPEN_FOR, CALL_TIMEOUT};
use crate::inner::{Inner, Point, lock};

/// Renews this replica's leases and waiters every third of the TTL, in one script call.
pub(crate) async fn heartbeat(inner: Arc<Inner>) {
    let mut every = tokio::time::interval(inner.config.heartbeat());
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let held: Vec<String> = lock(&inner.held).iter().cloned().collect();
        let waiting: Vec<String> = lock(&inner.waiting).iter().cloned().collect();
        if held.is_empty() && waiting.is_empty() {
            continue;
        }
        let Some(started) = inner.started.get() else {
            continue;
        };
        let mut invocation = inner.scripts.heartbeat.prepare_invoke();
        invocation
            .key(&inner.keys.holders)
            .key(&inner.keys.queue_exp)
            .key(&inner.keys.marker)
            .key(&inner.keys.server)
            .key(&inner.keys.history)
            .arg(inner.config.lease_ttl.as_millis() as u64);
        let seen = inner.seen();
        invocation.arg(seen.epoch).arg(seen.writes).arg(held.len());
        for id in held.iter().chain(&waiting) {
            invocation.arg(id);
        }
        if let Some((renewed, reasserted, opened, epoch, writes)) = inner
            .call::<(u64, u64, i64, i64, i64)>(started, &invocation, "heartbeat")
            .await
        {
            inner.answered(Some(opened), Point::answered(Some(epoch), Some(writes)));
            inner.stats.renewals.fetch_add(renewed, Ordering::Relaxed);
            if reasserted > 0 {
                inner
                    .stats
                    .reasserted
                    .fetch_add(reasserted, Ordering::Relaxed);
                tracing::warn!(
                    reasserted,
                    "global gate: leases were gone from Redis while their calls ran (expired in a stall, \
                     or Redis lost them); asserted again"
                );
            }
        }
    }
}

/// Wakes this replica's oldest waiter when any replica releases a lease (pub/sub); reconnects
/// after a failure. Waiters also re-check on their own, so a lost message only delays them.
pub(crate) async fn wake_ups(inner: Arc<Inner>) {
    loop {
        if let Ok(Ok(mut pubsub)) =
            tokio::time::timeout(CALL_TIMEOUT, inner.client.get_async_pubsub()).await
            && let Ok(Ok(())) =
                tokio::time::timeout(CALL_TIMEOUT, pubsub.subscribe(&inner.keys.channel)).await
        {
            let mut messages = pubsub.on_message();
            while messages.next().await.is_some() {
                inner.wake_oldest();
            }
        }
        tokio::time::sleep(BREAKER_OPEN_FOR).await;
    }
}
