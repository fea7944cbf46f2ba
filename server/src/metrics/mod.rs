//! Prometheus metrics (`GET /metrics`, the Prometheus text exposition format rendered by
//! `metrics-exporter-prometheus`). Each server has its own recorder (no process-global one: a
//! test process runs many servers). What happens is counted where it happens — the handlers,
//! admission's decisions (the recorder is its observer), the plugin's host calls, swaps; what *is* — the gate's counts and limits and lifetime totals, the
//! serving plugin, open sessions, the process — is read at each scrape ([`Metrics::render`]).
//! No label takes a value a request chose: routes, outcomes, codes and kinds are fixed sets.
//! `docs/METRICS.md` lists every metric.

mod admission;
mod in_flight;
mod names;
mod open_streams;
mod outbound;
mod recorder;
mod streams;

pub use in_flight::InFlight;
pub use names::CallOutcome;
pub use open_streams::{OpenStreams, StreamOpen};
pub use recorder::{HostCallMetrics, LiveCounts, Metrics, UPKEEP_INTERVAL, duration_buckets};
