//! Foreign keys checked and acted on after each statement, as PostgreSQL's RI triggers
//! do at the end of a statement: a referencing row written must find its key in the
//! referenced table (23503), and a referenced key deleted or changed must leave no
//! referencing row, or take them with it (CASCADE, SET NULL, SET DEFAULT). Cascaded
//! changes are checked and acted on in turn, from a queue (no recursion, however long
//! the chain).
//!
//! Concurrency (docs/ARCHITECTURE.md, "Foreign keys"): a referencing row takes a shared
//! key lock on its referenced key, a delete or key change of a referenced row an
//! exclusive one, held to the end of the transaction; then each reads with a snapshot
//! taken after the lock, so that it sees what a transaction that held the lock before
//! committed. Under REPEATABLE READ a row found there that the transaction's own
//! snapshot does not show (or the other way round) is a serialization failure, as in
//! PostgreSQL. Under READ COMMITTED the checks and actions read with a snapshot taken
//! after the locks, as PostgreSQL's RI queries read with a new one, and fail only as
//! the rows read say (23503); a cascaded change that meets a referencing row changed
//! concurrently judges its newest version again (`dml/recheck.rs`).

use std::collections::{HashMap, VecDeque};
use std::ops::{Bound, ControlFlow};

use walden::{Isolation, KeyLockMode, Reader, Row, RowAction, RowId, Schema, Transaction, Value};

use super::{key_text, positions, Action, ForeignKey};
use crate::dml::assign;
use crate::dml::recheck::{self, Noted};
use crate::error::{code, SqlError, SqlResult};
use crate::statement::Ctx;

/// Rows one statement, or one cascaded action, wrote to one table.
#[derive(Debug, Default)]
pub(crate) struct Written {
    pub table: String,
    pub inserted: Vec<Row>,
    /// Old and new versions.
    pub updated: Vec<(Row, Row)>,
    pub deleted: Vec<Row>,
}

impl Written {
    pub fn new(table: &str) -> Written {
        Written {
            table: table.to_string(),
            ..Written::default()
        }
    }

    /// Keeps what an UPDATE or DELETE did to `row`.
    pub fn take(&mut self, row: Row, action: RowAction) {
        match action {
            RowAction::Update(new) => self.updated.push((row, new)),
            RowAction::Delete => self.deleted.push(row),
            RowAction::Keep | RowAction::Stop => {}
        }
    }
}

/// Whether a statement that writes `table` must keep its rows for `after` (the table
/// takes part in a foreign key).
pub(crate) fn watches(cx: &Ctx, table: &str) -> SqlResult<bool> {
    Ok(cx.fkeys.all(cx.db)?.involves(table))
}

/// Checks and acts on the foreign keys a statement's writes touch.
pub(crate) fn after(cx: &mut Ctx, t: &mut Transaction, written: Written) -> SqlResult<()> {
    let all = cx.fkeys.all(cx.db)?;
    let mut queue = VecDeque::from([written]);
    while let Some(w) = queue.pop_front() {
        cx.guard.check()?;
        for fk in all.referencing(&w.table) {
            act(cx, t, fk, &w, &mut queue)?;
        }
        for fk in all.of_table(&w.table) {
            check_child(cx, t, fk, &w)?;
        }
    }
    Ok(())
}

/// A key as text that is equal for equal values (for sets of keys).
fn key_id(key: &[Value]) -> String {
    format!("{key:?}")
}

fn serialization_failure() -> SqlError {
    SqlError::new(
        code::SERIALIZATION_FAILURE,
        "could not serialize access due to concurrent update",
    )
}

/// Where to find rows of a table by the values of some of its columns: a B-tree index
/// whose leading columns are those (in any order), else a scan.
struct Lookup {
    table: String,
    /// The index, and for each of its leading columns the position of its value in a key.
    index: Option<(String, Vec<usize>)>,
    /// Positions of the key's columns in the table's rows.
    at: Vec<usize>,
}

impl Lookup {
    fn new(db: &walden::Database, table: &str, schema: &Schema, at: &[usize]) -> Lookup {
        let names: Vec<&str> = at
            .iter()
            .map(|&i| schema.columns[i].name.as_str())
            .collect();
        let index = db.indexes(table).ok().and_then(|list| {
            list.into_iter().find_map(|ix| {
                if ix.columns.len() < names.len() {
                    return None;
                }
                let order: Option<Vec<usize>> = ix.columns[..names.len()]
                    .iter()
                    .map(|c| names.iter().position(|n| n == c))
                    .collect();
                order.map(|o| (ix.name, o))
            })
        });
        Lookup {
            table: table.to_string(),
            index,
            at: at.to_vec(),
        }
    }

