//! One attachment and its prepared statements, on the ISC API.
//!
//! Every call reuses the attachment's status vector; only error paths allocate (the message
//! text of a gdscode seen for the first time).

use std::ffi::{c_char, CString};
use std::ptr;

use crate::config::{Config, ParamSpec, StatementSpec, Unit};
use crate::ffi::*;
use serde_json::Value;

use crate::params::{Bind, Choice, Draws, Gen, Source, MAX_TEXT};
use crate::rng::Rng;
use crate::sqlda::SqlDa;
use crate::tpb::{build_tpb, Isolation};

/// A failed call: its first gdscode and the engine's text.
#[derive(Debug)]
pub struct CallError {
    pub code: i64,
    pub text: String,
}

pub struct Attachment<'a> {
    pub api: &'a FbApi,
    pub db: Handle,
    pub status: StatusVector,
    scratch: StatusVector,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// SELECT, selectable procedures, DML RETURNING many rows: execute, fetch to the end, close.
    Cursor,
    /// EXECUTE PROCEDURE and singleton RETURNING: isc_dsql_execute2 with the output row.
    Procedure,
    Plain,
}

struct Param {
    source: Source,
    bind: Bind,
    data: *mut u8,
    indicator: *mut i16,
    /// The slot its value is kept in for a later `$n` of the statement.
    store: Option<usize>,
}

pub struct Statement {
    handle: Handle,
    kind: Kind,
    inputs: SqlDa,
    outputs: SqlDa,
    params: Vec<Param>,
    /// The input types as described (sqltype, subtype), for a statement whose values are bound
    /// per execution (a replay): each binding starts from them.
    described: Vec<(i16, i16)>,
    /// Drawn before each execution into slots first_slot.., bound as `let_binds`.
    lets: Vec<Source>,
    let_binds: Vec<Bind>,
    first_slot: usize,
    /// (value, indicator, tally slot) of output columns summed for the unit's tally.
    tally: Vec<(*const f64, *const i16, usize)>,
    has_inputs: bool,
    has_outputs: bool,
}

fn dpb(config: &Config) -> Result<Vec<u8>, String> {
    let mut dpb = vec![DPB_VERSION1];
    let mut item = |tag: u8, value: &str, what: &str| {
        if value.len() > 255 {
            return Err(format!("{what} is longer than 255 bytes"));
        }
        dpb.push(tag);
        dpb.push(value.len() as u8);
        dpb.extend_from_slice(value.as_bytes());
        Ok(())
    };
    item(DPB_USER_NAME, &config.user, "user")?;
    if let Some(password) = &config.password {
        item(DPB_PASSWORD, password, "password")?;
    }
    item(DPB_LC_CTYPE, &config.charset, "charset")?;
    if let Some(role) = &config.role {
        item(DPB_SQL_ROLE_NAME, role, "role")?;
    }
    Ok(dpb)
}

