//! The run config of docs/core-api.md: parsed from JSON, checked once, compiled for the workers.

use std::collections::HashSet;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::params::{parse_source, Bind, Gen, Source};
use crate::timeline::Timeline;
use crate::tpb::{build_tpb, Isolation};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    client_library: String,
    database: String,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    charset: Option<String>,
    connections: u32,
    #[serde(default)]
    connect_rate: Option<f64>,
    #[serde(default)]
    warmup_seconds: Option<f64>,
    #[serde(default)]
    measure_seconds: Option<f64>,
    #[serde(default)]
    transactions: Option<u64>,
    #[serde(default)]
    interval_seconds: Option<f64>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    target_rate: Option<f64>,
    #[serde(default)]
    watchdog_seconds: Option<f64>,
    #[serde(default)]
    attachment_index: Option<u32>,
    #[serde(default)]
    hold: bool,
    #[serde(default)]
    closing_sql: Option<String>,
    units: Vec<RawUnit>,
    #[serde(default)]
    replay: Option<RawReplay>,
}

/// A replay of traced sessions (docs/core-api.md, "Replay").
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReplay {
    order: String,
    #[serde(default)]
    speed: Option<f64>,
    #[serde(default)]
    stall_seconds: Option<f64>,
    templates: Vec<String>,
    sessions: Vec<Vec<RawTransaction>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTransaction {
    unit: usize,
    #[serde(default)]
    trace_id: Option<u64>,
    at: f64,
    end_at: f64,
    #[serde(default)]
    start_seq: u64,
    #[serde(default)]
    end_seq: u64,
    isolation: String,
    #[serde(default)]
    read_only: bool,
    #[serde(default)]
    lock_timeout: Option<u32>,
    end: String,
    statements: Vec<RawExecution>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExecution {
    template: usize,
    at: f64,
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    params: Vec<Value>,
    #[serde(default)]
    rows: Option<u64>,
    #[serde(default)]
    changes: Option<[u64; 3]>,
    #[serde(default)]
    error: Option<i64>,
    #[serde(default)]
    ordered_at_start: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUnit {
    name: String,
    #[serde(default)]
    weight: Option<f64>,
    #[serde(default)]
    isolation: Option<String>,
    #[serde(default)]
    read_only: bool,
    #[serde(default)]
    lock_timeout: Option<u32>,
    #[serde(default)]
    keying_seconds: Option<f64>,
    #[serde(default)]
    think_seconds: Option<f64>,
    #[serde(default)]
    rollback_on: Vec<i64>,
    #[serde(default)]
    tally: Vec<String>,
    #[serde(default, rename = "let")]
    lets: Vec<Value>,
    #[serde(default)]
    transaction: Option<String>,
    #[serde(default)]
    units_per_transaction: Option<u64>,
    #[serde(default)]
    connect: Option<String>,
    #[serde(default)]
    count: Option<u64>,
    statements: Vec<RawStatement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStatement {
    sql: String,
    #[serde(default)]
    repeat: Option<u32>,
    #[serde(default, rename = "let")]
    lets: Vec<Value>,
    #[serde(default)]
    params: Vec<Value>,
}

pub struct Config {
    pub client_library: String,
    pub database: String,
    pub user: String,
    pub password: Option<String>,
    pub role: Option<String>,
    pub charset: String,
    pub connections: u32,
    pub connect_rate: f64,
    pub transactions: Option<u64>,
    pub timeline: Timeline,
    pub seed: u64,
    pub target_rate: Option<f64>,
    /// How long after the end of the run (period over, stop, failure) an attachment may take to
    /// come back before it is abandoned: watchdog_seconds + the largest finite lock_timeout.
    pub watchdog: Duration,
    /// Index of this run's first attachment (1-based): a process of a Classic run drives
    /// attachment k alone, with thread k's streams, home and name.
    pub first_attachment: u32,
    /// After connecting, wait for `go(start)` instead of starting at once (Classic's processes
    /// start together on a common zero).
    pub hold: bool,
    /// Run by each attachment once, in a transaction of its own, when its load ended as planned
    /// (the measured period or its work over; not after a stop or a failure), before it detaches:
    /// `--profile`'s `RDB$PROFILER.FINISH_SESSION`, which must run on the profiled attachment
    /// itself (a remote finish can meet the attachment inside a lock wait).
    pub closing_sql: Option<String>,
    pub units: Vec<Unit>,
    /// Cumulative weights for the unit draw.
    pub cumulative_weights: Vec<f64>,
    /// A replay instead of drawn units: attachment k replays session k.
    pub replay: Option<Replay>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Each action at its traced time (divided by the speed): no order across attachments.
    Timed,
    /// Each action only after every action traced before it has run (with a stall guard).
    Strict,
}

pub struct Replay {
    pub order: Order,
    pub speed: f64,
    /// Strict order: how long an action waits for its turn before the order is given up.
    pub stall: Duration,
    pub templates: Vec<String>,
    pub sessions: Vec<Vec<ReplayTransaction>>,
    /// Actions in the strict order (every start, statement and end), numbered from 1.
    pub actions: u64,
    /// The attachment (1-based) each action belongs to, by its number.
    pub owners: Vec<u32>,
}

pub struct ReplayTransaction {
    pub unit: usize,
    pub trace_id: Option<u64>,
    pub at: f64,
    pub end_at: f64,
    pub start_seq: u64,
    pub end_seq: u64,
    pub tpb: Vec<u8>,
    pub lock_timeout: Option<u32>,
    /// The traced end: commit (true) or rollback.
    pub commit: bool,
    pub statements: Vec<ReplayExecution>,
}

pub struct ReplayExecution {
    pub template: usize,
    pub at: f64,
    pub seq: u64,
    pub params: Vec<Value>,
    /// What the trace saw: rows fetched, rows inserted / updated / deleted (every table, triggers
    /// and procedures included), the error's gdscode.
    pub rows: Option<u64>,
    pub changes: Option<[u64; 3]>,
    pub error: Option<i64>,
    /// Strict order: the trace logged its START, so it counts as done in the order once it has
    /// begun (what the trace logged after its start happened while it ran); otherwise once it
    /// has ended.
    pub ordered_at_start: bool,
}

pub struct Unit {
    pub name: String,
    pub tpb: Vec<u8>,
    /// Seconds a lock wait may last (0 = no wait); None = wait for ever.
    pub lock_timeout: Option<u32>,
    pub keying_seconds: f64,
    pub think_seconds: f64,
    pub rollback_on: Vec<i64>,
    pub tally: Vec<String>,
    pub statements: Vec<StatementSpec>,
    /// The unit's lets, drawn once per execution before its first statement: slot i is let i.
    pub lets: Vec<Source>,
    /// How each slot of the unit's draws is bound (its lets, the statements' lets, stored `$n`s).
    pub slot_binds: Vec<Bind>,
    /// The unit's `sequence()` counters.
    pub counters: usize,
    pub commit: Commit,
    /// Each execution attaches, prepares, runs and detaches (connect = "per_unit").
    pub connect_per_unit: bool,
    /// Fixed work: executions per attachment, the units run in order (phases).
    pub count: Option<u64>,
}

/// When the core commits a unit's work (the workload's `transaction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    /// One transaction per execution of the unit.
    EachUnit,
    /// One transaction spans this many executions of the unit by one attachment.
    EveryNUnits(u64),
    /// Every execution of every statement is a transaction of its own (autocommit).
    EachStatement,
}

pub struct StatementSpec {
    pub sql: String,
    pub repeat: u32,
    /// Drawn before each execution, into the slots numbered from `first_slot`.
    pub lets: Vec<Source>,
    pub first_slot: usize,
    pub params: Vec<ParamSpec>,
    /// How the lets and the parameters are bound, known once every slot is numbered.
    pub let_binds: Vec<Bind>,
    pub param_binds: Vec<Bind>,
}

pub struct ParamSpec {
    pub source: Source,
    /// The slot the value is kept in for a later `$n` of the statement.
    pub store: Option<usize>,
}

fn positive_or(value: Option<f64>, default: f64, what: &str) -> Result<f64, String> {
    let v = value.unwrap_or(default);
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{what} must be a non-negative number, not {v}"));
    }
    Ok(v)
}

impl Config {
    pub fn from_json(text: &str) -> Result<Config, String> {
        let raw: RawConfig =
            serde_json::from_str(text).map_err(|e| format!("invalid core config: {e}"))?;
        if raw.connections == 0 {
            return Err("connections must be at least 1".into());
        }
        let interval = positive_or(raw.interval_seconds, 10.0, "interval_seconds")?;
        if interval <= 0.0 {
            return Err("interval_seconds must be greater than 0".into());
        }
        let warmup = positive_or(raw.warmup_seconds, 0.0, "warmup_seconds")?;
        let replaying = raw.replay.is_some();
        let measure = match (transactions_of(&raw), raw.measure_seconds) {
            (None, None) if replaying && warmup == 0.0 => None,
            _ if replaying => {
                return Err(
                    "a replay has no warm-up, no measured period and no transactions: it lasts \
                     as long as its sessions"
                        .into(),
                )
            }
            (Some(0), _) => return Err("transactions must be at least 1".into()),
            (Some(_), Some(_)) => {
                return Err("give either measure_seconds or transactions, not both".into())
            }
            (Some(_), None) if warmup > 0.0 => {
                return Err(
                    "a fixed-work run (transactions) has no warm-up: set warmup_seconds to 0"
                        .into(),
                )
            }
            (Some(_), None) => None,
            (None, Some(m)) if m.is_finite() && m > 0.0 => Some(m),
            (None, Some(m)) => {
                return Err(format!("measure_seconds must be greater than 0, not {m}"))
            }
            (None, None) => return Err("either measure_seconds or transactions is required".into()),
        };
        let connect_rate = positive_or(raw.connect_rate, 0.0, "connect_rate")?;
        if let Some(rate) = raw.target_rate {
            if !rate.is_finite() || rate <= 0.0 {
                return Err(format!(
                    "target_rate must be greater than 0 (or null), not {rate}"
                ));
            }
        }
        let watchdog_seconds = positive_or(raw.watchdog_seconds, 10.0, "watchdog_seconds")?;
        if watchdog_seconds <= 0.0 {
            return Err("watchdog_seconds must be greater than 0".into());
        }
        let first_attachment = raw.attachment_index.unwrap_or(1);
        if first_attachment == 0 {
            return Err("attachment_index is 1-based: it must be at least 1".into());
        }
        if first_attachment.checked_add(raw.connections).is_none() {
            return Err("attachment_index + connections is too large".into());
        }
        if raw.units.is_empty() {
            return Err("at least one unit is required".into());
        }
        let counted = raw.units.iter().filter(|u| u.count.is_some()).count();
        let mut transactions = raw.transactions;
        if counted > 0 {
            if counted != raw.units.len() {
                return Err("either every unit has a count (fixed work in phases) or none".into());
            }
            if raw.units.iter().any(|u| u.count == Some(0)) {
                return Err("a unit's count must be at least 1".into());
            }
            let total: u64 = raw.units.iter().filter_map(|u| u.count).sum();
            match transactions {
                Some(n) if n != total => {
                    return Err(format!(
                        "transactions {n} is not the units' counts, {total} per attachment"
                    ))
                }
                _ => transactions = Some(total),
            }
            if raw.measure_seconds.is_some() {
                return Err("units with a count are fixed work: give no measure_seconds".into());
            }
        }
        let mut names = HashSet::new();
        let mut units = Vec::new();
        let mut cumulative_weights = Vec::new();
        let mut total_weight = 0.0;
        for raw_unit in raw.units {
            if !names.insert(raw_unit.name.clone()) {
                return Err(format!("unit name {:?} is used twice", raw_unit.name));
            }
            let (unit, weight) = compile_unit(raw_unit, replaying)?;
            total_weight += weight;
            cumulative_weights.push(total_weight);
            units.push(unit);
        }
        if total_weight <= 0.0 {
            return Err("at least one unit needs a weight greater than 0".into());
        }
        let replay = match raw.replay {
            Some(replay) => Some(compile_replay(replay, raw.connections, units.len())?),
            None => None,
        };
        let longest_lock_wait = match &replay {
            Some(r) => r
                .sessions
                .iter()
                .flatten()
                .filter_map(|t| t.lock_timeout)
                .max(),
            None => units.iter().filter_map(|u| u.lock_timeout).max(),
        };
        let closing_sql = match raw.closing_sql {
            Some(sql) if sql.trim().is_empty() => {
                return Err("closing_sql is empty: leave it out instead".into())
            }
            Some(sql) if sql.contains('\0') => return Err("closing_sql contains NUL".into()),
            other => other,
        };
        let watchdog = Duration::from_secs_f64(watchdog_seconds)
            + Duration::from_secs(longest_lock_wait.unwrap_or(0).into());
        Ok(Config {
            client_library: raw.client_library,
            database: raw.database,
            user: raw.user.unwrap_or_else(|| "SYSDBA".into()),
            password: raw.password,
            role: raw.role,
            charset: raw.charset.unwrap_or_else(|| "UTF8".into()),
            connections: raw.connections,
            connect_rate,
            transactions,
            timeline: Timeline {
                interval,
                warmup,
                measure,
            },
            seed: raw.seed.unwrap_or(0),
            target_rate: raw.target_rate,
            watchdog,
            first_attachment,
            hold: raw.hold,
            closing_sql,
            units,
            cumulative_weights,
            replay,
        })
    }

    /// The attachment's home value for reports: from the first `home(n)` generator, if any.
    pub fn home_of(&self, attachment: u32) -> Option<i64> {
        self.units
            .iter()
            .flat_map(|u| &u.statements)
            .flat_map(|s| &s.params)
            .find_map(|p| match p.source {
                Source::Gen(Gen::Home(n)) => Some((attachment as i64 - 1) % n + 1),
                _ => None,
            })
    }
}

fn compile_replay(raw: RawReplay, connections: u32, units: usize) -> Result<Replay, String> {
    let order = match raw.order.as_str() {
        "timed" => Order::Timed,
        "strict" => Order::Strict,
        other => return Err(format!("replay order {other:?} is not timed or strict")),
    };
    let speed = raw.speed.unwrap_or(1.0);
    if !speed.is_finite() || speed <= 0.0 {
        return Err(format!("replay speed must be greater than 0, not {speed}"));
    }
    let stall = positive_or(raw.stall_seconds, 10.0, "stall_seconds")?;
    if raw.sessions.len() != connections as usize {
        return Err(format!(
            "a replay has one attachment per session: {} session(s), {connections} connection(s)",
            raw.sessions.len()
        ));
    }
    if raw
        .templates
        .iter()
        .any(|t| t.trim().is_empty() || t.contains('\0'))
    {
        return Err("replay templates must be SQL text without NUL".into());
    }
    let mut sessions = Vec::with_capacity(raw.sessions.len());
    let mut actions = 0u64;
    for (s, session) in raw.sessions.into_iter().enumerate() {
        let mut compiled = Vec::with_capacity(session.len());
        for (t, tx) in session.into_iter().enumerate() {
            let where_ =
                |e: String| format!("replay session {}, transaction {}: {e}", s + 1, t + 1);
            if tx.unit >= units {
                return Err(where_(format!("unit {} does not exist", tx.unit)));
            }
            let isolation = Isolation::parse(&tx.isolation)
                .ok_or_else(|| where_(format!("isolation {:?}", tx.isolation)))?;
            let commit = match tx.end.as_str() {
                "commit" => true,
                "rollback" => false,
                other => return Err(where_(format!("end {other:?} is not commit or rollback"))),
            };
            if !(tx.at.is_finite() && tx.end_at.is_finite()) {
                return Err(where_("times must be finite".into()));
            }
            let mut statements = Vec::with_capacity(tx.statements.len());
            for e in tx.statements {
                if e.template >= raw.templates.len() {
                    return Err(where_(format!("template {} does not exist", e.template)));
                }
                actions = actions.max(e.seq);
                statements.push(ReplayExecution {
                    template: e.template,
                    at: e.at,
                    seq: e.seq,
                    params: e.params,
                    rows: e.rows,
                    changes: e.changes,
                    error: e.error,
                    ordered_at_start: e.ordered_at_start,
                });
            }
            actions = actions.max(tx.start_seq).max(tx.end_seq);
            compiled.push(ReplayTransaction {
                unit: tx.unit,
                trace_id: tx.trace_id,
                at: tx.at,
                end_at: tx.end_at,
                start_seq: tx.start_seq,
                end_seq: tx.end_seq,
                tpb: build_tpb(isolation, tx.read_only, tx.lock_timeout),
                lock_timeout: tx.lock_timeout,
                commit,
                statements,
            });
        }
        sessions.push(compiled);
    }
    let mut owners = vec![0u32; actions as usize + 1];
    for (s, session) in sessions.iter().enumerate() {
        for tx in session {
            let seqs = [tx.start_seq, tx.end_seq]
                .into_iter()
                .chain(tx.statements.iter().map(|e| e.seq));
            for seq in seqs.filter(|&q| q > 0) {
                owners[seq as usize] = s as u32 + 1;
            }
        }
    }
    Ok(Replay {
        order,
        speed,
        stall: Duration::from_secs_f64(stall),
        templates: raw.templates,
        sessions,
        actions,
        owners,
    })
}

/// The fixed work the config asks for: `transactions`, or the sum of the units' counts.
fn transactions_of(raw: &RawConfig) -> Option<u64> {
    raw.transactions.or_else(|| {
        let counts: Option<Vec<u64>> = raw.units.iter().map(|u| u.count).collect();
        counts.filter(|c| !c.is_empty()).map(|c| c.iter().sum())
    })
}

fn compile_unit(raw: RawUnit, replaying: bool) -> Result<(Unit, f64), String> {
    let name = raw.name;
    let context = |e: String| format!("unit {name}: {e}");
    let weight = positive_or(raw.weight, 1.0, "weight").map_err(context)?;
    let isolation_text = raw.isolation.unwrap_or_else(|| "read_committed".into());
    let isolation = Isolation::parse(&isolation_text).ok_or_else(|| {
        context(format!(
            "isolation {isolation_text:?} is not one of {}",
            Isolation::ALL.map(Isolation::name).join(", ")
        ))
    })?;
    let keying_seconds = positive_or(raw.keying_seconds, 0.0, "keying_seconds").map_err(context)?;
    let think_seconds = positive_or(raw.think_seconds, 0.0, "think_seconds").map_err(context)?;
    if raw.statements.is_empty() && !replaying {
        // A replay's units only count its transactions: their statements come from the sessions.
        return Err(context("no statements".into()));
    }
    let commit = match (
        raw.transaction.as_deref().unwrap_or("per_unit"),
        raw.units_per_transaction,
    ) {
        ("per_unit", None) => Commit::EachUnit,
        ("none", None) => Commit::EachStatement,
        ("per_n_units", Some(n)) if n >= 1 => Commit::EveryNUnits(n),
        ("per_n_units", _) => {
            return Err(context(
                "per_n_units needs units_per_transaction of at least 1".into(),
            ))
        }
        (mode @ ("per_unit" | "none"), Some(_)) => {
            return Err(context(format!(
                "units_per_transaction goes with per_n_units, not {mode}"
            )))
        }
        (other, _) => {
            return Err(context(format!(
                "transaction {other:?} is not one of per_unit, per_n_units, none"
            )))
        }
    };
    let connect_per_unit = match raw.connect.as_deref().unwrap_or("once") {
        "once" => false,
        "per_unit" => true,
        other => {
            return Err(context(format!(
                "connect {other:?} is not one of once, per_unit"
            )))
        }
    };
    if connect_per_unit && matches!(commit, Commit::EveryNUnits(_)) {
        return Err(context(
            "a transaction cannot span units that each attach anew".into(),
        ));
    }
    let mut slot_binds: Vec<Bind> = Vec::new();
    let mut counters = 0usize;
    let mut lets = Vec::new();
    for (i, value) in raw.lets.iter().enumerate() {
        let source = parse_source(value, &slot_binds, &mut counters)
            .map_err(|e| context(format!("let {}: {e}", i + 1)))?;
        slot_binds.push(source.bind(&slot_binds));
        lets.push(source);
    }
    let mut statements = Vec::new();
    for (i, statement) in raw.statements.into_iter().enumerate() {
        let where_ = |e: String| format!("unit {name}, statement {}: {e}", i + 1);
        if statement.sql.trim().is_empty() {
            return Err(where_("empty SQL".into()));
        }
        if statement.sql.contains('\0') {
            return Err(where_("SQL contains a NUL character".into()));
        }
        let repeat = statement.repeat.unwrap_or(1);
        if repeat == 0 {
            return Err(where_("repeat must be at least 1".into()));
        }
        let first_slot = slot_binds.len();
        let mut statement_lets = Vec::new();
        for (j, value) in statement.lets.iter().enumerate() {
            let source = parse_source(value, &slot_binds, &mut counters)
                .map_err(|e| where_(format!("let {}: {e}", j + 1)))?;
            slot_binds.push(source.bind(&slot_binds));
            statement_lets.push(source);
        }
        let mut params = Vec::new();
        for (j, value) in statement.params.iter().enumerate() {
            let source = parse_source(value, &slot_binds, &mut counters)
                .map_err(|e| where_(format!("parameter {}: {e}", j + 1)))?;
            let store = match value.get("store") {
                Some(Value::Bool(true)) => {
                    slot_binds.push(source.bind(&slot_binds));
                    Some(slot_binds.len() - 1)
                }
                None | Some(Value::Bool(false)) => None,
                Some(other) => {
                    return Err(where_(format!(
                        "parameter {}: store must be true or false, not {other}",
                        j + 1
                    )))
                }
            };
            params.push(ParamSpec { source, store });
        }
        let let_binds = slot_binds[first_slot..first_slot + statement_lets.len()].to_vec();
        let param_binds = params.iter().map(|p| p.source.bind(&slot_binds)).collect();
        statements.push(StatementSpec {
            sql: statement.sql,
            repeat,
            lets: statement_lets,
            first_slot,
            params,
            let_binds,
            param_binds,
        });
    }
    let tally: Vec<String> = raw.tally.iter().map(|t| t.trim().to_uppercase()).collect();
    if tally.iter().any(|t| t.is_empty()) {
        return Err(context("empty tally column name".into()));
    }
    let unit = Unit {
        tpb: build_tpb(isolation, raw.read_only, raw.lock_timeout),
        lock_timeout: raw.lock_timeout,
        keying_seconds,
        think_seconds,
        rollback_on: raw.rollback_on,
        tally,
        statements,
        lets,
        slot_binds,
        counters,
        commit,
        connect_per_unit,
        count: raw.count,
        name,
    };
    Ok((unit, weight))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(extra: &str) -> String {
        format!(
            r#"{{"client_library": "/x/libfbclient.so.2", "database": "/x/db.fdb", "connections": 2,
               "warmup_seconds": 1.0, "measure_seconds": 2.0, "seed": 5 {extra},
               "units": [{{"name": "a", "weight": 3, "statements": [{{"sql": "select 1 from rdb$database"}}]}},
                         {{"name": "b", "weight": 1, "isolation": "snapshot", "lock_timeout": 0,
                           "statements": [{{"sql": "execute procedure p(?)", "repeat": 2,
                                            "params": [{{"kind": "home", "args": [4]}}]}}]}}]}}"#
        )
    }

    #[test]
    fn valid_config_compiles() {
        let config = Config::from_json(&base("")).unwrap();
        assert_eq!(config.cumulative_weights, vec![3.0, 4.0]);
        assert_eq!(config.units[1].tpb, vec![3, 9, 2, 7]);
        assert_eq!(config.units[1].statements[0].repeat, 2);
        assert_eq!(config.timeline.interval, 10.0);
        assert_eq!(config.home_of(6), Some(2));
        assert_eq!(config.user, "SYSDBA");
        assert_eq!((config.first_attachment, config.hold), (1, false));
        let third = Config::from_json(&base(r#", "attachment_index": 3, "hold": true"#)).unwrap();
        assert_eq!((third.first_attachment, third.hold), (3, true));
        // Unit b waits 0 s for locks, unit a for ever: the bound is the default 10 s.
        assert_eq!(config.watchdog, Duration::from_secs(10));
        let waits = base(r#", "watchdog_seconds": 2.5"#)
            .replace(r#""lock_timeout": 0"#, r#""lock_timeout": 7"#);
        let config = Config::from_json(&waits).unwrap();
        assert_eq!(config.watchdog, Duration::from_millis(9500));
    }

    #[test]
    fn clear_errors() {
        let bad = |extra: &str, fragment: &str| {
            let error = Config::from_json(&base(extra)).err().expect("should fail");
            assert!(error.contains(fragment), "{error}");
        };
        bad(r#", "transactions": 10"#, "not both");
        bad(r#", "bogus": 1"#, "unknown field `bogus`");
        bad(r#", "interval_seconds": 0"#, "interval_seconds");
        bad(r#", "target_rate": -1"#, "target_rate");
        bad(r#", "watchdog_seconds": 0"#, "watchdog_seconds");
        bad(r#", "watchdog_seconds": -3"#, "watchdog_seconds");
        bad(r#", "attachment_index": 0"#, "attachment_index");
        bad(r#", "attachment_index": 4294967295"#, "too large");
        let error = Config::from_json(&base("").replace("snapshot", "dirty"))
            .err()
            .unwrap();
        assert!(
            error.contains("unit b") && error.contains(
                r#"isolation "dirty" is not one of snapshot, read_committed, read_consistency, serializable"#
            ),
            "{error}"
        );
        let error =
            Config::from_json(&base("").replace(r#""home", "args": [4]"#, r#""home", "args": []"#))
                .err()
                .unwrap();
        assert!(
            error.contains("unit b, statement 1") && error.contains("home"),
            "{error}"
        );
        let error = Config::from_json(&base("").replace(r#""name": "b""#, r#""name": "a""#))
            .err()
            .unwrap();
        assert!(error.contains("used twice"), "{error}");
    }

    fn replay_json(extra: &str, sessions: &str) -> String {
        format!(
            r#"{{"client_library": "/x/libfbclient.so.2", "database": "/x/db.fdb", "connections": 2 {extra},
               "units": [{{"name": "shape", "statements": []}}],
               "replay": {{"order": "strict", "speed": 2.0, "templates": ["select 1 from rdb$database"],
                          "sessions": {sessions}}}}}"#
        )
    }

    #[test]
    fn a_replay_compiles_its_sessions_and_orders_its_actions() {
        let tx = |start: u64, seq: u64, end: u64| {
            format!(
                r#"{{"unit": 0, "at": 0.1, "end_at": 0.2, "start_seq": {start}, "end_seq": {end},
                    "isolation": "read_committed_no_rec_version", "end": "rollback",
                    "statements": [{{"template": 0, "at": 0.15, "seq": {seq}, "params": [1, "a", null]}}]}}"#
            )
        };
        let sessions = format!("[[{}], [{}]]", tx(1, 3, 5), tx(2, 4, 6));
        let config = Config::from_json(&replay_json("", &sessions)).unwrap();
        let replay = config.replay.as_ref().unwrap();
        assert_eq!(replay.order, Order::Strict);
        assert_eq!(replay.actions, 6);
        assert_eq!(replay.owners, vec![0, 1, 2, 1, 2, 1, 2]);
        assert!(!replay.sessions[0][0].commit);
        // read committed, no record version: isc_tpb_no_rec_version (18)
        assert_eq!(replay.sessions[0][0].tpb, vec![3, 9, 15, 18, 6]);
        assert_eq!(config.timeline.measure, None);
        let bad = |extra: &str, sessions: &str, fragment: &str| {
            let error = Config::from_json(&replay_json(extra, sessions))
                .err()
                .expect("should fail");
            assert!(error.contains(fragment), "{error}");
        };
        bad(
            "",
            &format!("[[{}]]", tx(1, 2, 3)),
            "one attachment per session",
        );
        bad(
            r#", "measure_seconds": 5"#,
            &sessions,
            "a replay has no warm-up",
        );
        bad(
            "",
            &sessions.replace(r#""template": 0"#, r#""template": 3"#),
            "template 3",
        );
        bad(
            "",
            &sessions.replace(r#""end": "rollback""#, r#""end": "maybe""#),
            "not commit or rollback",
        );
    }
}
