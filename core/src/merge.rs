//! Merging the results of several runs that drove disjoint attachments of one load: Classic's
//! processes each run attachment k alone (docs/core-api.md, "Classic: one process per
//! attachment"). Counts add, HDR histograms merge exactly, errors and conflicts by code add, and
//! the summaries (latency_ms) are computed once from the merged histograms, by the same code as a
//! single run's result — so a merged result has exactly the shape and meaning of one run's.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};

use crate::outcome::Outcome;
use crate::stats::{deserialize, full_histogram, UnitStats};

/// A unit's figures while merging: the histogram covers the contract's whole range, and the
/// tally columns are added as the parts name them.
fn merged_unit() -> UnitStats {
    UnitStats::new(full_histogram(), 0)
}

/// Adds the counts and the latency histogram of a unit's entry (an interval's or a total's).
fn add_counts(stats: &mut UnitStats, unit: &Value) -> Result<(), String> {
    for outcome in Outcome::ALL {
        stats.counts[outcome.index()] +=
            unit.get(outcome.key()).and_then(Value::as_u64).unwrap_or(0);
    }
    let offset = |key: &str| unit.get(key).and_then(Value::as_f64);
    if let (Some(start), Some(end)) = (offset("first_start"), offset("last_end")) {
        stats.widen(start, end);
    }
    if let Some(text) = unit.get("histogram").and_then(Value::as_str) {
        let part = deserialize(text)?;
        stats
            .latency
            .add(&part)
            .map_err(|e| format!("cannot merge histogram: {e:?}"))?;
    }
    Ok(())
}

/// One unit's totals while merging, with its tally columns named as the parts name them.
struct Total {
    stats: UnitStats,
    columns: Vec<String>,
    /// The first message of each of this unit's codes.
    messages: HashMap<i64, String>,
}

impl Total {
    fn add_tally(&mut self, column: &str, value: f64) {
        match self.columns.iter().position(|c| c == column) {
            Some(i) => self.stats.tally[i] += value,
            None => {
                self.columns.push(column.to_string());
                self.stats.tally.push(value);
            }
        }
    }
}

fn add_codes(
    into: &mut HashMap<i64, u64>,
    messages: &mut HashMap<i64, String>,
    list: Option<&Value>,
) {
    for item in list.and_then(Value::as_array).into_iter().flatten() {
        let Some(code) = item.get("gdscode").and_then(Value::as_i64) else {
            continue;
        };
        *into.entry(code).or_insert(0) += item.get("count").and_then(Value::as_u64).unwrap_or(0);
        if let Some(message) = item.get("message").and_then(Value::as_str) {
            if !message.is_empty() {
                messages.entry(code).or_insert_with(|| message.to_string());
            }
        }
    }
}

/// Units in the order the first part lists them (then any a later part adds).
fn unit_names<'a>(maps: impl Iterator<Item = &'a Map<String, Value>>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for map in maps {
        for name in map.keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names
}

/// One interval from the same interval (same index) of several parts: counts add, histograms
/// merge; the interval lasted as long as its longest part (a process that finished its fixed
/// work, or took the stop, a little earlier closed it a little shorter).
pub fn merge_intervals(parts: &[Value]) -> Result<Value, String> {
    let first = parts.first().ok_or("no interval to merge")?;
    let index = first.get("index").and_then(Value::as_u64);
    if parts
        .iter()
        .any(|p| p.get("index").and_then(Value::as_u64) != index)
    {
        return Err("intervals to merge must have the same index".into());
    }
    let unit_maps: Vec<&Map<String, Value>> = parts
        .iter()
        .filter_map(|p| p.get("units").and_then(Value::as_object))
        .collect();
    let mut units = Map::new();
    for name in unit_names(unit_maps.iter().copied()) {
        let mut merged = merged_unit();
        for map in &unit_maps {
            if let Some(unit) = map.get(&name) {
                add_counts(&mut merged, unit)?;
            }
        }
        units.insert(name, merged.interval_json());
    }
    let seconds = parts
        .iter()
        .filter_map(|p| p.get("seconds").and_then(Value::as_f64))
        .fold(0.0, f64::max);
    Ok(
        json!({"index": index, "phase": first.get("phase").cloned().unwrap_or(Value::Null),
              "start_offset": first.get("start_offset").cloned().unwrap_or(json!(0.0)),
              "seconds": seconds, "units": units}),
    )
}

fn min_f64<'a>(values: impl Iterator<Item = &'a Value>) -> Option<f64> {
    values.filter_map(Value::as_f64).reduce(f64::min)
}

fn max_f64<'a>(values: impl Iterator<Item = &'a Value>) -> Option<f64> {
    values.filter_map(Value::as_f64).reduce(f64::max)
}

