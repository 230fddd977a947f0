//! The watchdog: once the run ends, waits for the attachments at most the bound while a canceller
//! breaks their waits, and names those it has to abandon.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::guard::lock;
use super::state::Shared;

/// How long a stopping attachment may finish its unit before its wait is cancelled.
const CANCEL_GRACE: Duration = Duration::from_millis(300);
const CANCEL_REPEAT: Duration = Duration::from_millis(500);

/// Waits until every attachment is back or the watchdog bound has passed; returns the
/// attachments abandoned (1-based, ascending). Only waits on the run's own condition variable:
/// the cancels, which call into the engine, run on a thread of their own.
pub(super) fn wait_for_workers(shared: &Arc<Shared>, spawned: u32) -> Vec<u32> {
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

/// "attachment 2 did not return within 10 s after the end of the measured period …"
pub(super) fn abandon_note(abandoned: &[u32], bound: Duration, ended: &str) -> String {
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

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::report;
    use crate::run::shared;

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
            serde_json::from_str(&report::result_json(&shared.config, shared.ended(), None))
                .unwrap()
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