impl<'a> Attachment<'a> {
    pub fn attach(api: &'a FbApi, config: &Config) -> Result<Attachment<'a>, String> {
        let dpb = dpb(config)?;
        let name =
            CString::new(config.database.as_str()).map_err(|_| "database name contains NUL")?;
        let mut att = Attachment {
            api,
            db: 0,
            status: [0; STATUS_LEN],
            scratch: [0; STATUS_LEN],
        };
        // SAFETY: arguments are valid for the duration of the call; lengths match the buffers.
        let rc = unsafe {
            (api.attach_database)(
                att.status.as_mut_ptr(),
                0,
                name.as_ptr(),
                &mut att.db,
                dpb.len() as i16,
                dpb.as_ptr() as *const c_char,
            )
        };
        if rc != 0 {
            return Err(format!(
                "cannot attach to {}: {}",
                config.database,
                att.error_text()
            ));
        }
        Ok(att)
    }

    pub fn error_text(&self) -> String {
        self.api.interpret(&self.status)
    }

    #[inline]
    pub fn start(&mut self, tpb: &[u8]) -> Result<Handle, ()> {
        let mut tr: Handle = 0;
        let teb = Teb {
            db: &self.db,
            tpb_len: tpb.len() as i32,
            tpb: tpb.as_ptr(),
        };
        // SAFETY: the TEB points at our handle and TPB, both alive across the call.
        let rc = unsafe {
            (self.api.start_multiple)(
                self.status.as_mut_ptr(),
                &mut tr,
                1,
                &teb as *const Teb as *const _,
            )
        };
        if rc == 0 {
            Ok(tr)
        } else {
            Err(())
        }
    }

    #[inline]
    pub fn commit(&mut self, tr: &mut Handle) -> Result<(), ()> {
        // SAFETY: tr is a live transaction handle of this attachment.
        let rc = unsafe { (self.api.commit_transaction)(self.status.as_mut_ptr(), tr) };
        if rc == 0 {
            Ok(())
        } else {
            Err(())
        }
    }

    /// Best effort, with its own status vector: the caller still classifies the original error.
    pub fn rollback(&mut self, tr: &mut Handle) {
        if *tr != 0 {
            // SAFETY: as for commit.
            unsafe { (self.api.rollback_transaction)(self.scratch.as_mut_ptr(), tr) };
            *tr = 0;
        }
    }

    /// Runs one SQL text once, in a read-committed transaction of its own, committed; nothing
    /// is bound and any rows are read and dropped. On an error the transaction is rolled back.
    pub fn run_once(&mut self, sql: &str) -> Result<(), CallError> {
        let mut tr = self
            .start(&build_tpb(Isolation::ReadCommitted, false, None))
            .map_err(|_| self.call_error())?;
        let ran = match self.prepare_sql(&mut tr, sql) {
            Ok(mut statement) => {
                let executed = self.execute(&mut tr, &mut statement, &mut []);
                let error = executed.err().map(|()| self.call_error());
                self.drop_statement(&mut statement);
                error.map_or(Ok(()), Err)
            }
            Err(text) => Err(CallError {
                code: first_gdscode(&self.status),
                text,
            }),
        };
        let committed = ran.and_then(|()| self.commit(&mut tr).map_err(|_| self.call_error()));
        if committed.is_err() {
            self.rollback(&mut tr);
        }
        committed
    }

    fn call_error(&self) -> CallError {
        CallError {
            code: first_gdscode(&self.status),
            text: self.error_text(),
        }
    }

    pub fn detach(&mut self) {
        if self.db != 0 {
            // SAFETY: db is our attachment handle; the library zeroes it on success.
            unsafe { (self.api.detach_database)(self.scratch.as_mut_ptr(), &mut self.db) };
            self.db = 0;
        }
    }

    /// Prepares every statement of every unit in one short transaction. On any error, what was
    /// already prepared is freed and the transaction rolled back.
    pub fn prepare_units(&mut self, units: &[Unit]) -> Result<Vec<Vec<Statement>>, String> {
        let mut tr = self
            .start(&build_tpb(Isolation::ReadCommitted, true, None))
            .map_err(|_| self.error_text())?;
        let mut prepared: Vec<Vec<Statement>> = Vec::with_capacity(units.len());
        let outcome = self.prepare_each(&mut tr, units, &mut prepared);
        let outcome = outcome.and_then(|()| self.commit(&mut tr).map_err(|_| self.error_text()));
        match outcome {
            Ok(()) => Ok(prepared),
            Err(e) => {
                self.rollback(&mut tr);
                for statement in prepared.iter_mut().flatten() {
                    self.drop_statement(statement);
                }
                Err(e)
            }
        }
    }

    fn prepare_each(
        &mut self,
        tr: &mut Handle,
        units: &[Unit],
        prepared: &mut Vec<Vec<Statement>>,
    ) -> Result<(), String> {
        for unit in units {
            prepared.push(Vec::with_capacity(unit.statements.len()));
            let mut found = vec![false; unit.tally.len()];
            for (i, spec) in unit.statements.iter().enumerate() {
                let statement = self
                    .prepare(tr, spec, &unit.tally, &mut found)
                    .map_err(|e| {
                        format!(
                            "unit {}, statement {} ({}): {e}",
                            unit.name,
                            i + 1,
                            first_line(&spec.sql)
                        )
                    })?;
                prepared.last_mut().expect("pushed above").push(statement);
            }
            if let Some(missing) = unit.tally.iter().zip(&found).find(|(_, f)| !**f) {
                return Err(format!(
                    "unit {}: tally column {} is not an output column of any of its statements",
                    unit.name, missing.0
                ));
            }
        }
        Ok(())
    }

    /// Allocates and prepares one statement; the handle is freed on every error path.
    fn prepare(
        &mut self,
        tr: &mut Handle,
        spec: &StatementSpec,
        tally_names: &[String],
        found: &mut [bool],
    ) -> Result<Statement, String> {
        let sql = CString::new(spec.sql.as_str()).map_err(|_| "SQL contains NUL")?;
        let mut handle: Handle = 0;
        // SAFETY: our attachment handle and a fresh statement handle, alive across the call.
        let rc = unsafe {
            (self.api.dsql_allocate_statement)(self.status.as_mut_ptr(), &mut self.db, &mut handle)
        };
        if rc != 0 {
            return Err(self.error_text());
        }
        let described = self.describe(tr, &mut handle, &sql, Some(spec), tally_names, found);
        if described.is_err() {
            // The error text is already taken: the free reports into the scratch vector.
            // SAFETY: the handle was allocated on this attachment just above.
            unsafe {
                (self.api.dsql_free_statement)(self.scratch.as_mut_ptr(), &mut handle, DSQL_DROP)
            };
        }
        described
    }

    /// Prepares one SQL text whose parameter values are bound per execution
    /// (`Statement::bind_values`): a replay's statements. The handle is freed on every error path.
    pub fn prepare_sql(&mut self, tr: &mut Handle, sql: &str) -> Result<Statement, String> {
        let text = CString::new(sql).map_err(|_| "SQL contains NUL")?;
        let mut handle: Handle = 0;
        // SAFETY: as in prepare.
        let rc = unsafe {
            (self.api.dsql_allocate_statement)(self.status.as_mut_ptr(), &mut self.db, &mut handle)
        };
        if rc != 0 {
            return Err(self.error_text());
        }
        let described = self.describe(tr, &mut handle, &text, None, &[], &mut []);
        if described.is_err() {
            // SAFETY: the handle was allocated on this attachment just above.
            unsafe {
                (self.api.dsql_free_statement)(self.scratch.as_mut_ptr(), &mut handle, DSQL_DROP)
            };
        }
        described
    }

    /// This attachment's rows inserted, updated and deleted since it attached (every table,
    /// what triggers and procedures did included); None when the engine's answer cannot be read.
    pub fn changes(&mut self) -> Option<[u64; 3]> {
        let items = [INFO_INSERT_COUNT, INFO_UPDATE_COUNT, INFO_DELETE_COUNT];
        let mut buffer = vec![0u8; 65_535];
        // SAFETY: item and result buffers with their true lengths.
        let rc = unsafe {
            (self.api.database_info)(
                self.scratch.as_mut_ptr(),
                &mut self.db,
                items.len() as i16,
                items.as_ptr() as *const c_char,
                buffer.len() as i16,
                buffer.as_mut_ptr() as *mut c_char,
            )
        };
        if rc != 0 {
            return None;
        }
        parse_counts(&buffer)
    }

    /// Prepares an allocated statement and builds its descriptors and parameter bindings
    /// (``spec``: the generators that draw them; None: bound per execution).
    fn describe(
        &mut self,
        tr: &mut Handle,
        handle: &mut Handle,
        sql: &CString,
        spec: Option<&StatementSpec>,
        tally_names: &[String],
        found: &mut [bool],
    ) -> Result<Statement, String> {
        let api = self.api;
        let st = self.status.as_mut_ptr();
        // SAFETY: the handles and buffers passed are ours and outlive the call.
        let rc = unsafe {
            (api.dsql_prepare)(
                st,
                tr,
                handle,
                0,
                sql.as_ptr(),
                SQL_DIALECT_V6,
                ptr::null_mut(),
            )
        };
        if rc != 0 {
            return Err(self.error_text());
        }
        let statement_type = self.statement_type(handle)?;
        let kind = match statement_type {
            STMT_SELECT | STMT_SELECT_FOR_UPD => Kind::Cursor,
            STMT_EXEC_PROCEDURE => Kind::Procedure,
            STMT_START_TRANS | STMT_COMMIT | STMT_ROLLBACK | STMT_SAVEPOINT => {
                return Err(
                    "transaction control is not allowed: each unit is one transaction".into(),
                )
            }
            _ => Kind::Plain,
        };

        let generators: &[ParamSpec] = spec.map(|s| s.params.as_slice()).unwrap_or(&[]);
        let mut inputs = SqlDa::new(generators.len().max(1));
        let mut outputs = SqlDa::new(16);
        // SAFETY: descriptors hold as many XSQLVARs as their sqln says.
        unsafe {
            if (api.dsql_describe_bind)(st, handle, SQLDA_VERSION1, inputs.as_mut_ptr()) != 0 {
                return Err(self.error_text());
            }
            if inputs.count() > inputs.capacity() {
                inputs = SqlDa::new(inputs.count());
                if (api.dsql_describe_bind)(st, handle, SQLDA_VERSION1, inputs.as_mut_ptr()) != 0 {
                    return Err(self.error_text());
                }
            }
            if (api.dsql_describe)(st, handle, SQLDA_VERSION1, outputs.as_mut_ptr()) != 0 {
                return Err(self.error_text());
            }
            if outputs.count() > outputs.capacity() {
                outputs = SqlDa::new(outputs.count());
                if (api.dsql_describe)(st, handle, SQLDA_VERSION1, outputs.as_mut_ptr()) != 0 {
                    return Err(self.error_text());
                }
            }
        }
        if spec.is_some() && inputs.count() != generators.len() {
            return Err(format!(
                "the statement has {} parameter(s) but {} generator(s) are given",
                inputs.count(),
                generators.len()
            ));
        }
        let described = (0..inputs.count())
            .map(|i| {
                let var = inputs.var(i);
                (var.sqltype, var.sqlsubtype)
            })
            .collect();
        let binds: &[Bind] = spec.map(|s| s.param_binds.as_slice()).unwrap_or(&[]);
        if spec.is_some() {
            inputs.prepare_inputs(binds);
        }
        let mut tally_columns = Vec::new();
        for column in 0..outputs.count() {
            let alias = outputs.alias(column);
            if let Some(slot) = tally_names.iter().position(|t| *t == alias) {
                tally_columns.push((column, slot));
                found[slot] = true;
            }
        }
        let as_double: Vec<usize> = tally_columns.iter().map(|(c, _)| *c).collect();
        outputs.prepare_outputs(&as_double);

        let mut params = Vec::with_capacity(generators.len());
        for (i, spec_param) in generators.iter().enumerate() {
            let data = inputs.data_ptr(i);
            if let Source::Gen(Gen::ConstFloat(v)) = spec_param.source {
                // SAFETY: the slot is 8 aligned bytes for a DOUBLE.
                unsafe { (data as *mut f64).write(v) };
            }
            params.push(Param {
                source: spec_param.source.clone(),
                bind: binds[i],
                data,
                indicator: inputs.var(i).sqlind,
                store: spec_param.store,
            });
        }
        let tally = tally_columns
            .iter()
            .map(|&(column, slot)| {
                let var = outputs.var(column);
                (var.sqldata as *const f64, var.sqlind as *const i16, slot)
            })
            .collect();
        Ok(Statement {
            handle: *handle,
            kind,
            has_inputs: inputs.count() > 0,
            has_outputs: outputs.count() > 0,
            inputs,
            outputs,
            params,
            described,
            lets: spec.map(|s| s.lets.clone()).unwrap_or_default(),
            let_binds: spec.map(|s| s.let_binds.clone()).unwrap_or_default(),
            first_slot: spec.map_or(0, |s| s.first_slot),
            tally,
        })
    }

    fn statement_type(&mut self, handle: &mut Handle) -> Result<i32, String> {
        let items = [INFO_SQL_STMT_TYPE as c_char];
        let mut buffer = [0 as c_char; 16];
        // SAFETY: item and result buffers with their true lengths.
        let rc = unsafe {
            (self.api.dsql_sql_info)(
                self.status.as_mut_ptr(),
                handle,
                items.len() as i16,
                items.as_ptr(),
                buffer.len() as i16,
                buffer.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(self.error_text());
        }
        let bytes: Vec<u8> = buffer.iter().map(|&b| b as u8).collect();
        if bytes[0] != INFO_SQL_STMT_TYPE {
            return Err("the engine did not report the statement type".into());
        }
        let len = u16::from_le_bytes([bytes[1], bytes[2]]) as usize;
        let mut value: i32 = 0;
        for (shift, byte) in bytes[3..3 + len.min(4)].iter().enumerate() {
            value |= (*byte as i32) << (8 * shift);
        }
        Ok(value)
    }

    /// Executes one prepared statement once: parameters were bound by `Statement::bind`.
    /// Tally columns of every returned row are added to `tally`. Returns the rows it returned
    /// (every row of a cursor, fetched to the end; the output row of EXECUTE PROCEDURE).
    #[inline]
    pub fn execute(
        &mut self,
        tr: &mut Handle,
        s: &mut Statement,
        tally: &mut [f64],
    ) -> Result<u64, ()> {
        let mut rows = 0u64;
        let api = self.api;
        let st = self.status.as_mut_ptr();
        let input: *const Xsqlda = if s.has_inputs {
            s.inputs.as_mut_ptr()
        } else {
            ptr::null()
        };
        // SAFETY: handles are live; descriptors and their buffers belong to `s` and stay put.
        unsafe {
            match s.kind {
                Kind::Cursor => {
                    if (api.dsql_execute)(st, tr, &mut s.handle, SQL_DIALECT_V6, input) != 0 {
                        return Err(());
                    }
                    let output = s.outputs.as_mut_ptr();
                    let fetch = api.dsql_fetch;
                    let rc = if s.tally.is_empty() {
                        // Per row nothing but the call and its count (range selects: hundreds
                        // of rows per unit); the loop ends at the first non-zero status.
                        let handle: *mut Handle = &mut s.handle;
                        let mut calls = 0u64;
                        let rc = loop {
                            let rc = fetch(st, handle, SQLDA_VERSION1, output);
                            calls += 1;
                            if rc != 0 {
                                break rc;
                            }
                        };
                        rows = calls - 1;
                        rc
                    } else {
                        loop {
                            let rc = fetch(st, &mut s.handle, SQLDA_VERSION1, output);
                            if rc != 0 {
                                break rc;
                            }
                            rows += 1;
                            s.add_tally(tally);
                        }
                    };
                    if rc != FETCH_END {
                        (api.dsql_free_statement)(
                            self.scratch.as_mut_ptr(),
                            &mut s.handle,
                            DSQL_CLOSE,
                        );
                        return Err(());
                    }
                    if (api.dsql_free_statement)(st, &mut s.handle, DSQL_CLOSE) != 0 {
                        return Err(());
                    }
                }
                Kind::Procedure => {
                    let output: *const Xsqlda = if s.has_outputs {
                        s.outputs.as_mut_ptr()
                    } else {
                        ptr::null()
                    };
                    if (api.dsql_execute2)(st, tr, &mut s.handle, SQL_DIALECT_V6, input, output)
                        != 0
                    {
                        return Err(());
                    }
                    rows += s.has_outputs as u64;
                    s.add_tally(tally);
                }
                Kind::Plain => {
                    if (api.dsql_execute)(st, tr, &mut s.handle, SQL_DIALECT_V6, input) != 0 {
                        return Err(());
                    }
                }
            }
        }
        Ok(rows)
    }

    pub fn drop_statement(&mut self, s: &mut Statement) {
        if s.handle != 0 {
            // SAFETY: the handle was allocated on this attachment.
            unsafe {
                (self.api.dsql_free_statement)(self.scratch.as_mut_ptr(), &mut s.handle, DSQL_DROP)
            };
            s.handle = 0;
        }
    }
}

impl Statement {
    /// Binds one execution's values (a replay): integers as BIGINT, floats as DOUBLE PRECISION,
    /// strings as VARCHAR in the parameter's own character set, null as NULL; Firebird converts
    /// them to the declared types as it would literals.
    pub fn bind_values(&mut self, values: &[Value]) -> Result<(), String> {
        if values.len() != self.described.len() {
            return Err(format!(
                "the statement has {} parameter(s), the trace {}",
                self.described.len(),
                values.len()
            ));
        }
        let mut binds = Vec::with_capacity(values.len());
        for (i, value) in values.iter().enumerate() {
            let (sqltype, subtype) = self.described[i];
            let var = self.inputs.var(i);
            var.sqltype = sqltype;
            var.sqlsubtype = subtype;
            binds.push(match value {
                Value::Null => Bind::Null,
                Value::Number(n) if n.as_i64().is_some() => Bind::Int,
                Value::Number(_) => Bind::Float,
                Value::String(text) if text.len() <= MAX_TEXT => Bind::Text {
                    max_len: text.len(),
                },
                Value::String(_) => {
                    return Err(format!("parameter {}: longer than {MAX_TEXT} bytes", i + 1))
                }
                other => return Err(format!("parameter {}: {other} is not a value", i + 1)),
            });
        }
        self.inputs.prepare_inputs(&binds);
        for (i, value) in values.iter().enumerate() {
            let data = self.inputs.data_ptr(i);
            // SAFETY: prepare_inputs sized each buffer for the bind type just chosen.
            unsafe {
                match value {
                    Value::Number(n) => match n.as_i64() {
                        Some(v) => (data as *mut i64).write(v),
                        None => (data as *mut f64).write(n.as_f64().unwrap_or(0.0)),
                    },
                    Value::String(text) => {
                        std::ptr::copy_nonoverlapping(text.as_ptr(), data.add(2), text.len());
                        (data as *mut [u8; 2]).write((text.len() as u16).to_ne_bytes());
                    }
                    _ => {}
                }
            }
        }
        self.has_inputs = !values.is_empty();
        Ok(())
    }

    /// A statement that returns rows through a cursor (SELECT, a selectable procedure).
    pub fn is_cursor(&self) -> bool {
        self.kind == Kind::Cursor
    }

    /// Draws this execution's lets into the unit's slots, then its parameters into the input
    /// buffers (keeping those a later `$n` refers to).
    #[inline]
    pub fn bind(&mut self, rng: &mut Rng, attachment: u32, draws: &mut Draws) {
        for (j, source) in self.lets.iter().enumerate() {
            draws.fill(
                self.first_slot + j,
                source,
                self.let_binds[j],
                rng,
                attachment,
            );
        }
        for p in &mut self.params {
            if let Source::Gen(Gen::Choice(values)) = &p.source {
                let picked = &values[rng.below(values.len() as u64) as usize];
                // SAFETY: as below; the indicator is this parameter's slot.
                unsafe { write_choice(p.data, p.indicator, p.bind, picked) };
                if let Some(slot) = p.store {
                    draws.keep_choice(slot, picked);
                }
                continue;
            }
            if let Source::Slot(n) = p.source {
                // A kept value may be a null (a let or `$n` of choice(…, null), const(null)).
                // SAFETY: the indicator is this parameter's slot.
                unsafe { *p.indicator = if draws.nulls[n] { -1 } else { 0 } };
                if let Some(slot) = p.store {
                    draws.nulls[slot] = draws.nulls[n];
                }
            } else if let Some(slot) = p.store {
                draws.nulls[slot] = p.bind == Bind::Null;
            }
            // SAFETY: `data` points at this parameter's buffer, sized for its bind type.
            unsafe {
                match p.bind {
                    Bind::Int => {
                        let value = p.source.int(rng, attachment, draws);
                        (p.data as *mut i64).write(value);
                        if let Some(slot) = p.store {
                            draws.ints[slot] = value;
                        }
                    }
                    Bind::Text { max_len } => {
                        let text = std::slice::from_raw_parts_mut(p.data.add(2), max_len);
                        let len = p.source.text(rng, text, draws);
                        (p.data as *mut [u8; 2]).write((len as u16).to_ne_bytes());
                        if let Some(slot) = p.store {
                            draws.texts[slot][..len].copy_from_slice(&text[..len]);
                            draws.text_len[slot] = len;
                        }
                    }
                    Bind::Float => {
                        if let Source::Slot(_) = p.source {
                            (p.data as *mut f64).write(p.source.float(draws));
                        }
                        if let Some(slot) = p.store {
                            draws.ints[slot] = (p.data as *const f64).read().to_bits() as i64;
                        }
                    }
                    Bind::Null => {}
                }
            }
        }
    }

    #[inline]
    fn add_tally(&self, tally: &mut [f64]) {
        for &(value, indicator, slot) in &self.tally {
            // SAFETY: pointers into this statement's output buffers.
            unsafe {
                if *indicator >= 0 {
                    tally[slot] += *value;
                }
            }
        }
    }
}

/// Writes one value of a `choice` into a parameter's buffer and indicator. The bind type is the
/// choice's (Gen::bind): its values are all of that kind or null.
///
/// # Safety
/// `data` and `indicator` must point at the parameter's buffers, sized for `bind`.
#[inline]
unsafe fn write_choice(data: *mut u8, indicator: *mut i16, bind: Bind, value: &Choice) {
    *indicator = if matches!(value, Choice::Null) { -1 } else { 0 };
    match (bind, value) {
        (Bind::Int, Choice::Int(v)) => (data as *mut i64).write(*v),
        (Bind::Float, Choice::Float(v)) => (data as *mut f64).write(*v),
        (Bind::Text { max_len }, Choice::Text(t)) => {
            let len = t.len().min(max_len);
            std::ptr::copy_nonoverlapping(t.as_ptr(), data.add(2), len);
            (data as *mut [u8; 2]).write((len as u16).to_ne_bytes());
        }
        _ => {}
    }
}

/// Sums the per-table counts of isc_database_info's insert, update and delete items: each item
/// is followed by a 2-byte length and (2-byte table id, 4-byte count) pairs.
fn parse_counts(buffer: &[u8]) -> Option<[u64; 3]> {
    let mut totals = [0u64; 3];
    let mut i = 0;
    while i < buffer.len() {
        let item = buffer[i];
        if item == INFO_END {
            return Some(totals);
        }
        if item == INFO_TRUNCATED || i + 3 > buffer.len() {
            return None;
        }
        let length = u16::from_le_bytes([buffer[i + 1], buffer[i + 2]]) as usize;
        let body = buffer.get(i + 3..i + 3 + length)?;
        let slot = match item {
            INFO_INSERT_COUNT => 0,
            INFO_UPDATE_COUNT => 1,
            INFO_DELETE_COUNT => 2,
            _ => return None,
        };
        for pair in body.chunks_exact(6) {
            totals[slot] += u32::from_le_bytes([pair[2], pair[3], pair[4], pair[5]]) as u64;
        }
        i += 3 + length;
    }
    None
}

fn first_line(sql: &str) -> String {
    let line = sql.trim().lines().next().unwrap_or("");
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_counts_are_summed_over_tables() {
        // insert: table 128 → 3, table 129 → 2; update: table 128 → 7; delete: none.
        let mut buffer = vec![
            INFO_INSERT_COUNT,
            12,
            0,
            128,
            0,
            3,
            0,
            0,
            0,
            129,
            0,
            2,
            0,
            0,
            0,
        ];
        buffer.extend([INFO_UPDATE_COUNT, 6, 0, 128, 0, 7, 0, 0, 0]);
        buffer.extend([INFO_DELETE_COUNT, 0, 0, INFO_END]);
        assert_eq!(parse_counts(&buffer), Some([5, 7, 0]));
        assert_eq!(parse_counts(&[INFO_TRUNCATED]), None);
    }
}
