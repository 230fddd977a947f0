//! The timekeeper, on the control thread: closes each interval at its boundary (every
//! attachment's accumulators are swapped out and merged) and adds the measured intervals into
//! the run's totals.

use std::mem;
use std::time::{Duration, Instant};

use serde_json::{json, Map};

use super::state::{lock, IntervalSlot, RunState, Shared};
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
    // Every attachment is out of this interval (and, when it is the last, closed): its
    // latencies above the local histograms' top are all in the overflow.
    {
        let mut overflow = lock(&shared.overflow);
        overflow.close(index, &mut merged);
        if last {
            overflow.close(index + 1, &mut merged);
        }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    use hdrhistogram::Histogram;

    use super::*;
    use crate::config::Config;
    use crate::outcome::Outcome;
    use crate::stats::{deserialize, record_latency, summary_us, LOCAL_TOP_US};

    fn run(connections: u32, measure: f64) -> (Shared, Vec<Option<IntervalSlot>>, Collected) {
        let config = Config::from_json(&format!(
            r#"{{"client_library": "/x/libfbclient.so.2", "database": "/x/db.fdb",
                "connections": {connections}, "measure_seconds": {measure},
                "interval_seconds": 1.0,
                "units": [{{"name": "a", "statements": [{{"sql": "select 1 from rdb$database"}}]}},
                          {{"name": "b", "statements": [{{"sql": "select 2 from rdb$database"}}]}}]}}"#
        ))
        .unwrap();
        let shared = Shared::new(config);
        let spares = shared
            .slots
            .iter()
            .map(|_| Some(IntervalSlot::new(&shared.config, 0)))
            .collect();
        let collected = Collected {
            intervals: Vec::new(),
            totals: (0..2)
                .map(|_| UnitStats::new(full_histogram(), 0))
                .collect(),
            end_offset: 0.0,
        };
        (shared, spares, collected)
    }

    fn histogram(interval: &serde_json::Value, unit: &str) -> Histogram<u64> {
        deserialize(interval["units"][unit]["histogram"].as_str().unwrap()).unwrap()
    }

    /// Units far above the attachments' local top (5 s, 30 min, beyond 1 h) land in the interval
    /// they are filed in, exactly: each interval's histogram, its percentiles and the totals are
    /// those of a plain full histogram fed the same values.
    #[test]
    fn slow_units_land_exactly_in_their_interval() {
        let (shared, mut spares, mut collected) = run(2, 4.0);
        let values = [
            0,
            3,
            900,
            LOCAL_TOP_US,
            LOCAL_TOP_US + 1,
            200_000,
            5_000_000,
            5_000_000,
            1_800_000_000,
            u64::MAX,
        ];
        let mut expected: Vec<Vec<Histogram<u64>>> = vec![vec![full_histogram(); 2]; 3];
        let mut record = |interval: usize, attachment: u32, unit: usize, offset: f64| {
            for &v in &values {
                shared.record(attachment, unit, Outcome::Ok, v, offset, 0, &[]);
                record_latency(&mut expected[interval][unit], v);
            }
        };
        record(0, 1, 0, 0.5);
        record(0, 2, 1, 0.25);
        record(1, 2, 0, 1.5); // already in the next interval: the attachment's next slot
        let close = |spares: &mut _, collected: &mut _, index, last| {
            let phase = Phase::Measure;
            close_interval(
                &shared,
                spares,
                collected,
                index,
                index as f64,
                1.0,
                phase,
                last,
            )
        };
        close(&mut spares, &mut collected, 0, false);
        record(1, 1, 1, 0.9); // ended in 0, recorded after 0 closed: filed in 1
        record(1, 1, 0, 1.1);
        record(2, 1, 1, 2.5); // next slot of a run stopped in 1: that last interval's
        close(&mut spares, &mut collected, 1, false);
        record(2, 2, 0, 2.2);
        record(2, 2, 1, 3.5); // the stopped run's next slot again
        close(&mut spares, &mut collected, 2, true);
        // After the last interval nothing counts.
        shared.record(1, 0, Outcome::Ok, 5_000_000, 2.5, 0, &[]);
        shared.record(2, 0, Outcome::Ok, 5, 2.5, 0, &[]);

        assert_eq!(collected.intervals.len(), 3);
        for (interval, expected) in collected.intervals.iter().zip(&expected) {
            for (unit, expected) in ["a", "b"].iter().zip(expected) {
                let merged = histogram(interval, unit);
                assert_eq!(
                    &merged, expected,
                    "interval {} unit {unit}",
                    interval["index"]
                );
                assert_eq!(summary_us(&merged), summary_us(expected));
                assert_eq!(interval["units"][unit]["ok"].as_u64(), Some(expected.len()));
            }
        }
        assert_eq!(expected[2][1].len(), 2 * values.len() as u64);
        // The largest is the contract's top (u64::MAX clamped to 1 h).
        assert!(expected[0][0].equivalent(expected[0][0].max(), 3_600_000_000));
        for (unit, total) in collected.totals.iter().enumerate() {
            let mut all = full_histogram();
            for interval in &expected {
                all.add(&interval[unit]).unwrap();
            }
            assert_eq!(total.latency, all);
            assert_eq!(summary_us(&total.latency), summary_us(&all));
        }
        // The locals never grew; the overflow kept nothing back.
        for slot in &shared.slots {
            let stats = lock(&slot.stats);
            assert!(stats
                .next
                .units
                .iter()
                .all(|u| u.latency.distinct_values() == 8192));
        }
        for spare in spares.iter().flatten() {
            assert!(spare
                .units
                .iter()
                .all(|u| u.latency.distinct_values() == 8192));
        }
    }

    /// Attachments recording fast and slow units while the intervals close under them: every
    /// unit is in exactly one interval, the slow ones too (the overflow's slots always belong to
    /// the intervals the attachments record into: checked by its debug assertions).
    #[test]
    fn slow_units_recorded_while_intervals_close_are_all_kept() {
        let (shared, mut spares, mut collected) = run(2, 100.0);
        let shared = Arc::new(shared);
        let open = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|attachment| {
                let (shared, open, stop) = (shared.clone(), open.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut all = vec![full_histogram(); 2];
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let unit = (n % 2) as usize;
                        let micros = match n % 5 {
                            0 => 5_000_000 + n,
                            1 => LOCAL_TOP_US + n % 7,
                            _ => n % 100_000,
                        };
                        let interval = open.load(Ordering::Relaxed) + n.is_multiple_of(3) as usize;
                        let offset = interval as f64 + 0.5;
                        shared.record(attachment, unit, Outcome::Ok, micros, offset, 0, &[]);
                        record_latency(&mut all[unit], micros);
                    }
                    all
                })
            })
            .collect();
        for index in 0..40 {
            std::thread::sleep(std::time::Duration::from_millis(1));
            open.store(index + 1, Ordering::Relaxed);
            close_interval(
                &shared,
                &mut spares,
                &mut collected,
                index,
                index as f64,
                1.0,
                Phase::Measure,
                false,
            );
        }
        stop.store(true, Ordering::Relaxed);
        let mut all = vec![full_histogram(); 2];
        for thread in threads {
            for (all, part) in all.iter_mut().zip(thread.join().unwrap()) {
                all.add(&part).unwrap();
            }
        }
        close_interval(
            &shared,
            &mut spares,
            &mut collected,
            40,
            40.0,
            1.0,
            Phase::Measure,
            true,
        );
        for (unit, all) in all.iter().enumerate() {
            assert!(all.len() > 1000 && all.max() > LOCAL_TOP_US);
            assert_eq!(&collected.totals[unit].latency, all);
        }
    }
}
