//! Reading answers: the ids of a `/retrieve` body, the statuses of a `/state` body's events.

use serde_json::Value;

/// Ids of the sources in a 200 body.
pub fn ids(body: &Value) -> Vec<String> {
    body["sources"]
        .as_array()
        .unwrap_or_else(|| panic!("no sources in {body}"))
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The statuses of a `/state` body's events, in order.
pub fn statuses(state: &Value) -> Vec<String> {
    state["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap().to_owned())
        .collect()
}
