//! WAL retention: the one place that decides from which segment on the log must be kept.
//! Each holder names the oldest segment it still needs; segments before the oldest of all
//! may be recycled. Today the holders are crash recovery (the redo point of the last
//! complete checkpoint) and the rollback of running undo-table writers (the undo start,
//! docs/recovery.md rule 22); standbys and the archive will add theirs here.

/// Why a segment is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// Recovery replays from the redo point of the last complete checkpoint.
    Redo,
    /// Recovery reads from the undo start to roll back undo-table writers.
    UndoStart,
}

/// The holders of the log, and the oldest segment each needs.
#[derive(Debug, Clone, Default)]
pub struct Retention {
    holds: Vec<(Holder, u64)>,
}

impl Retention {
    /// `holder` needs the log from segment `segment_no` on.
    pub fn hold(mut self, holder: Holder, segment_no: u64) -> Retention {
        self.holds.push((holder, segment_no));
        self
    }

    /// The first segment that must be kept (`None` with no holder: keep everything, as
    /// nobody said what may go).
    pub fn keep_from(&self) -> Option<u64> {
        self.holds.iter().map(|&(_, no)| no).min()
    }

    /// The holder that keeps the oldest segment, for reports.
    pub fn oldest_holder(&self) -> Option<Holder> {
        self.holds
            .iter()
            .min_by_key(|&&(_, no)| no)
            .map(|&(h, _)| h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_hold_wins() {
        assert_eq!(Retention::default().keep_from(), None);
        let r = Retention::default()
            .hold(Holder::Redo, 9)
            .hold(Holder::UndoStart, 4);
        assert_eq!(r.keep_from(), Some(4));
        assert_eq!(r.oldest_holder(), Some(Holder::UndoStart));
        let r = Retention::default()
            .hold(Holder::Redo, 3)
            .hold(Holder::UndoStart, 7);
        assert_eq!(
            (r.keep_from(), r.oldest_holder()),
            (Some(3), Some(Holder::Redo))
        );
    }
}
