//! fbbench's native load core: drives N Firebird attachments on native threads through the
//! ISC API of a client library loaded at run time. Python (fbbench.core) starts a run, polls
//! live counters, may stop it, and reads one JSON result; see docs/core-api.md.

mod config;
mod conn;
mod ffi;
mod merge;
mod outcome;
mod params;
mod report;
mod rng;
mod run;
mod signals;
mod sqlda;
mod stats;
mod timeline;
mod tpb;

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::config::Config;
use crate::run::{control_main, Shared};

/// Version of the native load core.
#[pyfunction]
fn core_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// One load run. Construct with the config JSON, then start / poll / stop / wait / result.
#[pyclass(module = "fbbench._core")]
struct LoadRun {
    shared: Arc<Shared>,
    control: Mutex<Option<JoinHandle<()>>>,
}

#[pymethods]
impl LoadRun {
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        let config = Config::from_json(config_json).map_err(PyValueError::new_err)?;
        Ok(LoadRun {
            shared: Arc::new(Shared::new(config)),
            control: Mutex::new(None),
        })
    }

    /// Starts the run in the background; returns at once. Problems (library, attach, prepare)
    /// end the run as failed and show in poll() and result().
    fn start(&self) -> PyResult<()> {
        let mut control = self.control.lock().unwrap_or_else(|e| e.into_inner());
        if control.is_some() {
            return Err(PyRuntimeError::new_err("this run was already started"));
        }
        let _ = self.shared.signals.set(signals::SavedSignals::capture());
        let shared = Arc::clone(&self.shared);
        let handle = std::thread::Builder::new()
            .name("fbbench-control".into())
            .spawn(move || control_main(shared))
            .map_err(|e| {
                PyRuntimeError::new_err(format!("cannot start the control thread: {e}"))
            })?;
        *control = Some(handle);
        Ok(())
    }

    /// Live counters as JSON; cheap enough to call a few times per second.
    fn poll(&self) -> String {
        report::poll_json(&self.shared.config, self.shared.live())
    }

    /// Sets the stop flag: the attachments end within about 2 seconds, and the run ends within
    /// the watchdog bound whatever the engine does (attachments still inside it are abandoned).
    fn stop(&self) {
        self.shared.request_stop();
    }

    /// Hold mode (`"hold": true`): start the run at `start_monotonic`, a CLOCK_MONOTONIC time in
    /// seconds (Python's `time.monotonic()`). Every process of a Classic run gets the same one,
    /// and the clock is the machine's, so their zeros — and their interval boundaries — agree.
    fn go(&self, start_monotonic: f64) -> PyResult<()> {
        if !self.shared.config.hold {
            return Err(PyRuntimeError::new_err(
                "go() is for a run started with \"hold\": true",
            ));
        }
        if !start_monotonic.is_finite() {
            return Err(PyValueError::new_err(
                "the start time must be a finite number",
            ));
        }
        self.shared.go(instant_at_monotonic(start_monotonic));
        Ok(())
    }

    /// closing_sql: the caller has read the end of the measured period; the attachments run
    /// their closing statements now (each waits for this at most half the watchdog bound).
    fn open_closing(&self) {
        self.shared.open_closing();
    }

    /// The intervals closed so far from `start` on (JSON array, in the result's interval shape),
    /// so that a caller can stream every interval as it closes, none skipped.
    fn intervals(&self, start: usize) -> String {
        let state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        let closed = state.closed.get(start..).unwrap_or(&[]);
        serde_json::Value::Array(closed.to_vec()).to_string()
    }

    /// Waits up to `timeout_seconds` (GIL released); True once the run has ended.
    fn wait(&self, py: Python<'_>, timeout_seconds: f64) -> bool {
        if self
            .control
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
        {
            return false;
        }
        let shared = Arc::clone(&self.shared);
        let timeout = Duration::from_secs_f64(timeout_seconds.clamp(0.0, 1e9));
        py.detach(move || {
            let state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            shared
                .wait_while(state, Instant::now() + timeout, |state| !state.done)
                .done
        })
    }

    /// Waits (GIL released) until more than `seen` boundaries have passed (1 = the run's zero,
    /// then one per closed interval), the run is done, or `timeout_seconds` elapse. Returns
    /// (boundaries passed, done, wall-clock time of the latest boundary): an observer reads the
    /// engine right at each boundary instead of whenever it next polls.
    fn wait_boundary(&self, py: Python<'_>, seen: u64, timeout_seconds: f64) -> (u64, bool, f64) {
        let shared = Arc::clone(&self.shared);
        let timeout = Duration::from_secs_f64(timeout_seconds.clamp(0.0, 1e9));
        py.detach(move || {
            let state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            let state = shared.wait_while(state, Instant::now() + timeout, |state| {
                state.boundaries <= seen && !state.done
            });
            (state.boundaries, state.done, state.boundary_at)
        })
    }

    /// The final result as JSON (after wait() returned True).
    fn result(&self) -> PyResult<String> {
        let state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.result.clone().ok_or_else(|| {
            PyRuntimeError::new_err("the run has not ended yet: wait() until it returns True")
        })
    }
}

impl Drop for LoadRun {
    fn drop(&mut self) {
        // A run dropped unfinished must not keep hammering the database behind Python's back.
        // Nothing is joined: the control thread and every attachment thread (abandoned ones
        // included) own their reference to the shared state and end on their own.
        self.shared.request_stop();
    }
}

