//! What a replay keeps in the run's shared state: its measurements (per SQL text, the lag behind
//! the schedule, the divergences from the trace), merged as each attachment comes back, and the
//! strict order's gate. Apart from the replay loop (replay.rs), which uses the attachment's
//! worker, so that the shared state (state.rs) does not depend on it.

use std::collections::HashMap;

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

use crate::config::{Order, Replay};
use crate::stats::{full_histogram, latency_ms, local_histogram, record_latency, serialize};

/// Divergences kept whole (their number by kind is kept for all).
pub(super) const KEPT_DIVERGENCES: usize = 1000;

pub struct TemplateStats {
    pub(super) executions: u64,
    pub(super) errors: u64,
    pub(super) latency: Histogram<u64>,
}

/// One attachment's replay measurements, merged into the run's when it comes back. Its
/// histograms are local (1 µs .. `LOCAL_TOP_US`, never grown); a latency or lag above their top
/// goes straight into the run's (`Shared::replay_overflow`, `record_slow`).
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

    /// A latency of template `template` (or, for None, a lag) into this run's totals, whose
    /// histograms cover the contract's full range.
    pub(super) fn record_slow(&mut self, template: Option<usize>, micros: u64) {
        let h = match template {
            Some(t) => &mut self.templates[t].latency,
            None => &mut self.lag,
        };
        record_latency(h, micros);
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

    /// As the replay records (replay.rs): into the attachment's local histograms, above their
    /// top into the run's totals at once; the totals end as full histograms fed every value.
    #[test]
    fn slow_statements_and_lags_reach_the_totals_exactly() {
        use crate::stats::{record_local, summary_us, LOCAL_TOP_US};
        let mut totals = ReplayStats::new(2, false);
        let mut local = ReplayStats::new(2, true);
        let (mut lag, mut latency) = (full_histogram(), full_histogram());
        for v in [
            0,
            7,
            LOCAL_TOP_US,
            LOCAL_TOP_US + 1,
            5_000_000,
            1_800_000_000,
        ] {
            if let Err(slow) = record_local(&mut local.lag, v) {
                totals.record_slow(None, slow);
            }
            if let Err(slow) = record_local(&mut local.templates[1].latency, v * 3) {
                totals.record_slow(Some(1), slow);
            }
            record_latency(&mut lag, v);
            record_latency(&mut latency, v * 3);
        }
        assert_eq!(local.lag.distinct_values(), 8192);
        totals.add(&local);
        assert_eq!(totals.lag, lag);
        assert_eq!(totals.templates[1].latency, latency);
        assert_eq!(summary_us(&totals.lag), summary_us(&lag));
        assert!(totals.templates[0].latency.is_empty());
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
