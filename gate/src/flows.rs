//! Flows: who a waiter waits for. With flows on (`--flow-header`), each live flow — a tenant, an
//! API key's id — has its own FIFO lane in the wait queue, and a freed slot goes to the lanes in
//! turn (deficit round robin, `super::queue`), so one flow's flood stays in its own lane. With
//! flows off every request is in one flow, [`DEFAULT_FLOW`], and the gate is the plain FIFO it
//! always was.
//!
//! Everything here is bounded: at most [`FlowConfig::max_flows`] named flows are live (a flow is
//! live while it has a lease out or a waiter); a new name past them joins [`OVERFLOW_FLOW`], which
//! all such names share. The flows the settings weight are not counted: each always keeps its
//! own lane, however many other names clients send. A flow that goes idle is forgotten, with its counts. [`DEFAULT_FLOW`] is
//! the one exception: it always has its place (id 0, not counted in `max_flows`), so a gate with
//! flows off — every request in it — does no map lookup and no allocation per request; its counts
//! start again when it goes idle, as a forgotten flow's would.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use slab::Slab;

/// The flow of a request that names none (and of every request when flows are off).
pub const DEFAULT_FLOW: &str = "default";

/// The flow shared by new names once [`FlowConfig::max_flows`] flows are live. Its name cannot
/// be a client's: parentheses are not allowed in flow names.
pub const OVERFLOW_FLOW: &str = "(overflow)";

/// The id of [`DEFAULT_FLOW`], which never changes.
const DEFAULT_ID: usize = 0;

/// Longest flow name, in bytes.
pub const MAX_FLOW_NAME_BYTES: usize = 64;

/// Allowed range of [`FlowConfig::max_flows`].
pub const MAX_FLOWS_RANGE: std::ops::RangeInclusive<usize> = 1..=10_000;

/// Allowed range of a flow's weight.
pub const WEIGHT_RANGE: std::ops::RangeInclusive<u32> = 1..=1_000;

/// Whether `name` may name a flow: 1 to [`MAX_FLOW_NAME_BYTES`] bytes of `A-Z a-z 0-9 . _ : -`
/// (so a flow name is safe to show, log and use as a metric label as it is).
pub fn valid_flow_name(name: &str) -> bool {
    (1..=MAX_FLOW_NAME_BYTES).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// How the wait queue is shared between flows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowConfig {
    /// Named flows live at once (1..=10,000; [`DEFAULT_FLOW`] and the weighted flows aside); a
    /// new name past them joins [`OVERFLOW_FLOW`].
    pub max_flows: usize,
    /// Waiters one flow may have, besides the gate's `max_waiting` for all of them.
    pub max_waiting_per_flow: usize,
    /// Each named flow's weight: its share of freed slots while several flows wait
    /// (1..=1,000).
    pub weights: BTreeMap<String, u32>,
    /// The weight of every other flow.
    pub default_weight: u32,
}

/// Why a flow configuration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlowConfigError {
    /// `max_flows` out of range.
    #[error("invalid_max_flows: max_flows must be 1..=10000, got {0}")]
    MaxFlows(usize),
    /// A weight out of range.
    #[error("invalid_weight: the weight of {flow} must be 1..=1000, got {weight}")]
    Weight {
        /// The flow (or `default`).
        flow: String,
        /// The weight given.
        weight: u32,
    },
    /// A weighted flow's name is not a flow name.
    #[error(
        "invalid_flow_name: a flow name is 1..=64 bytes of A-Z a-z 0-9 . _ : - (got one of {0} bytes)"
    )]
    Name(usize),
}

impl FlowConfig {
    /// Flows off: one flow, no per-flow bound.
    pub fn single() -> Self {
        Self {
            max_flows: 1,
            max_waiting_per_flow: usize::MAX,
            weights: BTreeMap::new(),
            default_weight: 1,
        }
    }

    /// Checks every bound; reports the first problem.
    pub fn new(
        max_flows: usize,
        max_waiting_per_flow: usize,
        weights: BTreeMap<String, u32>,
        default_weight: u32,
    ) -> Result<Self, FlowConfigError> {
        if !MAX_FLOWS_RANGE.contains(&max_flows) {
            return Err(FlowConfigError::MaxFlows(max_flows));
        }
        if !WEIGHT_RANGE.contains(&default_weight) {
            return Err(FlowConfigError::Weight {
                flow: DEFAULT_FLOW.to_owned(),
                weight: default_weight,
            });
        }
        for (flow, weight) in &weights {
            if !valid_flow_name(flow) {
                return Err(FlowConfigError::Name(flow.len()));
            }
            if !WEIGHT_RANGE.contains(weight) {
                return Err(FlowConfigError::Weight {
                    flow: flow.clone(),
                    weight: *weight,
                });
            }
        }
        Ok(Self {
            max_flows,
            max_waiting_per_flow,
            weights,
            default_weight,
        })
    }

