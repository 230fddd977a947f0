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
//!
//! An attachment's memory is fixed when the run starts: its three interval slots (current, next,
//! and the timekeeper's spare) hold per unit a local latency histogram of 1 µs .. 131 ms whose
//! counts are never reallocated. The rare latency above that goes, under the attachment's mutex,
//! into the run's shared overflow (`stats::Overflow`, one more mutex, three intervals' worth of
//! full-range histograms per unit, whatever the number of attachments), which the timekeeper
//! merges into the interval once every attachment is out of it: the interval's histogram is
//! exactly the one a single full histogram would have recorded.

mod control;
mod replay;
mod replay_stats;
mod state;
mod timekeeper;
mod watchdog;
mod worker;

pub use control::control_main;
pub use state::Shared;

/// A run of `connections` attachments on a library that is never loaded, for the tests.
#[cfg(test)]
fn shared(connections: u32, watchdog: f64) -> std::sync::Arc<Shared> {
    let config = crate::config::Config::from_json(&format!(
        r#"{{"client_library": "/x/libfbclient.so.2", "database": "/x/db.fdb",
            "connections": {connections}, "measure_seconds": 1.0, "watchdog_seconds": {watchdog},
            "units": [{{"name": "a", "statements": [{{"sql": "select 1 from rdb$database"}}]}}]}}"#
    ))
    .unwrap();
    std::sync::Arc::new(Shared::new(config))
}
