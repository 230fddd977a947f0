//! The state the run's threads share: the stop flag, the zero, each attachment's accumulators
//! and live counters, and the one condition variable every wait of the run waits on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::replay_stats::{OrderGate, ReplayStats};
use crate::config::{Config, Replay};
use crate::ffi::{FbApi, Handle, StatusVector, FB_CANCEL_RAISE, STATUS_LEN};
use crate::outcome::Outcome;
use crate::report::{AttachmentEnd, Closing, Ended, Finished, Live};
use crate::signals::SavedSignals;
use crate::stats::{local_histogram, Overflow, UnitStats};
use crate::timeline::{WallClock, ZERO_BOUNDARY};

pub struct IntervalSlot {
    pub index: usize,
    pub units: Vec<UnitStats>,
}

impl IntervalSlot {
    pub(super) fn new(config: &Config, index: usize) -> IntervalSlot {
        IntervalSlot {
            index,
            units: config
                .units
                .iter()
                .map(|u| UnitStats::new(local_histogram(), u.tally.len()))
                .collect(),
        }
    }
}

pub struct WorkerStats {
    pub(super) current: IntervalSlot,
    pub(super) next: IntervalSlot,
    /// Set by the final collection: nothing recorded afterwards is part of the result.
    pub(super) closed: bool,
    pub live: Vec<[u64; 4]>,
    pub live_measure: Vec<[u64; 4]>,
    /// The first message of each code, per unit (by its index): every PSQL exception is one
    /// gdscode (isc_except), so one unit's text must not be shown for another's.
    pub messages: HashMap<(usize, i64), String>,
    pub finished: Option<Finished>,
    /// The attachment's closing_sql, once it ran it (handed in with what it finished).
    pub closing: Option<Closing>,
}

pub struct WorkerSlot {
    pub busy: AtomicBool,
    cancel: Mutex<Handle>,
    pub stats: Mutex<WorkerStats>,
}

#[derive(Default)]
pub struct RunState {
    pub connected: u32,
    pub finished: u32,
    pub failure: Option<String>,
    pub stopping: bool,
    /// The user asked for the stop before the run ended (a stop while waiting for the
    /// attachments after a completed period does not count).
    pub user_stopped: bool,
    /// The control thread no longer waits for the attachments (all back, or some abandoned).
    pub watch_over: bool,
    /// Attachments (1-based) that did not come back within the watchdog bound.
    pub abandoned: Vec<u32>,
    /// "attachment N did not return within S s after …", set with `abandoned`.
    pub abandon_note: Option<String>,
    pub done: bool,
    pub intervals_completed: usize,
    /// Hold mode: every attachment connected, waiting for `go`.
    pub ready: bool,
    /// Hold mode: the zero `go` asked for.
    pub go_at: Option<Instant>,
    /// closing_sql: the caller has read the end of the measured period (`open_closing`); the
    /// attachments' closing statements may run.
    pub closing_open: bool,
    /// Every closed interval so far, for a caller that streams them (Classic's processes).
    pub closed: Vec<Value>,
    /// Boundaries passed: 1 once the run's zero is set, then one more per closed interval.
    pub boundaries: u64,
    /// Wall-clock time (seconds since the epoch) of the latest boundary.
    pub boundary_at: f64,
    pub last_interval: Option<Value>,
    pub result: Option<String>,
}

impl RunState {
    /// The failure as reported: the run's own failure, then the abandoned attachments.
    pub fn failure_text(&self) -> Option<String> {
        match (&self.failure, &self.abandon_note) {
            (Some(failure), Some(note)) => Some(format!("{failure}; {note}")),
            (failure, note) => failure.clone().or_else(|| note.clone()),
        }
    }
}

