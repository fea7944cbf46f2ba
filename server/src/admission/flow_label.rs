//! A flow's metric label: bounded whatever clients send.

/// The metric label of `flow` (`None`: the default flow) among the flows the settings `named`:
/// its name if named (a weight), `default`, or `other` — so labels stay bounded whatever clients
/// send.
pub(crate) fn flow_label<'a>(
    named: &std::collections::BTreeSet<String>,
    flow: Option<&'a str>,
) -> &'a str {
    match flow {
        None | Some(turnstile_gate::DEFAULT_FLOW) => turnstile_gate::DEFAULT_FLOW,
        Some(name) if named.contains(name) => name,
        Some(_) => "other",
    }
}