/// The run's timeline for a config (core/src/timeline.rs), for callers that must agree with the
/// core on its intervals and boundaries: Classic's coordinator, which passes the boundaries of
/// its processes' run, and the sampler, which reads the engine at them.
#[pyclass(name = "Timeline", module = "fbbench._core", frozen)]
struct RunTimeline {
    timeline: timeline::Timeline,
}

#[pymethods]
impl RunTimeline {
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        let config = Config::from_json(config_json).map_err(PyValueError::new_err)?;
        Ok(RunTimeline {
            timeline: config.timeline,
        })
    }

    /// Warm-up intervals before the first measured one.
    #[getter]
    fn warmup_intervals(&self) -> usize {
        self.timeline.warmup_intervals()
    }

    /// Offset from the zero (seconds) at which the measured period ends; None for fixed work.
    #[getter]
    fn end(&self) -> Option<f64> {
        self.timeline.end()
    }

    /// The boundary at which the measured period starts: the end of the warm-up, or the zero.
    #[getter]
    fn measure_start_boundary(&self) -> u64 {
        self.timeline.measure_start_boundary()
    }

    /// The interval (0-based) that boundary `boundary` closes; None for the zero (and for 0).
    fn interval_closed_by(&self, boundary: u64) -> Option<usize> {
        timeline::interval_closed_by(boundary)
    }

    /// The planned offset of boundary `boundary` from the zero (seconds); None past the last
    /// boundary of a timed run.
    fn boundary_offset(&self, boundary: u64) -> Option<f64> {
        self.timeline.boundary_offset(boundary)
    }
}

/// Merges serialized histograms and summarises them (microseconds).
#[pyfunction]
fn histogram_summary<'py>(
    py: Python<'py>,
    histograms: Vec<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let merged = stats::merge_serialized(&histograms).map_err(PyValueError::new_err)?;
    let dict = PyDict::new(py);
    for (key, value) in stats::summary_us(&merged) {
        if key == "count" {
            dict.set_item(key, value as u64)?;
        } else {
            dict.set_item(key, value)?;
        }
    }
    Ok(dict)
}

/// Merges serialized histograms into one, serialized the same way (HDR V2, base64).
#[pyfunction]
fn merge_histograms(histograms: Vec<String>) -> PyResult<String> {
    let merged = stats::merge_serialized(&histograms).map_err(PyValueError::new_err)?;
    Ok(stats::serialize(&merged))
}

/// The Instant at a CLOCK_MONOTONIC time given in seconds (Instant is CLOCK_MONOTONIC on Linux,
/// but has no constructor from a raw reading).
fn instant_at_monotonic(seconds: f64) -> Instant {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let now = Instant::now();
    // SAFETY: a valid out-pointer; CLOCK_MONOTONIC exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let mono = ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
    if seconds >= mono {
        now + Duration::from_secs_f64((seconds - mono).min(1e9))
    } else {
        now.checked_sub(Duration::from_secs_f64((mono - seconds).min(1e9)))
            .unwrap_or(now)
    }
}

/// Merges the results (JSON) of processes that each drove some attachments of one load into one
/// result of the same shape: counts add, histograms merge exactly (see merge.rs).
#[pyfunction]
fn merge_results(results: Vec<String>) -> PyResult<String> {
    let parts = results
        .iter()
        .map(|r| serde_json::from_str(r))
        .collect::<Result<Vec<serde_json::Value>, _>>()
        .map_err(|e| PyValueError::new_err(format!("a result is not JSON: {e}")))?;
    merge::merge_results(&parts)
        .map(|v| v.to_string())
        .map_err(PyValueError::new_err)
}

/// Merges the same interval (same index) of several processes into one (JSON).
#[pyfunction]
fn merge_intervals(intervals: Vec<String>) -> PyResult<String> {
    let parts = intervals
        .iter()
        .map(|r| serde_json::from_str(r))
        .collect::<Result<Vec<serde_json::Value>, _>>()
        .map_err(|e| PyValueError::new_err(format!("an interval is not JSON: {e}")))?;
    merge::merge_intervals(&parts)
        .map(|v| v.to_string())
        .map_err(PyValueError::new_err)
}

/// The TPB the core uses for a unit (for comparison clients that must start identical
/// transactions).
#[pyfunction]
#[pyo3(signature = (isolation, read_only=false, lock_timeout=None))]
fn build_tpb<'py>(
    py: Python<'py>,
    isolation: &str,
    read_only: bool,
    lock_timeout: Option<u32>,
) -> PyResult<Bound<'py, PyBytes>> {
    let isolation = tpb::Isolation::parse(isolation)
        .ok_or_else(|| PyValueError::new_err(format!("unknown isolation {isolation:?}")))?;
    Ok(PyBytes::new(
        py,
        &tpb::build_tpb(isolation, read_only, lock_timeout),
    ))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_class::<LoadRun>()?;
    m.add_class::<RunTimeline>()?;
    m.add_function(wrap_pyfunction!(histogram_summary, m)?)?;
    m.add_function(wrap_pyfunction!(merge_histograms, m)?)?;
    m.add_function(wrap_pyfunction!(build_tpb, m)?)?;
    m.add_function(wrap_pyfunction!(merge_results, m)?)?;
    m.add_function(wrap_pyfunction!(merge_intervals, m)?)?;
    // The engine's codes for "the database cannot be written": the orchestration's statements
    // (checks, population) fail a run on them as the core's units do.
    m.add("CANNOT_WRITE_CODES", outcome::CANNOT_WRITE_CODES.to_vec())?;
    Ok(())
}
