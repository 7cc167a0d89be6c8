//! B+tree indexes on Walden's pages (Lehman and Yao's B-link tree): leaves hold `key | row
//! id` items (`key.rs`), internal pages `separator | child`, every page a high key and a
//! right sibling, so a search that lands left of its key moves right. The page layout is
//! `index_page.rs`; the records and their redo `wal_records.rs`.
//!
//! Locking (docs/ARCHITECTURE.md, invariant 6): an index's structure lock (`Index::tree`)
//! is held shared by searches and by inserts and deletes that stay within one leaf, and
//! exclusively by splits and by VACUUM's page removal (`reclaim`), which then latch the
//! pages they change in any order. A search holds one page latch at a time and a scan
//! copies a leaf's items before it goes on (and descends again from the root for the
//! next leaf, so a page removed meanwhile is never followed), so nothing waits for a row
//! lock or an xid while holding either.
//!
//! A split is three records, each on its page: the new right page (`cow`: rebuilt at
//! redo from the left one), the left page cut at the split position with its new high
//! key and sibling, then the separator put in the parent (or a new root and the meta
//! page). A crash between them leaves a tree that is still right — a page with no
//! downlink is reached through its left sibling — and the next insert that moves right
//! puts the missing downlink in (`fix_downlink`).

pub mod key;
pub mod wal_records;

use std::sync::atomic::Ordering;

use crate::access::Ctx;
use crate::buffer::{Fetch, PinnedPage};
use crate::catalog::Index;
use crate::error::{Error, Result};
use crate::index_page::{
    child_of, internal_item, separator_of, IndexPage, IndexPageMut, CHILD_BYTES,
    INDEX_HEADER_BYTES, ITEM_SLOT_BYTES,
};
use crate::page::PageKind;
use crate::stats::TxnStats;
use crate::store::Protection;
use crate::wal::payload::Payload;
use key::ROW_ID_BYTES;
use wal_records::BTreeRecord;

/// Page numbers are stored in 32 bits in internal items and row ids.
const PAGE_LIMIT: u64 = u32::MAX as u64;
/// Leaves built by `build` are filled to this share of the page (PostgreSQL's leaf
/// fillfactor), leaving room for inserts before the first splits.
const BUILD_FILL: f64 = 0.9;

/// The largest key an index on pages of `page_size` takes: an item (key, row id and slot)
/// may use a quarter of the page, so that a split always leaves room on both sides.
pub fn max_key_bytes(page_size: usize) -> usize {
    (page_size - INDEX_HEADER_BYTES) / 4 - ITEM_SLOT_BYTES - ROW_ID_BYTES - CHILD_BYTES
}

/// Who writes: the transaction id records carry, and its accounting.
pub struct Logger<'s> {
    pub xid: u64,
    pub stats: &'s mut TxnStats,
    /// The row the item being inserted was made from, when the transaction's latest
    /// insert record put it on its page: the leaf insert then logs where the key lies in
    /// that row (`btree_insert_row`) instead of the key.
    pub row_ref: Option<RowRef>,
}

/// A row an insert record logged (at `rows_lsn`), and where its key lies in it.
#[derive(Debug, Clone)]
pub struct RowRef {
    pub rows_lsn: u64,
    pub id: crate::RowId,
    pub key: Vec<key::KeyPart>,
}

fn corrupt(ix: &Index, page: u64, reason: impl Into<String>) -> Error {
    Error::CorruptIndex {
        index: ix.name.clone(),
        page,
        reason: reason.into(),
    }
}

/// Pins a page of the index, checking that it is one (a damaged page is an error naming
/// the index and page).
fn pin<'p>(ctx: &Ctx<'p>, ix: &Index, page: u64) -> Result<PinnedPage<'p>> {
    if page >= ctx.pool.store().next_page_no() {
        return Err(corrupt(ix, page, "points at a page that does not exist"));
    }
    let pinned = ctx.pool.fetch(page, Fetch::Read).map_err(|e| match e {
        Error::ChecksumMismatch { .. } | Error::CorruptPage { .. } => {
            corrupt(ix, page, e.to_string())
        }
        e => e,
    })?;
    {
        let g = pinned.read();
        if g[4] != PageKind::Index as u8 || IndexPage(&g).owner() != ix.id {
            return Err(corrupt(ix, page, "not a page of this index"));
        }
    }
    Ok(pinned)
}

fn log(ctx: &Ctx, rec: &BTreeRecord, g: &mut [u8], w: &mut Logger) -> Result<()> {
    let mut payload = Vec::with_capacity(64);
    rec.encode_payload(&mut payload);
    ctx.wal
        .append_page_change(rec.record_type(), w.xid, &payload, g, Some(w.stats))?;
    Ok(())
}

/// Logs a page whole as it stands (`btree_page`), encoded from the page itself.
fn log_page(ctx: &Ctx, g: &mut [u8], w: &mut Logger) -> Result<()> {
    let mut payload = Vec::with_capacity(g.len() + 64);
    wal_records::put_page(&mut payload, g);
    ctx.wal
        .append_page_change(wal_records::BTREE_PAGE, w.xid, &payload, g, Some(w.stats))?;
    Ok(())
}

/// Logs an item put at `pos` on `page` (`btree_insert`), encoded from the borrowed item.
fn log_insert(
    ctx: &Ctx,
    page: u64,
    pos: usize,
    item: &[u8],
    g: &mut [u8],
    w: &mut Logger,
) -> Result<()> {
    let mut payload = Vec::with_capacity(item.len() + 8);
    wal_records::put_insert(&mut payload, page, pos as u16, item);
    let named = w.row_ref.as_ref().filter(|r| {
        IndexPage(g).is_leaf() && key::split_item(item).is_some_and(|(_, id)| id == r.id)
    });
    match named {
        Some(r) => {
            let mut short = Vec::with_capacity(16);
            wal_records::put_insert_row(&mut short, page, pos as u16, r.id.slot, &r.key);
            ctx.wal.append_page_change_referring(
                wal_records::BTREE_INSERT_ROW,
                w.xid,
                &short,
                r.rows_lsn,
                (wal_records::BTREE_INSERT, &payload),
                g,
                Some(w.stats),
            )?;
        }
        None => {
            ctx.wal.append_page_change(
                wal_records::BTREE_INSERT,
                w.xid,
                &payload,
                g,
                Some(w.stats),
            )?;
        }
    }
    Ok(())
}

/// A descent's check of each page it reaches: a page of the level it expects, not the
/// meta page.
fn check_level(ix: &Index, page: u64, p: &IndexPage, expect: u16) -> Result<()> {
    if p.is_free() {
        return Err(corrupt(ix, page, "a free page in the tree"));
    }
    if p.level() != expect || p.is_meta() {
        return Err(corrupt(
            ix,
            page,
            format!("level {} where level {expect} was expected", p.level()),
        ));
    }
    Ok(())
}

