//! Counts, latency histograms and per-code tallies of units, per interval, mergeable exactly.

use std::collections::HashMap;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

use crate::outcome::Outcome;

/// 1 µs .. 1 h at 3 significant digits, as the contract fixes it.
pub const LOWEST_US: u64 = 1;
pub const HIGHEST_US: u64 = 3_600_000_000;
pub const SIGFIG: u8 = 3;
/// The largest latency an attachment-local histogram holds: the top of its fixed 8,192 counts
/// (1 µs .. 2^17 - 1 µs at 3 significant digits: 7 buckets + 1 half bucket of 1,024 counts,
/// 64 KiB of u64). Most units stay far below it. A local histogram never grows: a value above
/// the top goes to the run's `Overflow` instead, merged exactly with the locals when the
/// interval closes (the buckets of every 1 µs histogram at 3 digits coincide, whatever its top).
pub const LOCAL_TOP_US: u64 = 131_071;

pub fn full_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_US, HIGHEST_US, SIGFIG).expect("valid histogram bounds")
}

/// An attachment-local histogram: 1 µs .. `LOCAL_TOP_US`, its counts allocated once, never
/// resized (auto-resize off; `record_local` keeps what it cannot hold out of it).
pub fn local_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_US, LOCAL_TOP_US, SIGFIG).expect("valid histogram bounds")
}

/// Values outside 1 µs .. 1 h are clamped. For a histogram of the full range.
#[inline]
pub fn record_latency(h: &mut Histogram<u64>, micros: u64) {
    let _ = h.record(micros.clamp(LOWEST_US, HIGHEST_US));
}

/// Records `micros` (clamped to 1 µs .. 1 h) into a local histogram if it is at most
/// `LOCAL_TOP_US`; otherwise leaves the histogram alone and returns the clamped value, for the
/// caller to record into an overflow histogram of the full range.
#[inline]
pub fn record_local(h: &mut Histogram<u64>, micros: u64) -> Result<(), u64> {
    let value = micros.max(LOWEST_US);
    if value > LOCAL_TOP_US {
        return Err(value.min(HIGHEST_US));
    }
    let _ = h.record(value);
    Ok(())
}

