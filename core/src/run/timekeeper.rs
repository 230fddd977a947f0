//! The timekeeper, on the control thread: closes each interval at its boundary (every
//! attachment's accumulators are swapped out and merged) and adds the measured intervals into
//! the run's totals.

use std::mem;
use std::time::{Duration, Instant};

use serde_json::{json, Map};

use super::guard::lock;
use super::state::{IntervalSlot, RunState, Shared};
use crate::report::Collected;
use crate::stats::{full_histogram, UnitStats};
use crate::timeline::{boundary_closing, Phase};

pub(super) fn run_intervals(shared: &Shared, zero: Instant) -> Collected {
    let config = &shared.config;
    let timeline = config.timeline;
    let mut spares: Vec<Option<IntervalSlot>> = shared
        .slots
        .iter()
        .map(|_| Some(IntervalSlot::new(config, 0)))
        .collect();
    let mut collected = Collected {
        intervals: Vec::new(),
        totals: config
            .units
            .iter()
            .map(|u| UnitStats::new(full_histogram(), u.tally.len()))
            .collect(),
        end_offset: 0.0,
    };
    let workers = config.connections;
    let mut index = 0;
    loop {
        let (start, end, phase) = timeline.bounds(index);
        let deadline = zero + Duration::from_secs_f64(end);
        let ended = |state: &RunState| {
            shared.stopping()
                || ((config.transactions.is_some() || config.replay.is_some())
                    && state.finished >= workers)
        };
        let state = shared.wait_while(lock(&shared.state), deadline, |state| !ended(state));
        let interrupted = ended(&state);
        drop(state);
        let (until, last) = if interrupted {
            (zero.elapsed().as_secs_f64().clamp(start, end), true)
        } else {
            (end, timeline.is_last(index))
        };
        close_interval(
            shared,
            &mut spares,
            &mut collected,
            index,
            start,
            until - start,
            phase,
            last,
        );
        if last {
            collected.end_offset = until;
            return collected;
        }
        index += 1;
    }
}

#[allow(clippy::too_many_arguments)]
fn close_interval(
    shared: &Shared,
    spares: &mut [Option<IntervalSlot>],
    collected: &mut Collected,
    index: usize,
    start: f64,
    seconds: f64,
    phase: Phase,
    last: bool,
) {
    let config = &shared.config;
    let mut merged: Vec<UnitStats> = config
        .units
        .iter()
        .map(|u| UnitStats::new(full_histogram(), u.tally.len()))
        .collect();
    for (slot, spare) in shared.slots.iter().zip(spares.iter_mut()) {
        let mut fresh = spare.take().unwrap_or_else(|| IntervalSlot::new(config, 0));
        fresh.index = index + 2;
        let (mut closed, late) = {
            let mut guard = lock(&slot.stats);
            let stats = &mut *guard;
            let mut closed = mem::replace(&mut stats.next, fresh);
            mem::swap(&mut stats.current, &mut closed);
            let late = if last {
                stats.closed = true;
                Some(mem::replace(
                    &mut stats.current,
                    IntervalSlot {
                        index: 0,
                        units: Vec::new(),
                    },
                ))
            } else {
                None
            };
            (closed, late)
        };
        for (total, part) in merged.iter_mut().zip(&closed.units) {
            total.add(part);
        }
        if let Some(late) = late {
            for (total, part) in merged.iter_mut().zip(&late.units) {
                total.add(part);
            }
        }
        closed.units.iter_mut().for_each(UnitStats::reset);
        *spare = Some(closed);
    }
    if phase == Phase::Measure {
        for (total, part) in collected.totals.iter_mut().zip(&merged) {
            total.add(part);
        }
    }
    let mut units = Map::new();
    for (unit, stats) in config.units.iter().zip(&merged) {
        units.insert(unit.name.clone(), stats.interval_json());
    }
    let interval = json!({"index": index, "phase": phase.name(), "start_offset": start,
                          "seconds": seconds, "units": units});
    collected.intervals.push(interval.clone());
    let at = shared
        .zero()
        .map(|zero| {
            shared
                .clock
                .epoch(zero + Duration::from_secs_f64(start + seconds))
        })
        .unwrap_or(0.0);
    let mut state = lock(&shared.state);
    state.closed.push(interval.clone());
    state.intervals_completed += 1;
    state.boundaries = boundary_closing(index);
    state.boundary_at = at;
    state.last_interval = Some(interval);
    shared.cond.notify_all();
}
