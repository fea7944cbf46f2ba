//! Embedding the passages a store does not hold yet through a remote model, as a team runs a
//! build against its own embedding server: batches of the operator's size, a bounded number in
//! flight (the gate's own kind of limit, in front of the server), each batch retried with backoff
//! on a transient failure (honouring `Retry-After`), each committed to the store as it comes
//! back. A run stopped by a failure past its retries keeps every batch that came back.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use turnstile_embed::{RemoteError, RemoteModel};

use super::progress::Progress;
use super::store::{PassageKey, PassageStore};
use crate::CorpusError;

/// What a run did: passages embedded now, and those the store held already.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Embedded {
    /// Passages sent to the model now.
    pub embedded: u64,
    /// Passages whose vectors the store held already (from an earlier build, or a run cut short).
    pub reused: u64,
}

/// Embeds every passage of `texts` (`keys[i]` the key of `texts[i]`) whose key `store` does not
/// hold, and stores the vectors. Passages with the same text are embedded once.
pub(crate) fn embed_missing(
    model: &RemoteModel,
    store: &mut PassageStore,
    keys: &[PassageKey],
    texts: &[String],
) -> Result<Embedded, CorpusError> {
    let path = store.path().to_owned();
    let store_error = |source| CorpusError::Index {
        path: path.clone(),
        source,
    };
    let mut seen = std::collections::HashSet::with_capacity(texts.len());
    let mut missing: Vec<(PassageKey, &str)> = Vec::new();
    let mut reused = 0u64;
    for (key, text) in keys.iter().zip(texts) {
        if !seen.insert(*key) {
            continue;
        }
        if store.contains(key).map_err(store_error)? {
            reused += 1;
        } else {
            missing.push((*key, text.as_str()));
        }
    }
    let options = model.options();
    let batches: Vec<&[(PassageKey, &str)]> = missing.chunks(options.batch).collect();
    let mut progress = Progress::new(model.name(), missing.len(), reused as usize);
    if !missing.is_empty() {
        tracing::info!(
            model = model.name(),
            endpoint = model.endpoint(),
            to_embed = missing.len(),
            reused,
            batch = options.batch,
            in_flight = options.in_flight,
            "embedding the passages the cache does not hold"
        );
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (sender, received) =
        mpsc::sync_channel::<(usize, Result<Vec<Vec<f32>>, RemoteError>)>(options.in_flight.max(1));
    let mut failure: Option<CorpusError> = None;
    std::thread::scope(|scope| {
        for _ in 0..options.in_flight.max(1).min(batches.len()) {
            let (sender, batches, next, stop) = (sender.clone(), &batches, &next, &stop);
            scope.spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let i = next.fetch_add(1, Ordering::AcqRel);
                    let Some(batch) = batches.get(i) else { break };
                    let texts: Vec<&str> = batch.iter().map(|(_, t)| *t).collect();
                    let result = model.embed_retrying(&texts, &mut |error, wait| {
                        tracing::warn!(
                            error = %error, wait_ms = wait.as_millis() as u64,
                            "the embedding server failed a batch; trying it again"
                        );
                    });
                    let failed = result.is_err();
                    if sender.send((i, result)).is_err() || failed {
                        break;
                    }
                }
            });
        }
        drop(sender);
        for (i, result) in received {
            if failure.is_some() {
                continue;
            }
            match result {
                Ok(vectors) if vectors.iter().all(|v| v.len() == store.dims()) => {
                    let batch: Vec<(PassageKey, Vec<f32>)> =
                        batches[i].iter().map(|(k, _)| *k).zip(vectors).collect();
                    match store.put_batch(&batch) {
                        Ok(()) => progress.add(batch.len()),
                        Err(source) => {
                            stop.store(true, Ordering::Release);
                            failure = Some(store_error(source));
                        }
                    }
                }
                Ok(_) => {
                    stop.store(true, Ordering::Release);
                    failure = Some(CorpusError::Embedding(format!(
                        "the embedding server answered vectors of other than {} dimensions",
                        store.dims()
                    )));
                }
                Err(error) => {
                    stop.store(true, Ordering::Release);
                    failure = Some(CorpusError::EmbeddingServer(error));
                }
            }
        }
    });
    if let Some(failure) = failure {
        return Err(failure);
    }
    let embedded = missing.len() as u64;
    if embedded > 0 {
        tracing::info!(
            model = model.name(),
            embedded,
            reused,
            seconds = progress.elapsed().as_secs_f64(),
            "passages embedded"
        );
    }
    Ok(Embedded { embedded, reused })
}
