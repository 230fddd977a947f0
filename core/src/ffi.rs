//! The slice of Firebird's legacy ISC API the core uses, loaded at run time.
//!
//! No ibase.h here: the declarations follow the published C API for 64-bit Linux
//! (`ISC_STATUS` is pointer-sized, handles are `unsigned int`, `ISC_LONG` is `int`). The library
//! is opened by absolute path so one build can drive the 3.0, 4.0 and 5.0 client libraries.

use std::ffi::{c_char, c_int, c_short, c_uint, c_ushort, c_void};
use std::path::Path;

pub type IscStatus = isize;
pub type Handle = c_uint;

/// Room for the status vector as the client library fills it (ISC_STATUS_ARRAY).
pub const STATUS_LEN: usize = 20;
pub type StatusVector = [IscStatus; STATUS_LEN];

pub const SQL_DIALECT_V6: c_ushort = 3;
pub const SQLDA_VERSION1: c_ushort = 1;
pub const DSQL_CLOSE: c_ushort = 1;
pub const DSQL_DROP: c_ushort = 2;
pub const FB_CANCEL_RAISE: c_ushort = 3;
/// What isc_dsql_fetch returns once the cursor is exhausted.
pub const FETCH_END: IscStatus = 100;

// Status vector argument tags.
pub const ARG_END: IscStatus = 0;
pub const ARG_GDS: IscStatus = 1;
pub const ARG_CSTRING: IscStatus = 3;
pub const ARG_NUMBER: IscStatus = 4;
pub const ARG_WARNING: IscStatus = 18;

/// isc_except: a PSQL `exception`, followed in the status vector by the exception's number.
pub const ISC_EXCEPT: i64 = 335544517;

// XSQLVAR.sqltype values (the low bit means "nullable").
pub const SQL_VARYING: i16 = 448;
pub const SQL_DOUBLE: i16 = 480;
pub const SQL_INT64: i16 = 580;

// Statement info.
pub const INFO_SQL_STMT_TYPE: u8 = 21;
/// isc_database_info items: this attachment's record operations per table since it attached.
pub const INFO_INSERT_COUNT: u8 = 25;
pub const INFO_UPDATE_COUNT: u8 = 26;
pub const INFO_DELETE_COUNT: u8 = 27;
pub const INFO_END: u8 = 1;
pub const INFO_TRUNCATED: u8 = 2;
pub const STMT_SELECT: i32 = 1;
pub const STMT_EXEC_PROCEDURE: i32 = 8;
pub const STMT_START_TRANS: i32 = 9;
pub const STMT_COMMIT: i32 = 10;
pub const STMT_ROLLBACK: i32 = 11;
pub const STMT_SELECT_FOR_UPD: i32 = 12;
pub const STMT_SAVEPOINT: i32 = 14;

// Database parameter block.
pub const DPB_VERSION1: u8 = 1;
pub const DPB_USER_NAME: u8 = 28;
pub const DPB_PASSWORD: u8 = 29;
pub const DPB_LC_CTYPE: u8 = 48;
pub const DPB_SQL_ROLE_NAME: u8 = 60;

#[repr(C)]
pub struct XsqlVar {
    pub sqltype: i16,
    pub sqlscale: i16,
    pub sqlsubtype: i16,
    pub sqllen: i16,
    pub sqldata: *mut c_char,
    pub sqlind: *mut i16,
    pub sqlname_length: i16,
    pub sqlname: [c_char; 32],
    pub relname_length: i16,
    pub relname: [c_char; 32],
    pub ownname_length: i16,
    pub ownname: [c_char; 32],
    pub aliasname_length: i16,
    pub aliasname: [c_char; 32],
}

/// XSQLDA with its first XSQLVAR; further ones follow in the same allocation.
#[repr(C)]
pub struct Xsqlda {
    pub version: i16,
    pub sqldaid: [c_char; 8],
    pub sqldabc: i32,
    pub sqln: i16,
    pub sqld: i16,
    pub sqlvar: [XsqlVar; 1],
}

/// XSQLDA_LENGTH(n) of ibase.h.
pub const fn xsqlda_length(n: usize) -> usize {
    let n = if n == 0 { 1 } else { n };
    std::mem::size_of::<Xsqlda>() + (n - 1) * std::mem::size_of::<XsqlVar>()
}