/// The root page and its level.
fn root(ctx: &Ctx, ix: &Index) -> Result<(u64, u16)> {
    let known = ix.root.load(Ordering::Acquire);
    if known != 0 {
        return Ok(((known >> 16) - 1, known as u16));
    }
    let pinned = pin(ctx, ix, ix.meta)?;
    let g = pinned.read();
    let (root, level) = IndexPage(&g)
        .meta()
        .ok_or_else(|| corrupt(ix, ix.meta, "the meta page names no root"))?;
    remember_root(ix, root, level);
    Ok((root, level))
}

/// Keeps the root the meta page names for the next descents (`Index::root`).
fn remember_root(ix: &Index, root: u64, level: u16) {
    if let Some(packed) = root.checked_add(1).and_then(|r| r.checked_mul(1 << 16)) {
        ix.root.store(packed | level as u64, Ordering::Release);
    }
}

/// Where a descent ended.
struct Descent<'p> {
    /// The page at the level asked for whose range holds the probe, still pinned (its
    /// latch released).
    pinned: PinnedPage<'p>,
    page: u64,
    /// The pages above it, root first (the last page visited on each level).
    path: Vec<u64>,
    /// A move right from a page to its sibling: (level, from), the first one made.
    moved: Option<(u16, u64)>,
}

/// Finds the page at `level` whose range holds `probe`.
fn descend<'p>(ctx: &Ctx<'p>, ix: &Index, probe: &[u8], level: u16) -> Result<Descent<'p>> {
    let (mut page, root_level) = root(ctx, ix)?;
    if level > root_level {
        return Err(corrupt(
            ix,
            page,
            format!("no level {level} (root level {root_level})"),
        ));
    }
    let mut expect = root_level;
    let mut path = Vec::with_capacity(root_level as usize);
    let mut moved = None;
    let mut hops = 0u64;
    loop {
        let pinned = pin(ctx, ix, page)?;
        let g = pinned.read();
        let p = IndexPage(&g);
        check_level(ix, page, &p, expect)?;
        if p.beyond(probe) {
            let Some(right) = p.right() else {
                return Err(corrupt(ix, page, "a high key but no right sibling"));
            };
            hops += 1;
            if hops > ctx.pool.store().next_page_no() {
                return Err(corrupt(ix, page, "right siblings form a cycle"));
            }
            moved.get_or_insert((expect, page));
            page = right;
            continue;
        }
        if expect == level {
            drop(g);
            return Ok(Descent {
                pinned,
                page,
                path,
                moved,
            });
        }
        if p.count() == 0 {
            return Err(corrupt(ix, page, "an internal page without items"));
        }
        path.push(page);
        page = child_of(p.item(p.child_pos(probe)));
        expect -= 1;
    }
}

/// Inserts a leaf item (`key | row id`). An item already there is left as it is (a row
/// id reused after its row went, whose entry vacuum has yet to remove, with the same key).
pub fn insert(ctx: &Ctx, ix: &Index, item: &[u8], w: &mut Logger) -> Result<()> {
    check_size(ctx, ix, item)?;
    {
        let _shared = ix.tree.read().unwrap_or_else(|e| e.into_inner());
        let d = descend(ctx, ix, item, 0)?;
        if d.moved.is_none() {
            let mut g = d.pinned.write();
            let mut p = IndexPageMut(&mut g);
            // No split can run meanwhile (they hold the lock exclusively), so the leaf
            // still holds the item's range.
            let pos = match p.search(item) {
                Ok(_) => return Ok(()),
                Err(pos) => pos,
            };
            if p.insert(pos, item) {
                return log_insert(ctx, d.page, pos, item, &mut g, w);
            }
        }
    }
    let _exclusive = ix.tree.write().unwrap_or_else(|e| e.into_inner());
    insert_exclusive(ctx, ix, item, item, 0, w)
}

/// Inserts `item` at `level` under the exclusive lock, first putting in any downlink a
/// crash left out on the way.
fn insert_exclusive(
    ctx: &Ctx,
    ix: &Index,
    probe: &[u8],
    item: &[u8],
    level: u16,
    w: &mut Logger,
) -> Result<()> {
    loop {
        let d = descend(ctx, ix, probe, level)?;
        if let Some((lvl, from)) = d.moved {
            fix_downlink(ctx, ix, lvl, from, w)?;
            continue;
        }
        let Descent {
            pinned, page, path, ..
        } = d;
        return insert_at(ctx, ix, pinned, page, path, probe, item, level, w);
    }
}

/// Puts in the parent the downlink to `from`'s right sibling, which a crash in the
/// middle of a split left out (or makes a new root over `from` and its sibling).
fn fix_downlink(ctx: &Ctx, ix: &Index, level: u16, from: u64, w: &mut Logger) -> Result<()> {
    let (high, right) = {
        let pinned = pin(ctx, ix, from)?;
        let g = pinned.read();
        let p = IndexPage(&g);
        match (p.high_key(), p.right()) {
            (Some(h), Some(r)) => (h.to_vec(), r),
            _ => return Err(corrupt(ix, from, "moved right from a page without sibling")),
        }
    };
    let (_, root_level) = root(ctx, ix)?;
    let up = level
        .checked_add(1)
        .ok_or_else(|| corrupt(ix, from, "a tree of more levels than can be"))?;
    if level == root_level {
        return new_root(ctx, ix, from, &high, right, up, w);
    }
    insert_exclusive(ctx, ix, &high, &internal_item(&high, right), up, w)
}

/// Where `item` goes on a page at `level`.
fn position(p: &IndexPage, probe: &[u8], item: &[u8]) -> usize {
    if p.is_leaf() {
        match p.search(item) {
            Ok(pos) | Err(pos) => pos,
        }
    } else {
        p.child_pos(probe) + 1
    }
}

