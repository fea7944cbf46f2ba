//! The end of a run: `summary.json` and the table printed on stdout.

use std::fmt::Write as _;
use std::path::Path;

use super::summary::Summary;

/// File name of the JSON summary inside the output directory.
pub const SUMMARY_FILE: &str = "summary.json";

/// Writes `DIR/summary.json` (pretty-printed, through a temporary file and a rename).
pub(crate) fn write_json(dir: &Path, summary: &Summary) -> anyhow::Result<()> {
    let path = dir.join(SUMMARY_FILE);
    let json = serde_json::to_string_pretty(summary)?;
    let cannot = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", path.display());
    let mut partial = tempfile::Builder::new()
        .prefix(&format!(".{SUMMARY_FILE}."))
        .tempfile_in(dir)
        .map_err(cannot)?;
    std::io::Write::write_all(&mut partial, (json + "\n").as_bytes()).map_err(cannot)?;
    partial.persist(&path).map_err(|e| cannot(e.error))?;
    Ok(())
}

/// The final table.
pub fn table(s: &Summary) -> String {
    let mut out = String::new();
    let set = &s.settings;
    let chat = set.chat.as_ref().map_or_else(String::new, |c| {
        format!(
            " (chat, {}, model {})",
            if c.stream {
                "streamed"
            } else {
                "whole answers"
            },
            c.model
        )
    });
    let _ = writeln!(
        out,
        "turnstile load: {} users, spawn rate {}/s, {} s, POST {}{chat}{}",
        set.users,
        set.spawn_rate,
        set.duration_s,
        set.url,
        if s.interrupted { " (interrupted)" } else { "" }
    );
    let mut row = |name: &str, value: String, note: String| {
        let line = format!("  {name:<22} {value:>12}   {note}");
        let _ = writeln!(out, "{}", line.trim_end());
    };
    row("requests", s.requests.to_string(), String::new());
    row(
        "elapsed",
        format!("{:.1} s", s.elapsed_s),
        format!(
            "{:.1} s of load + {:.1} s for the {} requests in flight at the end",
            s.load_s,
            (s.elapsed_s - s.load_s).max(0.0),
            s.in_flight_at_end
        ),
    );
    row(
        "requests/s overall",
        format!("{:.2}", s.requests_per_s),
        "requests / elapsed".into(),
    );
    match (
        &s.plateau.requests_per_s,
        s.plateau.start_s,
        s.plateau.end_s,
    ) {
        (Some(rate), Some(start), Some(end)) => row(
            "requests/s plateau",
            format!("{rate:.2}"),
            format!(
                "{start:.1} s → {end:.1} s, {} requests (all users running + 2 × median)",
                s.plateau.requests
            ),
        ),
        _ => row(
            "requests/s plateau",
            "-".into(),
            s.plateau.missing_because.clone().unwrap_or_default(),
        ),
    }
    if set.chat.as_ref().is_some_and(|c| c.stream) {
        match &s.ttft_ms {
            Some(t) => {
                for (name, v, note) in [
                    ("ttft p50", t.p50, "sent → first content delta"),
                    ("ttft p95", t.p95, ""),
                    ("ttft p99", t.p99, ""),
                    ("ttft max", t.max, ""),
                ] {
                    row(name, format!("{v:.1} ms"), note.into());
                }
            }
            None => row("ttft", "-".into(), "no stream had a content delta".into()),
        }
    }
    match (&s.latency_ms, set.chat.is_some()) {
        (Some(l), true) => {
            for (name, v, note) in [
                ("total p50", l.p50, "sent → last byte"),
                ("total p95", l.p95, ""),
                ("total p99", l.p99, ""),
                ("total max", l.max, ""),
            ] {
                row(name, format!("{v:.1} ms"), note.into());
            }
        }
        (Some(l), false) => {
            for (name, v) in [
                ("latency p50", l.p50),
                ("latency p90", l.p90),
                ("latency p99", l.p99),
                ("latency max", l.max),
            ] {
                row(name, format!("{v:.1} ms"), String::new());
            }
        }
        (None, _) => row("latency", "-".into(), "no request completed".into()),
    }
    for (status, n) in &s.statuses {
        let share = if s.requests > 0 {
            format!("{:.1} %", 100.0 * *n as f64 / s.requests as f64)
        } else {
            String::new()
        };
        row(&format!("status {status}"), n.to_string(), share);
    }
    if s.abandoned > 0 {
        row(
            "abandoned",
            s.abandoned.to_string(),
            "in flight and never completed (not counted above)".into(),
        );
    }
    let mut files = vec![super::report::SUMMARY_FILE.to_owned()];
    files.extend(set.chat.as_ref().map(|c| c.requests_log.clone()));
    files.extend(s.charts.svg.clone());
    files.extend(s.charts.png.clone());
    let _ = writeln!(
        out,
        "written to {}: {}",
        s.settings.output.display(),
        files.join(", ")
    );
    if let Some(why) = &s.charts.png_skipped {
        let _ = writeln!(out, "chart.png skipped: {why}");
    }
    if let Some(why) = &s.charts.svg_error {
        let _ = writeln!(out, "chart.svg failed: {why}");
    }
    out
}
