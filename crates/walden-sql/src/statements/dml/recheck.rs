//! READ COMMITTED's second look at rows an UPDATE or DELETE (or a foreign key's cascade)
//! found changed by transactions that committed after the statement's snapshot — what
//! PostgreSQL's EvalPlanQual does: the engine leaves such a row and names it
//! (`walden::Modified::changed`); here its newest version is read, judged again by the
//! statement (its WHERE condition tested, its SET values computed, from that version)
//! and the verdict applied to that very version; a version changed yet again meanwhile
//! goes round again, a row deleted meanwhile is skipped. Under REPEATABLE READ the
//! engine fails such a write with 40001 instead, and nothing comes here.
//!
//! What a statement notes of the rows it changes (RETURNING rows, the rows its foreign
//! keys check) is noted under the id of the row judged, so that the notes of rows the
//! engine left can be taken back ([`Noted`]).

use std::collections::HashSet;

use walden::{Modified, Newest, Row, RowAction, RowId, Transaction};

use crate::error::SqlResult;

/// A row changed after a second look: where its version judged was, its values, and
/// the verdict applied.
pub(crate) type Judged = (RowId, Row, RowAction);

/// Judges again the rows a statement's change left (`changed`), round after round until
/// none is left: `judge` gives the verdict on a row's newest version, told which row
/// left (the id `changed` or an earlier round gave) it stands for (it reads what it
/// needs besides with the statement's command: `Transaction::command_reader`).
/// Returns the rows then changed, and each one's version judged (where it was, and its
/// values) with its verdict, for the caller to note as it noted the others.
pub(crate) fn judge_again(
    t: &mut Transaction,
    table: &str,
    changed: Vec<RowId>,
    judge: &mut dyn FnMut(&Transaction, RowId, &Newest) -> SqlResult<RowAction>,
) -> SqlResult<(u64, Vec<Judged>)> {
    let mut count = 0;
    let mut applied: Vec<Judged> = Vec::new();
    let mut left = changed;
    while !left.is_empty() {
        let mut verdicts = Vec::new();
        for id in left {
            let Some(newest) = t.newest(table, id)? else {
                continue;
            };
            match judge(t, id, &newest)? {
                RowAction::Keep | RowAction::Stop => {}
                action => {
                    applied.push((newest.id, newest.row.clone(), action.clone()));
                    verdicts.push((newest, action));
                }
            }
        }
        let done: Modified = t.modify_newest(table, verdicts)?;
        count += done.count;
        left = done.changed;
        if !left.is_empty() {
            let again: HashSet<RowId> = left.iter().copied().collect();
            applied.retain(|(id, _, _)| !again.contains(id));
        }
    }
    Ok((count, applied))
}

/// Things a statement noted of the rows it judged, each under the row's id until the
/// engine has said which rows it left.
#[derive(Debug)]
pub(crate) struct Noted<T> {
    items: Vec<(RowId, T)>,
}

impl<T> Default for Noted<T> {
    fn default() -> Self {
        Noted { items: Vec::new() }
    }
}

impl<T> Noted<T> {
    pub fn push(&mut self, id: RowId, item: T) {
        self.items.push((id, item));
    }

    /// Takes back what was noted of rows the engine left.
    pub fn forget(&mut self, left: &[RowId]) {
        if left.is_empty() {
            return;
        }
        let left: HashSet<RowId> = left.iter().copied().collect();
        self.items.retain(|(id, _)| !left.contains(id));
    }

    pub fn into_items(self) -> impl Iterator<Item = T> {
        self.items.into_iter().map(|(_, item)| item)
    }
}