/// Inserts `item` on `page` (exclusive lock held), splitting it, and then its parents,
/// as needed.
#[allow(clippy::too_many_arguments)]
fn insert_at(
    ctx: &Ctx,
    ix: &Index,
    pinned: PinnedPage,
    page: u64,
    mut path: Vec<u64>,
    probe: &[u8],
    item: &[u8],
    level: u16,
    w: &mut Logger,
) -> Result<()> {
    let mut g = pinned.write_any_order();
    let p = IndexPage(&g);
    if p.is_leaf() && p.search(item).is_ok() {
        return Ok(());
    }
    let pos = position(&p, probe, item);
    if IndexPageMut(&mut g).insert(pos, item) {
        return log_insert(ctx, page, pos, item, &mut g, w);
    }
    // Split: choose where, with the new item counted in.
    let p = IndexPage(&g);
    let n = p.count();
    if n == 0 {
        return Err(corrupt(ix, page, "an item does not fit in an empty page"));
    }
    let virt = |i: usize| -> &[u8] {
        match i.cmp(&pos) {
            std::cmp::Ordering::Less => p.item(i),
            std::cmp::Ordering::Equal => item,
            std::cmp::Ordering::Greater => p.item(i - 1),
        }
    };
    let sep_at = |split: usize| {
        if p.is_leaf() {
            key::separator(virt(split - 1), virt(split))
        } else {
            separator_of(virt(split)).to_vec()
        }
    };
    // Where to split: both halves must fit with their high keys (the left one the new
    // separator, the right one the old high key). The rightmost page growing at its end
    // (ascending keys) stays full and the new page starts with the new item alone;
    // otherwise the split that evens the halves out most.
    let usable = ctx.pool.page_size() - INDEX_HEADER_BYTES;
    let old_high = p.high_key().map_or(0, |h| h.len());
    let mut before = Vec::with_capacity(n + 2);
    before.push(0usize);
    for i in 0..=n {
        before.push(before[i] + virt(i).len() + ITEM_SLOT_BYTES);
    }
    let total = before[n + 1];
    let cost = |k: usize, sep: &[u8]| -> Option<usize> {
        let left = before[k] + sep.len();
        let right = total - before[k] + old_high;
        (left <= usable && right <= usable).then_some(left.max(right))
    };
    let mut best: Option<(usize, usize, Vec<u8>)> = None;
    if p.right().is_none() && pos == n {
        let sep = sep_at(n);
        if cost(n, &sep).is_some() {
            best = Some((0, n, sep));
        }
    }
    if best.is_none() {
        for k in 1..=n {
            let sep = sep_at(k);
            if let Some(c) = cost(k, &sep) {
                if best.as_ref().is_none_or(|b| c < b.0) {
                    best = Some((c, k, sep));
                }
            }
        }
    }
    let Some((_, split, sep)) = best else {
        return Err(corrupt(ix, page, "no split leaves both halves fitting"));
    };
    let goes_left = pos < split;
    let cut = if goes_left { split - 1 } else { split };
    let new_page = take_page(ctx, ix, w)?;
    // A split's right page is rebuilt at redo from its left page, which must then wait
    // for it (rule 28), when its number is above the left page's (always so for a new
    // page): waits only ever point at higher page numbers, so they never form a cycle. A
    // page from the free list below the left page is logged whole (rule 33).
    let rebuilt = ctx.pool.store().protection() == Protection::Cow && new_page > page;
    let rpinned = ctx.pool.fetch(new_page, Fetch::Overwrite)?;
    let mut rg = rpinned.write_any_order();
    {
        let mut r = IndexPageMut(&mut rg);
        r.init(new_page, ix.id, level);
        let items = (cut..n).map(|i| p.item(i));
        if !r.fill(items, p.high_key(), p.right()) {
            return Err(corrupt(ix, page, "the right half of a split does not fit"));
        }
    }
    let rrec = if rebuilt {
        BTreeRecord::SplitRight {
            page: new_page,
            index: ix.id,
            left: page,
            from: cut as u16,
        }
    } else {
        BTreeRecord::of_page(&rg)
    };
    log(ctx, &rrec, &mut rg, w)?;
    ix.add_page(new_page);
    if !IndexPageMut(&mut g).truncate(cut, &sep, new_page) {
        return Err(corrupt(ix, page, "the high key of a split does not fit"));
    }
    let lrec = BTreeRecord::SplitLeft {
        page,
        at: cut as u16,
        right: new_page,
        high_key: sep.clone(),
    };
    log(ctx, &lrec, &mut g, w)?;
    if rebuilt {
        pinned.write_after(new_page);
    }
    // The new item, on its side.
    let (tpage, tpos) = if goes_left {
        (page, pos)
    } else {
        (new_page, pos - cut)
    };
    let tg: &mut [u8] = if goes_left { &mut g } else { &mut rg };
    if !IndexPageMut(tg).insert(tpos, item) {
        return Err(corrupt(ix, tpage, "an item does not fit after a split"));
    }
    log_insert(ctx, tpage, tpos, item, tg, w)?;
    drop(rg);
    drop(g);
    let up = level
        .checked_add(1)
        .ok_or_else(|| corrupt(ix, page, "a tree of more levels than can be"))?;
    match path.pop() {
        None => new_root(ctx, ix, page, &sep, new_page, up, w),
        Some(parent) => insert_at(
            ctx,
            ix,
            pin(ctx, ix, parent)?,
            parent,
            path,
            &sep,
            &internal_item(&sep, new_page),
            up,
            w,
        ),
    }
}

/// A new root at `level` over `left` and `right` (divided by `sep`), named by the meta
/// page.
fn new_root(
    ctx: &Ctx,
    ix: &Index,
    left: u64,
    sep: &[u8],
    right: u64,
    level: u16,
    w: &mut Logger,
) -> Result<()> {
    let root = take_page(ctx, ix, w)?;
    let rp = ctx.pool.fetch(root, Fetch::Overwrite)?;
    let mut g = rp.write_any_order();
    let items = [internal_item(b"", left), internal_item(sep, right)];
    let mut p = IndexPageMut(&mut g);
    p.init(root, ix.id, level);
    if !p.fill(items.iter().map(|i| i.as_slice()), None, None) {
        return Err(corrupt(ix, root, "a new root does not fit"));
    }
    log_page(ctx, &mut g, w)?;
    ix.add_page(root);
    drop(g);
    let mp = pin(ctx, ix, ix.meta)?;
    let mut mg = mp.write_any_order();
    IndexPageMut(&mut mg).set_meta(root, level);
    remember_root(ix, root, level);
    let rec = BTreeRecord::Meta {
        page: ix.meta,
        root,
        level,
    };
    log(ctx, &rec, &mut mg, w)
}

/// The first page of the index's free list (the meta page's right-sibling field).
fn free_head(ctx: &Ctx, ix: &Index) -> Result<Option<u64>> {
    let mp = pin(ctx, ix, ix.meta)?;
    let g = mp.read();
    Ok(IndexPage(&g).right())
}

/// Makes the meta page name `head` as the free list's first page (`btree_link`).
fn set_free_head(ctx: &Ctx, ix: &Index, head: Option<u64>, w: &mut Logger) -> Result<()> {
    let mp = pin(ctx, ix, ix.meta)?;
    let mut mg = mp.write_any_order();
    IndexPageMut(&mut mg).set_right(head);
    let rec = BTreeRecord::Link {
        page: ix.meta,
        right: head,
        high_key: None,
    };
    log(ctx, &rec, &mut mg, w)
}