/// ISC_TEB: one database of isc_start_multiple.
#[repr(C)]
pub struct Teb {
    pub db: *const Handle,
    pub tpb_len: c_int,
    pub tpb: *const u8,
}

type AttachFn = unsafe extern "C" fn(
    *mut IscStatus,
    c_short,
    *const c_char,
    *mut Handle,
    c_short,
    *const c_char,
) -> IscStatus;
type HandleFn = unsafe extern "C" fn(*mut IscStatus, *mut Handle) -> IscStatus;
type StartMultipleFn =
    unsafe extern "C" fn(*mut IscStatus, *mut Handle, c_short, *const c_void) -> IscStatus;
type AllocateFn = unsafe extern "C" fn(*mut IscStatus, *mut Handle, *mut Handle) -> IscStatus;
type PrepareFn = unsafe extern "C" fn(
    *mut IscStatus,
    *mut Handle,
    *mut Handle,
    c_ushort,
    *const c_char,
    c_ushort,
    *mut Xsqlda,
) -> IscStatus;
type DescribeFn =
    unsafe extern "C" fn(*mut IscStatus, *mut Handle, c_ushort, *mut Xsqlda) -> IscStatus;
type ExecuteFn = unsafe extern "C" fn(
    *mut IscStatus,
    *mut Handle,
    *mut Handle,
    c_ushort,
    *const Xsqlda,
) -> IscStatus;
type Execute2Fn = unsafe extern "C" fn(
    *mut IscStatus,
    *mut Handle,
    *mut Handle,
    c_ushort,
    *const Xsqlda,
    *const Xsqlda,
) -> IscStatus;
type FetchFn =
    unsafe extern "C" fn(*mut IscStatus, *mut Handle, c_ushort, *const Xsqlda) -> IscStatus;
type FreeFn = unsafe extern "C" fn(*mut IscStatus, *mut Handle, c_ushort) -> IscStatus;
type SqlInfoFn = unsafe extern "C" fn(
    *mut IscStatus,
    *mut Handle,
    c_short,
    *const c_char,
    c_short,
    *mut c_char,
) -> IscStatus;
type InterpretFn = unsafe extern "C" fn(*mut c_char, c_uint, *mut *const IscStatus) -> c_int;
type CancelFn = unsafe extern "C" fn(*mut IscStatus, *mut Handle, c_ushort) -> IscStatus;

/// Entry points of one loaded client library. Plain function pointers, so a call on the hot
/// path costs what a call from C costs.
pub struct FbApi {
    pub attach_database: AttachFn,
    pub detach_database: HandleFn,
    pub start_multiple: StartMultipleFn,
    pub commit_transaction: HandleFn,
    pub rollback_transaction: HandleFn,
    pub dsql_allocate_statement: AllocateFn,
    pub dsql_prepare: PrepareFn,
    pub dsql_describe: DescribeFn,
    pub dsql_describe_bind: DescribeFn,
    pub dsql_execute: ExecuteFn,
    pub dsql_execute2: Execute2Fn,
    pub dsql_fetch: FetchFn,
    pub dsql_free_statement: FreeFn,
    pub dsql_sql_info: SqlInfoFn,
    pub database_info: SqlInfoFn,
    pub fb_interpret: InterpretFn,
    pub fb_cancel_operation: CancelFn,
    // Unloading libfbclient while the embedded engine still has threads is not safe, and the
    // process ends soon after a run anyway: the library stays loaded for the process lifetime.
    _library: &'static libloading::Library,
}

