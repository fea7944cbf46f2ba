//! What an evaluation found: per question, per plugin, and side by side — as JSON or as text.

use serde::Serialize;

use super::score::{Means, Scores};

/// How one question went.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionAnswer {
    /// The question.
    pub q: String,
    /// Its acceptable ids.
    pub expect: Vec<String>,
    /// The ids returned, best first.
    pub ids: Vec<String>,
    /// The plugin's error, if the call failed (scored as a miss).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its scores.
    pub scores: Scores,
    /// The call's time, in milliseconds (a fresh instance included).
    pub ms: f64,
}

/// Latency over the questions, in milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Mean.
    pub mean: f64,
}

/// One plugin's result.
#[derive(Debug, Clone, Serialize)]
pub struct PluginReport {
    /// The plugin (`retrieval` for the embedded one, else its path).
    pub plugin: String,
    /// sha256 of the component.
    pub sha256: String,
    /// Mean scores.
    pub metrics: Means,
    /// Per-question call time.
    pub latency_ms: Latency,
    /// Calls that failed.
    pub errors: usize,
    /// Every question.
    pub answers: Vec<QuestionAnswer>,
}

impl PluginReport {
    /// Questions with no acceptable id in the top 5.
    pub fn misses(&self) -> impl Iterator<Item = &QuestionAnswer> {
        self.answers.iter().filter(|a| a.scores.recall_at_5 == 0.0)
    }
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The question file.
    pub questions_file: String,
    /// Questions scored.
    pub questions: usize,
    /// Sources asked per question.
    pub limit: u32,
    /// The plugin, then the `--compare` one.
    pub plugins: Vec<PluginReport>,
}

/// The report as text: metrics (side by side with `--compare`), latency, and the misses.
pub fn text(report: &Report) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} questions from {}, limit {}",
        report.questions, report.questions_file, report.limit
    );
    let names: Vec<String> = report
        .plugins
        .iter()
        .map(|p| format!("{} ({}…)", p.plugin, &p.sha256[..12.min(p.sha256.len())]))
        .collect();
    for (i, name) in names.iter().enumerate() {
        let _ = writeln!(out, "  [{}] {name}", (b'A' + i as u8) as char);
    }
    let _ = write!(out, "\n{:<24}", "");
    for i in 0..report.plugins.len() {
        let _ = write!(out, "{:>10}", format!("[{}]", (b'A' + i as u8) as char));
    }
    if report.plugins.len() == 2 {
        let _ = write!(out, "{:>10}", "B - A");
    }
    let _ = writeln!(out);
    type Row = (&'static str, fn(&PluginReport) -> f64, usize);
    let rows: [Row; 8] = [
        ("recall@1", |p| p.metrics.recall_at_1, 3),
        ("recall@5", |p| p.metrics.recall_at_5, 3),
        ("MRR@10", |p| p.metrics.mrr_at_10, 3),
        ("nDCG@10", |p| p.metrics.ndcg_at_10, 3),
        ("latency p50 ms", |p| p.latency_ms.p50, 2),
        ("latency p99 ms", |p| p.latency_ms.p99, 2),
        ("latency mean ms", |p| p.latency_ms.mean, 2),
        ("errors", |p| p.errors as f64, 0),
    ];
    for (name, value, digits) in rows {
        let _ = write!(out, "{name:<24}");
        for p in &report.plugins {
            let _ = write!(out, "{:>10.digits$}", value(p));
        }
        if let [a, b] = report.plugins.as_slice() {
            let _ = write!(out, "{:>+10.digits$}", value(b) - value(a));
        }
        let _ = writeln!(out);
    }
    if let [a, b] = report.plugins.as_slice() {
        let hits = |p: &PluginReport, i: usize| p.answers[i].scores.recall_at_5 > 0.0;
        let fixed: Vec<&str> = (0..a.answers.len())
            .filter(|&i| !hits(a, i) && hits(b, i))
            .map(|i| a.answers[i].q.as_str())
            .collect();
        let broken: Vec<&str> = (0..a.answers.len())
            .filter(|&i| hits(a, i) && !hits(b, i))
            .map(|i| a.answers[i].q.as_str())
            .collect();
        let _ = writeln!(
            out,
            "\nB finds in its top 5 what A misses ({}):",
            fixed.len()
        );
        for q in fixed {
            let _ = writeln!(out, "  + {q}");
        }
        let _ = writeln!(out, "B misses what A finds ({}):", broken.len());
        for q in broken {
            let _ = writeln!(out, "  - {q}");
        }
    } else if let Some(p) = report.plugins.first() {
        let misses: Vec<&QuestionAnswer> = p.misses().collect();
        let _ = writeln!(
            out,
            "\nmisses: no acceptable id in the top 5 ({}):",
            misses.len()
        );
        for a in misses {
            let top: Vec<&str> = a.ids.iter().take(3).map(String::as_str).collect();
            let _ = writeln!(
                out,
                "  {:?}\n      expected {:?}, got {:?}{}",
                a.q,
                a.expect,
                top,
                a.error
                    .as_deref()
                    .map_or(String::new(), |e| format!(" (error: {e})"))
            );
        }
    }
    out
}