/// A page for a split or a new root (exclusive lock held, so the free list cannot
/// change meanwhile): the first on the index's free list, which the meta page then no
/// longer names, or a new one (the meta page untouched). The caller formats it and logs
/// it.
fn take_page(ctx: &Ctx, ix: &Index, w: &mut Logger) -> Result<u64> {
    let Some(free) = free_head(ctx, ix)? else {
        return alloc(ctx);
    };
    let next = {
        let fp = pin(ctx, ix, free)?;
        let fg = fp.read();
        let f = IndexPage(&fg);
        if !f.is_free() {
            return Err(corrupt(ix, free, "on the free list but not a free page"));
        }
        f.right()
    };
    set_free_head(ctx, ix, next, w)?;
    Ok(free)
}

/// Puts an unreachable page of the index on its free list (exclusive lock held): the
/// page formatted free, naming the list's first page (`btree_page`), then the meta page
/// naming it (`btree_link`). A crash between them leaves the page unreachable again,
/// and the next `reclaim` frees it.
fn free_page(ctx: &Ctx, ix: &Index, page: u64, w: &mut Logger) -> Result<()> {
    let head = free_head(ctx, ix)?;
    {
        let fp = pin(ctx, ix, page)?;
        let mut fg = fp.write_any_order();
        IndexPageMut(&mut fg).init_free(page, ix.id, head);
        log_page(ctx, &mut fg, w)?;
    }
    set_free_head(ctx, ix, Some(page), w)
}

/// What `reclaim` gave back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Empty leaves taken out of the tree and put on the free list.
    pub unlinked: u64,
    /// Pages of the index reachable from nowhere (a split or a removal a crash cut
    /// short) put on the free list.
    pub unreachable: u64,
}

