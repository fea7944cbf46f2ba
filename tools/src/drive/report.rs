use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::settings::Settings;

/// One case: what was expected, what was observed, and whether they agree.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// What the gate promises.
    pub expected: Value,
    /// What the server answered or showed.
    pub observed: Value,
    /// `expected` and `observed` agree.
    pub passed: bool,
}

impl CaseResult {
    /// A case passes when every key of `expected` has the same value in `observed`.
    pub fn check(expected: Value, observed: Value) -> Self {
        let passed = match (&expected, &observed) {
            (Value::Object(e), Value::Object(o)) => e.iter().all(|(k, v)| o.get(k) == Some(v)),
            _ => expected == observed,
        };
        Self {
            expected,
            observed,
            passed,
        }
    }
}

/// One `serve` child process, from start to reaping.
#[derive(Debug, Clone, Serialize)]
pub struct ChildReport {
    /// Which scenario it served.
    pub name: String,
    /// Its full command line.
    pub command: Vec<String>,
    /// It logged that it was ready before the startup timeout.
    pub startup_observed: bool,
    /// Its exit status after SIGTERM (`None` if it had to be killed or did not exit).
    pub shutdown_exit_status: Option<i32>,
    /// It logged "shutdown complete".
    pub shutdown_complete_observed: bool,
    /// `wait` returned for it: no zombie or orphan is left.
    pub server_process_reaped: bool,
    /// What it wrote to stdout (bounded).
    pub stdout: String,
    /// What it wrote to stderr (bounded).
    pub stderr: String,
}

/// The whole `drive` result.
#[derive(Debug, Clone, Serialize)]
pub struct DriveReport {
    /// How the run was made.
    pub execution_mode: &'static str,
    /// No model is ever called.
    pub model_called: bool,
    /// The delay fixture's controlled delay, in seconds.
    pub controlled_delay_seconds: f64,
    /// The scenario's settings.
    pub settings: Settings,
    /// What this run does not prove.
    pub scope: &'static str,
    /// Every case by name.
    pub cases: BTreeMap<String, CaseResult>,
    /// Every server child process whose cases are reported.
    pub servers: Vec<ChildReport>,
    /// Runs of the overflow scenario that this machine was too slow for: the waiter's 150 ms
    /// deadline passed before the third request arrived, so the third was queued rather than
    /// refused. Each was re-run on a fresh server (at most [`super::OVERFLOW_ATTEMPTS`] runs in
    /// all); a gate fault never looks like this and is never re-run.
    pub overflow_retries: Vec<Value>,
    /// Every case passed and every child started, shut down with status 0 and was reaped.
    pub passed: bool,
}

impl DriveReport {
    /// A few lines for a person.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for (name, case) in &self.cases {
            let mark = if case.passed { "ok  " } else { "FAIL" };
            let mut observed = case.observed.to_string();
            if observed.len() > 160 {
                observed.truncate(157);
                observed.push_str("...");
            }
            out.push_str(&format!("{mark} {name:<28} {observed}\n"));
        }
        for s in &self.servers {
            let ok = s.startup_observed
                && s.shutdown_exit_status == Some(0)
                && s.shutdown_complete_observed
                && s.server_process_reaped;
            out.push_str(&format!(
                "{} server {:<22} startup={} exit={:?} shutdown_complete={} reaped={}\n",
                if ok { "ok  " } else { "FAIL" },
                s.name,
                s.startup_observed,
                s.shutdown_exit_status,
                s.shutdown_complete_observed,
                s.server_process_reaped
            ));
        }
        let passed = self.cases.values().filter(|c| c.passed).count();
        out.push_str(&format!(
            "{} passed, {} failed\n",
            passed,
            self.cases.len() - passed
        ));
        out
    }
}
