//! The run's one way to take a lock, shared by its bookkeeping (state) and the replay.

use std::sync::{Mutex, MutexGuard};

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking attachment thread must not take the whole run's bookkeeping with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}