/// Gives back the index's empty leaves and unreachable pages (VACUUM, after it removed
/// dead entries), holding the structure lock exclusively: each empty leaf loses its
/// downlink (`btree_delete` on its parent), then its left sibling takes over its right
/// sibling — and its high key when the leaf's keys now reach the sibling
/// (`btree_link`) — and the page goes on the free list. A leaf stays when it is its
/// parent's only child. docs/recovery.md rule 33.
pub fn reclaim(ctx: &Ctx, ix: &Index, w: &mut Logger) -> Result<Reclaimed> {
    let _exclusive = ix.tree.write().unwrap_or_else(|e| e.into_inner());
    let mut out = Reclaimed::default();
    let levels = walk_levels(ctx, ix)?;
    if levels.len() > 1 {
        let mut parent_of = std::collections::HashMap::new();
        for &(parent, _) in &levels[1] {
            let pinned = pin(ctx, ix, parent)?;
            let g = pinned.read();
            let p = IndexPage(&g);
            for i in 0..p.count() {
                parent_of.insert(child_of(p.item(i)), parent);
            }
        }
        let mut left: Option<u64> = None;
        for &(leaf, count) in &levels[0] {
            if count == 0 && unlink(ctx, ix, left, leaf, parent_of.get(&leaf).copied(), w)? {
                free_page(ctx, ix, leaf, w)?;
                out.unlinked += 1;
            } else {
                left = Some(leaf);
            }
        }
    }
    // Pages no level, free list or meta page reaches.
    let mut reached: std::collections::HashSet<u64> =
        levels.iter().flatten().map(|&(p, _)| p).collect();
    reached.insert(ix.meta);
    reached.extend(free_list(ctx, ix)?);
    for page in ix.page_list() {
        if reached.contains(&page) {
            continue;
        }
        match pin(ctx, ix, page) {
            // Not a page of this index (it never was written, or holds another's):
            // left alone; `check` reports it.
            Err(Error::CorruptIndex { .. }) => continue,
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        free_page(ctx, ix, page, w)?;
        out.unreachable += 1;
    }
    Ok(out)
}

/// Takes the empty leaf `leaf` out of the tree: its downlink goes from `parent` (unless it
/// is the parent's only one), then its left sibling `left` skips it. False, with nothing
/// changed, when it has to stay.
fn unlink(
    ctx: &Ctx,
    ix: &Index,
    left: Option<u64>,
    leaf: u64,
    parent: Option<u64>,
    w: &mut Logger,
) -> Result<bool> {
    let (high, right) = {
        let pinned = pin(ctx, ix, leaf)?;
        let g = pinned.read();
        let p = IndexPage(&g);
        check_level(ix, leaf, &p, 0)?;
        if p.count() != 0 {
            return Ok(false);
        }
        (p.high_key().map(|h| h.to_vec()), p.right())
    };
    if let Some(l) = left {
        let pinned = pin(ctx, ix, l)?;
        let g = pinned.read();
        if IndexPage(&g).right() != Some(leaf) {
            return Ok(false);
        }
    }
    // 1. No descent ends at the leaf any more: its keys go to the child before it in the
    // parent (and on through the leaf, until step 2), or to the one after it when it
    // was first.
    if let Some(parent) = parent {
        let pinned = pin(ctx, ix, parent)?;
        let mut g = pinned.write_any_order();
        let p = IndexPage(&g);
        let Some(pos) = (0..p.count()).find(|&i| child_of(p.item(i)) == leaf) else {
            return Ok(false);
        };
        if p.count() == 1 {
            return Ok(false);
        }
        IndexPageMut(&mut g).remove(&[pos]);
        let rec = BTreeRecord::Delete {
            page: parent,
            positions: vec![pos as u16],
        };
        log(ctx, &rec, &mut g, w)?;
    }
    // 2. The left sibling skips the leaf. When the leaf's keys still reach it through the
    // left sibling, that sibling takes its high key too.
    let Some(l) = left else {
        // The leftmost leaf: with its downlink gone nothing reaches it.
        return Ok(parent.is_some());
    };
    let low = {
        let pinned = pin(ctx, ix, l)?;
        let g = pinned.read();
        IndexPage(&g).high_key().map(|h| h.to_vec())
    };
    let Some(low) = low else {
        return Err(corrupt(ix, l, "a right sibling but no high key"));
    };
    let takes_over = descend(ctx, ix, &low, 0)?.page == leaf;
    let pinned = pin(ctx, ix, l)?;
    let mut g = pinned.write_any_order();
    let new_high = if takes_over { high } else { Some(low) };
    if !IndexPageMut(&mut g).set_link(new_high.as_deref(), right) {
        // The high key does not fit: the leaf stays linked, with no downlink (a state a
        // crash may leave too); a later reclaim tries again.
        return Ok(false);
    }
    let rec = BTreeRecord::Link {
        page: l,
        right,
        high_key: new_high,
    };
    log(ctx, &rec, &mut g, w)?;
    Ok(true)
}

/// Each level's pages, leaves first, in key order along the right links from the
/// leftmost page (reached down the first downlinks), with their item counts.
fn walk_levels(ctx: &Ctx, ix: &Index) -> Result<Vec<Vec<(u64, usize)>>> {
    let (root, root_level) = root(ctx, ix)?;
    let limit = ctx.pool.store().next_page_no();
    let mut levels = vec![Vec::new(); root_level as usize + 1];
    let mut first = root;
    for level in (0..=root_level).rev() {
        let mut page = first;
        let mut next_first = None;
        loop {
            let pinned = pin(ctx, ix, page)?;
            let g = pinned.read();
            let p = IndexPage(&g);
            check_level(ix, page, &p, level)?;
            if level > 0 && next_first.is_none() {
                if p.count() == 0 {
                    return Err(corrupt(ix, page, "an internal page without items"));
                }
                next_first = Some(child_of(p.item(0)));
            }
            let row = &mut levels[level as usize];
            row.push((page, p.count()));
            if row.len() as u64 > limit {
                return Err(corrupt(ix, page, "right siblings form a cycle"));
            }
            match p.right() {
                Some(r) => page = r,
                None => break,
            }
        }
        if let Some(f) = next_first {
            first = f;
        }
    }
    Ok(levels)
}

/// The pages on the index's free list, in order.
fn free_list(ctx: &Ctx, ix: &Index) -> Result<Vec<u64>> {
    let mut pages = Vec::new();
    let mut next = free_head(ctx, ix)?;
    let mut seen = std::collections::HashSet::new();
    while let Some(page) = next {
        if !seen.insert(page) {
            return Err(corrupt(ix, page, "the free list forms a cycle"));
        }
        let pinned = pin(ctx, ix, page)?;
        let g = pinned.read();
        let p = IndexPage(&g);
        if !p.is_free() {
            return Err(corrupt(ix, page, "on the free list but not a free page"));
        }
        pages.push(page);
        next = p.right();
    }
    Ok(pages)
}

/// Removes a leaf item; false when it is not there.
pub fn delete(ctx: &Ctx, ix: &Index, item: &[u8], w: &mut Logger) -> Result<bool> {
    let _shared = ix.tree.read().unwrap_or_else(|e| e.into_inner());
    let d = descend(ctx, ix, item, 0)?;
    let mut g = d.pinned.write();
    let mut p = IndexPageMut(&mut g);
    let Ok(pos) = p.search(item) else {
        return Ok(false);
    };
    p.remove(&[pos]);
    let rec = BTreeRecord::Delete {
        page: d.page,
        positions: vec![pos as u16],
    };
    log(ctx, &rec, &mut g, w)?;
    Ok(true)
}

/// Deletes leaf items (`items` ascending), a leaf at a time: one record per leaf for all
/// of its items. Items not there are skipped. Returns how many were removed.
pub fn delete_sorted(ctx: &Ctx, ix: &Index, items: &[Vec<u8>], w: &mut Logger) -> Result<u64> {
    let _shared = ix.tree.read().unwrap_or_else(|e| e.into_inner());
    let mut removed = 0u64;
    let mut i = 0;
    while i < items.len() {
        let d = descend(ctx, ix, &items[i], 0)?;
        let mut g = d.pinned.write();
        let mut p = IndexPageMut(&mut g);
        // No split runs meanwhile (they hold the lock exclusively): the leaf holds every
        // item below its high key.
        let high = p.high_key().map(|h| h.to_vec());
        let mut positions = Vec::new();
        while i < items.len()
            && high
                .as_ref()
                .is_none_or(|h| items[i].as_slice() < h.as_slice())
        {
            if let Ok(pos) = p.search(&items[i]) {
                positions.push(pos);
            }
            i += 1;
        }
        if positions.is_empty() {
            continue;
        }
        p.remove(&positions);
        removed += positions.len() as u64;
        let rec = BTreeRecord::Delete {
            page: d.page,
            positions: positions.iter().map(|&p| p as u16).collect(),
        };
        log(ctx, &rec, &mut g, w)?;
    }
    Ok(removed)
}

/// Calls `f` with each leaf item at or above `start` whose key (the item without its
/// row id) is below `stop` (all of them for None), in order, until it returns false.
/// Items are copied a leaf at a time, up to the first past `stop`, and `f` runs with
/// no lock or latch held; a leaf's items are those it held when copied.
pub fn scan(
    ctx: &Ctx,
    ix: &Index,
    start: &[u8],
    stop: Option<&[u8]>,
    f: &mut dyn FnMut(&[u8]) -> Result<bool>,
) -> Result<()> {
    scan_with(ctx, ix, start, stop, true, f)
}

fn scan_with(
    ctx: &Ctx,
    ix: &Index,
    start: &[u8],
    stop: Option<&[u8]>,
    take_lock: bool,
    f: &mut dyn FnMut(&[u8]) -> Result<bool>,
) -> Result<()> {
    let mut probe = start.to_vec();
    let mut batch: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = Vec::new();
    let below_stop = |item: &[u8]| match (stop, key::split_item(item)) {
        (Some(s), Some((k, _))) => k < s,
        _ => true,
    };
    loop {
        let next = {
            let _shared = take_lock.then(|| ix.tree.read().unwrap_or_else(|e| e.into_inner()));
            let d = descend(ctx, ix, &probe, 0)?;
            let g = d.pinned.read();
            let p = IndexPage(&g);
            batch.clear();
            ends.clear();
            let from = match p.search(&probe) {
                Ok(i) | Err(i) => i,
            };
            let mut ended = false;
            for i in from..p.count() {
                let item = p.item(i);
                if !below_stop(item) {
                    ended = true;
                    break;
                }
                batch.extend_from_slice(item);
                ends.push(batch.len());
            }
            // Nothing right of the first item past `stop` is wanted.
            p.high_key().filter(|_| !ended).map(|h| h.to_vec())
        };
        let mut at = 0;
        for &end in &ends {
            if !f(&batch[at..end])? {
                return Ok(());
            }
            at = end;
        }
        match next {
            Some(h) => probe = h,
            None => return Ok(()),
        }
    }
}

/// Calls `f` with each leaf item below `end` (all items for None), in descending order,
/// until it returns false. Like `scan`, a leaf at a time with nothing held while `f`
/// runs. Pages have no left links: each batch descends again to the leaf holding the
/// keys just below the bound, and the next bound is that leaf's low key (the separator
/// that led to it, or the high key of the page a move right came from).
pub fn scan_backward(
    ctx: &Ctx,
    ix: &Index,
    end: Option<&[u8]>,
    f: &mut dyn FnMut(&[u8]) -> Result<bool>,
) -> Result<()> {
    let mut bound: Option<Vec<u8>> = end.map(|e| e.to_vec());
    let mut batch: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = Vec::new();
    loop {
        let low = {
            let _shared = ix.tree.read().unwrap_or_else(|e| e.into_inner());
            let (mut page, root_level) = root(ctx, ix)?;
            let mut expect = root_level;
            let mut low: Option<Vec<u8>> = None;
            let mut hops = 0u64;
            loop {
                let pinned = pin(ctx, ix, page)?;
                let g = pinned.read();
                let p = IndexPage(&g);
                check_level(ix, page, &p, expect)?;
                // Keys just below the bound lie right of a high key below it.
                let right_of = match (p.high_key(), &bound) {
                    (Some(h), Some(b)) => h < b.as_slice(),
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                if right_of {
                    let Some(right) = p.right() else {
                        return Err(corrupt(ix, page, "a high key but no right sibling"));
                    };
                    hops += 1;
                    if hops > ctx.pool.store().next_page_no() {
                        return Err(corrupt(ix, page, "right siblings form a cycle"));
                    }
                    low = p.high_key().map(|h| h.to_vec());
                    page = right;
                    continue;
                }
                if expect == 0 {
                    batch.clear();
                    ends.clear();
                    let upto = match &bound {
                        Some(b) => match p.search(b) {
                            Ok(i) | Err(i) => i,
                        },
                        None => p.count(),
                    };
                    for i in (0..upto).rev() {
                        batch.extend_from_slice(p.item(i));
                        ends.push(batch.len());
                    }
                    break low;
                }
                if p.count() == 0 {
                    return Err(corrupt(ix, page, "an internal page without items"));
                }
                // The last child whose separator lies below the bound.
                let pos = match &bound {
                    None => p.count() - 1,
                    Some(b) => {
                        let at = p.child_pos(b);
                        if at > 0 && separator_of(p.item(at)) == b.as_slice() {
                            at - 1
                        } else {
                            at
                        }
                    }
                };
                if pos > 0 {
                    low = Some(separator_of(p.item(pos)).to_vec());
                }
                page = child_of(p.item(pos));
                expect -= 1;
            }
        };
        let mut at = 0;
        for &stop in &ends {
            if !f(&batch[at..stop])? {
                return Ok(());
            }
            at = stop;
        }
        match low {
            // Progress: the low key lies below the bound (separators below it were
            // chosen, and a high key below it was moved past).
            Some(l) if bound.as_ref().is_none_or(|b| l < *b) => bound = Some(l),
            Some(_) => return Err(corrupt(ix, ix.meta, "a backward scan made no progress")),
            None => return Ok(()),
        }
    }
}

/// The shape of an index as `check` found it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// Levels (1 for a tree that is one leaf).
    pub levels: u16,
    /// Pages reached, per level from the leaves up.
    pub pages: Vec<u64>,
    pub entries: u64,
    /// Pages no parent points to (a split whose downlink a crash left out; the next
    /// insert that passes puts it in).
    pub missing_downlinks: u64,
    /// Pages on the index's free list.
    pub free_pages: u64,
    /// Pages of the index neither in the tree nor on its free list (a split or page
    /// removal a crash cut short; the next VACUUM frees them).
    pub unreachable: u64,
}

/// Walks the whole tree, level by level along the right links, and checks what must
/// hold: each page is an index page of this index at its level, items are in strictly
/// ascending order and below the page's high key, a page's first item is not below the
/// high key of the page before it, a page has a high key exactly when it has a right
/// sibling, and every downlink leads to a page of the level below. `problems` gets each
/// violation; `leaf_item` sees every leaf item in order. An unreadable page is an
/// error (the walk cannot go on).
pub fn check(
    ctx: &Ctx,
    ix: &Index,
    problems: &mut Vec<String>,
    leaf_item: &mut dyn FnMut(&[u8]),
) -> Result<Shape> {
    let _shared = ix.tree.read().unwrap_or_else(|e| e.into_inner());
    let (root, root_level) = root(ctx, ix)?;
    let mut shape = Shape {
        levels: root_level + 1,
        pages: vec![0; root_level as usize + 1],
        ..Shape::default()
    };
    let limit = ctx.pool.store().next_page_no();
    let mut first = root;
    let mut children: std::collections::HashSet<u64> = std::collections::HashSet::new();
    let mut seen: std::collections::HashSet<u64> = std::collections::HashSet::new();
    seen.insert(ix.meta);
    for level in (0..=root_level).rev() {
        let mut page = first;
        let mut next_first = None;
        let mut prev_high: Option<Vec<u8>> = None;
        let mut next_children = std::collections::HashSet::new();
        let mut hops = 0u64;
        loop {
            hops += 1;
            if hops > limit {
                problems.push(format!(
                    "index {:?} level {level}: right links form a cycle",
                    ix.name
                ));
                break;
            }
            let orphan = level < root_level && !children.remove(&page);
            if orphan {
                shape.missing_downlinks += 1;
            }
            let pinned = pin(ctx, ix, page)?;
            let g = pinned.read();
            let p = IndexPage(&g);
            shape.pages[level as usize] += 1;
            seen.insert(page);
            let at = |what: String| format!("index {:?} page {page}: {what}", ix.name);
            if p.is_free() {
                problems.push(at("a free page in the tree".into()));
                break;
            }
            if p.is_meta() || p.level() != level {
                problems.push(at(format!(
                    "level {} where {level} was expected",
                    p.level()
                )));
                break;
            }
            let key_of = |i: usize| -> &[u8] {
                if level == 0 {
                    p.item(i)
                } else {
                    separator_of(p.item(i))
                }
            };
            // Internal pages: the first item's separator stands for minus infinity.
            let from = if level == 0 { 0 } else { 1 };
            for i in from..p.count() {
                if i > from && key_of(i - 1) >= key_of(i) {
                    problems.push(at(format!("items {} and {i} are out of order", i - 1)));
                }
                if let Some(h) = p.high_key() {
                    if key_of(i) >= h {
                        problems.push(at(format!("item {i} is not below the high key")));
                    }
                }
            }
            if let (Some(h), true) = (&prev_high, p.count() > from) {
                if key_of(from) < h.as_slice() {
                    problems.push(at(
                        "its first item is below the high key of the page before it".into(),
                    ));
                }
            }
            if level == 0 {
                for i in 0..p.count() {
                    leaf_item(p.item(i));
                    shape.entries += 1;
                }
            } else {
                if p.count() == 0 {
                    problems.push(at("an internal page without items".into()));
                }
                for i in 0..p.count() {
                    let c = child_of(p.item(i));
                    next_first.get_or_insert(c);
                    next_children.insert(c);
                }
            }
            match (p.right(), p.high_key()) {
                (Some(r), Some(h)) => {
                    // An empty page without a downlink may be one a crash left half
                    // removed (rule 33): its keys may have gone to its right sibling,
                    // so its high key bounds nothing.
                    if !(orphan && p.count() == 0) {
                        prev_high = Some(h.to_vec());
                    }
                    page = r;
                }
                (None, None) => break,
                (Some(_), None) => {
                    problems.push(at("a right sibling but no high key".into()));
                    break;
                }
                (None, Some(_)) => {
                    problems.push(at("a high key but no right sibling".into()));
                    break;
                }
            }
        }
        for c in &children {
            problems.push(format!(
                "index {:?} level {}: page {c} has a downlink but is not on the level",
                ix.name, level
            ));
        }
        children = next_children;
        match next_first {
            Some(f) => first = f,
            None if level > 0 => break,
            None => {}
        }
    }
    // The free list: free pages of this index, none in the tree, no cycle.
    match free_list(ctx, ix) {
        Ok(free) => {
            shape.free_pages = free.len() as u64;
            for page in free {
                if !seen.insert(page) {
                    problems.push(format!(
                        "index {:?} free page {page}: also in the tree",
                        ix.name
                    ));
                }
            }
        }
        Err(e) => problems.push(e.to_string()),
    }
    shape.unreachable = ix.page_list().iter().filter(|p| !seen.contains(p)).count() as u64;
    Ok(shape)
}

/// What a uniqueness check makes of one entry with the new item's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The entry's row does not hold the key (gone, or changed since).
    Fine,
    /// A live row holds the key.
    Conflict,
    /// A running transaction decides: wait for it, then try again.
    Wait(u64),
}

