//! One attachment on its own thread: connect, prepare, then draw and run units until the end.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::state::Shared;
use crate::config::{Commit, Config, Unit};
use crate::conn::{Attachment, Statement};
use crate::ffi::{FbApi, Handle};
use crate::outcome::{classify, Failure, Outcome, CANCELLED};
use crate::params::{choose_unit, Draws};
use crate::report::Closing;
use crate::rng::{Rng, Stream};

/// Think times are negative-exponential with this cap (in multiples of the mean), as TPC-C has it.
const THINK_CAP: f64 = 10.0;

pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_THREAD_CPUTIME_ID exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC, the clock of std's `Instant` on Linux, in nanoseconds. The core's own time
/// between two statements of a unit (their binding) is two of these reads and a subtraction: the
/// same clock read as often, without the `Instant` and `Duration` arithmetic per span.
#[inline(always)]
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_MONOTONIC exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Entry point of attachment `index` (1-based). Never inlined: a profiler can then count what one
/// attachment's thread does, apart from the control plane (benchmarks/sysbench_peer.py).
#[inline(never)]
pub fn worker_main(shared: &Shared, index: u32) {
    let cpu_start = thread_cpu_ns();
    let mut worker = Worker {
        shared,
        index,
        core_ns: 0,
        units_done: 0,
        known_codes: HashSet::new(),
        open: (0..shared.config.units.len()).map(|_| None).collect(),
        phase: None,
    };
    let error = match shared.api() {
        Some(api) => worker.run(api).err(),
        None => Some("the client library is not loaded".into()),
    };
    if let Some(message) = &error {
        shared.fail(message.clone());
    }
    let cpu = thread_cpu_ns().saturating_sub(cpu_start);
    shared.worker_finished(index, worker.units_done, worker.core_ns, cpu, error);
}

pub(super) struct Worker<'s> {
    pub(super) shared: &'s Shared,
    pub(super) index: u32,
    core_ns: u64,
    pub(super) units_done: u64,
    /// gdscodes whose message this attachment already handed in (fb_interpret runs once each).
    /// The units and codes whose first message was handed in (one per unit and code).
    pub(super) known_codes: HashSet<(usize, i64)>,
    /// transaction = "per_n_units": each unit's open transaction and the executions it holds.
    open: Vec<Option<OpenTransaction>>,
    /// Fixed work in phases: the unit being run and how many executions of it are left.
    phase: Option<(usize, u64)>,
}

/// A transaction that spans several executions of one unit; their results wait for its end.
struct OpenTransaction {
    tr: Handle,
    executions: u64,
    /// Latency (µs) of each execution it holds, and their tallies one after another.
    pending: Vec<u64>,
    tallies: Vec<f64>,
}

enum UnitEnd {
    /// The unit's transaction ended: the execution counts (with any it held) as this.
    Counted(Outcome, i64),
    /// transaction = "per_n_units": the transaction stays open; counted when it ends.
    Held,
    /// Broken by the core's own cancel at the end of the run: not a result of the workload.
    Discarded,
}

impl<'s> Worker<'s> {
    fn run(&mut self, api: &FbApi) -> Result<(), String> {
        let shared = self.shared;
        let config = &shared.config;
        if config.connect_rate > 0.0 {
            let zero = shared
                .zero()
                .expect("ramp-up runs know their zero before workers start");
            let slot =
                zero + Duration::from_secs_f64((self.index - 1) as f64 / config.connect_rate);
            if !shared.sleep_until(slot) {
                return Ok(());
            }
        }
        let mut att = Attachment::attach(api, config)
            .map_err(|e| format!("attachment {}: {e}", self.index))?;
        if let Some(signals) = shared.signals.get() {
            signals.restore();
        }
        shared.set_cancel_handle(self.index, att.db);
        if config.replay.is_some() {
            let outcome = self.replay(&mut att);
            self.close(&mut att, &outcome);
            shared.set_cancel_handle(self.index, 0);
            att.detach();
            return outcome;
        }
        // Every unit is prepared here, so that a mistake stops the run before it measures.
        let outcome = match att.prepare_units(&config.units) {
            Ok(mut statements) => {
                if config.units.iter().all(|u| u.connect_per_unit) {
                    // Each execution attaches on its own: no attachment idles beside them.
                    for statement in statements.iter_mut().flatten() {
                        att.drop_statement(statement);
                    }
                    shared.set_cancel_handle(self.index, 0);
                    att.detach();
                }
                let result = self.drive(api, &mut att, &mut statements);
                for unit in &mut statements {
                    for statement in unit {
                        att.drop_statement(statement);
                    }
                }
                result
            }
            Err(e) => Err(format!("cannot prepare {e}")),
        };
        if !config.units.iter().all(|u| u.connect_per_unit) {
            self.close(&mut att, &outcome);
        }
        shared.set_cancel_handle(self.index, 0);
        att.detach();
        outcome
    }

