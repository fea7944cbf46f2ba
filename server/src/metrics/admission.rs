//! Admission's decisions, counted: the metrics recorder is the server's admission observer.

use turnstile_gate::Refusal;

use super::recorder::Metrics;
use crate::admission::{AdmissionObserver, Admitted, Refused};

/// With flows on, each decision counts under its flow (`turnstile_flow_requests_total`); a
/// granted global lease records its wait (`turnstile_global_wait_seconds`).
impl AdmissionObserver for Metrics {
    fn decided(&self, flow: Option<&str>, outcome: Result<&Admitted, &Refused>) {
        if let Some(flow) = flow {
            self.flow_request(
                flow,
                match outcome {
                    Ok(_) => "admitted",
                    Err(Refused::Local(
                        Refusal::QueueFull { .. } | Refusal::FlowQueueFull { .. },
                    )) => "queue_full",
                    Err(Refused::Local(Refusal::WaitTimeout { .. })) => "wait_timeout",
                    Err(Refused::Global(_)) => "global_refused",
                },
            );
        }
        if let Ok(admitted) = outcome
            && let Some(waited) = admitted.global_waited()
        {
            self.global_waited(waited);
        }
    }
}
