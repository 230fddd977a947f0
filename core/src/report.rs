//! The JSON documents of docs/core-api.md: live counters (`poll`) and the final result.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::stats::{counts_json, full_histogram, UnitStats};
use crate::timeline::WallClock;

/// What the timekeeper accumulates while the run goes on.
pub struct Collected {
    pub intervals: Vec<Value>,
    pub totals: Vec<UnitStats>,
    /// Offset from zero at which counting ended.
    pub end_offset: f64,
}

/// What an attachment hands in when it comes back.
#[derive(Clone)]
pub struct Finished {
    pub units: u64,
    pub core_ns: u64,
    pub cpu_ns: u64,
    pub error: Option<String>,
    /// The config's `closing_sql`, when the attachment ran it (its load ended as planned).
    pub closing: Option<Closing>,
}

/// An attachment's `closing_sql`: when it was done, and why it failed if it did.
#[derive(Clone)]
pub struct Closing {
    /// Seconds from the run's zero to the end of the statement's commit (or its failure).
    pub at_seconds: f64,
    pub error: Option<String>,
}

/// What `poll` reads of the run, taken in one go.
pub struct Live {
    /// Counts by unit and outcome since the start, and within the measured period.
    pub counts: Vec<[u64; 4]>,
    pub measure_counts: Vec<[u64; 4]>,
    /// Seconds since the zero; None before it.
    pub elapsed: Option<f64>,
    pub done: bool,
    pub stopping: bool,
    pub ready: bool,
    pub connected: u32,
    pub intervals_completed: usize,
    pub last_interval: Option<Value>,
    pub failure: Option<String>,
}

/// What the result reads of the run once it has ended, besides what was `Collected`.
pub struct Ended {
    /// The failure as reported (the run's own, then the abandoned attachments).
    pub failure: Option<String>,
    /// The run itself failed (not only an attachment that was abandoned).
    pub run_failed: bool,
    pub user_stopped: bool,
    pub abandoned: Vec<u32>,
    pub abandon_note: Option<String>,
    pub attachments: Vec<AttachmentEnd>,
    /// The first message seen for each unit (by index) and gdscode, over all attachments.
    pub messages: HashMap<(usize, i64), String>,
    pub clock: WallClock,
    pub zero: Option<Instant>,
    /// A replay's own measurements (docs/core-api.md, "Replay").
    pub replay: Option<Value>,
}

pub struct AttachmentEnd {
    pub index: u32,
    /// Units it recorded so far (all that is known of one that was abandoned).
    pub recorded: u64,
    pub finished: Option<Finished>,
}

pub fn poll_json(config: &Config, live: Live) -> String {
    let elapsed = live.elapsed.unwrap_or(0.0);
    let phase = if live.done {
        "done"
    } else if live.stopping {
        "stopping"
    } else if live.elapsed.is_none() && live.ready {
        "ready"
    } else if live.elapsed.is_none() {
        "connecting"
    } else if elapsed < config.timeline.warmup {
        "warmup"
    } else {
        "measure"
    };
    let mut units = Map::new();
    let mut measure_units = Map::new();
    for (i, unit) in config.units.iter().enumerate() {
        units.insert(
            unit.name.clone(),
            Value::Object(counts_json(&live.counts[i])),
        );
        measure_units.insert(
            unit.name.clone(),
            Value::Object(counts_json(&live.measure_counts[i])),
        );
    }
    json!({
        "elapsed_seconds": elapsed,
        "phase": phase,
        "connected": live.connected,
        "intervals_completed": live.intervals_completed,
        "units": units,
        "measure_units": measure_units,
        "last_interval": live.last_interval,
        "failure": live.failure,
    })
    .to_string()
}

pub fn result_json(config: &Config, ended: Ended, collected: Option<Collected>) -> String {
    let Ended {
        failure,
        run_failed,
        user_stopped,
        abandoned,
        abandon_note,
        attachments: ends,
        messages,
        clock,
        zero,
        replay,
    } = ended;
    // A stop the user asked for stays "stopped" even when an attachment had to be abandoned
    // (the note says which); a failure of the run, or an attachment abandoned after a period
    // that ended normally, is "failed".
    let status = if run_failed {
        "failed"
    } else if user_stopped {
        "stopped"
    } else if !abandoned.is_empty() {
        "failed"
    } else {
        "completed"
    };

    let mut attachments = Vec::new();
    let (mut core_ns, mut cpu_ns) = (0u64, 0u64);
    for end in ends {
        let index = end.index;
        let (units, error, closing) = match end.finished {
            // What it recorded so far; its time and CPU are not known.
            _ if abandoned.contains(&index) => (end.recorded, abandon_note.clone(), None),
            Some(f) => {
                core_ns += f.core_ns;
                cpu_ns += f.cpu_ns;
                (f.units, f.error, f.closing)
            }
            None => (0, None, None),
        };
        let mut attachment =
            json!({"index": index, "home": config.home_of(index), "units": units, "error": error});
        if config.closing_sql.is_some() {
            attachment["closing"] = match closing {
                Some(c) => json!({"at_seconds": c.at_seconds, "error": c.error}),
                None => Value::Null,
            };
        }
        attachments.push(attachment);
    }

    let warmup = config.timeline.warmup;
    let (intervals, totals, end_offset) = match collected {
        Some(c) => (c.intervals, Some(c.totals), c.end_offset),
        None => (Vec::new(), None, 0.0),
    };
    let measured_seconds = (end_offset - warmup).max(0.0);
    let measure_started_at = zero
        .filter(|_| end_offset >= warmup)
        .map(|z| clock.epoch(z + Duration::from_secs_f64(warmup)));
    let ended_at = match zero {
        Some(z) => clock.epoch(z + Duration::from_secs_f64(end_offset)),
        None => clock.epoch(Instant::now()),
    };

    let totals = totals.unwrap_or_else(|| {
        config
            .units
            .iter()
            .map(|u| UnitStats::new(full_histogram(), u.tally.len()))
            .collect()
    });
    let mut units = Map::new();
    for (index, (unit, stats)) in config.units.iter().zip(&totals).enumerate() {
        let own: HashMap<i64, String> = messages
            .iter()
            .filter(|((of, _), _)| *of == index)
            .map(|((_, code), message)| (*code, message.clone()))
            .collect();
        units.insert(unit.name.clone(), stats.total_json(&unit.tally, &own));
    }

    let mut result = json!({
        "status": status,
        "failure": failure,
        "started_at": clock.created_wall,
        "measure_started_at": measure_started_at,
        "ended_at": ended_at,
        "measured_seconds": measured_seconds,
        "client_cpu_seconds": core_ns as f64 / 1e9,
        "thread_cpu_seconds": cpu_ns as f64 / 1e9,
        "attachments": attachments,
        "abandoned": abandoned,
        "intervals": intervals,
        "units": units,
    });
    if let Some(replay) = replay {
        result["replay"] = replay;
    }
    result.to_string()
}
