//! A conformance report as a person reads it: one line per check, the imports with what each is
//! granted, and a summary.

use turnstile_host::conformance::Report;

/// One line per check, the imports and a summary.
pub fn lines(report: &Report) -> String {
    let mut out = format!("checking {} (sha256 {})\n", report.plugin, report.sha256);
    for c in &report.checks {
        out.push_str(&format!(
            "{} {:<34} expected: {} | observed: {} ({:.1} ms)\n",
            if c.passed { "PASS" } else { "FAIL" },
            c.name,
            c.expected,
            c.observed,
            c.ms
        ));
    }
    if !report.imports.is_empty() {
        out.push_str("imports, and what each is granted:\n");
        for grant in &report.imports {
            out.push_str(&format!(
                "  {:<44} {}\n",
                grant.import,
                grant.granted.unwrap_or("REFUSED: no plugin gets it")
            ));
        }
    }
    out.push_str(&format!(
        "{} passed, {} failed\n",
        report.passed, report.failed
    ));
    out
}