/// The outcome of `insert_unique`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unique {
    Inserted,
    /// The row at this id holds the key.
    Conflict(crate::RowId),
    /// Wait for this transaction (with no lock held), then call again.
    Wait(u64),
}

/// Inserts a leaf item into a unique index after `check` passed every other entry with
/// the same key (the first `key_len` bytes of `item`). Check and insert run under the
/// exclusive structure lock, so that no second insert of the key can slip between; the
/// check reads rows but never waits.
pub fn insert_unique(
    ctx: &Ctx,
    ix: &Index,
    item: &[u8],
    key_len: usize,
    check: &mut dyn FnMut(crate::RowId) -> Result<Verdict>,
    w: &mut Logger,
) -> Result<Unique> {
    check_size(ctx, ix, item)?;
    let key = &item[..key_len];
    let _exclusive = ix.tree.write().unwrap_or_else(|e| e.into_inner());
    let holds_key = |it: &[u8]| it.starts_with(key) && it.len() == key_len + ROW_ID_BYTES;
    let mut outcome = Unique::Inserted;
    let mut verdict = |it: &[u8]| -> Result<bool> {
        if it == item {
            return Ok(true);
        }
        let Some((_, id)) = key::split_item(it) else {
            return Ok(true);
        };
        match check(id)? {
            Verdict::Fine => Ok(true),
            Verdict::Conflict => {
                outcome = Unique::Conflict(id);
                Ok(false)
            }
            Verdict::Wait(x) => {
                outcome = Unique::Wait(x);
                Ok(false)
            }
        }
    };
    // One descent when it can do: the leaf whose range holds the key, if the items
    // holding it end on that leaf (an item after them, or no right sibling). Every item
    // holding the key is then on it, and so is the new item's place (below the item
    // after them). Nothing changes the tree meanwhile (the lock is exclusive), so the
    // items are checked with no latch held and the item put in from the same descent.
    let d = descend(ctx, ix, key, 0)?;
    if d.moved.is_none() {
        let (holders, ends_here) = {
            let g = d.pinned.read();
            let p = IndexPage(&g);
            let from = match p.search(key) {
                Ok(i) | Err(i) => i,
            };
            let holders: Vec<Vec<u8>> = (from..p.count())
                .map(|i| p.item(i))
                .take_while(|it| holds_key(it))
                .map(<[u8]>::to_vec)
                .collect();
            let ends_here = from + holders.len() < p.count() || p.right().is_none();
            (holders, ends_here)
        };
        if ends_here {
            for it in &holders {
                if !verdict(it)? {
                    return Ok(outcome);
                }
            }
            let Descent {
                pinned, page, path, ..
            } = d;
            insert_at(ctx, ix, pinned, page, path, item, item, 0, w)?;
            return Ok(outcome);
        }
    }
    drop(d);
    let stop = key::past(key.to_vec());
    scan_with(ctx, ix, key, Some(&stop), false, &mut |it| {
        if !holds_key(it) {
            return Ok(false);
        }
        verdict(it)
    })?;
    if outcome == Unique::Inserted {
        insert_exclusive(ctx, ix, item, item, 0, w)?;
    }
    Ok(outcome)
}