    /// The waiters one flow may have when the settings do not say: half the queue, rounded up,
    /// so one flow's flood never fills it — the other half is always open to the rest.
    pub fn fair_share(max_waiting: usize) -> usize {
        max_waiting.div_ceil(2)
    }

    fn weight_of(&self, name: &str) -> u32 {
        self.weights
            .get(name)
            .copied()
            .unwrap_or(self.default_weight)
    }
}

/// One live flow as `/state` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FlowSnapshot {
    /// Its name (validated: safe to show as it is), or `(overflow)`.
    pub name: String,
    /// Its share of freed slots while several flows wait.
    pub weight: u32,
    /// Leases it holds.
    pub active: usize,
    /// Its waiters.
    pub waiting: usize,
    /// Requests it got admitted since it became live.
    pub admitted: u64,
    /// Requests refused since it became live: its lane or the whole queue was full.
    pub queue_full: u64,
    /// Requests whose wait deadline passed since it became live.
    pub wait_timeout: u64,
}

/// A live flow.
#[derive(Debug)]
struct Flow {
    name: Box<str>,
    weight: u32,
    active: usize,
    waiting: usize,
    admitted: u64,
    queue_full: u64,
    wait_timeout: u64,
}

/// The live flows: a name's flow id, and each flow's counts. Ids are reused once a flow is
/// forgotten; the queue's lanes are indexed by them. [`DEFAULT_FLOW`] is always id 0.
#[derive(Debug)]
pub(super) struct FlowTable {
    config: FlowConfig,
    by_name: HashMap<Box<str>, usize>,
    flows: Slab<Flow>,
    /// The overflow flow's id while it is live.
    overflow: Option<usize>,
    /// Live flows the settings do not weight (what `max_flows` bounds).
    unweighted_live: usize,
}

/// What a refusal or an exit does to a flow's counts.
#[derive(Debug, Clone, Copy)]
pub(super) enum Outcome {
    Admitted,
    QueueFull,
    WaitTimeout,
}

impl FlowTable {
    pub(super) fn new(config: FlowConfig) -> Self {
        let mut flows = Slab::with_capacity(config.max_flows.min(1024) + 2);
        let default = flows.insert(Flow::new(
            DEFAULT_FLOW.into(),
            config.weight_of(DEFAULT_FLOW),
        ));
        debug_assert_eq!(default, DEFAULT_ID);
        Self {
            by_name: HashMap::with_capacity(config.max_flows.min(1024)),
            flows,
            overflow: None,
            unweighted_live: 0,
            config,
        }
    }

    pub(super) fn config(&self) -> &FlowConfig {
        &self.config
    }

    /// The id of `name`'s flow, made live if it was not (or the overflow flow's, when
    /// `max_flows` are live). A flow made here and then not used must be [`FlowTable::settle`]d.
    pub(super) fn enter(&mut self, name: &str) -> usize {
        if name == DEFAULT_FLOW {
            return DEFAULT_ID;
        }
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let weighted = self.config.weights.contains_key(name);
        if !weighted && self.unweighted_live >= self.config.max_flows {
            return match self.overflow {
                Some(id) => id,
                None => {
                    let id = self
                        .flows
                        .insert(Flow::new(OVERFLOW_FLOW.into(), self.config.default_weight));
                    self.overflow = Some(id);
                    id
                }
            };
        }
        let name: Box<str> = name.into();
        let id = self
            .flows
            .insert(Flow::new(name.clone(), self.config.weight_of(&name)));
        self.by_name.insert(name, id);
        if !weighted {
            self.unweighted_live += 1;
        }
        id
    }

    /// `id`'s weight.
    pub(super) fn weight(&self, id: usize) -> u32 {
        self.flows.get(id).map_or(1, |f| f.weight)
    }

    /// `id`'s waiters.
    pub(super) fn waiting(&self, id: usize) -> usize {
        self.flows.get(id).map_or(0, |f| f.waiting)
    }

    pub(super) fn count(&mut self, id: usize, outcome: Outcome) {
        if let Some(flow) = self.flows.get_mut(id) {
            match outcome {
                Outcome::Admitted => flow.admitted += 1,
                Outcome::QueueFull => flow.queue_full += 1,
                Outcome::WaitTimeout => flow.wait_timeout += 1,
            }
        }
    }

