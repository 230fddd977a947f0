//! A replay: attachment k runs traced session k — each transaction with its traced parameters,
//! every statement with its traced values — at the traced times (divided by the speed), and in
//! strict order each action only after every action traced before it (docs/core-api.md).
//!
//! What it measures besides the units (one per transaction shape): each statement's latency per
//! SQL text, the lag of each statement behind its schedule, and every divergence from the trace —
//! an error the trace did not have (or none where it had one), a cursor that returned another
//! number of rows, other numbers of rows inserted, updated or deleted (this attachment's counts
//! before and after, what triggers and procedures did included, as the trace's per-table counts
//! are), a strict order given up because it stalled.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::replay_stats::ReplayStats;
use super::state::lock;
use super::worker::Worker;
use crate::config::{Order, Replay, ReplayExecution};
use crate::conn::{Attachment, Statement};
use crate::ffi::{exception_number, Handle};
use crate::outcome::{classify, Failure, Outcome};
use crate::stats::record_local;

impl<'s> Worker<'s> {
    /// Replays session `index` on `att`: every transaction of it, then back.
    pub(super) fn replay(&mut self, att: &mut Attachment) -> Result<(), String> {
        let shared = self.shared;
        let replay = shared.config.replay.as_ref().expect("a replay run");
        let session = &replay.sessions[(self.index - shared.config.first_attachment) as usize];
        shared.connected();
        let Some(zero) = shared.wait_zero() else {
            return Ok(());
        };
        let mut stats = ReplayStats::new(replay.templates.len(), true);
        let mut prepared: HashMap<usize, Statement> = HashMap::new();
        let compares_changes = session
            .iter()
            .flat_map(|t| &t.statements)
            .any(|e| e.changes.is_some());
        let mut counted = if compares_changes {
            att.changes()
        } else {
            None
        };
        let outcome = self.replay_session(
            att,
            replay,
            session,
            zero,
            &mut stats,
            &mut prepared,
            &mut counted,
        );
        for statement in prepared.values_mut() {
            att.drop_statement(statement);
        }
        shared.replay_finished(&stats);
        outcome
    }

