//! The write fence: after a failed write or fsync the database refuses every further
//! write until it is reopened. Retrying an fsync and carrying on can lose data silently
//! (the kernel may have dropped the dirty pages), so Walden never does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Set once, never cleared: a reopen builds a new one.
#[derive(Debug, Default)]
pub struct Poison {
    poisoned: AtomicBool,
    /// The first failure, for the error message. Guarded by its own mutex.
    cause: Mutex<Option<String>>,
}

impl Poison {
    /// Records a failure and fences writes.
    pub fn set(&self, cause: &dyn std::fmt::Display) {
        if let Ok(mut c) = self.cause.lock() {
            if c.is_none() {
                *c = Some(cause.to_string());
            }
        }
        self.poisoned.store(true, Ordering::SeqCst);
    }

    pub fn is_set(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }

    /// `Err(Poisoned)` once a write or fsync has failed.
    pub fn check(&self) -> Result<()> {
        if self.is_set() {
            let cause = self
                .cause
                .lock()
                .ok()
                .and_then(|c| c.clone())
                .unwrap_or_else(|| "unknown".to_string());
            Err(Error::Poisoned { cause })
        } else {
            Ok(())
        }
    }

    /// Runs an I/O result through the fence: an error poisons the database.
    pub fn guard<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            if !matches!(e, Error::Poisoned { .. }) {
                self.set(e);
            }
        }
        r
    }
}
