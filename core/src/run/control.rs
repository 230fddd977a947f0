//! The control thread: loads the client library, starts the attachments, keeps time until the
//! run ends, waits for the attachments to come back and writes the result.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::guard::lock;
use super::state::Shared;
use super::timekeeper::run_intervals;
use super::watchdog::{abandon_note, wait_for_workers};
use super::worker::worker_main;
use crate::ffi::FbApi;
use crate::report;

/// The embedded engine runs on the attachment's thread and recurses deeply.
const WORKER_STACK: usize = 8 << 20;

/// The control thread, which is also the timekeeper: loads the library, starts the attachments,
/// closes intervals, stops the run and writes the result.
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
    let result = report::result_json(&shared.config, shared.ended(), collected);
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
