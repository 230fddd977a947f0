//! Run control: the state shared by attachment threads, the timekeeper thread that closes
//! intervals, the stop flag, live counters and the final result.
//!
//! Each attachment records a finished unit under its own mutex (uncontended: only the
//! timekeeper takes it, once per interval, to swap the interval's accumulators out). Units are
//! filed by the interval their end time falls in; the accumulator for the next interval already
//! exists, so a unit that ends just after a boundary never lands in the closing interval.

use std::collections::HashMap;
use std::mem;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
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
    pub done: bool,
    pub intervals_completed: usize,
    pub last_interval: Option<Value>,
    pub result: Option<String>,
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

    pub fn slot(&self, index: u32) -> &WorkerSlot {
        &self.slots[index as usize - 1]
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
        state.failure.get_or_insert(message);
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
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    match FbApi::load(Path::new(&shared.config.client_library)) {
        Ok(api) => {
            let _ = shared.api.set(api);
        }
        Err(e) => shared.fail(e),
    }
    if shared.api().is_some() {
        if shared.config.connect_rate > 0.0 {
            // Under a ramp-up the attachments start working as they connect: the ramp is part
            // of the warm-up.
            let _ = shared.zero.set(Instant::now());
        }
        for k in 1..=shared.config.connections {
            let worker_shared = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("fbbench-att-{k}"))
                .stack_size(WORKER_STACK)
                .spawn(move || worker_main(&worker_shared, k));
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(e) => {
                    shared.fail(format!("cannot start attachment thread {k}: {e}"));
                    break;
                }
            }
        }
        if shared.zero().is_none() {
            let mut state = lock(&shared.state);
            while state.connected < workers.len() as u32 && !shared.stopping() {
                state = shared.cond.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            if !shared.stopping() {
                let _ = shared.zero.set(Instant::now());
            }
            shared.cond.notify_all();
        }
    }
    let collected = shared.zero().map(|zero| run_intervals(&shared, zero));
    shared.halt();
    lock(&shared.state).stopping = true;
    shared.cond.notify_all();
    wait_for_workers(&shared, workers.len() as u32);
    for handle in workers {
        if handle.join().is_err() {
            shared.fail("an attachment thread panicked".into());
        }
    }
    let result = report::result_json(&shared, collected);
    let mut state = lock(&shared.state);
    state.result = Some(result);
    state.done = true;
    shared.cond.notify_all();
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
        let mut state = lock(&shared.state);
        let interrupted = loop {
            if shared.stopping() || (config.transactions.is_some() && state.finished >= workers) {
                break true;
            }
            let now = Instant::now();
            if now >= deadline {
                break false;
            }
            state = shared
                .cond
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
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
    let mut state = lock(&shared.state);
    state.intervals_completed += 1;
    state.last_interval = Some(interval);
}

fn wait_for_workers(shared: &Shared, spawned: u32) {
    let since = Instant::now();
    let mut last_cancel: Option<Instant> = None;
    let mut state = lock(&shared.state);
    while state.finished < spawned {
        state = shared
            .cond
            .wait_timeout(state, Duration::from_millis(50))
            .unwrap_or_else(|e| e.into_inner())
            .0;
        if state.finished >= spawned {
            break;
        }
        if since.elapsed() >= CANCEL_GRACE
            && last_cancel.is_none_or(|t| t.elapsed() >= CANCEL_REPEAT)
        {
            drop(state);
            shared.cancel_busy();
            last_cancel = Some(Instant::now());
            state = lock(&shared.state);
        }
    }
}