pub fn serialize(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing into memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn deserialize(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram is not an HDR V2 histogram: {e:?}"))
}

pub fn merge_serialized<S: AsRef<str>>(items: &[S]) -> Result<Histogram<u64>, String> {
    let mut merged = full_histogram();
    for item in items {
        let h = deserialize(item.as_ref())?;
        merged
            .add(&h)
            .map_err(|e| format!("cannot merge histogram: {e:?}"))?;
    }
    Ok(merged)
}

/// Percentiles in microseconds, as `_core.histogram_summary` returns them.
pub fn summary_us(h: &Histogram<u64>) -> Vec<(&'static str, f64)> {
    let empty = h.is_empty();
    let q = |quantile: f64| {
        if empty {
            0.0
        } else {
            h.value_at_quantile(quantile) as f64
        }
    };
    vec![
        ("count", h.len() as f64),
        ("min_us", if empty { 0.0 } else { h.min() as f64 }),
        ("max_us", if empty { 0.0 } else { h.max() as f64 }),
        ("mean_us", if empty { 0.0 } else { h.mean() }),
        ("p50_us", q(0.50)),
        ("p90_us", q(0.90)),
        ("p95_us", q(0.95)),
        ("p99_us", q(0.99)),
        ("p999_us", q(0.999)),
    ]
}

/// The contract's `latency_ms` object of a unit.
pub fn latency_ms(h: &Histogram<u64>) -> Value {
    let s: HashMap<&str, f64> = summary_us(h).into_iter().collect();
    let ms = |key: &str| s[key].round() / 1000.0;
    json!({"p50": ms("p50_us"), "p90": ms("p90_us"), "p95": ms("p95_us"), "p99": ms("p99_us"),
           "max": ms("max_us"), "mean": ms("mean_us")})
}

/// One unit's outcomes within one interval (or a total).
pub struct UnitStats {
    pub counts: [u64; 4],
    pub latency: Histogram<u64>,
    pub errors_by_code: HashMap<i64, u64>,
    pub conflicts_by_code: HashMap<i64, u64>,
    pub tally: Vec<f64>,
    /// Offsets from the run's zero (s) of the first counted execution's start and the last
    /// one's end: the unit's wall-clock span (a phase's elapsed time).
    pub span: Option<(f64, f64)>,
}

impl UnitStats {
    pub fn new(histogram: Histogram<u64>, tally_columns: usize) -> UnitStats {
        UnitStats {
            counts: [0; 4],
            latency: histogram,
            errors_by_code: HashMap::new(),
            conflicts_by_code: HashMap::new(),
            tally: vec![0.0; tally_columns],
            span: None,
        }
    }

    /// One execution that ended at `end` (offset from the zero, s) after `micros`, into an
    /// attachment's local figures. Everything is recorded here but a latency above the local
    /// histogram's top, which is returned (clamped to 1 h) for the caller's `Overflow`.
    #[inline]
    pub fn record(
        &mut self,
        outcome: Outcome,
        micros: u64,
        code: i64,
        tally: &[f64],
        end: f64,
    ) -> Result<(), u64> {
        self.counts[outcome.index()] += 1;
        let latency = record_local(&mut self.latency, micros);
        self.widen(end - micros as f64 / 1e6, end);
        match outcome {
            Outcome::Ok => {
                for (sum, value) in self.tally.iter_mut().zip(tally) {
                    *sum += value;
                }
            }
            Outcome::Error => *self.errors_by_code.entry(code).or_insert(0) += 1,
            Outcome::Conflict => *self.conflicts_by_code.entry(code).or_insert(0) += 1,
            Outcome::RolledBack => {}
        }
        latency
    }

    #[inline]
    pub fn widen(&mut self, start: f64, end: f64) {
        self.span = Some(match self.span {
            Some((first, last)) => (first.min(start), last.max(end)),
            None => (start, end),
        });
    }

    pub fn add(&mut self, other: &UnitStats) {
        if let Some((start, end)) = other.span {
            self.widen(start, end);
        }
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        self.latency
            .add(&other.latency)
            .expect("histograms of 1 µs .. 1 h always merge");
        for (code, n) in &other.errors_by_code {
            *self.errors_by_code.entry(*code).or_insert(0) += n;
        }
        for (code, n) in &other.conflicts_by_code {
            *self.conflicts_by_code.entry(*code).or_insert(0) += n;
        }
        for (a, b) in self.tally.iter_mut().zip(&other.tally) {
            *a += b;
        }
    }

    pub fn reset(&mut self) {
        self.counts = [0; 4];
        self.latency.reset();
        self.errors_by_code.clear();
        self.conflicts_by_code.clear();
        self.tally.iter_mut().for_each(|t| *t = 0.0);
        self.span = None;
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }

    /// The unit's entry in an interval of docs/core-api.md: counts by outcome and the latency
    /// histogram.
    pub fn interval_json(&self) -> Value {
        Value::Object(self.interval_entry())
    }

    /// The unit's entry in the result's totals: the interval entry, the latency summary, errors
    /// and conflicts by code (with the first message seen for each code), and the tally sums of
    /// the columns named `columns`.
    pub fn total_json(&self, columns: &[String], messages: &HashMap<i64, String>) -> Value {
        let mut entry = self.interval_entry();
        entry.insert("latency_ms".into(), latency_ms(&self.latency));
        entry.insert(
            "errors_by_code".into(),
            by_code_json(&self.errors_by_code, messages),
        );
        entry.insert(
            "conflicts_by_code".into(),
            by_code_json(&self.conflicts_by_code, messages),
        );
        let tally: Map<String, Value> = columns
            .iter()
            .zip(&self.tally)
            .map(|(name, sum)| (name.clone(), number(*sum)))
            .collect();
        entry.insert("tally".into(), Value::Object(tally));
        Value::Object(entry)
    }

    fn interval_entry(&self) -> Map<String, Value> {
        let mut entry = counts_json(&self.counts);
        entry.insert("histogram".into(), json!(serialize(&self.latency)));
        if let Some((start, end)) = self.span {
            entry.insert("first_start".into(), json!(start));
            entry.insert("last_end".into(), json!(end));
        }
        entry
    }
}

/// The latencies above `LOCAL_TOP_US` that a run's attachments recorded, per unit, for each of
/// the intervals the attachments can be recording into: while interval i closes, an attachment
/// not yet swapped records into i or i + 1, one already swapped into i + 1 or i + 2 — so three
/// slots, interval i's in slot i % 3, emptied for interval i + 3 once i is closed. Behind one
/// mutex of the run, taken under the attachment's own (slow units are rare: no contention worth
/// the name). A histogram covers the contract's full range; it is allocated when its first
/// value arrives and then reset, never freed nor grown: at most 3 × units of them per run,
/// whatever the number of attachments.
pub struct Overflow {
    slots: [(usize, Vec<Option<Histogram<u64>>>); 3],
}

impl Overflow {
    pub fn new(units: usize) -> Overflow {
        let slot = |index| (index, (0..units).map(|_| None).collect());
        Overflow {
            slots: [slot(0), slot(1), slot(2)],
        }
    }

    /// A latency of `unit` above the local top, in interval `interval`.
    #[cold]
    pub fn record(&mut self, interval: usize, unit: usize, micros: u64) {
        let (index, units) = &mut self.slots[interval % 3];
        debug_assert_eq!(*index, interval, "an overflow for an interval not open");
        let h = units[unit].get_or_insert_with(full_histogram);
        let _ = h.record(micros.clamp(LOWEST_US, HIGHEST_US));
    }

    /// Adds interval `interval`'s latencies into `merged` (its units' figures, whose other
    /// latencies came from the attachments' local histograms) and opens its slot for interval
    /// `interval + 3`. Only once no attachment can record into `interval` any more.
    pub fn close(&mut self, interval: usize, merged: &mut [UnitStats]) {
        let (index, units) = &mut self.slots[interval % 3];
        debug_assert_eq!(*index, interval, "closing an interval not open");
        for (total, h) in merged.iter_mut().zip(units.iter_mut()) {
            if let Some(h) = h.as_mut().filter(|h| !h.is_empty()) {
                total
                    .latency
                    .add(&*h)
                    .expect("histograms of 1 µs .. 1 h always merge");
                h.reset();
            }
        }
        *index = interval + 3;
    }
}

/// Counts by outcome, keyed by the outcomes' names.
pub fn counts_json(counts: &[u64; 4]) -> Map<String, Value> {
    let mut map = Map::new();
    for outcome in Outcome::ALL {
        map.insert(outcome.key().into(), json!(counts[outcome.index()]));
    }
    map
}

/// Per-code counts with the first message seen for each code, as the result lists them.
fn by_code_json(counts: &HashMap<i64, u64>, messages: &HashMap<i64, String>) -> Value {
    let mut codes: Vec<(&i64, &u64)> = counts.iter().collect();
    codes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    Value::Array(
        codes
            .into_iter()
            .map(|(code, count)| {
                json!({"gdscode": code, "count": count,
                       "message": messages.get(code).cloned().unwrap_or_default()})
            })
            .collect(),
    )
}

/// A tally sum as JSON: integral sums stay integers.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_exact_across_attachments_and_serialization() {
        let mut a = UnitStats::new(local_histogram(), 1);
        let mut b = UnitStats::new(local_histogram(), 1);
        let mut overflow = Overflow::new(1);
        for v in 1..=1000u64 {
            a.record(Outcome::Ok, v, 0, &[1.0], 3.0).unwrap();
        }
        // Above the local histogram's top: counted locally, its latency left for the overflow.
        assert_eq!(
            b.record(Outcome::Ok, 2_500_000, 0, &[2.5], 4.0),
            Err(2_500_000)
        );
        overflow.record(0, 0, 2_500_000);
        b.record(Outcome::Conflict, 50, 335544345, &[9.0], 3.0)
            .unwrap();
        b.record(Outcome::Error, 70, 335544321, &[], 3.0).unwrap();
        b.record(Outcome::Error, 0, 335544321, &[], 3.0).unwrap();
        let mut total = UnitStats::new(full_histogram(), 1);
        total.add(&a);
        total.add(&b);
        overflow.close(0, std::slice::from_mut(&mut total));
        assert_eq!(total.counts, [1001, 0, 1, 2]);
        assert_eq!(total.latency.len(), 1004);
        assert_eq!(total.tally, vec![1002.5]);
        assert_eq!(total.errors_by_code[&335544321], 2);
        assert_eq!(total.conflicts_by_code[&335544345], 1);
        assert!(total.latency.equivalent(total.latency.max(), 2_500_000));
        assert_eq!(total.latency.min(), 1);
        // The span runs from the earliest start (4.0 - 2.5 s) to the latest end.
        assert_eq!(total.span, Some((1.5, 4.0)));
        let json = total.interval_json();
        assert_eq!(
            (json["first_start"].as_f64(), json["last_end"].as_f64()),
            (Some(1.5), Some(4.0))
        );

        let mut slow = full_histogram();
        record_latency(&mut slow, 2_500_000);
        let parts = [
            serialize(&a.latency),
            serialize(&b.latency),
            serialize(&slow),
        ];
        let merged = merge_serialized(&parts).unwrap();
        assert_eq!(merged, total.latency);
        let roundtrip = deserialize(&serialize(&merged)).unwrap();
        assert_eq!(roundtrip, merged);
        assert!(deserialize("not base64!").is_err());
    }

    #[test]
    fn a_local_histogram_never_grows() {
        let mut a = UnitStats::new(local_histogram(), 0);
        let counts = a.latency.distinct_values();
        assert_eq!(counts, 8192); // 64 KiB of u64
                                  // LOCAL_TOP_US is the top of those counts: one more would need another bucket.
        assert!(local_histogram().record(LOCAL_TOP_US).is_ok());
        assert!(local_histogram().record(LOCAL_TOP_US + 1).is_err());
        assert_eq!(a.record(Outcome::Ok, LOCAL_TOP_US, 0, &[], 1.0), Ok(()));
        for (micros, overflow) in [
            (LOCAL_TOP_US + 1, LOCAL_TOP_US + 1),
            (5_000_000, 5_000_000),
            (1_800_000_000, 1_800_000_000),
            (u64::MAX, HIGHEST_US),
        ] {
            assert_eq!(a.record(Outcome::Ok, micros, 0, &[], 1.0), Err(overflow));
        }
        assert_eq!(a.latency.distinct_values(), counts);
        assert_eq!(a.latency.high(), LOCAL_TOP_US);
        assert_eq!((a.latency.len(), a.counts[0]), (1, 5));
        // Reused interval after interval: still the same counts.
        a.reset();
        assert_eq!(a.record(Outcome::Ok, 0, 0, &[], 1.0), Ok(()));
        assert_eq!(a.latency.distinct_values(), counts);
        assert_eq!(a.latency.min(), 1);
    }

    #[test]
    fn summaries() {
        let mut h = full_histogram();
        for v in 1..=100u64 {
            record_latency(&mut h, v * 1000);
        }
        record_latency(&mut h, u64::MAX);
        let s: HashMap<&str, f64> = summary_us(&h).into_iter().collect();
        assert_eq!(s["count"], 101.0);
        assert!((s["p50_us"] - 51_000.0).abs() < 60.0, "{}", s["p50_us"]);
        assert!(h.equivalent(s["max_us"] as u64, HIGHEST_US));
        let ms = latency_ms(&h);
        assert!((ms["p90"].as_f64().unwrap() - 91.0).abs() < 0.1);
        let empty: HashMap<&str, f64> = summary_us(&full_histogram()).into_iter().collect();
        assert_eq!(empty["p99_us"], 0.0);
    }

    #[test]
    fn reset_keeps_nothing() {
        let mut a = UnitStats::new(local_histogram(), 2);
        a.record(Outcome::Ok, 10, 0, &[1.0, 2.0], 3.0).unwrap();
        a.record(Outcome::Error, 10, 1, &[], 3.0).unwrap();
        a.reset();
        assert!(a.is_empty());
        assert!(a.latency.is_empty());
        assert!(a.errors_by_code.is_empty());
        assert_eq!(a.tally, vec![0.0, 0.0]);
        assert_eq!(number(3.0), json!(3));
        assert_eq!(number(2.5), json!(2.5));
    }
}