    #[allow(clippy::too_many_arguments)]
    fn replay_session(
        &mut self,
        att: &mut Attachment,
        replay: &Replay,
        session: &[crate::config::ReplayTransaction],
        zero: Instant,
        stats: &mut ReplayStats,
        prepared: &mut HashMap<usize, Statement>,
        counted: &mut Option<[u64; 3]>,
    ) -> Result<(), String> {
        let shared = self.shared;
        let at = |offset: f64| zero + Duration::from_secs_f64((offset / replay.speed).max(0.0));
        let busy = &shared.slot(self.index).busy;
        for tx in session {
            if !self.turn(replay, tx.start_seq, at(tx.at), stats) {
                return Ok(());
            }
            let started = Instant::now();
            busy.store(true, Ordering::Relaxed);
            let mut tr: Handle = match att.start(&tx.tpb) {
                Ok(tr) => tr,
                Err(()) => {
                    busy.store(false, Ordering::Relaxed);
                    return match classify(&att.status, &[]) {
                        Failure::Cancelled => Ok(()),
                        Failure::ConnectionLost(_) => Err(self.lost(att)),
                        Failure::CannotWrite(_) => Err(self.cannot_write(att)),
                        _ => Err(format!(
                            "replay: cannot start a transaction: {}",
                            att.error_text()
                        )),
                    };
                }
            };
            shared.action_done(replay, tx.start_seq);
            // The first failure the trace did not have decides the transaction's outcome.
            let mut unexpected: Option<(Outcome, i64)> = None;
            for e in &tx.statements {
                if !self.turn(replay, e.seq, at(e.at), stats) {
                    att.rollback(&mut tr);
                    busy.store(false, Ordering::Relaxed);
                    return Ok(());
                }
                let lag = Instant::now().saturating_duration_since(at(e.at));
                let lag_us = lag.as_micros() as u64;
                if let Err(slow) = record_local(&mut stats.lag, lag_us) {
                    shared.replay_overflow(None, slow);
                }
                stats.lag_max_us = stats.lag_max_us.max(lag_us);
                let failure = self.replay_statement(
                    att,
                    &mut tr,
                    replay,
                    tx.trace_id,
                    tx.unit,
                    e,
                    stats,
                    prepared,
                    counted,
                )?;
                if let Some(found) = failure {
                    unexpected = unexpected.or(Some(found));
                }
                shared.action_done(replay, e.seq);
            }
            if !self.turn(replay, tx.end_seq, at(tx.end_at), stats) {
                att.rollback(&mut tr);
                busy.store(false, Ordering::Relaxed);
                return Ok(());
            }
            if tx.commit {
                if att.commit(&mut tr).is_err() {
                    match classify(&att.status, &[]) {
                        Failure::Counted(outcome, code) => {
                            self.message(att, tx.unit, code);
                            stats.diverged(
                                "commit failed",
                                json!({"attachment": self.index, "transaction": tx.trace_id,
                                       "gdscode": code, "message": first_line(&att.error_text())}),
                            );
                            unexpected = unexpected.or(Some((outcome, code)));
                            att.rollback(&mut tr);
                        }
                        Failure::Cancelled => {
                            att.rollback(&mut tr);
                            busy.store(false, Ordering::Relaxed);
                            return Ok(());
                        }
                        Failure::ConnectionLost(_) => return Err(self.lost(att)),
                        Failure::CannotWrite(_) => return Err(self.cannot_write(att)),
                    }
                }
            } else {
                att.rollback(&mut tr);
            }
            busy.store(false, Ordering::Relaxed);
            shared.action_done(replay, tx.end_seq);
            let finished = Instant::now();
            let (outcome, code) = unexpected.unwrap_or(if tx.commit {
                (Outcome::Ok, 0)
            } else {
                (Outcome::RolledBack, 0)
            });
            let micros = finished.saturating_duration_since(started).as_micros() as u64;
            let offset = finished.saturating_duration_since(zero).as_secs_f64();
            shared.record(self.index, tx.unit, outcome, micros, offset, code, &[]);
            self.units_done += 1;
            stats.transactions += 1;
        }
        Ok(())
    }

