//! One attachment on its own thread: connect, prepare, then draw and run units until the end.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::state::Shared;
use crate::config::{Config, Unit};
use crate::conn::{Attachment, Statement};
use crate::ffi::{FbApi, Handle};
use crate::outcome::{classify, Failure, Outcome};
use crate::params::choose_unit;
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

/// Entry point of attachment `index` (1-based).
pub fn worker_main(shared: &Shared, index: u32) {
    let cpu_start = thread_cpu_ns();
    let mut worker = Worker {
        shared,
        index,
        core_ns: 0,
        units_done: 0,
        known_codes: HashSet::new(),
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
    pub(super) known_codes: HashSet<i64>,
}

enum UnitEnd {
    Counted(Outcome, i64),
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
            shared.set_cancel_handle(self.index, 0);
            att.detach();
            return outcome;
        }
        let outcome = match att.prepare_units(&config.units) {
            Ok(mut statements) => {
                let result = self.drive(&mut att, &mut statements);
                for unit in &mut statements {
                    for statement in unit {
                        att.drop_statement(statement);
                    }
                }
                result
            }
            Err(e) => Err(format!("cannot prepare {e}")),
        };
        shared.set_cancel_handle(self.index, 0);
        att.detach();
        outcome
    }

    fn drive(
        &mut self,
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

        loop {
            let top = Instant::now();
            if let Some(since) = core_since.take() {
                self.count_core(since, top);
            }
            if shared.stopping() {
                return Ok(());
            }
            if let Some(n) = config.transactions {
                if self.units_done >= n {
                    return Ok(());
                }
            }
            let picked = choose_unit(&mut work, &config.cumulative_weights);
            let unit = &config.units[picked];
            let (started, core_started) = match arrival_mean {
                Some(mean) => {
                    // Open loop: arrivals follow their own schedule; a late start is queueing
                    // and stays in the latency.
                    scheduled += Duration::from_secs_f64(timing.exponential(mean, f64::INFINITY));
                    if end.is_some_and(|e| scheduled >= e) || !shared.sleep_until(scheduled) {
                        return Ok(());
                    }
                    (scheduled, Instant::now())
                }
                None => {
                    let now = if unit.keying_seconds > 0.0 {
                        if !shared.sleep_until(
                            Instant::now() + Duration::from_secs_f64(unit.keying_seconds),
                        ) {
                            return Ok(());
                        }
                        Instant::now()
                    } else {
                        top
                    };
                    if end.is_some_and(|e| now >= e) {
                        return Ok(());
                    }
                    (now, now)
                }
            };
            let unit_statements = &mut statements[picked];
            unit_statements[0].bind(&mut work, self.index);
            tally.iter_mut().for_each(|t| *t = 0.0);
            let library_started = Instant::now();
            busy.store(true, Ordering::Relaxed);
            let end_state = self.run_unit(att, picked, unit_statements, &mut work, &mut tally)?;
            busy.store(false, Ordering::Relaxed);
            let finished = Instant::now();
            if let UnitEnd::Counted(outcome, code) = end_state {
                let micros = finished.saturating_duration_since(started).as_micros() as u64;
                let offset = finished.saturating_duration_since(zero).as_secs_f64();
                shared.record(self.index, picked, outcome, micros, offset, code, &tally);
            }
            self.units_done += 1;
            self.count_core(core_started, library_started);
            if arrival_mean.is_none() && unit.think_seconds > 0.0 {
                let think = timing.exponential(unit.think_seconds, THINK_CAP);
                let thinking = Instant::now();
                self.count_core(finished, thinking);
                if !shared.sleep_until(thinking + Duration::from_secs_f64(think)) {
                    return Ok(());
                }
            } else {
                core_since = Some(finished);
            }
        }
    }

    /// Time spent in the core's own code between two clock reads (client_cpu_seconds).
    fn count_core(&mut self, from: Instant, to: Instant) {
        self.core_ns += to.saturating_duration_since(from).as_nanos() as u64;
    }

    /// One transaction. Err only for what ends the attachment (connection lost, a database that
    /// cannot be written, bad TPB).
    fn run_unit(
        &mut self,
        att: &mut Attachment,
        picked: usize,
        statements: &mut [Statement],
        work: &mut Rng,
        tally: &mut [f64],
    ) -> Result<UnitEnd, String> {
        let shared = self.shared;
        let unit = &shared.config.units[picked];
        let mut tr: Handle = match att.start(&unit.tpb) {
            Ok(tr) => tr,
            Err(()) => {
                // Parameters of the unit are still drawn: the streams must not depend on outcomes.
                self.draw_rest(unit, 0, 0, statements, work);
                return match classify(&att.status, &unit.rollback_on) {
                    Failure::Cancelled => Ok(UnitEnd::Discarded),
                    Failure::ConnectionLost(_) => Err(self.lost(att)),
                    Failure::CannotWrite(_) => Err(self.cannot_write(att)),
                    _ => Err(format!(
                        "unit {}: cannot start its transaction: {}",
                        unit.name,
                        att.error_text()
                    )),
                };
            }
        };
        let mut failed = false;
        'statements: for (si, statement) in statements.iter_mut().enumerate() {
            for r in 0..unit.statements[si].repeat {
                if si > 0 || r > 0 {
                    let binding = Instant::now();
                    statement.bind(work, self.index);
                    self.count_core(binding, Instant::now());
                }
                if att.execute(&mut tr, statement, tally).is_err() {
                    failed = true;
                    self.draw_rest(unit, si, r + 1, statements, work);
                    break 'statements;
                }
            }
        }
        if !failed && att.commit(&mut tr).is_ok() {
            return Ok(UnitEnd::Counted(Outcome::Ok, 0));
        }
        // Classify before anything else touches the client library: the vector's strings
        // live in its buffers.
        let failure = classify(&att.status, &unit.rollback_on);
        let end = match failure {
            Failure::Counted(outcome, code) => {
                if self.known_codes.insert(code) {
                    self.shared.add_message(self.index, code, att.error_text());
                }
                UnitEnd::Counted(outcome, code)
            }
            Failure::Cancelled => UnitEnd::Discarded,
            Failure::ConnectionLost(_) => return Err(self.lost(att)),
            // No rollback: the attachment ends, and its detach rolls back what it can.
            Failure::CannotWrite(_) => return Err(self.cannot_write(att)),
        };
        att.rollback(&mut tr);
        Ok(end)
    }

    /// Draws the parameters a failed unit did not get to use, from execution (si, r) on.
    fn draw_rest(
        &mut self,
        unit: &Unit,
        si: usize,
        r: u32,
        statements: &mut [Statement],
        work: &mut Rng,
    ) {
        for (i, statement) in statements.iter_mut().enumerate().skip(si) {
            let from = if i == si { r } else { 0 };
            // The first execution's parameters were drawn before the transaction started.
            let from = if i == 0 { from.max(1) } else { from };
            for _ in from..unit.statements[i].repeat {
                statement.bind(work, self.index);
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