    /// Adds `delta` leases (±1) to `id`, then forgets it if it went idle.
    pub(super) fn add_active(&mut self, id: usize, delta: isize) {
        if let Some(flow) = self.flows.get_mut(id) {
            flow.active = flow.active.saturating_add_signed(delta);
        }
        self.settle(id);
    }

    /// Adds `delta` waiters (±1) to `id`, then forgets it if it went idle.
    pub(super) fn add_waiting(&mut self, id: usize, delta: isize) {
        if let Some(flow) = self.flows.get_mut(id) {
            flow.waiting = flow.waiting.saturating_add_signed(delta);
        }
        self.settle(id);
    }

    /// Forgets `id` if it has no lease and no waiter: the table holds live flows only (the
    /// default flow stays, its counts started again).
    pub(super) fn settle(&mut self, id: usize) {
        let Some(flow) = self.flows.get_mut(id) else {
            return;
        };
        if flow.active > 0 || flow.waiting > 0 {
            return;
        }
        if id == DEFAULT_ID {
            (flow.admitted, flow.queue_full, flow.wait_timeout) = (0, 0, 0);
            return;
        }
        let flow = self.flows.remove(id);
        if self.overflow == Some(id) {
            self.overflow = None;
        } else {
            self.by_name.remove(&flow.name);
            if !self.config.weights.contains_key(&*flow.name) {
                self.unweighted_live -= 1;
            }
        }
    }

    /// Live flows, busiest first (then by name).
    pub(super) fn snapshot(&self) -> Vec<FlowSnapshot> {
        let mut flows: Vec<FlowSnapshot> = self
            .flows
            .iter()
            .filter(|(_, f)| f.active + f.waiting > 0)
            .map(|(_, f)| FlowSnapshot {
                name: f.name.to_string(),
                weight: f.weight,
                active: f.active,
                waiting: f.waiting,
                admitted: f.admitted,
                queue_full: f.queue_full,
                wait_timeout: f.wait_timeout,
            })
            .collect();
        flows.sort_by(|a, b| {
            (b.active + b.waiting)
                .cmp(&(a.active + a.waiting))
                .then_with(|| a.name.cmp(&b.name))
        });
        flows
    }

    /// Live flows (the overflow flow included).
    #[cfg(test)]
    pub(super) fn live(&self) -> usize {
        self.flows
            .iter()
            .filter(|(_, f)| f.active + f.waiting > 0)
            .count()
    }
}

impl Flow {
    fn new(name: Box<str>, weight: u32) -> Self {
        Self {
            name,
            weight,
            active: 0,
            waiting: 0,
            admitted: 0,
            queue_full: 0,
            wait_timeout: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_bounded_and_plain() {
        for good in ["a", "tenant-1", "api:key_2.v3", &"x".repeat(64)] {
            assert!(valid_flow_name(good), "{good}");
        }
        for bad in ["", "a b", "(overflow)", "é", "a\n", &"x".repeat(65), "a/b"] {
            assert!(!valid_flow_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn live_flows_are_bounded_and_the_rest_share_the_overflow_flow() {
        let config = FlowConfig::new(1, 10, BTreeMap::from([("b".into(), 4)]), 1).unwrap();
        let mut table = FlowTable::new(config);
        let a = table.enter("a");
        table.add_waiting(a, 1);
        let c = table.enter("c");
        let d = table.enter("d");
        assert_eq!(c, d, "past max_flows, new names share one flow");
        table.add_waiting(c, 1);
        // The weighted flow keeps its own lane although max_flows names are live.
        let b = table.enter("b");
        table.add_active(b, 1);
        assert_ne!(b, c);
        assert_eq!((table.weight(a), table.weight(b)), (1, 4));
        assert_eq!(table.live(), 3);
        let names: Vec<String> = table.snapshot().into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["(overflow)", "a", "b"]);
        // Idle flows are forgotten; a name comes back as a new live flow.
        table.add_waiting(a, -1);
        table.add_waiting(c, -1);
        assert_eq!(table.live(), 1);
        let e = table.enter("e");
        assert_ne!(Some(e), table.overflow);
        table.settle(e);
        assert_eq!(table.live(), 1);
    }

    #[test]
    fn bad_configurations_are_refused() {
        assert!(FlowConfig::new(0, 1, BTreeMap::new(), 1).is_err());
        assert!(FlowConfig::new(1, 1, BTreeMap::new(), 0).is_err());
        assert!(FlowConfig::new(1, 1, BTreeMap::from([("a b".into(), 1)]), 1).is_err());
        assert!(FlowConfig::new(1, 1, BTreeMap::from([("a".into(), 1001)]), 1).is_err());
        assert!(FlowConfig::new(10_000, 0, BTreeMap::from([("a".into(), 1000)]), 1).is_ok());
    }
}