    /// One traced execution: prepared on first use, bound with the traced values, executed,
    /// compared with the trace. Some((outcome, code)) for a failure the trace did not have.
    #[allow(clippy::too_many_arguments)]
    fn replay_statement(
        &mut self,
        att: &mut Attachment,
        tr: &mut Handle,
        replay: &Replay,
        trace_id: Option<u64>,
        unit: usize,
        e: &ReplayExecution,
        stats: &mut ReplayStats,
        prepared: &mut HashMap<usize, Statement>,
        counted: &mut Option<[u64; 3]>,
    ) -> Result<Option<(Outcome, i64)>, String> {
        let where_ =
            json!({"attachment": self.index, "transaction": trace_id, "template": e.template});
        let with = |mut base: Value, extra: Value| {
            if let (Some(map), Value::Object(more)) = (base.as_object_mut(), extra) {
                map.extend(more);
            }
            base
        };
        if let std::collections::hash_map::Entry::Vacant(slot) = prepared.entry(e.template) {
            match att.prepare_sql(tr, &replay.templates[e.template]) {
                Ok(statement) => {
                    slot.insert(statement);
                }
                Err(message) => {
                    stats.templates[e.template].errors += 1;
                    stats.diverged(
                        "does not prepare",
                        with(where_, json!({"message": first_line(&message)})),
                    );
                    return Ok(Some((Outcome::Error, 0)));
                }
            }
        }
        let statement = prepared.get_mut(&e.template).expect("prepared above");
        if let Err(message) = statement.bind_values(&e.params) {
            stats.templates[e.template].errors += 1;
            stats.diverged("cannot bind", with(where_, json!({"message": message})));
            return Ok(Some((Outcome::Error, 0)));
        }
        if e.ordered_at_start {
            self.shared.action_done(replay, e.seq);
        }
        let began = Instant::now();
        let result = att.execute(tr, statement, &mut []);
        let micros = began.elapsed().as_micros() as u64;
        let template = &mut stats.templates[e.template];
        template.executions += 1;
        if let Err(slow) = record_local(&mut template.latency, micros) {
            self.shared.replay_overflow(Some(e.template), slow);
        }
        stats.statements += 1;
        let mut failure = None;
        match result {
            Ok(rows) => {
                if let Some(code) = e.error {
                    stats.diverged(
                        "succeeded",
                        with(where_.clone(), json!({"traced_gdscode": code})),
                    );
                }
                if let (Some(expected), true) = (e.rows, statement.is_cursor()) {
                    if expected != rows {
                        stats.diverged(
                            "rows",
                            with(
                                where_.clone(),
                                json!({"traced": expected, "replayed": rows}),
                            ),
                        );
                    }
                }
            }
            Err(()) => {
                stats.templates[e.template].errors += 1;
                match classify(&att.status, &[]) {
                    Failure::Counted(outcome, code) => {
                        self.message(att, unit, code);
                        // -1: the trace saw it fail without logging the error; any error is that.
                        if e.error != Some(code) && e.error != Some(-1) {
                            let text = att.error_text();
                            // fb_interpret's lines of a PSQL exception: its number, its name, its text.
                            let exception = exception_number(&att.status)
                                .and_then(|_| text.lines().nth(1))
                                .map(str::to_string);
                            stats.diverged(
                                "error",
                                with(where_.clone(), json!({"gdscode": code, "traced_gdscode": e.error,
                                                            "conflict": outcome == Outcome::Conflict,
                                                            "exception": exception,
                                                            "message": first_line(&text)})),
                            );
                            failure = Some((outcome, code));
                        }
                    }
                    Failure::Cancelled => return Ok(None),
                    Failure::ConnectionLost(_) => return Err(self.lost(att)),
                    Failure::CannotWrite(_) => return Err(self.cannot_write(att)),
                }
            }
        }
        if let Some(before) = *counted {
            let now = att.changes();
            if let (Some(after), Some(expected)) = (now, e.changes) {
                let replayed = [
                    after[0] - before[0].min(after[0]),
                    after[1] - before[1].min(after[1]),
                    after[2] - before[2].min(after[2]),
                ];
                if replayed != expected {
                    stats.diverged(
                        "rows changed",
                        with(where_, json!({"traced": {"insert": expected[0], "update": expected[1], "delete": expected[2]},
                                             "replayed": {"insert": replayed[0], "update": replayed[1], "delete": replayed[2]}})),
                    );
                }
            }
            *counted = now;
        }
        Ok(failure)
    }

    /// Waits for an action's moment and, in strict order, for its turn: every action traced
    /// before it has run, or `stall` has passed (then the order is given up for it, and said so).
    /// False if the run is stopping.
    fn turn(
        &mut self,
        replay: &Replay,
        seq: u64,
        moment: Instant,
        stats: &mut ReplayStats,
    ) -> bool {
        let shared = self.shared;
        if !shared.sleep_until(moment) {
            return false;
        }
        if replay.order != Order::Strict || seq == 0 {
            return true;
        }
        let deadline = Instant::now() + replay.stall;
        let mut gate = lock(&shared.order);
        while gate.frontier < seq && !shared.stopping() {
            let now = Instant::now();
            if now >= deadline {
                let waiting_for = gate.frontier;
                drop(gate);
                stats.stalls += 1;
                stats.diverged(
                    "order given up",
                    json!({"attachment": self.index, "action": seq, "waited_seconds": replay.stall.as_secs_f64(),
                           "for_action": waiting_for,
                           "of_attachment": replay.owners.get(waiting_for as usize).copied()}),
                );
                return !shared.stopping();
            }
            let wait = (deadline - now).min(Duration::from_millis(50));
            gate = shared
                .order_cond
                .wait_timeout(gate, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        !shared.stopping()
    }

    fn message(&mut self, att: &Attachment, unit: usize, code: i64) {
        if self.known_codes.insert((unit, code)) {
            self.shared
                .add_message(self.index, unit, code, att.error_text());
        }
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_string()
}
