//! A replay's bookkeeping, shared by the run's state and its attachments: each SQL text's
//! latency, the lag behind the schedule and the divergences (ReplayStats), and the strict order's
//! frontier (OrderGate). The attachments' replay itself is in replay.rs.

use std::collections::HashMap;

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

use crate::config::{Order, Replay};
use crate::stats::{full_histogram, latency_ms, local_histogram, serialize};

/// Divergences kept whole (their number by kind is kept for all).
const KEPT_DIVERGENCES: usize = 1000;

pub struct TemplateStats {
    pub(super) executions: u64,
    pub(super) errors: u64,
    pub(super) latency: Histogram<u64>,
}

/// One attachment's replay measurements, merged into the run's when it comes back.
pub struct ReplayStats {
    pub(super) templates: Vec<TemplateStats>,
    pub(super) lag: Histogram<u64>,
    pub(super) lag_max_us: u64,
    pub(super) divergences: Vec<Value>,
    pub(super) by_kind: HashMap<&'static str, u64>,
    pub(super) stalls: u64,
    pub(super) transactions: u64,
    pub(super) statements: u64,
}

impl ReplayStats {
    pub fn new(templates: usize, local: bool) -> ReplayStats {
        let histogram = || {
            if local {
                local_histogram()
            } else {
                full_histogram()
            }
        };
        ReplayStats {
            templates: (0..templates)
                .map(|_| TemplateStats {
                    executions: 0,
                    errors: 0,
                    latency: histogram(),
                })
                .collect(),
            lag: histogram(),
            lag_max_us: 0,
            divergences: Vec::new(),
            by_kind: HashMap::new(),
            stalls: 0,
            transactions: 0,
            statements: 0,
        }
    }

    pub(super) fn diverged(&mut self, kind: &'static str, detail: Value) {
        *self.by_kind.entry(kind).or_insert(0) += 1;
        if self.divergences.len() < KEPT_DIVERGENCES {
            let mut item = detail;
            item["kind"] = Value::from(kind);
            self.divergences.push(item);
        }
    }

    pub fn add(&mut self, other: &ReplayStats) {
        for (total, part) in self.templates.iter_mut().zip(&other.templates) {
            total.executions += part.executions;
            total.errors += part.errors;
            let _ = total.latency.add(&part.latency);
        }
        let _ = self.lag.add(&other.lag);
        self.lag_max_us = self.lag_max_us.max(other.lag_max_us);
        for item in &other.divergences {
            if self.divergences.len() < KEPT_DIVERGENCES {
                self.divergences.push(item.clone());
            }
        }
        for (kind, count) in &other.by_kind {
            *self.by_kind.entry(kind).or_insert(0) += count;
        }
        self.stalls += other.stalls;
        self.transactions += other.transactions;
        self.statements += other.statements;
    }

    pub fn to_json(&self, replay: &Replay) -> Value {
        let planned_transactions: usize = replay.sessions.iter().map(Vec::len).sum();
        let planned_statements: usize = replay
            .sessions
            .iter()
            .flatten()
            .map(|t| t.statements.len())
            .sum();
        let templates: Vec<Value> = self
            .templates
            .iter()
            .map(|t| {
                json!({"executions": t.executions, "errors": t.errors,
                       "histogram": serialize(&t.latency), "latency_ms": latency_ms(&t.latency)})
            })
            .collect();
        let mut by_kind = Map::new();
        for (kind, count) in &self.by_kind {
            by_kind.insert((*kind).to_string(), Value::from(*count));
        }
        json!({
            "order": match replay.order { Order::Timed => "timed", Order::Strict => "strict" },
            "speed": replay.speed,
            "transactions": {"planned": planned_transactions, "replayed": self.transactions},
            "statements": {"planned": planned_statements, "executed": self.statements},
            "templates": templates,
            "lag": {"histogram": serialize(&self.lag), "latency_ms": latency_ms(&self.lag),
                    "max_ms": self.lag_max_us as f64 / 1000.0},
            "divergences": {"count": self.by_kind.values().sum::<u64>(), "by_kind": by_kind,
                            "first": self.divergences},
            "stalls": self.stalls,
        })
    }
}

/// Strict order: which planned actions (start, statement, end of each transaction) have run.
pub struct OrderGate {
    pub(super) done: Vec<bool>,
    /// The lowest action not yet run (actions are numbered from 1).
    pub(super) frontier: u64,
}

impl OrderGate {
    pub fn new(actions: u64) -> OrderGate {
        OrderGate {
            done: vec![false; actions as usize + 1],
            frontier: 1,
        }
    }

    /// Action `seq` has run: the frontier moves past every action done.
    pub fn mark(&mut self, seq: u64) {
        if let Some(done) = self.done.get_mut(seq as usize) {
            *done = true;
        }
        while (self.frontier as usize) < self.done.len() && self.done[self.frontier as usize] {
            self.frontier += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_moves_past_every_action_done() {
        let mut gate = OrderGate::new(5);
        assert_eq!(gate.frontier, 1);
        gate.mark(2); // out of order (a stall given up): the frontier waits for 1
        assert_eq!(gate.frontier, 1);
        gate.mark(1);
        assert_eq!(gate.frontier, 3);
        gate.mark(3);
        gate.mark(4);
        gate.mark(5);
        assert_eq!(gate.frontier, 6);
        gate.mark(9); // beyond the plan: ignored
    }

    #[test]
    fn divergences_are_counted_all_and_kept_up_to_a_bound() {
        let mut stats = ReplayStats::new(1, true);
        for _ in 0..KEPT_DIVERGENCES + 5 {
            stats.diverged("rows", json!({"attachment": 1}));
        }
        assert_eq!(stats.by_kind["rows"], (KEPT_DIVERGENCES + 5) as u64);
        assert_eq!(stats.divergences.len(), KEPT_DIVERGENCES);
        assert_eq!(stats.divergences[0]["kind"], "rows");
    }
}
