//! Where a moment of the run falls: warm-up intervals, then measure intervals.
//!
//! Offsets are seconds from the run's zero (all attachments connected, or the first connect
//! under a ramp-up). Warm-up intervals tile [0, W); measure intervals tile [W, W + M), each
//! `interval` long except the last of each phase, so the phase boundary is always an interval
//! boundary. In fixed-work runs M is unbounded.
//!
//! Boundaries are numbered as the run passes them (what `LoadRun.wait_boundary` counts): the zero
//! is boundary 1, then boundary `index + 2` closes interval `index`.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub const ZERO_BOUNDARY: u64 = 1;

pub fn boundary_closing(index: usize) -> u64 {
    index as u64 + 2
}

/// The interval boundary `boundary` closes; None for the zero (and for 0, no boundary yet).
pub fn interval_closed_by(boundary: u64) -> Option<usize> {
    boundary.checked_sub(2).map(|index| index as usize)
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeline {
    pub interval: f64,
    pub warmup: f64,
    /// None: fixed work, the measured phase lasts until the last attachment finishes.
    pub measure: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Warmup,
    Measure,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Measure => "measure",
        }
    }
}

impl Timeline {
    pub fn warmup_intervals(&self) -> usize {
        if self.warmup <= 0.0 {
            0
        } else {
            (self.warmup / self.interval).ceil() as usize
        }
    }

    /// Offset at which the measured period ends, if it is timed.
    pub fn end(&self) -> Option<f64> {
        self.measure.map(|m| self.warmup + m)
    }

    /// The interval a unit ending at `offset` belongs to; None once the measured period is over.
    #[inline]
    pub fn interval_of(&self, offset: f64) -> Option<usize> {
        if offset < self.warmup {
            return Some(((offset.max(0.0)) / self.interval) as usize);
        }
        if let Some(end) = self.end() {
            if offset >= end {
                return None;
            }
        }
        let into = ((offset - self.warmup) / self.interval) as usize;
        Some(self.warmup_intervals() + into)
    }

    /// [start, end) offsets and phase of interval `index`.
    pub fn bounds(&self, index: usize) -> (f64, f64, Phase) {
        let nw = self.warmup_intervals();
        if index < nw {
            let start = index as f64 * self.interval;
            return (
                start,
                (start + self.interval).min(self.warmup),
                Phase::Warmup,
            );
        }
        let start = self.warmup + (index - nw) as f64 * self.interval;
        let mut end = start + self.interval;
        if let Some(limit) = self.end() {
            end = end.min(limit);
        }
        (start, end, Phase::Measure)
    }

    pub fn is_last(&self, index: usize) -> bool {
        match self.end() {
            Some(limit) => self.bounds(index).1 >= limit,
            None => false,
        }
    }

    /// The boundary at which the measured period starts: the end of the warm-up, or the zero.
    pub fn measure_start_boundary(&self) -> u64 {
        match self.warmup_intervals() {
            0 => ZERO_BOUNDARY,
            n => boundary_closing(n - 1),
        }
    }

    /// The planned offset of boundary `boundary` (a run that stops early closes its last interval
    /// sooner); None for 0 and past the last boundary of a timed run.
    pub fn boundary_offset(&self, boundary: u64) -> Option<f64> {
        match interval_closed_by(boundary) {
            Some(index) if index > 0 && self.is_last(index - 1) => None,
            Some(index) => Some(self.bounds(index).1),
            None => (boundary == ZERO_BOUNDARY).then_some(0.0),
        }
    }
}

/// The run's moments as wall-clock times (seconds since the epoch), as the documents give them:
/// both clocks are read once, when the run is created, and moments are placed from there on the
/// monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    created: Instant,
    /// The wall-clock time of `created`.
    pub created_wall: f64,
}

impl WallClock {
    pub fn now() -> WallClock {
        WallClock {
            created: Instant::now(),
            created_wall: wall_now(),
        }
    }

    pub fn epoch(&self, at: Instant) -> f64 {
        self.created_wall + at.saturating_duration_since(self.created).as_secs_f64()
    }
}

fn wall_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_and_measure_tile_the_run() {
        let t = Timeline {
            interval: 10.0,
            warmup: 25.0,
            measure: Some(30.0),
        };
        assert_eq!(t.warmup_intervals(), 3);
        assert_eq!(t.bounds(0), (0.0, 10.0, Phase::Warmup));
        assert_eq!(t.bounds(2), (20.0, 25.0, Phase::Warmup));
        assert_eq!(t.bounds(3), (25.0, 35.0, Phase::Measure));
        assert_eq!(t.bounds(5), (45.0, 55.0, Phase::Measure));
        assert!(t.is_last(5) && !t.is_last(4));
        assert_eq!(t.measure_start_boundary(), 4);
        assert_eq!(interval_closed_by(t.measure_start_boundary()), Some(2));
        assert_eq!(interval_closed_by(ZERO_BOUNDARY), None);
        assert_eq!(interval_closed_by(boundary_closing(5)), Some(5));
        let offsets: Vec<Option<f64>> = (0..9).map(|b| t.boundary_offset(b)).collect();
        assert_eq!(
            offsets,
            [
                None,
                Some(0.0),
                Some(10.0),
                Some(20.0),
                Some(25.0),
                Some(35.0),
                Some(45.0),
                Some(55.0),
                None
            ]
        );
        assert_eq!(t.interval_of(0.0), Some(0));
        assert_eq!(t.interval_of(24.999), Some(2));
        assert_eq!(t.interval_of(25.0), Some(3));
        assert_eq!(t.interval_of(54.9), Some(5));
        assert_eq!(t.interval_of(55.0), None);
        // Every offset falls inside the bounds of the interval it maps to.
        for k in 0..5500 {
            let offset = k as f64 / 100.0;
            let i = t.interval_of(offset).unwrap();
            let (start, end, _) = t.bounds(i);
            assert!(
                start <= offset && offset < end,
                "{offset} -> {i} {start}..{end}"
            );
        }
    }

    #[test]
    fn no_warmup_and_fixed_work() {
        let t = Timeline {
            interval: 2.0,
            warmup: 0.0,
            measure: None,
        };
        assert_eq!(t.warmup_intervals(), 0);
        assert_eq!(t.bounds(0), (0.0, 2.0, Phase::Measure));
        assert_eq!(t.interval_of(1e6), Some(500_000));
        assert!(!t.is_last(1_000_000));
        assert_eq!(t.measure_start_boundary(), ZERO_BOUNDARY);
        assert_eq!(t.boundary_offset(1_000_002), Some(2_000_002.0));
        let short = Timeline {
            interval: 10.0,
            warmup: 0.0,
            measure: Some(4.0),
        };
        assert_eq!(short.bounds(0), (0.0, 4.0, Phase::Measure));
        assert!(short.is_last(0));
        assert_eq!(short.boundary_offset(2), Some(4.0));
        assert_eq!(short.boundary_offset(3), None);
    }
}
