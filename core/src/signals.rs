//! Signal dispositions the load core keeps for the caller.

use std::mem;

/// SIGINT / SIGTERM dispositions of the process when the run started.
///
/// libfbclient installs its own handlers on its first attach, and they shut down every
/// attachment of the process on Ctrl-C ("connection shutdown"): the run would fail and the
/// caller's own connections die, instead of the caller turning Ctrl-C into the stop flag.
/// Each attachment restores these right after it connects.
pub struct SavedSignals {
    int: libc::sigaction,
    term: libc::sigaction,
}

impl SavedSignals {
    pub fn capture() -> SavedSignals {
        // SAFETY: querying dispositions only (null new action); zeroed structs are valid outputs.
        unsafe {
            let mut int: libc::sigaction = mem::zeroed();
            let mut term: libc::sigaction = mem::zeroed();
            libc::sigaction(libc::SIGINT, std::ptr::null(), &mut int);
            libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut term);
            SavedSignals { int, term }
        }
    }

    pub fn restore(&self) {
        // SAFETY: re-installing dispositions read from this process earlier.
        unsafe {
            libc::sigaction(libc::SIGINT, &self.int, std::ptr::null_mut());
            libc::sigaction(libc::SIGTERM, &self.term, std::ptr::null_mut());
        }
    }
}
