//! Injected time: the engine asks a `Clock` instead of the system, so that tests control
//! time-based behaviour (checkpoint intervals) and replay exactly.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub trait Clock: Send + Sync {
    /// Milliseconds since an arbitrary fixed origin; never goes backwards.
    fn now_millis(&self) -> u64;
}

/// The machine's monotonic clock.
#[derive(Debug)]
pub struct RealClock {
    origin: Instant,
}

impl Default for RealClock {
    fn default() -> Self {
        RealClock {
            origin: Instant::now(),
        }
    }
}

impl Clock for RealClock {
    fn now_millis(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock {
    millis: AtomicU64,
}

impl ManualClock {
    pub fn advance_millis(&self, ms: u64) {
        self.millis.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> u64 {
        self.millis.load(Ordering::SeqCst)
    }
}
