//! Run control: the state shared by attachment threads, the timekeeper thread that closes
//! intervals, the stop flag, live counters and the final result.
//!
//! When the run ends (measured period over, stop requested, or failure), the control thread
//! waits for the attachments at most `Config::watchdog`, while a canceller thread breaks their
//! waits with fb_cancel_operation. An attachment still inside the engine after that is abandoned:
//! the control thread writes the result without it and never joins its thread, which keeps its
//! own `Arc<Shared>`, finds every interval closed and the run stopping, and may come back much
//! later or never. Neither control nor Python ever makes a call that waits on it.
//!
//! Each attachment records a finished unit under its own mutex (uncontended: only the
//! timekeeper takes it, once per interval, to swap the interval's accumulators out). Units are
//! filed by the interval their end time falls in; the accumulator for the next interval already
//! exists, so a unit that ends just after a boundary never lands in the closing interval.

use std::collections::HashMap;
use std::mem;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::ffi::{FbApi, Handle, StatusVector, FB_CANCEL_RAISE, STATUS_LEN};
use crate::outcome::Outcome;
use crate::report;
use crate::stats::{full_histogram, local_histogram, UnitStats};
use crate::timeline::Phase;
use crate::worker::worker_main;

/// The embedded engine runs on the attachment's thread and recurses deeply.
const WORKER_STACK: usize = 8 << 20;
/// How long a stopping attachment may finish its unit before its wait is cancelled.
const CANCEL_GRACE: Duration = Duration::from_millis(300);
const CANCEL_REPEAT: Duration = Duration::from_millis(500);

pub struct IntervalSlot {
    pub index: usize,
    pub units: Vec<UnitStats>,
}