fn check_size(ctx: &Ctx, ix: &Index, item: &[u8]) -> Result<()> {
    let max = max_key_bytes(ctx.pool.page_size());
    let key = item.len().saturating_sub(ROW_ID_BYTES);
    if key > max {
        return Err(Error::KeyTooLarge {
            index: ix.name.clone(),
            size: key,
            max,
        });
    }
    Ok(())
}

/// Formats an empty index: its meta page and an empty root leaf, logged (`btree_page`).
/// Returns (meta page, root page).
pub fn create(ctx: &Ctx, index: u32, w: &mut Logger) -> Result<(u64, u64)> {
    ctx.pool.ensure_room(true)?;
    let meta = ctx.pool.store().allocate_page_no();
    let root = ctx.pool.store().allocate_page_no();
    if root >= PAGE_LIMIT {
        return Err(Error::DatabaseFull { pages: PAGE_LIMIT });
    }
    let rp = ctx.pool.fetch(root, Fetch::Overwrite)?;
    let mut g = rp.write_any_order();
    IndexPageMut(&mut g).init(root, index, 0);
    log_page(ctx, &mut g, w)?;
    drop(g);
    let mp = ctx.pool.fetch(meta, Fetch::Overwrite)?;
    let mut g = mp.write_any_order();
    IndexPageMut(&mut g).init_meta(meta, index, root, 0);
    log_page(ctx, &mut g, w)?;
    Ok((meta, root))
}

