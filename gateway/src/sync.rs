//! The gateway's one poison-ignoring `lock()`: a panic while a mutex was held (a bug, already
//! logged) must not take every later request down with it; the data each mutex guards stays
//! consistent at every point a panic could occur (counters, maps, settings).

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, taking the guard of a poisoned mutex as it is.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads `l`, taking the guard of a poisoned lock as it is (as [`lock`]).
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// Writes `l`, taking the guard of a poisoned lock as it is (as [`lock`]).
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}
