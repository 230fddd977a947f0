//! What a failed unit means: a by-design rollback, a conflict, a lost connection, a database
//! that cannot be written, or an error.

use crate::ffi::{contains_code, exception_number, first_gdscode, StatusVector};

/// Lock conflict, deadlock, concurrent transaction, update conflict, lock time-out.
pub const CONFLICT_CODES: [i64; 5] = [335544345, 335544336, 335544878, 335544451, 335544510];
/// The attachment is gone: network errors, shutdown, a dead handle. Counting these as errors
/// would produce millions of them in a second; the run fails instead.
pub const CONNECTION_LOST_CODES: [i64; 9] = [
    335544721, // network_error
    335544722, // net_connect_err
    335544726, // net_read_err
    335544727, // net_write_err
    335544741, // lost_db_connection
    335544648, // conn_lost
    335544528, // shutdown
    335544856, // att_shutdown
    335544324, // bad_db_handle
];
/// The database cannot be written (or read): disk full, a file too large, any I/O error of the
/// database file. Every unit after the first would fail the same way, at full speed, counted as
/// errors while throughput drops to zero; the run fails instead, with the engine's message.
/// Codes and texts from Firebird's message table (src/include/gen/msgs.h, iberror.h):
pub const CANNOT_WRITE_CODES: [i64; 11] = [
    335544344, // io_error: I/O error during "@1" operation for file "@2"
    335544733, // io_create_err: Error while trying to create file
    335544734, // io_open_err: Error while trying to open file
    335544735, // io_close_err: Error while trying to close file
    335544736, // io_read_err: Error while trying to read from file
    335544737, // io_write_err: Error while trying to write to file (ENOSPC, EFBIG come here)
    335544738, // io_delete_err: Error while trying to delete file
    335544739, // io_access_err: Error while trying to access file
    335544819, // io_32bit_exceeded_err: File exceeded maximum size of 2GB
    335544469, // trans_invalid: transaction marked invalid by I/O error
    335544470, // buf_invalid: cache buffer for page @1 invalid (a page write failed before)
];
/// fb_cancel_operation's effect, seen when the core itself breaks a wait at the end.
pub const CANCELLED: i64 = 335544794;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    RolledBack,
    Conflict,
    Error,
}

impl Outcome {
    pub const ALL: [Outcome; 4] = [
        Outcome::Ok,
        Outcome::RolledBack,
        Outcome::Conflict,
        Outcome::Error,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn key(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::RolledBack => "rolled_back",
            Outcome::Conflict => "conflicts",
            Outcome::Error => "errors",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Counted in this class, keyed by the first gdscode of the vector.
    Counted(Outcome, i64),
    ConnectionLost(i64),
    /// One of CANNOT_WRITE_CODES: the run fails, like a lost connection.
    CannotWrite(i64),
    Cancelled,
}

pub fn classify(status: &StatusVector, rollback_on: &[i64]) -> Failure {
    let code = first_gdscode(status);
    if contains_code(status, &CONNECTION_LOST_CODES) {
        return Failure::ConnectionLost(code);
    }
    if contains_code(status, &CANNOT_WRITE_CODES) {
        return Failure::CannotWrite(code);
    }
    if contains_code(status, &[CANCELLED]) {
        return Failure::Cancelled;
    }
    if let Some(number) = exception_number(status) {
        if rollback_on.contains(&number) {
            return Failure::Counted(Outcome::RolledBack, code);
        }
    }
    if contains_code(status, &CONFLICT_CODES) {
        return Failure::Counted(Outcome::Conflict, code);
    }
    Failure::Counted(Outcome::Error, code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{IscStatus, ISC_EXCEPT, STATUS_LEN};

    fn vector(words: &[IscStatus]) -> StatusVector {
        let mut status = [0; STATUS_LEN];
        status[..words.len()].copy_from_slice(words);
        status
    }

    #[test]
    fn classes() {
        // exception 3 raised by a procedure: by design only when listed.
        let except = vector(&[1, 335544517, 4, 3, 1, 335544382, 2, 0, 0]);
        assert_eq!(
            classify(&except, &[3]),
            Failure::Counted(Outcome::RolledBack, ISC_EXCEPT)
        );
        assert_eq!(
            classify(&except, &[4]),
            Failure::Counted(Outcome::Error, ISC_EXCEPT)
        );
        // update conflict as the engine reports it: deadlock, update_conflict, concurrent tx.
        let conflict = vector(&[1, 335544336, 1, 335544451, 1, 335544878, 4, 99, 0]);
        assert_eq!(
            classify(&conflict, &[]),
            Failure::Counted(Outcome::Conflict, 335544336)
        );
        let nowait = vector(&[1, 335544345, 0]);
        assert_eq!(
            classify(&nowait, &[]),
            Failure::Counted(Outcome::Conflict, 335544345)
        );
        let arith = vector(&[1, 335544321, 1, 335544778, 0]);
        assert_eq!(
            classify(&arith, &[]),
            Failure::Counted(Outcome::Error, 335544321)
        );
        let lost = vector(&[1, 335544721, 2, 0, 1, 335544726, 0]);
        assert_eq!(classify(&lost, &[]), Failure::ConnectionLost(335544721));
        // Disk full as the engine reports it: io_error with the operation and file, io_write_err,
        // then the OS error (isc_arg_unix 28 = ENOSPC).
        let file = c"/x/db.fdb".as_ptr() as IscStatus;
        let write = c"write".as_ptr() as IscStatus;
        let full = vector(&[1, 335544344, 2, write, 2, file, 1, 335544737, 7, 28, 0]);
        assert_eq!(classify(&full, &[]), Failure::CannotWrite(335544344));
        // ... also when it comes second, after a statement-level code.
        let nested = vector(&[1, 335544321, 1, 335544470, 4, 123, 0]);
        assert_eq!(classify(&nested, &[]), Failure::CannotWrite(335544321));
        let invalid = vector(&[1, 335544469, 0]);
        assert_eq!(classify(&invalid, &[]), Failure::CannotWrite(335544469));
        // Cancelled at the end while writing: still a database that cannot be written.
        let both = vector(&[1, 335544794, 1, 335544737, 0]);
        assert_eq!(classify(&both, &[]), Failure::CannotWrite(335544794));
        // A lost connection stays a lost connection.
        let gone = vector(&[1, 335544721, 1, 335544344, 0]);
        assert_eq!(classify(&gone, &[]), Failure::ConnectionLost(335544721));
        // An I/O code after a warning marker is not part of the error.
        let warned_io = vector(&[1, 335544321, 18, 335544344, 0]);
        assert_eq!(
            classify(&warned_io, &[]),
            Failure::Counted(Outcome::Error, 335544321)
        );
        let cancelled = vector(&[1, 335544794, 0]);
        assert_eq!(classify(&cancelled, &[]), Failure::Cancelled);
        // A conflict code after a warning marker is not part of the error.
        let warned = vector(&[1, 335544321, 18, 335544345, 0]);
        assert_eq!(
            classify(&warned, &[]),
            Failure::Counted(Outcome::Error, 335544321)
        );
    }
}
