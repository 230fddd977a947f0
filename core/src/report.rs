//! The JSON documents of docs/core-api.md: live counters (`poll`) and the final result.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::outcome::Outcome;
use crate::run::{Collected, Shared};
use crate::stats::{by_code_json, full_histogram, latency_ms, number, serialize, UnitStats};

fn counts_json(counts: &[u64; 4]) -> Value {
    let mut map = Map::new();
    for outcome in Outcome::ALL {
        map.insert(outcome.key().into(), json!(counts[outcome.index()]));
    }
    Value::Object(map)
}

pub fn poll_json(shared: &Shared) -> String {
    let config = &shared.config;
    let mut live = vec![[0u64; 4]; config.units.len()];
    let mut measure = vec![[0u64; 4]; config.units.len()];
    for slot in &shared.slots {
        let stats = slot.stats.lock().unwrap_or_else(|e| e.into_inner());
        for (unit, counts) in stats.live.iter().enumerate() {
            for k in 0..4 {
                live[unit][k] += counts[k];
                measure[unit][k] += stats.live_measure[unit][k];
            }
        }
    }
    let state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    let elapsed = shared
        .zero()
        .map(|z| z.elapsed().as_secs_f64())
        .unwrap_or(0.0);
    let phase = if state.done {
        "done"
    } else if state.stopping {
        "stopping"
    } else if shared.zero().is_none() && state.ready {
        "ready"
    } else if shared.zero().is_none() {
        "connecting"
    } else if elapsed < config.timeline.warmup {
        "warmup"
    } else {
        "measure"
    };
    let mut units = Map::new();
    let mut measure_units = Map::new();
    for (i, unit) in config.units.iter().enumerate() {
        units.insert(unit.name.clone(), counts_json(&live[i]));
        measure_units.insert(unit.name.clone(), counts_json(&measure[i]));
    }
    json!({
        "elapsed_seconds": elapsed,
        "phase": phase,
        "connected": state.connected,
        "intervals_completed": state.intervals_completed,
        "units": units,
        "measure_units": measure_units,
        "last_interval": state.last_interval.clone(),
        "failure": state.failure_text(),
    })
    .to_string()
}

pub fn result_json(shared: &Shared, collected: Option<Collected>) -> String {
    let config = &shared.config;
    let state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    let failure = state.failure_text();
    let abandoned = state.abandoned.clone();
    let abandon_note = state.abandon_note.clone();
    // A stop the user asked for stays "stopped" even when an attachment had to be abandoned
    // (the note says which); a failure of the run, or an attachment abandoned after a period
    // that ended normally, is "failed".
    let status = if state.failure.is_some() {
        "failed"
    } else if state.user_stopped {
        "stopped"
    } else if !abandoned.is_empty() {
        "failed"
    } else {
        "completed"
    };
    drop(state);

    let mut messages: HashMap<i64, String> = HashMap::new();
    let mut attachments = Vec::new();
    let (mut core_ns, mut cpu_ns) = (0u64, 0u64);
    for (i, slot) in shared.slots.iter().enumerate() {
        let stats = slot.stats.lock().unwrap_or_else(|e| e.into_inner());
        for (code, message) in &stats.messages {
            messages.entry(*code).or_insert_with(|| message.clone());
        }
        let index = config.first_attachment + i as u32;
        let (units, error) = match &stats.finished {
            _ if abandoned.contains(&index) => {
                // What it recorded so far; its time and CPU are not known.
                let recorded: u64 = stats.live.iter().flatten().sum();
                (recorded, abandon_note.clone())
            }
            Some(f) => {
                core_ns += f.core_ns;
                cpu_ns += f.cpu_ns;
                (f.units, f.error.clone())
            }
            None => (0, None),
        };
        attachments.push(
            json!({"index": index, "home": config.home_of(index), "units": units, "error": error}),
        );
    }

    let warmup = config.timeline.warmup;
    let zero = shared.zero();
    let (intervals, totals, end_offset) = match collected {
        Some(c) => (c.intervals, Some(c.totals), c.end_offset),
        None => (Vec::new(), None, 0.0),
    };
    let measured_seconds = (end_offset - warmup).max(0.0);
    let measure_started_at = zero
        .filter(|_| end_offset >= warmup)
        .map(|z| shared.epoch(z + Duration::from_secs_f64(warmup)));
    let ended_at = match zero {
        Some(z) => shared.epoch(z + Duration::from_secs_f64(end_offset)),
        None => shared.epoch(std::time::Instant::now()),
    };

    let totals = totals.unwrap_or_else(|| {
        config
            .units
            .iter()
            .map(|u| UnitStats::new(full_histogram(), u.tally.len()))
            .collect()
    });
    let mut units = Map::new();
    for (unit, stats) in config.units.iter().zip(&totals) {
        let mut entry = stats.counts_json();
        entry.insert("histogram".into(), json!(serialize(&stats.latency)));
        entry.insert("latency_ms".into(), latency_ms(&stats.latency));
        entry.insert(
            "errors_by_code".into(),
            by_code_json(&stats.errors_by_code, &messages),
        );
        entry.insert(
            "conflicts_by_code".into(),
            by_code_json(&stats.conflicts_by_code, &messages),
        );
        let tally: Map<String, Value> = unit
            .tally
            .iter()
            .zip(&stats.tally)
            .map(|(name, v)| (name.clone(), number(*v)))
            .collect();
        entry.insert("tally".into(), Value::Object(tally));
        units.insert(unit.name.clone(), Value::Object(entry));
    }

    json!({
        "status": status,
        "failure": failure,
        "started_at": shared.created_wall,
        "measure_started_at": measure_started_at,
        "ended_at": ended_at,
        "measured_seconds": measured_seconds,
        "client_cpu_seconds": core_ns as f64 / 1e9,
        "thread_cpu_seconds": cpu_ns as f64 / 1e9,
        "attachments": attachments,
        "abandoned": abandoned,
        "intervals": intervals,
        "units": units,
    })
    .to_string()
}