impl IntervalSlot {
    fn new(config: &Config, index: usize) -> IntervalSlot {
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

pub struct Finished {
    pub units: u64,
    pub core_ns: u64,
    pub cpu_ns: u64,
    pub error: Option<String>,
}

pub struct WorkerStats {
    current: IntervalSlot,
    next: IntervalSlot,
    /// Set by the final collection: nothing recorded afterwards is part of the result.
    closed: bool,
    pub live: Vec<[u64; 4]>,
    pub live_measure: Vec<[u64; 4]>,
    pub messages: HashMap<i64, String>,
    pub finished: Option<Finished>,
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

/// SIGINT / SIGTERM dispositions of the process when the run started.
///
/// libfbclient installs its own handlers on its first attach, and they shut down every
/// attachment of the process on Ctrl-C ("connection shutdown"): the run would fail and the
/// caller's own connections die, instead of the caller turning Ctrl-C into the stop flag.
/// Each attachment restores these right after it connects.
pub struct SavedSignals {
    int: libc::sigaction,
    term: libc::sigaction,
}

impl SavedSignals {
    pub fn capture() -> SavedSignals {
        // SAFETY: querying dispositions only (null new action); zeroed structs are valid outputs.
        unsafe {
            let mut int: libc::sigaction = mem::zeroed();
            let mut term: libc::sigaction = mem::zeroed();
            libc::sigaction(libc::SIGINT, std::ptr::null(), &mut int);
            libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut term);
            SavedSignals { int, term }
        }
    }

    pub fn restore(&self) {
        // SAFETY: re-installing dispositions read from this process earlier.
        unsafe {
            libc::sigaction(libc::SIGINT, &self.int, std::ptr::null_mut());
            libc::sigaction(libc::SIGTERM, &self.term, std::ptr::null_mut());
        }
    }
}

pub struct Shared {
    pub config: Config,
    pub signals: OnceLock<SavedSignals>,
    api: OnceLock<FbApi>,
    stop: AtomicBool,
    stop_requested: AtomicBool,
    zero: OnceLock<Instant>,
    pub state: Mutex<RunState>,
    pub cond: Condvar,
    pub slots: Vec<WorkerSlot>,
    pub created: Instant,
    pub created_wall: f64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking attachment thread must not take the whole run's bookkeeping with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn wall_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
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
                }),
            })
            .collect();
        Shared {
            config,
            signals: OnceLock::new(),
            api: OnceLock::new(),
            stop: AtomicBool::new(false),
            stop_requested: AtomicBool::new(false),
            zero: OnceLock::new(),
            state: Mutex::new(RunState::default()),
            cond: Condvar::new(),
            slots,
            created: Instant::now(),
            created_wall: wall_now(),
        }
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

    /// Hold mode: waits for `go` (None if the run stops first), then until its moment.
    fn wait_go(&self) -> Option<Instant> {
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

    fn halt(&self) {
        let _state = lock(&self.state);
        self.stop.store(true, Ordering::Relaxed);
        self.cond.notify_all();
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
        slot.units[unit].record(outcome, micros, code, tally);
        stats.live[unit][outcome.index()] += 1;
        if interval >= self.config.timeline.warmup_intervals() {
            stats.live_measure[unit][outcome.index()] += 1;
        }
    }

    pub fn add_message(&self, index: u32, code: i64, message: String) {
        lock(&self.slot(index).stats)
            .messages
            .entry(code)
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
        lock(&self.slot(index).stats).finished = Some(Finished {
            units,
            core_ns,
            cpu_ns,
            error,
        });
        lock(&self.state).finished += 1;
        self.cond.notify_all();
    }

    fn cancel_busy(&self) {
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
    fn zero_boundary(&self) {
        let Some(zero) = self.zero() else {
            self.cond.notify_all();
            return;
        };
        let mut state = lock(&self.state);
        state.boundaries = 1;
        state.boundary_at = self.epoch(zero);
        self.cond.notify_all();
    }

    pub fn epoch(&self, at: Instant) -> f64 {
        self.created_wall + at.saturating_duration_since(self.created).as_secs_f64()
    }
}

/// What the timekeeper accumulates while the run goes on.
pub struct Collected {
    pub intervals: Vec<Value>,
    pub totals: Vec<UnitStats>,
    /// Offset from zero at which counting ended.
    pub end_offset: f64,
}

/// The timekeeper thread: loads the library, starts the attachments, closes intervals, stops
/// the run and writes the result.
pub fn control_main(shared: Arc<Shared>) {
    let mut spawned: u32 = 0;
    match FbApi::load(Path::new(&shared.config.client_library)) {
        Ok(api) => {
            let _ = shared.api.set(api);
        }
        Err(e) => shared.fail(e),
    }
    if shared.api().is_some() {
        if shared.config.connect_rate > 0.0 {
            // Under a ramp-up the attachments start working as they connect: the ramp is part
            // of the warm-up. Held, the ramp starts at the common zero, so that attachment k of
            // every process connects at its slot of one ramp.
            let zero = if shared.config.hold {
                shared.wait_go()
            } else {
                Some(Instant::now())
            };
            if let Some(zero) = zero {
                let _ = shared.zero.set(zero);
            }
            shared.zero_boundary();
        }
        let indices = if shared.stopping() {
            0..0
        } else {
            shared.indices()
        };
        for k in indices {
            let worker_shared = Arc::clone(&shared);
            let started = std::thread::Builder::new()
                .name(format!("fbbench-att-{k}"))
                .stack_size(WORKER_STACK)
                .spawn(move || attachment_thread(worker_shared, k));
            // Never joined: an attachment that came back has only its thread's exit left, and
            // one that was abandoned may never end.
            match started {
                Ok(_) => spawned += 1,
                Err(e) => {
                    shared.fail(format!("cannot start attachment thread {k}: {e}"));
                    break;
                }
            }
        }
        if shared.zero().is_none() {
            let mut state = lock(&shared.state);
            while state.connected < spawned && !shared.stopping() {
                state = shared.cond.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            if shared.config.hold && !shared.stopping() {
                state.ready = true;
                shared.cond.notify_all();
                drop(state);
                if let Some(zero) = shared.wait_go() {
                    let _ = shared.zero.set(zero);
                }
            } else {
                if !shared.stopping() {
                    let _ = shared.zero.set(Instant::now());
                }
                drop(state);
            }
            shared.zero_boundary();
        }
    }
    let collected = shared.zero().map(|zero| run_intervals(&shared, zero));
    // Why the run ended, as things stood when counting ended.
    let ended = {
        let mut state = lock(&shared.state);
        state.user_stopped = shared.user_stopped();
        state.stopping = true;
        if state.failure.is_some() {
            "after the run failed"
        } else if state.user_stopped {
            "after the stop"
        } else {
            "after the end of the measured period"
        }
    };
    shared.halt();
    let abandoned = wait_for_workers(&shared, spawned);
    if !abandoned.is_empty() {
        let mut state = lock(&shared.state);
        state.abandon_note = Some(abandon_note(&abandoned, shared.config.watchdog, ended));
        state.abandoned = abandoned;
    }
    let result = report::result_json(&shared, collected);
    let mut state = lock(&shared.state);
    state.result = Some(result);
    state.done = true;
    shared.cond.notify_all();
}

/// One attachment's thread. A panic fails the run but still counts the attachment as back, so
/// the control thread does not wait for it.
fn attachment_thread(shared: Arc<Shared>, index: u32) {
    if catch_unwind(AssertUnwindSafe(|| worker_main(&shared, index))).is_err() {
        let message = format!("attachment {index}: its thread panicked");
        shared.fail(message.clone());
        shared.worker_finished(index, 0, 0, 0, Some(message));
    }
}

/// "attachment 2 did not return within 10 s after the end of the measured period …"
fn abandon_note(abandoned: &[u32], bound: Duration, ended: &str) -> String {
    let names: Vec<String> = abandoned.iter().map(u32::to_string).collect();
    let who = match names.as_slice() {
        [one] => format!("attachment {one}"),
        [init @ .., last] => format!("attachments {} and {last}", init.join(", ")),
        [] => "no attachment".into(),
    };
    format!(
        "{who} did not return within {} s {ended} (cancelled, then abandoned: the engine may \
         still be running its last call)",
        seconds_text(bound)
    )
}

fn seconds_text(d: Duration) -> String {
    let seconds = d.as_secs_f64();
    if seconds.fract() == 0.0 {
        format!("{seconds:.0}")
    } else {
        format!("{}", (seconds * 1000.0).round() / 1000.0)
    }
}

fn run_intervals(shared: &Shared, zero: Instant) -> Collected {
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
            shared.stopping() || (config.transactions.is_some() && state.finished >= workers)
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
        let mut counts = stats.counts_json();
        counts.insert(
            "histogram".into(),
            json!(crate::stats::serialize(&stats.latency)),
        );
        units.insert(unit.name.clone(), Value::Object(counts));
    }
    let interval = json!({"index": index, "phase": phase.name(), "start_offset": start,
                          "seconds": seconds, "units": units});
    collected.intervals.push(interval.clone());
    let at = shared
        .zero()
        .map(|zero| shared.epoch(zero + Duration::from_secs_f64(start + seconds)))
        .unwrap_or(0.0);
    let mut state = lock(&shared.state);
    state.closed.push(interval.clone());
    state.intervals_completed += 1;
    state.boundaries += 1;
    state.boundary_at = at;
    state.last_interval = Some(interval);
    shared.cond.notify_all();
}

/// Waits until every attachment is back or the watchdog bound has passed; returns the
/// attachments abandoned (1-based, ascending). Only waits on the run's own condition variable:
/// the cancels, which call into the engine, run on a thread of their own.
fn wait_for_workers(shared: &Arc<Shared>, spawned: u32) -> Vec<u32> {
    let deadline = Instant::now() + shared.config.watchdog;
    let canceller = Arc::clone(shared);
    // Without a canceller thread the bound still holds; only the cancels are missing.
    let _ = std::thread::Builder::new()
        .name("fbbench-cancel".into())
        .spawn(move || cancel_until_back(&canceller, spawned));
    let mut state = shared.wait_while(lock(&shared.state), deadline, |state| {
        state.finished < spawned
    });
    state.watch_over = true;
    let all_back = state.finished >= spawned;
    drop(state);
    shared.cond.notify_all();
    if all_back {
        return Vec::new();
    }
    // The spawned attachments are the first `spawned`; those that have not handed in their end
    // are left.
    let first = shared.config.first_attachment;
    (first..first + spawned)
        .filter(|&k| lock(&shared.slot(k).stats).finished.is_none())
        .collect()
}

/// The canceller: after a grace period, breaks the waits of busy attachments every
/// CANCEL_REPEAT until all are back or the control thread stops waiting. It may itself hang in
/// fb_cancel_operation on a wedged engine; nothing waits for it.
fn cancel_until_back(shared: &Shared, spawned: u32) {
    let mut pause = CANCEL_GRACE;
    loop {
        let until = Instant::now() + pause;
        let state = shared.wait_while(lock(&shared.state), until, |state| {
            state.finished < spawned && !state.watch_over
        });
        if state.finished >= spawned || state.watch_over {
            return;
        }
        drop(state);
        shared.cancel_busy();
        pause = CANCEL_REPEAT;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(connections: u32, watchdog: f64) -> Arc<Shared> {
        let config = Config::from_json(&format!(
            r#"{{"client_library": "/x/libfbclient.so.2", "database": "/x/db.fdb",
                "connections": {connections}, "measure_seconds": 1.0, "watchdog_seconds": {watchdog},
                "units": [{{"name": "a", "statements": [{{"sql": "select 1 from rdb$database"}}]}}]}}"#
        ))
        .unwrap();
        Arc::new(Shared::new(config))
    }

    #[test]
    fn the_watchdog_abandons_only_who_does_not_come_back_in_time() {
        let shared = shared(3, 0.4);
        shared.worker_finished(2, 5, 0, 0, None);
        let late = Arc::clone(&shared);
        let returner = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            late.worker_finished(3, 7, 0, 0, None);
        });
        let started = Instant::now();
        // Attachment 1 never hands in its end.
        let abandoned = wait_for_workers(&shared, 3);
        let waited = started.elapsed();
        returner.join().unwrap();
        assert_eq!(abandoned, vec![1]);
        // Coming back late changes nothing: no failure, no count the result would read.
        shared.fail("connection lost (attachment 1): late".into());
        shared.worker_finished(1, 9, 0, 0, Some("late".into()));
        assert_eq!(lock(&shared.state).failure, None);
        assert!(
            waited >= Duration::from_millis(400) && waited < Duration::from_millis(900),
            "{waited:?}"
        );
        assert!(lock(&shared.state).watch_over);

        // Everyone back: no wait for the bound.
        let shared = self::shared(2, 5.0);
        shared.worker_finished(1, 1, 0, 0, None);
        shared.worker_finished(2, 1, 0, 0, None);
        let started = Instant::now();
        assert!(wait_for_workers(&shared, 2).is_empty());
        assert!(started.elapsed() < Duration::from_millis(200));
    }

    #[test]
    fn an_abandoned_attachment_fails_a_completed_period_but_not_a_user_stop() {
        let result = |user_stopped: bool, failure: Option<&str>| -> Value {
            let shared = shared(2, 10.0);
            shared.worker_finished(2, 3, 0, 0, None);
            {
                let mut state = lock(&shared.state);
                state.user_stopped = user_stopped;
                state.failure = failure.map(String::from);
                state.abandoned = vec![1];
                state.abandon_note = Some(abandon_note(
                    &[1],
                    shared.config.watchdog,
                    "after the end of the measured period",
                ));
            }
            serde_json::from_str(&report::result_json(&shared, None)).unwrap()
        };
        let note = "attachment 1 did not return within 10 s after the end of the measured period";
        let failed = result(false, None);
        assert_eq!(failed["status"], "failed");
        assert!(failed["failure"].as_str().unwrap().starts_with(note));
        assert_eq!(failed["abandoned"], json!([1]));
        assert!(failed["attachments"][0]["error"]
            .as_str()
            .unwrap()
            .starts_with(note));
        assert_eq!(failed["attachments"][1]["units"], 3);
        assert_eq!(result(true, None)["status"], "stopped");
        let both = result(
            true,
            Some("the database cannot be written (attachment 2): full"),
        );
        assert_eq!(both["status"], "failed");
        assert!(both["failure"]
            .as_str()
            .unwrap()
            .starts_with("the database cannot be written (attachment 2): full; attachment 1 did"));
    }

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
        let result: Value = serde_json::from_str(&report::result_json(&shared, None)).unwrap();
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

    #[test]
    fn the_note_names_every_abandoned_attachment() {
        let bound = Duration::from_millis(12500);
        assert!(abandon_note(&[1, 4, 6], bound, "after the stop")
            .starts_with("attachments 1, 4 and 6 did not return within 12.5 s after the stop"));
        assert!(
            abandon_note(&[3], Duration::from_secs(10), "after the run failed")
                .starts_with("attachment 3 did not return within 10 s after the run failed")
        );
    }
}