/// One result from the results of processes that each drove some of the attachments.
///
/// A part without `units` (a process that never handed in its result: only the intervals it
/// streamed are known) contributes the counts and latencies of its measure intervals to the
/// totals; its errors by code and tallies are not known. `status` is the worst of the parts
/// (failed, stopped, completed) and `failure` joins theirs; the caller may know better (a
/// process that had to be killed) and replace both.
pub fn merge_results(parts: &[Value]) -> Result<Value, String> {
    if parts.is_empty() {
        return Err("no result to merge".into());
    }
    let field = |key: &'static str| parts.iter().filter_map(move |p| p.get(key));

    // Intervals by index.
    let mut by_index: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for part in parts {
        for interval in part
            .get("intervals")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = interval
                .get("index")
                .and_then(Value::as_u64)
                .ok_or("an interval without an index")?;
            by_index.entry(index).or_default().push(interval.clone());
        }
    }
    let intervals = by_index
        .values()
        .map(|same| merge_intervals(same))
        .collect::<Result<Vec<_>, _>>()?;

    // Unit totals of the measured period, each with the first message of each of its codes.
    let mut totals: Vec<(String, Total)> = Vec::new();
    let total_of = |name: &str, totals: &mut Vec<(String, Total)>| -> usize {
        match totals.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                let total = Total {
                    stats: merged_unit(),
                    columns: Vec::new(),
                    messages: HashMap::new(),
                };
                totals.push((name.to_string(), total));
                totals.len() - 1
            }
        }
    };
    for part in parts {
        match part.get("units").and_then(Value::as_object) {
            Some(units) => {
                for (name, unit) in units {
                    let i = total_of(name, &mut totals);
                    let total = &mut totals[i].1;
                    add_counts(&mut total.stats, unit)?;
                    add_codes(
                        &mut total.stats.errors_by_code,
                        &mut total.messages,
                        unit.get("errors_by_code"),
                    );
                    add_codes(
                        &mut total.stats.conflicts_by_code,
                        &mut total.messages,
                        unit.get("conflicts_by_code"),
                    );
                    for (column, value) in unit
                        .get("tally")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                    {
                        total.add_tally(column, value.as_f64().unwrap_or(0.0));
                    }
                }
            }
            None => {
                let measured = part
                    .get("intervals")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|i| i.get("phase").and_then(Value::as_str) == Some("measure"));
                for interval in measured {
                    for (name, unit) in interval
                        .get("units")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                    {
                        let i = total_of(name, &mut totals);
                        add_counts(&mut totals[i].1.stats, unit)?;
                    }
                }
            }
        }
    }
    let mut units = Map::new();
    for (name, total) in &totals {
        units.insert(
            name.clone(),
            total.stats.total_json(&total.columns, &total.messages),
        );
    }

    let mut attachments: Vec<Value> = field("attachments")
        .filter_map(Value::as_array)
        .flatten()
        .cloned()
        .collect();
    attachments.sort_by_key(|a| a.get("index").and_then(Value::as_u64).unwrap_or(0));
    let mut abandoned: Vec<u64> = field("abandoned")
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_u64)
        .collect();
    abandoned.sort_unstable();
    abandoned.dedup();

    let statuses: Vec<&str> = field("status").filter_map(Value::as_str).collect();
    let status = ["failed", "stopped"]
        .into_iter()
        .find(|s| statuses.contains(s))
        .unwrap_or("completed");
    let mut failures: Vec<&str> = Vec::new();
    for failure in field("failure").filter_map(Value::as_str) {
        if !failures.contains(&failure) {
            failures.push(failure);
        }
    }
    let sum = |key: &'static str| field(key).filter_map(Value::as_f64).sum::<f64>();

    Ok(json!({
        "status": status,
        "failure": if failures.is_empty() { Value::Null } else { json!(failures.join("; ")) },
        "started_at": min_f64(field("started_at")),
        "measure_started_at": min_f64(field("measure_started_at")),
        "ended_at": max_f64(field("ended_at")),
        "measured_seconds": max_f64(field("measured_seconds")).unwrap_or(0.0),
        "client_cpu_seconds": sum("client_cpu_seconds"),
        "thread_cpu_seconds": sum("thread_cpu_seconds"),
        "attachments": attachments,
        "abandoned": abandoned,
        "intervals": intervals,
        "units": units,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{latency_ms, record_latency};

    /// A process's interval of one unit: its local figures with the overflow merged in.
    fn unit(values: &[u64], outcome: Outcome, code: i64, tally: f64) -> (Value, UnitStats) {
        let mut stats = UnitStats::new(full_histogram(), 1);
        for &v in values {
            if let Err(slow) = stats.record(outcome, v, code, &[tally], 1.0) {
                record_latency(&mut stats.latency, slow);
            }
        }
        (stats.interval_json(), stats)
    }

    fn interval(index: u64, phase: &str, seconds: f64, a: &Value) -> Value {
        json!({"index": index, "phase": phase, "start_offset": index as f64, "seconds": seconds,
               "units": {"a": a}})
    }

    #[test]
    fn results_merge_exactly() {
        let (a1, s1) = unit(&[10, 20, 30], Outcome::Ok, 0, 2.0);
        let (a2, s2) = unit(&[5_000_000, 40], Outcome::Error, 335544321, 0.0);
        let mut total1 = a1.as_object().unwrap().clone();
        total1.insert(
            "errors_by_code".into(),
            json!([{"gdscode": 335544345, "count": 1, "message": "lock conflict"}]),
        );
        total1.insert("tally".into(), json!({"OL_CNT": 6}));
        let mut total2 = a2.as_object().unwrap().clone();
        total2.insert(
            "errors_by_code".into(),
            json!([{"gdscode": 335544345, "count": 2, "message": ""},
                   {"gdscode": 335544321, "count": 2, "message": "arithmetic"}]),
        );
        total2.insert("tally".into(), json!({"OL_CNT": 0.5}));
        let one = json!({"status": "completed", "failure": null, "started_at": 10.0,
            "measure_started_at": 11.0, "ended_at": 14.0, "measured_seconds": 3.0,
            "client_cpu_seconds": 0.25, "thread_cpu_seconds": 1.0, "abandoned": [],
            "attachments": [{"index": 2, "home": 2, "units": 3, "error": null}],
            "intervals": [interval(0, "warmup", 1.0, &a1), interval(1, "measure", 1.0, &a1)],
            "units": {"a": total1}});
        let two = json!({"status": "stopped", "failure": null, "started_at": 9.5,
            "measure_started_at": 11.0, "ended_at": 14.5, "measured_seconds": 3.5,
            "client_cpu_seconds": 0.5, "thread_cpu_seconds": 2.0, "abandoned": [1],
            "attachments": [{"index": 1, "home": 1, "units": 2, "error": "x"}],
            "intervals": [interval(1, "measure", 0.75, &a2)],
            "units": {"a": total2}});
        let merged = merge_results(&[one, two]).unwrap();
        assert_eq!(merged["status"], "stopped");
        assert_eq!(merged["started_at"], 9.5);
        assert_eq!(merged["ended_at"], 14.5);
        assert_eq!(merged["measured_seconds"], 3.5);
        assert_eq!(merged["client_cpu_seconds"], 0.75);
        assert_eq!(merged["abandoned"], json!([1]));
        assert_eq!(merged["attachments"][0]["index"], 1);
        let intervals = merged["intervals"].as_array().unwrap();
        assert_eq!(intervals.len(), 2);
        assert_eq!(intervals[1]["seconds"], 1.0);
        assert_eq!(intervals[1]["units"]["a"]["ok"], 3);
        assert_eq!(intervals[1]["units"]["a"]["errors"], 2);
        let a = &merged["units"]["a"];
        assert_eq!((a["ok"].as_u64(), a["errors"].as_u64()), (Some(3), Some(2)));
        let mut expected = full_histogram();
        expected.add(&s1.latency).unwrap();
        expected.add(&s2.latency).unwrap();
        assert_eq!(
            deserialize(a["histogram"].as_str().unwrap()).unwrap(),
            expected
        );
        assert_eq!(a["latency_ms"], latency_ms(&expected));
        assert_eq!(a["tally"], json!({"OL_CNT": 6.5}));
        // Counts add by code; the first message that says something is kept.
        assert_eq!(
            a["errors_by_code"],
            json!([{"gdscode": 335544345, "count": 3, "message": "lock conflict"},
                   {"gdscode": 335544321, "count": 2, "message": "arithmetic"}])
        );
    }

    #[test]
    fn each_unit_keeps_its_own_message_of_a_shared_code() {
        // Every PSQL exception is isc_except: one unit's text must not be shown for another's.
        let except = 335544517;
        let part = |first: &str, second: &str| {
            let (a, _) = unit(&[10], Outcome::Error, except, 0.0);
            let total = |message: &str| {
                let mut total = a.as_object().unwrap().clone();
                total.insert(
                    "errors_by_code".into(),
                    json!([{"gdscode": except, "count": 1, "message": message}]),
                );
                Value::Object(total)
            };
            json!({"status": "completed", "failure": null, "attachments": [], "abandoned": [],
                   "intervals": [], "units": {"one": total(first), "two": total(second)}})
        };
        let merged = merge_results(&[part("", "EX_TWO"), part("EX_ONE", "EX_TWO again")]).unwrap();
        let message = |name: &str| merged["units"][name]["errors_by_code"][0]["message"].clone();
        assert_eq!(message("one"), "EX_ONE");
        assert_eq!(message("two"), "EX_TWO");
    }

    #[test]
    fn a_part_without_totals_counts_its_measured_intervals() {
        let (a, stats) = unit(&[7, 8], Outcome::Ok, 0, 1.0);
        let part = json!({"status": "failed", "failure": "attachment 3 did not return",
            "attachments": [], "abandoned": [3],
            "intervals": [interval(0, "warmup", 1.0, &a), interval(1, "measure", 1.0, &a)]});
        let merged = merge_results(&[part]).unwrap();
        assert_eq!(merged["status"], "failed");
        assert_eq!(merged["failure"], "attachment 3 did not return");
        assert_eq!(merged["units"]["a"]["ok"], 2);
        let mut expected = full_histogram();
        expected.add(&stats.latency).unwrap();
        assert_eq!(
            deserialize(merged["units"]["a"]["histogram"].as_str().unwrap()).unwrap(),
            expected
        );
        assert!(merge_intervals(&[
            interval(0, "warmup", 1.0, &a),
            interval(1, "measure", 1.0, &a)
        ])
        .is_err());
    }
}