impl FbApi {
    pub fn load(path: &Path) -> Result<FbApi, String> {
        // SAFETY: loading a shared library runs its initialisers; libfbclient's are benign.
        let library = unsafe { libloading::Library::new(path) }.map_err(|e| {
            format!(
                "cannot load the Firebird client library {}: {e}",
                path.display()
            )
        })?;
        let library: &'static libloading::Library = Box::leak(Box::new(library));
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the type given at each use is the C declaration of that entry point.
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{} lacks {}: {e}", path.display(), $name))?
            };
        }
        Ok(FbApi {
            attach_database: sym!("isc_attach_database"),
            detach_database: sym!("isc_detach_database"),
            start_multiple: sym!("isc_start_multiple"),
            commit_transaction: sym!("isc_commit_transaction"),
            rollback_transaction: sym!("isc_rollback_transaction"),
            dsql_allocate_statement: sym!("isc_dsql_allocate_statement"),
            dsql_prepare: sym!("isc_dsql_prepare"),
            dsql_describe: sym!("isc_dsql_describe"),
            dsql_describe_bind: sym!("isc_dsql_describe_bind"),
            dsql_execute: sym!("isc_dsql_execute"),
            dsql_execute2: sym!("isc_dsql_execute2"),
            dsql_fetch: sym!("isc_dsql_fetch"),
            dsql_free_statement: sym!("isc_dsql_free_statement"),
            dsql_sql_info: sym!("isc_dsql_sql_info"),
            database_info: sym!("isc_database_info"),
            fb_interpret: sym!("fb_interpret"),
            fb_cancel_operation: sym!("fb_cancel_operation"),
            _library: library,
        })
    }

    /// The full text of an error status vector, one line per message, as isql shows it.
    pub fn interpret(&self, status: &StatusVector) -> String {
        let mut lines: Vec<String> = Vec::new();
        let mut cursor: *const IscStatus = status.as_ptr();
        let mut buffer = [0 as c_char; 1024];
        loop {
            // SAFETY: fb_interpret reads the vector up to its end marker and advances `cursor`;
            // the buffer length bounds what it writes.
            let n = unsafe {
                (self.fb_interpret)(buffer.as_mut_ptr(), buffer.len() as c_uint, &mut cursor)
            };
            if n <= 0 {
                break;
            }
            let bytes: Vec<u8> = buffer[..n as usize].iter().map(|&c| c as u8).collect();
            lines.push(String::from_utf8_lossy(&bytes).into_owned());
        }
        if lines.is_empty() {
            format!("Firebird error {}", first_gdscode(status))
        } else {
            lines.join("\n")
        }
    }
}

/// Whether a call failed (warnings in the vector do not count).
#[cfg(test)]
pub fn failed(status: &StatusVector) -> bool {
    status[0] == ARG_GDS && status[1] != 0
}

/// Visits every (tag, value) cluster of an error vector up to the end marker or a warning.
fn clusters(status: &StatusVector, mut visit: impl FnMut(IscStatus, &[IscStatus]) -> bool) {
    let mut i = 0;
    while i < STATUS_LEN {
        let tag = status[i];
        if tag == ARG_END || tag == ARG_WARNING {
            return;
        }
        let width = if tag == ARG_CSTRING { 2 } else { 1 };
        let end = (i + 1 + width).min(STATUS_LEN);
        if !visit(tag, &status[i + 1..end]) {
            return;
        }
        i = end;
    }
}

pub fn first_gdscode(status: &StatusVector) -> i64 {
    if status[0] == ARG_GDS {
        status[1] as i64
    } else {
        0
    }
}

pub fn contains_code(status: &StatusVector, codes: &[i64]) -> bool {
    let mut found = false;
    clusters(status, |tag, args| {
        if tag == ARG_GDS && !args.is_empty() && codes.contains(&(args[0] as i64)) {
            found = true;
        }
        !found
    });
    found
}

/// The exception number of a PSQL `exception` (isc_except followed by its number), if any.
pub fn exception_number(status: &StatusVector) -> Option<i64> {
    let mut after_except = false;
    let mut number = None;
    clusters(status, |tag, args| {
        if after_except && tag == ARG_NUMBER && !args.is_empty() {
            number = Some(args[0] as i64);
            return false;
        }
        after_except = tag == ARG_GDS && args.first() == Some(&(ISC_EXCEPT as isize));
        true
    });
    number
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_ibase_h_on_lp64() {
        assert_eq!(std::mem::size_of::<XsqlVar>(), 160);
        assert_eq!(std::mem::size_of::<Xsqlda>(), 184);
        assert_eq!(xsqlda_length(3), 24 + 3 * 160);
        assert_eq!(std::mem::size_of::<Teb>(), 24);
    }

    #[test]
    fn status_vector_parsing() {
        let mut status: StatusVector = [0; STATUS_LEN];
        let words: [IscStatus; 9] = [1, 335544517, 4, 7, 1, 335544382, 2, 0x1234, 0];
        status[..9].copy_from_slice(&words);
        assert!(failed(&status));
        assert_eq!(first_gdscode(&status), 335544517);
        assert_eq!(exception_number(&status), Some(7));
        assert!(contains_code(&status, &[335544382]));
        assert!(!contains_code(&status, &[335544345]));
        let ok: StatusVector = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(!failed(&ok));
    }
}