pub struct Shared {
    pub config: Config,
    pub signals: OnceLock<SavedSignals>,
    pub(super) api: OnceLock<FbApi>,
    stop: AtomicBool,
    stop_requested: AtomicBool,
    pub(super) zero: OnceLock<Instant>,
    pub state: Mutex<RunState>,
    pub cond: Condvar,
    pub slots: Vec<WorkerSlot>,
    /// Latencies above the attachments' local histograms' top, per interval (stats.rs).
    pub(super) overflow: Mutex<Overflow>,
    pub clock: WallClock,
    /// A replay's strict order, and what its attachments measured (merged as each comes back).
    pub(super) order: Mutex<OrderGate>,
    pub(super) order_cond: Condvar,
    replay_totals: Mutex<Option<ReplayStats>>,
    /// Fixed work in phases: executions of each counted unit finished by this run's attachments.
    phase_done: Vec<AtomicU64>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking attachment thread must not take the whole run's bookkeeping with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub fn new(config: Config) -> Shared {
        let slots = (0..config.connections)
            .map(|_| WorkerSlot {
                busy: AtomicBool::new(false),
                cancel: Mutex::new(0),
                stats: Mutex::new(WorkerStats {
                    current: IntervalSlot::new(&config, 0),
                    next: IntervalSlot::new(&config, 1),
                    closed: false,
                    live: vec![[0; 4]; config.units.len()],
                    live_measure: vec![[0; 4]; config.units.len()],
                    messages: HashMap::new(),
                    finished: None,
                    closing: None,
                }),
            })
            .collect();
        let actions = config.replay.as_ref().map_or(0, |r| r.actions);
        let replay_totals = config
            .replay
            .as_ref()
            .map(|r| ReplayStats::new(r.templates.len(), false));
        let phase_done = (0..config.units.len()).map(|_| AtomicU64::new(0)).collect();
        let units = config.units.len();
        Shared {
            order: Mutex::new(OrderGate::new(actions)),
            order_cond: Condvar::new(),
            replay_totals: Mutex::new(replay_totals),
            config,
            signals: OnceLock::new(),
            api: OnceLock::new(),
            stop: AtomicBool::new(false),
            stop_requested: AtomicBool::new(false),
            zero: OnceLock::new(),
            state: Mutex::new(RunState::default()),
            cond: Condvar::new(),
            phase_done,
            slots,
            overflow: Mutex::new(Overflow::new(units)),
            clock: WallClock::now(),
        }
    }

    /// An attachment finished one execution of counted unit `unit`.
    #[inline]
    pub fn phase_step(&self, unit: usize) {
        self.phase_done[unit].fetch_add(1, Ordering::AcqRel);
    }

    /// Waits until every attachment of the run finished its count of `unit` (the phase is over);
    /// false if the run stops first. Phases change rarely: a short sleep is all the wait needs.
    pub fn wait_phase(&self, unit: usize) -> bool {
        let wanted = self.config.units[unit].count.unwrap_or(0) * self.config.connections as u64;
        while self.phase_done[unit].load(Ordering::Acquire) < wanted {
            if self.stopping() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    pub fn api(&self) -> Option<&FbApi> {
        self.api.get()
    }

    pub fn zero(&self) -> Option<Instant> {
        self.zero.get().copied()
    }

    /// Attachment `index` (1-based, counted over the whole run: a process of a Classic run has
    /// only its own).
    pub fn slot(&self, index: u32) -> &WorkerSlot {
        &self.slots[(index - self.config.first_attachment) as usize]
    }

    /// The indices of this run's attachments.
    pub fn indices(&self) -> std::ops::Range<u32> {
        let first = self.config.first_attachment;
        first..first + self.config.connections
    }

    /// Hold mode: start at `at`, the same moment for every process of the run.
    pub fn go(&self, at: Instant) {
        let mut state = lock(&self.state);
        state.go_at.get_or_insert(at);
        self.cond.notify_all();
    }

    /// closing_sql: the observers have read the end of the measured period, so the attachments'
    /// closing statements change none of its figures, and no engine snapshot (MON$) is taken
    /// while they run: on 5.0.4 a MON$ snapshot taken during a profiler's flush once hung both.
    pub fn open_closing(&self) {
        lock(&self.state).closing_open = true;
        self.cond.notify_all();
    }

    /// Waits up to `bound` for `open_closing`, or a stop; true if it came.
    pub(super) fn wait_closing(&self, bound: Duration) -> bool {
        let state = lock(&self.state);
        self.wait_while(state, Instant::now() + bound, |state| {
            !state.closing_open && !self.user_stopped()
        })
        .closing_open
    }

    /// Hold mode: waits for `go` (None if the run stops first), then until its moment.
    pub(super) fn wait_go(&self) -> Option<Instant> {
        let mut state = lock(&self.state);
        while state.go_at.is_none() && !self.stopping() {
            state = self.cond.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        let at = state.go_at?;
        drop(state);
        self.sleep_until(at).then_some(at)
    }

    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub fn user_stopped(&self) -> bool {
        self.stop_requested.load(Ordering::Relaxed)
    }

    pub fn request_stop(&self) {
        self.stop_requested.store(true, Ordering::Relaxed);
        self.halt();
    }

    pub(super) fn halt(&self) {
        let _state = lock(&self.state);
        self.stop.store(true, Ordering::Relaxed);
        self.cond.notify_all();
    }

    /// The run failed (not only stopping): an attachment then runs no closing_sql.
    pub fn failed(&self) -> bool {
        lock(&self.state).failure.is_some()
    }

    pub fn closed(&self, index: u32, closing: Closing) {
        lock(&self.slot(index).stats).closing = Some(closing);
    }

    pub fn fail(&self, message: String) {
        let mut state = lock(&self.state);
        // Once the control thread stopped waiting, only an abandoned attachment coming back late
        // can get here: what it reports is not part of the run.
        if !state.watch_over {
            state.failure.get_or_insert(message);
        }
        self.stop.store(true, Ordering::Relaxed);
        self.cond.notify_all();
    }

    /// Sleeps until `deadline` in short slices; false if the run is stopping.
    pub fn sleep_until(&self, deadline: Instant) -> bool {
        loop {
            if self.stopping() {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(10)));
        }
    }

    pub fn connected(&self) {
        lock(&self.state).connected += 1;
        self.cond.notify_all();
    }

    /// The run's zero, once every attachment is ready (None if the run stops first).
    pub fn wait_zero(&self) -> Option<Instant> {
        let mut state = lock(&self.state);
        while self.zero.get().is_none() && !self.stopping() {
            state = self.cond.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        self.zero()
    }

    pub fn set_cancel_handle(&self, index: u32, db: Handle) {
        *lock(&self.slot(index).cancel) = db;
    }

    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &self,
        index: u32,
        unit: usize,
        outcome: Outcome,
        micros: u64,
        offset: f64,
        code: i64,
        tally: &[f64],
    ) {
        let Some(interval) = self.config.timeline.interval_of(offset) else {
            return;
        };
        let mut guard = lock(&self.slot(index).stats);
        let stats = &mut *guard;
        if stats.closed {
            return;
        }
        let slot = if interval > stats.current.index {
            &mut stats.next
        } else {
            &mut stats.current
        };
        if let Err(slow) = slot.units[unit].record(outcome, micros, code, tally, offset) {
            // Under the attachment's lock: the timekeeper takes interval i's overflow only after
            // it swapped every attachment out of i.
            lock(&self.overflow).record(slot.index, unit, slow);
        }
        stats.live[unit][outcome.index()] += 1;
        if interval >= self.config.timeline.warmup_intervals() {
            stats.live_measure[unit][outcome.index()] += 1;
        }
    }

    /// Strict order: action `seq` has run; the order's frontier moves past every action done.
    pub(super) fn action_done(&self, replay: &Replay, seq: u64) {
        if seq == 0 || replay.order != crate::config::Order::Strict {
            return;
        }
        lock(&self.order).mark(seq);
        self.order_cond.notify_all();
    }

    /// A replay's latency (of `template`; None: a lag) above the attachment's local histogram's
    /// top, into the run's totals at once. The attachment's other measurements join them when it
    /// comes back: one abandoned never does, so its slow statements are then the only ones of it
    /// in the replay's histograms (its `executions` not counted).
    #[cold]
    pub(super) fn replay_overflow(&self, template: Option<usize>, micros: u64) {
        if let Some(totals) = lock(&self.replay_totals).as_mut() {
            totals.record_slow(template, micros);
        }
    }

    /// An attachment's replay measurements, added to the run's.
    pub(super) fn replay_finished(&self, stats: &ReplayStats) {
        if let Some(totals) = lock(&self.replay_totals).as_mut() {
            totals.add(stats);
        }
    }

    pub fn add_message(&self, index: u32, unit: usize, code: i64, message: String) {
        lock(&self.slot(index).stats)
            .messages
            .entry((unit, code))
            .or_insert(message);
    }

    pub fn worker_finished(
        &self,
        index: u32,
        units: u64,
        core_ns: u64,
        cpu_ns: u64,
        error: Option<String>,
    ) {
        let mut stats = lock(&self.slot(index).stats);
        let closing = stats.closing.take();
        stats.finished = Some(Finished {
            units,
            core_ns,
            cpu_ns,
            error,
            closing,
        });
        drop(stats);
        lock(&self.state).finished += 1;
        self.cond.notify_all();
    }

    pub(super) fn cancel_busy(&self) {
        let Some(api) = self.api() else { return };
        for slot in &self.slots {
            if !slot.busy.load(Ordering::Relaxed) {
                continue;
            }
            // Held across the call so the attachment cannot detach (and its handle be reused)
            // while the cancel is on its way.
            let handle = lock(&slot.cancel);
            if *handle != 0 {
                let mut db = *handle;
                let mut status: StatusVector = [0; STATUS_LEN];
                // SAFETY: fb_cancel_operation is meant to be called from another thread on a
                // live attachment handle.
                unsafe { (api.fb_cancel_operation)(status.as_mut_ptr(), &mut db, FB_CANCEL_RAISE) };
            }
        }
    }

    /// Waits on the run's condition variable while `waiting(state)` holds and `deadline` has not
    /// passed (every wait of the run: for its end, a boundary, an interval's end, the attachments).
    pub fn wait_while<'a>(
        &'a self,
        mut state: MutexGuard<'a, RunState>,
        deadline: Instant,
        mut waiting: impl FnMut(&RunState) -> bool,
    ) -> MutexGuard<'a, RunState> {
        while waiting(&state) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self
                .cond
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        state
    }

    /// The run's zero is the first boundary: observers take their baseline there.
    pub(super) fn zero_boundary(&self) {
        let Some(zero) = self.zero() else {
            self.cond.notify_all();
            return;
        };
        let mut state = lock(&self.state);
        state.boundaries = ZERO_BOUNDARY;
        state.boundary_at = self.clock.epoch(zero);
        self.cond.notify_all();
    }

    /// What `poll` reports: every attachment's live counters, then the run's state.
    pub fn live(&self) -> Live {
        let units = self.config.units.len();
        let mut counts = vec![[0u64; 4]; units];
        let mut measure_counts = vec![[0u64; 4]; units];
        for slot in &self.slots {
            let stats = lock(&slot.stats);
            for (unit, live) in stats.live.iter().enumerate() {
                for k in 0..4 {
                    counts[unit][k] += live[k];
                    measure_counts[unit][k] += stats.live_measure[unit][k];
                }
            }
        }
        let state = lock(&self.state);
        Live {
            counts,
            measure_counts,
            elapsed: self.zero().map(|z| z.elapsed().as_secs_f64()),
            done: state.done,
            stopping: state.stopping,
            ready: state.ready,
            connected: state.connected,
            intervals_completed: state.intervals_completed,
            last_interval: state.last_interval.clone(),
            failure: state.failure_text(),
        }
    }

    /// What the result reports of the run once it has ended: how it ended, then what each
    /// attachment handed in (or recorded, if it was abandoned).
    pub fn ended(&self) -> Ended {
        let state = lock(&self.state);
        let failure = state.failure_text();
        let run_failed = state.failure.is_some();
        let user_stopped = state.user_stopped;
        let abandoned = state.abandoned.clone();
        let abandon_note = state.abandon_note.clone();
        drop(state);
        let mut messages: HashMap<(usize, i64), String> = HashMap::new();
        let mut attachments = Vec::new();
        for (index, slot) in self.indices().zip(&self.slots) {
            let stats = lock(&slot.stats);
            for (key, message) in &stats.messages {
                messages.entry(*key).or_insert_with(|| message.clone());
            }
            attachments.push(AttachmentEnd {
                index,
                recorded: stats.live.iter().flatten().sum(),
                finished: stats.finished.clone(),
            });
        }
        let replay = match (&self.config.replay, lock(&self.replay_totals).as_ref()) {
            (Some(replay), Some(totals)) => Some(totals.to_json(replay)),
            _ => None,
        };
        Ended {
            replay,
            failure,
            run_failed,
            user_stopped,
            abandoned,
            abandon_note,
            attachments,
            messages,
            clock: self.clock,
            zero: self.zero(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::Value;

    use super::*;
    use crate::report;
    use crate::run::shared;
    use crate::run::watchdog::wait_for_workers;

    #[test]
    fn a_process_of_a_classic_run_numbers_its_attachments_from_its_index() {
        let config = Config::from_json(
            r#"{"client_library": "/x/libfbclient.so.2", "database": "/x/db.fdb",
                "connections": 2, "attachment_index": 3, "hold": true, "measure_seconds": 1.0,
                "watchdog_seconds": 0.2,
                "units": [{"name": "a", "statements": [{"sql": "select 1 from rdb$database"}]}]}"#,
        )
        .unwrap();
        let shared = Arc::new(Shared::new(config));
        assert_eq!(shared.indices(), 3..5);
        shared.worker_finished(3, 11, 0, 0, None);
        assert_eq!(wait_for_workers(&shared, 2), vec![4]);
        let result: Value =
            serde_json::from_str(&report::result_json(&shared.config, shared.ended(), None))
                .unwrap();
        assert_eq!(result["attachments"][0]["index"], 3);
        assert_eq!(result["attachments"][0]["units"], 11);
        assert_eq!(result["attachments"][1]["index"], 4);
        // Held: no zero until go(), which a stop overtakes.
        assert!(shared.zero().is_none());
        shared.request_stop();
        assert_eq!(shared.wait_go(), None);
        let shared = self::shared(1, 1.0);
        let at = Instant::now() + Duration::from_millis(50);
        shared.go(at);
        shared.go(at + Duration::from_secs(5)); // the first go counts
        assert_eq!(shared.wait_go(), Some(at));
        assert!(Instant::now() >= at);
    }
}