    /// Every visible row whose key columns hold one of `keys` (values of the columns'
    /// own types), with the number of the key it holds.
    fn find(&self, r: &Reader, keys: &[Vec<Value>]) -> SqlResult<Vec<(RowId, Row, usize)>> {
        let mut out = Vec::new();
        if let Some((index, order)) = &self.index {
            for (n, key) in keys.iter().enumerate() {
                let vals: Vec<Value> = order.iter().map(|&i| key[i].clone()).collect();
                let b = Bound::Included(vals.as_slice());
                let rows = walden::Rows::index(index, b, b);
                r.read(rows, walden::RowShape::default(), |id, row| {
                    out.push((id, row, n));
                    Ok::<_, SqlError>(ControlFlow::Continue(()))
                })?;
            }
            return Ok(out);
        }
        let wanted: HashMap<String, usize> = keys
            .iter()
            .enumerate()
            .map(|(n, k)| (key_id(k), n))
            .collect();
        let shape = walden::RowShape::default();
        r.read(walden::Rows::Table(&self.table), shape, |id, row| {
            let key: Vec<Value> = self.at.iter().map(|&i| row[i].clone()).collect();
            if let Some(&n) = wanted.get(&key_id(&key)) {
                out.push((id, row, n));
            }
            Ok::<_, SqlError>(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }
}

/// The referenced table's columns as `u16`, the key lock's column list.
fn lock_columns(at: &[usize]) -> Vec<u16> {
    at.iter().map(|&i| i as u16).collect()
}

/// The rows `w` wrote to the referencing table of `fk` must find their keys in the
/// referenced table (a NULL in any key column passes: MATCH SIMPLE).
fn check_child(cx: &mut Ctx, t: &mut Transaction, fk: &ForeignKey, w: &Written) -> SqlResult<()> {
    let schema = cx.db.schema(&w.table)?;
    let pschema = cx.db.schema(&fk.parent)?;
    let at = positions(&schema, &fk.columns)?;
    let pat = positions(&pschema, &fk.parent_columns)?;
    let changed = |(old, new): &&(Row, Row)| at.iter().any(|&i| old[i] != new[i]);
    let rows = w
        .inserted
        .iter()
        .chain(w.updated.iter().filter(changed).map(|(_, new)| new));
    // Keys as the child row holds them, and as the referenced columns' values.
    let mut keys: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for row in rows {
        let vals: Vec<Value> = at.iter().map(|&i| row[i].clone()).collect();
        if vals.iter().any(|v| matches!(v, Value::Null)) {
            continue;
        }
        let typed = vals
            .iter()
            .zip(&pat)
            .map(|(v, &p)| assign(v.clone(), &pschema.columns[p]))
            .collect::<SqlResult<Vec<Value>>>();
        let typed = match typed {
            Ok(k) => k,
            // Out of the referenced column's range: no referenced row can hold it.
            Err(_) => return Err(not_present(fk, &vals)),
        };
        if seen.insert(key_id(&typed)) {
            keys.push((vals, typed));
        }
    }
    if keys.is_empty() {
        return Ok(());
    }
    let cols = lock_columns(&pat);
    for (_, k) in &keys {
        t.lock_key(&fk.parent, &cols, k, KeyLockMode::Share)?;
    }
    let lookup = Lookup::new(cx.db, &fk.parent, &pschema, &pat);
    let typed: Vec<Vec<Value>> = keys.iter().map(|(_, k)| k.clone()).collect();
    let found = t.with_latest_reader(|r| lookup.find(&r, &typed))??;
    let mut present = vec![false; keys.len()];
    for (_, _, n) in found {
        present[n] = true;
    }
    let Some(first) = present.iter().position(|p| !p) else {
        return Ok(());
    };
    // Gone since this transaction's snapshot: deleted by one that committed since.
    if t.isolation() == Isolation::RepeatableRead {
        let before = lookup.find(&t.reader()?, &typed[first..=first])?;
        if !before.is_empty() {
            return Err(serialization_failure());
        }
    }
    Err(not_present(fk, &keys[first].0))
}

pub(crate) fn not_present(fk: &ForeignKey, vals: &[Value]) -> SqlError {
    SqlError::new(
        "23503",
        format!(
            "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
            fk.table, fk.name
        ),
    )
    .with_detail(format!(
        "Key {} is not present in table \"{}\".",
        key_text(&fk.columns, vals),
        fk.parent
    ))
}

fn still_referenced(fk: &ForeignKey, key: &[Value]) -> SqlError {
    SqlError::new(
        "23503",
        format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
            fk.parent, fk.name, fk.table
        ),
    )
    .with_detail(format!(
        "Key {} is still referenced from table \"{}\".",
        key_text(&fk.parent_columns, key),
        fk.table
    ))
}

/// A referenced key that `w` deleted, or changed (to the new key).
struct Gone {
    key: Vec<Value>,
    new: Option<Vec<Value>>,
}

/// The keys of `fk`'s referenced table that `w` deleted or changed.
fn gone_keys(w: &Written, pat: &[usize]) -> Vec<Gone> {
    let key_of = |row: &Row| -> Vec<Value> { pat.iter().map(|&i| row[i].clone()).collect() };
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let deleted = w.deleted.iter().map(|r| (key_of(r), None));
    let updated = w
        .updated
        .iter()
        .map(|(o, n)| (key_of(o), Some(key_of(n))))
        .filter(|(o, n)| n.as_ref() != Some(o));
    for (key, new) in deleted.chain(updated) {
        if key.iter().any(|v| matches!(v, Value::Null)) || !seen.insert(key_id(&key)) {
            continue;
        }
        out.push(Gone { key, new });
    }
    out
}

/// The rows referencing keys `w` deleted or changed in `fk`'s referenced table: an
/// error (NO ACTION, RESTRICT), or changed or deleted, their changes queued for their
/// own foreign keys.
fn act(
    cx: &mut Ctx,
    t: &mut Transaction,
    fk: &ForeignKey,
    w: &Written,
    queue: &mut VecDeque<Written>,
) -> SqlResult<()> {
    let pschema = cx.db.schema(&fk.parent)?;
    let schema = cx.db.schema(&fk.table)?;
    let pat = positions(&pschema, &fk.parent_columns)?;
    let at = positions(&schema, &fk.columns)?;
    let mut gone = gone_keys(w, &pat);
    if gone.is_empty() {
        return Ok(());
    }
    let cols = lock_columns(&pat);
    for g in &gone {
        t.lock_key(&fk.parent, &cols, &g.key, KeyLockMode::Exclusive)?;
    }
    // NO ACTION passes a key the referenced table still holds (another row took it).
    if gone.iter().any(|g| action_of(fk, g) == Action::NoAction) {
        let lookup = Lookup::new(cx.db, &fk.parent, &pschema, &pat);
        drop_still_held(t, &lookup, fk, &mut gone)?;
    }
    let (child_keys, which) = child_keys(&gone, &at, &schema);
    if child_keys.is_empty() {
        return Ok(());
    }
    let lookup = Lookup::new(cx.db, &fk.table, &schema, &at);
    let rows = referencing_rows(t, &lookup, &child_keys)?;
    if rows.is_empty() {
        return Ok(());
    }
    let mut actions = Vec::with_capacity(rows.len());
    let mut cascaded = Noted::default();
    let mut verdict = |row: &Row, n: usize| -> SqlResult<RowAction> {
        let g = &gone[which[n]];
        let action = row_action(cx, fk, &schema, &at, g, row)?;
        if let RowAction::Update(new) = &action {
            crate::dml::check_not_null(cx.checks, &fk.table, &schema, new)?;
        }
        cx.guard.charge(crate::guard::row_bytes(row) * 2 + 64)?;
        Ok(action)
    };
    for (id, row, n) in rows {
        let action = verdict(&row, n)?;
        cascaded.push(id, (row, action.clone()));
        actions.push((id, action));
    }
    let first = t.modify_rows(&fk.table, actions)?;
    if !first.changed.is_empty() {
        // READ COMMITTED: a referencing row changed since the snapshot is judged again
        // in its newest version, if it still holds a key that went.
        cascaded.forget(&first.changed);
        let (_, applied) =
            recheck::judge_again(t, &fk.table, first.changed, &mut |_, _, newest| {
                let key: Vec<Value> = at.iter().map(|&i| newest.row[i].clone()).collect();
                match child_keys.iter().position(|k| *k == key) {
                    Some(n) => verdict(&newest.row, n),
                    None => Ok(RowAction::Keep),
                }
            })?;
        for (id, row, action) in applied {
            cascaded.push(id, (row, action));
        }
    }
    let mut w = Written::new(&fk.table);
    for (row, action) in cascaded.into_items() {
        w.take(row, action);
    }
    queue.push_back(w);
    Ok(())
}

/// What becomes of a row referencing key `g` that went: an error (NO ACTION,
/// RESTRICT, or SET DEFAULT to the same key), deleted, or changed.
fn row_action(
    cx: &mut Ctx,
    fk: &ForeignKey,
    schema: &Schema,
    at: &[usize],
    g: &Gone,
    row: &Row,
) -> SqlResult<RowAction> {
    Ok(match (action_of(fk, g), &g.new) {
        (Action::NoAction | Action::Restrict, _) => {
            return Err(still_referenced(fk, &g.key));
        }
        (Action::Cascade, None) => RowAction::Delete,
        (Action::Cascade, Some(new_key)) => {
            let mut new = row.clone();
            for (v, &c) in new_key.iter().zip(at) {
                new[c] = assign(v.clone(), &schema.columns[c])?;
            }
            RowAction::Update(new)
        }
        (Action::SetNull, _) => {
            let mut new = row.clone();
            for &c in at {
                new[c] = Value::Null;
            }
            RowAction::Update(new)
        }
        (Action::SetDefault, _) => {
            let mut new = row.clone();
            for &c in at {
                let col = &schema.columns[c];
                let v = crate::dml::column_default(col)?.eval(&[], &mut cx.eval_ctx())?;
                new[c] = assign(v, col)?;
            }
            // The default is the key going away: the row would still reference it
            // (PostgreSQL's ri_set checks again and fails the same way).
            if at.iter().all(|&c| new[c] == row[c]) {
                return Err(still_referenced(fk, &g.key));
            }
            RowAction::Update(new)
        }
    })
}

/// What happens to rows referencing a key that went: ON DELETE's action, or ON UPDATE's.
fn action_of(fk: &ForeignKey, g: &Gone) -> Action {
    match g.new {
        None => fk.on_delete,
        Some(_) => fk.on_update,
    }
}

/// Leaves out the NO ACTION keys the referenced table still holds (another row took
/// them), as the newest committed rows show.
fn drop_still_held(
    t: &mut Transaction,
    lookup: &Lookup,
    fk: &ForeignKey,
    gone: &mut Vec<Gone>,
) -> SqlResult<()> {
    let keys: Vec<Vec<Value>> = gone.iter().map(|g| g.key.clone()).collect();
    let held = t.with_latest_reader(|r| lookup.find(&r, &keys))??;
    let mut still = vec![false; gone.len()];
    for (_, _, n) in held {
        still[n] = true;
    }
    let mut n = 0;
    gone.retain(|g| {
        n += 1;
        !(still[n - 1] && action_of(fk, g) == Action::NoAction)
    });
    Ok(())
}

/// The keys as the referencing columns hold them (a value out of their range is held
/// by no row), and for each the place of its key among `gone`.
fn child_keys(gone: &[Gone], at: &[usize], schema: &Schema) -> (Vec<Vec<Value>>, Vec<usize>) {
    let mut child_keys = Vec::new();
    let mut which = Vec::new();
    for (n, g) in gone.iter().enumerate() {
        let k: SqlResult<Vec<Value>> = g
            .key
            .iter()
            .zip(at)
            .map(|(v, &c)| assign(v.clone(), &schema.columns[c]))
            .collect();
        if let Ok(k) = k {
            child_keys.push(k);
            which.push(n);
        }
    }
    (child_keys, which)
}

/// The referencing rows holding `keys`, with the key each holds. READ COMMITTED goes by
/// what committed by now (the locks are held); a snapshot that misses a referencing row
/// committed or changed since is a serialization failure.
fn referencing_rows(
    t: &mut Transaction,
    lookup: &Lookup,
    keys: &[Vec<Value>],
) -> SqlResult<Vec<(RowId, Row, usize)>> {
    if t.isolation() == Isolation::ReadCommitted {
        t.new_statement_snapshot()?;
        return lookup.find(&t.reader()?, keys);
    }
    let now = t.with_latest_reader(|r| lookup.find(&r, keys))??;
    if now.is_empty() {
        return Ok(Vec::new());
    }
    let mut rows = lookup.find(&t.reader()?, keys)?;
    // Referencing rows committed since this transaction's snapshot, or changed since.
    let ids: std::collections::HashSet<RowId> = rows.iter().map(|(id, _, _)| *id).collect();
    if now.iter().any(|(id, _, _)| !ids.contains(id)) {
        return Err(serialization_failure());
    }
    let now_ids: std::collections::HashSet<RowId> = now.iter().map(|(id, _, _)| *id).collect();
    rows.retain(|(id, _, _)| now_ids.contains(id));
    Ok(rows)
}
