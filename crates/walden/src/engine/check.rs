//! `Database::check`: verifies every table and index, as PostgreSQL's amcheck does.
//! Tables: every page reads back (checksum, page checks) and every visible row decodes.
//! Indexes: the tree's shape (order, high keys, sibling links, levels, downlinks), every
//! row visible now has exactly its entry, a unique index holds no key twice among
//! visible rows, and every entry points into its table. Entries whose row no longer
//! holds their key (old versions vacuum has yet to clear from the index) are counted,
//! not reported: they are expected.

use std::collections::{HashMap, HashSet};

use super::Database;
use crate::access::btree::{self, key};
use crate::error::Result;

/// What `check` found in one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCheck {
    pub name: String,
    pub pages: u64,
    /// Rows visible to a transaction started for the check.
    pub rows: u64,
}

/// What `check` found in one index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexCheck {
    pub name: String,
    pub table: String,
    pub levels: u16,
    /// Pages per level, leaves first.
    pub pages: Vec<u64>,
    pub entries: u64,
    /// Entries whose row no longer holds their key (vacuum's to remove).
    pub stale: u64,
    /// Pages missing their parent's downlink (a crash between a split's two halves;
    /// repaired by the next insert that passes).
    pub missing_downlinks: u64,
    /// Pages on the index's free list (empty leaves VACUUM gave back).
    pub free_pages: u64,
    /// Pages of the index neither in the tree nor free (a split or a page removal a
    /// crash cut short; the next VACUUM frees them).
    pub unreachable: u64,
}

/// The report of `Database::check`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub tables: Vec<TableCheck>,
    pub indexes: Vec<IndexCheck>,
    /// Inconsistencies; empty when all is well.
    pub problems: Vec<String>,
}

impl CheckReport {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Database {
    /// Verifies every table and index (see the module documentation). Meant for a
    /// quiet database: rows and entries changing meanwhile can be reported as missing.
    /// A page that cannot be read at all is reported and its table's or index's check
    /// stops there; other I/O errors are returned.
    pub fn check(&self) -> Result<CheckReport> {
        let mut report = CheckReport::default();
        let inner = &self.handle.inner;
        // No page is two relations', and no free page is one's (docs/recovery.md rule
        // 26: a dropped relation's pages go to new ones).
        {
            let cat = self.catalog_read();
            let mut owner: HashMap<u64, String> = HashMap::new();
            for (name, pages) in cat.relation_pages() {
                for p in pages {
                    if let Some(other) = owner.insert(p, name.clone()) {
                        report
                            .problems
                            .push(format!("page {p} belongs to both {other:?} and {name:?}"));
                    }
                }
            }
            for p in inner.store.free_page_list() {
                if let Some(name) = owner.get(&p) {
                    report
                        .problems
                        .push(format!("page {p} is free but belongs to {name:?}"));
                }
            }
        }
        for name in self.table_names() {
            let Ok(t) = inner.table(&name) else { continue };
            let pages = t.page_list();
            let _ddl = t.ddl.read();
            // Rows visible now, and their items in each index.
            let indexes = t.index_list();
            let mut want: Vec<HashMap<Vec<u8>, (u64, u16)>> = vec![HashMap::new(); indexes.len()];
            let mut keys_seen: Vec<HashSet<Vec<u8>>> = vec![HashSet::new(); indexes.len()];
            let mut rows = 0u64;
            let tx = self.begin();
            let mut failed = None;
            let ctx = inner.access_ctx();
            let access = crate::access::of(t.kind);
            let mut versions = crate::access::PageRows::default();
            // Each visible row with the id its entries name (a heap-only version's
            // chain root).
            'pages: for &page in &pages {
                versions.clear();
                let view = tx.view();
                if let Err(e) = access.versions_of_page(&ctx, page, Some(&view), &mut versions) {
                    failed = Some(e);
                    break;
                }
                for (id, bytes) in versions.iter() {
                    let row = match super::index::decode_row(inner, &t, id, bytes) {
                        Ok(row) => row,
                        Err(e) => {
                            failed = Some(e);
                            break 'pages;
                        }
                    };
                    rows += 1;
                    for (n, ix) in indexes.iter().enumerate() {
                        match super::index::item_of(&t, ix, &row, id) {
                            Ok((item, key_len, has_null)) => {
                                if ix.unique
                                    && !has_null
                                    && !keys_seen[n].insert(item[..key_len].to_vec())
                                {
                                    report.problems.push(format!(
                                        "index {:?}: a key is held by more than one visible row (one at page {} slot {})",
                                        ix.name, id.page, id.slot
                                    ));
                                }
                                want[n].insert(item, (id.page, id.slot));
                            }
                            Err(e) => {
                                failed = Some(e);
                                break 'pages;
                            }
                        }
                    }
                }
                inner.relieve_space();
            }
            let _ = tx.rollback();
            if let Some(e) = failed {
                report.problems.push(format!("table {name:?}: {e}"));
            }
            report.tables.push(TableCheck {
                name: name.clone(),
                pages: pages.len() as u64,
                rows,
            });
            let table_pages: HashSet<u64> = pages.iter().copied().collect();
            for (n, ix) in indexes.iter().enumerate() {
                let mut problems = Vec::new();
                let mut stale = 0u64;
                let mut outside = 0u64;
                let wanted = &mut want[n];
                let walked = btree::check(&ctx, ix, &mut problems, &mut |item| {
                    if wanted.remove(item).is_some() {
                        return;
                    }
                    match key::split_item(item) {
                        Some((_, id)) if table_pages.contains(&id.page) => stale += 1,
                        _ => outside += 1,
                    }
                });
                let shape = match walked {
                    Ok(shape) => shape,
                    Err(e) => {
                        report.problems.push(e.to_string());
                        continue;
                    }
                };
                report.problems.extend(problems);
                if outside > 0 {
                    report.problems.push(format!(
                        "index {:?}: {outside} entries point outside table {name:?}",
                        ix.name
                    ));
                }
                let mut missing: Vec<(u64, u16)> = wanted.values().copied().collect();
                missing.sort_unstable();
                if let Some((page, slot)) = missing.first() {
                    report.problems.push(format!(
                        "index {:?}: {} visible rows have no entry (the first at page {page} slot {slot})",
                        ix.name,
                        missing.len()
                    ));
                }
                report.indexes.push(IndexCheck {
                    name: ix.name.clone(),
                    table: name.clone(),
                    levels: shape.levels,
                    pages: shape.pages,
                    entries: shape.entries,
                    stale,
                    missing_downlinks: shape.missing_downlinks,
                    free_pages: shape.free_pages,
                    unreachable: shape.unreachable,
                });
            }
        }
        Ok(report)
    }
}