    /// The config's closing_sql, on this attachment, once its load ended as planned: not after
    /// a stop or a failure (a stop must end the run within seconds), and never on an attachment
    /// that was not there for the load (it connected too late to start).
    fn close(&mut self, att: &mut Attachment, outcome: &Result<(), String>) {
        let shared = self.shared;
        let Some(sql) = shared.config.closing_sql.as_deref() else {
            return;
        };
        let Some(zero) = shared.zero() else { return };
        if outcome.is_err() || shared.user_stopped() || shared.failed() {
            return;
        }
        // Half the watchdog's bound for the caller's reading of the end, half for the statement.
        let bound = shared.config.watchdog / 2;
        let opened = shared.wait_closing(bound);
        if shared.user_stopped() {
            return;
        }
        let ran = if opened {
            // The core's own cancel at the end of the measured period can land just after the
            // attachment's last call returned: the engine then raises it on the next call, this
            // one. Once more then: the canceller sends no more to an attachment between units.
            att.run_once(sql)
                .or_else(|e| {
                    if e.code == CANCELLED {
                        att.run_once(sql)
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| e.text)
        } else {
            Err(format!(
                "not run: the caller did not read the end of the measured period within {:.1} s \
                 (open_closing)",
                bound.as_secs_f64()
            ))
        };
        let at_seconds = Instant::now().saturating_duration_since(zero).as_secs_f64();
        shared.closed(
            self.index,
            Closing {
                at_seconds,
                error: ran.err(),
            },
        );
    }

    fn drive(
        &mut self,
        api: &FbApi,
        att: &mut Attachment,
        statements: &mut [Vec<Statement>],
    ) -> Result<(), String> {
        let shared = self.shared;
        let config: &Config = &shared.config;
        shared.connected();
        let Some(zero) = shared.wait_zero() else {
            return Ok(());
        };
        let end = config
            .timeline
            .end()
            .map(|e| zero + Duration::from_secs_f64(e));
        let mut work = Rng::new(config.seed, self.index, Stream::Work);
        let mut timing = Rng::new(config.seed, self.index, Stream::Timing);
        let mut draws: Vec<Draws> = config
            .units
            .iter()
            .map(|u| Draws::new(&u.slot_binds, u.counters))
            .collect();
        let mut tally = vec![
            0.0f64;
            config
                .units
                .iter()
                .map(|u| u.tally.len())
                .max()
                .unwrap_or(0)
        ];
        let arrival_mean = config
            .target_rate
            .map(|rate| config.connections as f64 / rate);
        let mut scheduled = Instant::now().max(zero);
        let busy = &shared.slot(self.index).busy;
        // End of the last library call, while the core's own time since then is still uncounted:
        // the next loop top closes that span, so a closed loop reads the clock three times per unit.
        let mut core_since: Option<Instant> = None;
        let counted = config.units[0].count.is_some();

        let result = loop {
            let top = Instant::now();
            if let Some(since) = core_since.take() {
                self.count_core(since, top);
            }
            if shared.stopping() {
                break Ok(());
            }
            if let Some(n) = config.transactions {
                if self.units_done >= n {
                    break Ok(());
                }
            }
            let picked = if counted {
                match self.next_phase_unit() {
                    Some(unit) => unit,
                    None => break Ok(()),
                }
            } else {
                choose_unit(&mut work, &config.cumulative_weights)
            };
            let unit = &config.units[picked];
            let (started, core_started) = match arrival_mean {
                Some(mean) => {
                    // Open loop: arrivals follow their own schedule; a late start is queueing
                    // and stays in the latency.
                    scheduled += Duration::from_secs_f64(timing.exponential(mean, f64::INFINITY));
                    // An attachment behind its schedule would otherwise go on serving arrivals
                    // due before the end after the end, back to back and never counted (a unit
                    // counts when it ends), until the control thread's stop reached it: late
                    // arrivals are not served once the measured period is over.
                    if end.is_some_and(|e| scheduled >= e || Instant::now() >= e)
                        || !shared.sleep_until(scheduled)
                    {
                        break Ok(());
                    }
                    (scheduled, Instant::now())
                }
                None => {
                    let now = if unit.keying_seconds > 0.0 {
                        if !shared.sleep_until(
                            Instant::now() + Duration::from_secs_f64(unit.keying_seconds),
                        ) {
                            break Ok(());
                        }
                        Instant::now()
                    } else {
                        top
                    };
                    if end.is_some_and(|e| now >= e) {
                        break Ok(());
                    }
                    (now, now)
                }
            };
            tally.iter_mut().for_each(|t| *t = 0.0);
            let unit_draws = &mut draws[picked];
            for (slot, source) in unit.lets.iter().enumerate() {
                unit_draws.fill(slot, source, unit.slot_binds[slot], &mut work, self.index);
            }
            // The last execution this attachment makes of the unit (fixed work): a transaction
            // spanning units ends with it.
            let last = match self.phase {
                Some((_, left)) => left == 0,
                None => config
                    .transactions
                    .is_some_and(|n| self.units_done + 1 >= n),
            };
            let library_started;
            let end_state = if unit.connect_per_unit {
                library_started = Instant::now();
                busy.store(true, Ordering::Relaxed);
                let ended = self.run_attached(api, picked, &mut work, unit_draws, &mut tally);
                busy.store(false, Ordering::Relaxed);
                match ended {
                    Ok(end_state) => end_state,
                    Err(e) => break Err(e),
                }
            } else {
                let unit_statements = &mut statements[picked];
                unit_statements[0].bind(&mut work, self.index, unit_draws);
                library_started = Instant::now();
                busy.store(true, Ordering::Relaxed);
                let ended = self.run_unit(
                    att,
                    picked,
                    unit_statements,
                    &mut work,
                    unit_draws,
                    &mut tally,
                    last,
                );
                busy.store(false, Ordering::Relaxed);
                match ended {
                    Ok(end_state) => end_state,
                    Err(e) => break Err(e),
                }
            };
            let finished = Instant::now();
            let micros = finished.saturating_duration_since(started).as_micros() as u64;
            let offset = finished.saturating_duration_since(zero).as_secs_f64();
            match end_state {
                UnitEnd::Counted(outcome, code) => {
                    self.settle(picked, outcome, code, offset);
                    shared.record(self.index, picked, outcome, micros, offset, code, &tally);
                }
                UnitEnd::Held => {
                    if let Some(open) = self.open[picked].as_mut() {
                        open.pending.push(micros);
                        open.tallies.extend_from_slice(&tally[..unit.tally.len()]);
                    }
                }
                UnitEnd::Discarded => {}
            }
            self.units_done += 1;
            if counted {
                shared.phase_step(picked);
            }
            self.count_core(core_started, library_started);
            if arrival_mean.is_none() && unit.think_seconds > 0.0 {
                let think = timing.exponential(unit.think_seconds, THINK_CAP);
                let thinking = Instant::now();
                self.count_core(finished, thinking);
                if !shared.sleep_until(thinking + Duration::from_secs_f64(think)) {
                    break Ok(());
                }
            } else {
                core_since = Some(finished);
            }
        };
        // A transaction still open when the run ends holds executions that ended after it: they
        // are not counted, and their work is undone.
        for open in self.open.iter_mut() {
            if let Some(mut open) = open.take() {
                att.rollback(&mut open.tr);
            }
        }
        result
    }

    /// Fixed work in phases: the unit of this attachment's next execution, after the phase
    /// before it is over for every attachment of the run; None when all are done (or stopping).
    fn next_phase_unit(&mut self) -> Option<usize> {
        let units = &self.shared.config.units;
        loop {
            match self.phase {
                Some((unit, left)) if left > 0 => {
                    self.phase = Some((unit, left - 1));
                    return Some(unit);
                }
                Some((unit, _)) => {
                    if !self.shared.wait_phase(unit) || unit + 1 >= units.len() {
                        return None;
                    }
                    self.phase = Some((unit + 1, units[unit + 1].count.unwrap_or(0)));
                }
                None => self.phase = Some((0, units[0].count.unwrap_or(0))),
            }
        }
    }

    /// The executions an open transaction of the unit held end with it, as `outcome`: committed
    /// with it, or rolled back with it. They are counted at its end.
    fn settle(&mut self, picked: usize, outcome: Outcome, code: i64, offset: f64) {
        let Some(open) = self.open[picked].take() else {
            return;
        };
        let columns = self.shared.config.units[picked].tally.len();
        for (i, micros) in open.pending.iter().enumerate() {
            let tally = &open.tallies[i * columns..(i + 1) * columns];
            self.shared
                .record(self.index, picked, outcome, *micros, offset, code, tally);
        }
    }

    /// connect = "per_unit": attach, prepare the unit, run it, detach — all inside its latency.
    fn run_attached(
        &mut self,
        api: &FbApi,
        picked: usize,
        work: &mut Rng,
        draws: &mut Draws,
        tally: &mut [f64],
    ) -> Result<UnitEnd, String> {
        let shared = self.shared;
        let config = &shared.config;
        let unit = &config.units[picked];
        let mut att = match Attachment::attach(api, config) {
            Ok(att) => att,
            Err(e) if shared.stopping() => {
                let _ = e;
                return Ok(UnitEnd::Discarded);
            }
            Err(e) => return Err(format!("attachment {}: {e}", self.index)),
        };
        shared.set_cancel_handle(self.index, att.db);
        let ended = match att.prepare_units(std::slice::from_ref(unit)) {
            Ok(mut prepared) => {
                let statements = &mut prepared[0];
                statements[0].bind(work, self.index, draws);
                let ended = self.run_unit(&mut att, picked, statements, work, draws, tally, true);
                for statement in statements.iter_mut() {
                    att.drop_statement(statement);
                }
                ended
            }
            Err(_) if shared.stopping() => Ok(UnitEnd::Discarded),
            Err(e) => Err(format!("attachment {}: cannot prepare {e}", self.index)),
        };
        shared.set_cancel_handle(self.index, 0);
        att.detach();
        ended
    }

    /// Time spent in the core's own code between two clock reads (client_cpu_seconds).
    fn count_core(&mut self, from: Instant, to: Instant) {
        self.core_ns += to.saturating_duration_since(from).as_nanos() as u64;
    }

    /// One execution of a unit: its statements in its transaction(s). Err only for what ends
    /// the attachment (connection lost, a database that cannot be written, bad TPB).
    #[allow(clippy::too_many_arguments)]
    fn run_unit(
        &mut self,
        att: &mut Attachment,
        picked: usize,
        statements: &mut [Statement],
        work: &mut Rng,
        draws: &mut Draws,
        tally: &mut [f64],
        last: bool,
    ) -> Result<UnitEnd, String> {
        let shared = self.shared;
        let unit = &shared.config.units[picked];
        if unit.commit == Commit::EachStatement {
            return self.run_autocommit(att, picked, statements, work, draws, tally);
        }
        let held = self.open[picked].as_ref().map(|open| open.tr);
        let mut tr: Handle = match held {
            Some(tr) => tr,
            None => match att.start(&unit.tpb) {
                Ok(tr) => tr,
                Err(()) => {
                    // Parameters of the unit are still drawn: the streams must not depend on outcomes.
                    self.draw_rest(unit, 0, 0, statements, work, draws);
                    return self.start_failed(att, unit);
                }
            },
        };
        let mut failed = false;
        'statements: for (si, statement) in statements.iter_mut().enumerate() {
            for r in 0..unit.statements[si].repeat {
                if si > 0 || r > 0 {
                    let binding = monotonic_ns();
                    statement.bind(work, self.index, draws);
                    self.core_ns += monotonic_ns().saturating_sub(binding);
                }
                if att.execute(&mut tr, statement, tally).is_err() {
                    failed = true;
                    self.draw_rest(unit, si, r + 1, statements, work, draws);
                    break 'statements;
                }
            }
        }
        if !failed {
            if let Commit::EveryNUnits(n) = unit.commit {
                let open = self.open[picked].get_or_insert_with(|| OpenTransaction {
                    tr,
                    executions: 0,
                    pending: Vec::with_capacity(n as usize),
                    tallies: Vec::new(),
                });
                open.executions += 1;
                if open.executions < n && !last {
                    return Ok(UnitEnd::Held);
                }
                open.tr = 0;
            }
            if att.commit(&mut tr).is_ok() {
                return Ok(UnitEnd::Counted(Outcome::Ok, 0));
            }
        }
        let end = self.failure(att, unit, picked)?;
        att.rollback(&mut tr);
        if let Some(open) = self.open[picked].as_mut() {
            open.tr = 0; // rolled back just above
        }
        Ok(end)
    }

    /// transaction = "none": every execution of every statement is a transaction of its own.
    fn run_autocommit(
        &mut self,
        att: &mut Attachment,
        picked: usize,
        statements: &mut [Statement],
        work: &mut Rng,
        draws: &mut Draws,
        tally: &mut [f64],
    ) -> Result<UnitEnd, String> {
        let unit = &self.shared.config.units[picked];
        for (si, statement) in statements.iter_mut().enumerate() {
            for r in 0..unit.statements[si].repeat {
                if si > 0 || r > 0 {
                    let binding = monotonic_ns();
                    statement.bind(work, self.index, draws);
                    self.core_ns += monotonic_ns().saturating_sub(binding);
                }
                let mut tr = match att.start(&unit.tpb) {
                    Ok(tr) => tr,
                    Err(()) => {
                        self.draw_rest(unit, si, r + 1, statements, work, draws);
                        return self.start_failed(att, unit);
                    }
                };
                if att.execute(&mut tr, statement, tally).is_err() || att.commit(&mut tr).is_err() {
                    let end = self.failure(att, unit, picked)?;
                    att.rollback(&mut tr);
                    self.draw_rest(unit, si, r + 1, statements, work, draws);
                    return Ok(end);
                }
            }
        }
        Ok(UnitEnd::Counted(Outcome::Ok, 0))
    }

    fn start_failed(&mut self, att: &Attachment, unit: &Unit) -> Result<UnitEnd, String> {
        match classify(&att.status, &unit.rollback_on) {
            Failure::Cancelled => Ok(UnitEnd::Discarded),
            Failure::ConnectionLost(_) => Err(self.lost(att)),
            Failure::CannotWrite(_) => Err(self.cannot_write(att)),
            _ => Err(format!(
                "unit {}: cannot start its transaction: {}",
                unit.name,
                att.error_text()
            )),
        }
    }

    /// What a failed statement or commit means; classified before anything else touches the
    /// client library (the vector's strings live in its buffers).
    fn failure(&mut self, att: &Attachment, unit: &Unit, picked: usize) -> Result<UnitEnd, String> {
        match classify(&att.status, &unit.rollback_on) {
            Failure::Counted(outcome, code) => {
                if self.known_codes.insert((picked, code)) {
                    self.shared
                        .add_message(self.index, picked, code, att.error_text());
                }
                Ok(UnitEnd::Counted(outcome, code))
            }
            Failure::Cancelled => Ok(UnitEnd::Discarded),
            Failure::ConnectionLost(_) => Err(self.lost(att)),
            // No rollback: the attachment ends, and its detach rolls back what it can.
            Failure::CannotWrite(_) => Err(self.cannot_write(att)),
        }
    }

    /// Draws the parameters a failed unit did not get to use, from execution (si, r) on.
    fn draw_rest(
        &mut self,
        unit: &Unit,
        si: usize,
        r: u32,
        statements: &mut [Statement],
        work: &mut Rng,
        draws: &mut Draws,
    ) {
        for (i, statement) in statements.iter_mut().enumerate().skip(si) {
            let from = if i == si { r } else { 0 };
            // The first execution's parameters were drawn before the transaction started.
            let from = if i == 0 { from.max(1) } else { from };
            for _ in from..unit.statements[i].repeat {
                statement.bind(work, self.index, draws);
            }
        }
    }

    pub(super) fn cannot_write(&self, att: &Attachment) -> String {
        format!(
            "the database cannot be written (attachment {}): {}",
            self.index,
            att.error_text().replace('\n', "; ")
        )
    }

    pub(super) fn lost(&self, att: &Attachment) -> String {
        format!(
            "connection lost (attachment {}): {}",
            self.index,
            att.error_text().replace('\n', "; ")
        )
    }
}