/// Builds an index bottom-up from its leaf items, sorted and without duplicates: leaves
/// filled to `BUILD_FILL`, then each level above from the one below, every page logged
/// whole once (`btree_page`), and the meta page last. Returns the meta page and every
/// page of the index.
pub fn build(
    ctx: &Ctx,
    index: u32,
    items: &mut dyn Iterator<Item = Vec<u8>>,
    w: &mut Logger,
) -> Result<(u64, Vec<u64>)> {
    let usable = ctx.pool.page_size() - INDEX_HEADER_BYTES;
    let meta = alloc_room(ctx)?;
    let mut pages = vec![meta];
    // Level 0 from the items; each level's pages give the level above its items.
    let mut level: u16 = 0;
    let mut below: Vec<(Vec<u8>, u64)> = Vec::new();
    let mut builder = LevelBuilder::new(index, level, usable);
    // The item before (one buffer, reused: a build adds millions of items; every item
    // ends with a row id, so only the first finds it empty).
    let mut last: Vec<u8> = Vec::new();
    for item in items {
        if !last.is_empty() && last >= item {
            return Err(Error::InvalidOption(
                "index build: items out of order or repeated".into(),
            ));
        }
        last.clear();
        last.extend_from_slice(&item);
        // A leaf item's separator is worked out from the item before it only if the
        // item starts a page (a vector per item otherwise).
        builder.add(ctx, item, None, &mut below, &mut pages, w)?;
    }
    builder.finish(ctx, &mut below, &mut pages, w)?;
    while below.len() > 1 {
        level += 1;
        let mut b = LevelBuilder::new(index, level, usable);
        let mut above = Vec::new();
        for (sep, child) in std::mem::take(&mut below) {
            let item = internal_item(&sep, child);
            b.add(ctx, item, Some(sep), &mut above, &mut pages, w)?;
        }
        b.finish(ctx, &mut above, &mut pages, w)?;
        below = above;
    }
    let root = below.first().map(|(_, p)| *p).unwrap_or(NO_ROOT);
    let mp = ctx.pool.fetch(meta, Fetch::Overwrite)?;
    let mut g = mp.write_any_order();
    IndexPageMut(&mut g).init_meta(meta, index, root, level);
    log_page(ctx, &mut g, w)?;
    pages.sort_unstable();
    Ok((meta, pages))
}

const NO_ROOT: u64 = u64::MAX;

/// `alloc` for an index build, which makes many pages in one command: room on disk
/// first (`BufferPool::ensure_room`), before the page is made.
fn alloc_room(ctx: &Ctx) -> Result<u64> {
    ctx.pool.ensure_room(true)?;
    alloc(ctx)
}

fn alloc(ctx: &Ctx) -> Result<u64> {
    let p = ctx.pool.store().allocate_page_no();
    if p >= PAGE_LIMIT {
        return Err(Error::DatabaseFull { pages: PAGE_LIMIT });
    }
    Ok(p)
}

/// The pages of one level being built left to right: the page being filled is kept in
/// memory until the next page's number (its right sibling) and its high key are known.
struct LevelBuilder {
    index: u32,
    level: u16,
    /// Bytes of items a page is filled to.
    room: usize,
    /// Bytes a page can hold.
    usable: usize,
    page_no: Option<u64>,
    /// The current page's items, each with the separator it gives when it starts a page
    /// (None: the shortest prefix of the item above the item before it).
    items: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    bytes: usize,
    /// The separator below which the current page's items start (its downlink's).
    low: Vec<u8>,
}

impl LevelBuilder {
    fn new(index: u32, level: u16, usable: usize) -> LevelBuilder {
        LevelBuilder {
            index,
            level,
            room: (usable as f64 * BUILD_FILL) as usize,
            usable,
            page_no: None,
            items: Vec::new(),
            bytes: 0,
            low: Vec::new(),
        }
    }

    /// Adds an item; `sep` is the separator it gives if it starts a page (None: derived
    /// from the item before it, `key::separator`). A full page is written first, keeping
    /// back its last items if the high key would not fit.
    fn add(
        &mut self,
        ctx: &Ctx,
        item: Vec<u8>,
        sep: Option<Vec<u8>>,
        up: &mut Vec<(Vec<u8>, u64)>,
        pages: &mut Vec<u64>,
        w: &mut Logger,
    ) -> Result<()> {
        if self.page_no.is_none() {
            self.page_no = Some(alloc_room(ctx)?);
        }
        let size = |i: &Vec<u8>| i.len() + ITEM_SLOT_BYTES;
        if !self.items.is_empty() && self.bytes + size(&item) > self.room {
            // The separator of an item that follows the page's last one.
            let after_last = |items: &[(Vec<u8>, Option<Vec<u8>>)], it: &[u8], sep| match sep {
                Some(sep) => sep,
                None => items
                    .last()
                    .map_or_else(Vec::new, |(prev, _)| key::separator(prev, it)),
            };
            let sep = after_last(&self.items, &item, sep);
            let mut carry = vec![(item, sep)];
            while self.bytes + carry[0].1.len() > self.usable && self.items.len() > 1 {
                if let Some(x) = self.items.pop() {
                    self.bytes -= size(&x.0);
                    let sep = after_last(&self.items, &x.0, x.1);
                    carry.insert(0, (x.0, sep));
                }
            }
            let next = alloc_room(ctx)?;
            let high = carry[0].1.clone();
            self.write(ctx, Some((&high, next)), up, pages, w)?;
            self.page_no = Some(next);
            self.low = high;
            for (item, sep) in carry {
                self.bytes += size(&item);
                self.items.push((item, Some(sep)));
            }
            return Ok(());
        }
        self.bytes += size(&item);
        self.items.push((item, sep));
        Ok(())
    }

    /// Writes the current page (with its right sibling and high key, if any) and hands
    /// its downlink up.
    fn write(
        &mut self,
        ctx: &Ctx,
        right: Option<(&[u8], u64)>,
        up: &mut Vec<(Vec<u8>, u64)>,
        pages: &mut Vec<u64>,
        w: &mut Logger,
    ) -> Result<()> {
        let page = match self.page_no {
            Some(p) => p,
            None => alloc_room(ctx)?,
        };
        let pinned = ctx.pool.fetch(page, Fetch::Overwrite)?;
        let mut g = pinned.write_any_order();
        let mut p = IndexPageMut(&mut g);
        p.init(page, self.index, self.level);
        // The first item of an internal level is stored with an empty separator
        // (minus infinity).
        let first_internal = self.level > 0 && up.is_empty();
        let items = self.items.iter().enumerate().map(|(i, (it, _))| {
            if i == 0 && first_internal {
                &it[it.len() - CHILD_BYTES..]
            } else {
                it.as_slice()
            }
        });
        if !p.fill(items, right.map(|(h, _)| h), right.map(|(_, r)| r)) {
            return Err(Error::InvalidOption(
                "index build: a page's items do not fit".into(),
            ));
        }
        log_page(ctx, &mut g, w)?;
        pages.push(page);
        up.push((std::mem::take(&mut self.low), page));
        self.items.clear();
        self.bytes = 0;
        Ok(())
    }

    /// Writes the last page of the level (an empty leaf when there were no items).
    fn finish(
        &mut self,
        ctx: &Ctx,
        up: &mut Vec<(Vec<u8>, u64)>,
        pages: &mut Vec<u64>,
        w: &mut Logger,
    ) -> Result<()> {
        self.write(ctx, None, up, pages, w)
    }
}
