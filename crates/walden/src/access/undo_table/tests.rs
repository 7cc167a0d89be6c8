use super::change::apply_change;
use super::change::plan_update;
use super::rollback::revert_record;
use super::wal_records::{ChangeOp, UndoTableRecord, UNDO_CHANGE};
use super::*;
use crate::page::PageMut;
use crate::wal::payload::Payload;

#[test]
fn padding_round_trips() {
    for cap in 6..12usize {
        for len in 0..=cap {
            let row: Vec<u8> = (0..len as u8).map(|b| b + 1).collect();
            let mut area = vec![0xAA; cap];
            let flags = fill_area(&mut area, &row);
            assert_eq!(
                row_of(&area, flags).unwrap(),
                &row[..],
                "cap {cap} len {len}"
            );
        }
    }
    let mut t = Vec::new();
    build_tuple(&mut t, 7, 3, b"ab");
    let h = UndoHeader::read(&t);
    assert_eq!((h.xid, h.cid, h.ptr), (7, 3, 0));
    assert_eq!(t.len(), HDR + MIN_AREA);
    assert_eq!(row_of(&t[HDR..], h.flags).unwrap(), b"ab");
}

/// Every undo-table change, applied as redo applies it and taken back as crash
/// rollback takes it back (through an encode/decode of its record): the page's rows
/// are the old ones again.
#[test]
fn change_then_revert_is_identity() {
    use crate::page::PageKind;
    let mut g = vec![0u8; 4096];
    PageMut(&mut g).init(PageKind::Heap, 3, 1);
    let rows: [&[u8]; 4] = [
        b"alpha-row-0001",
        b"beta-row-00002",
        b"gamma",
        b"delta-row-0004",
    ];
    for (i, r) in rows.iter().enumerate() {
        let mut t = Vec::new();
        build_tuple(&mut t, 0, 0, r);
        assert!(PageMut(&mut g).insert_at(i as u16, &t));
    }
    let before: Vec<Vec<u8>> = (0..4)
        .map(|s| PageRef(&g).tuple(s).unwrap()[HDR..].to_vec())
        .collect();
    let t0 = PageRef(&g).tuple(0).unwrap().to_vec();
    let mut undo_rec = Vec::new();
    let upd = plan_update(
        &t0,
        &UndoHeader::read(&t0),
        b"alpha-row-9991",
        4000,
        0,
        &mut undo_rec,
    )
    .unwrap();
    assert!(
        matches!(&upd, ChangeOp::Update { xor, .. } if xor.len() == 3),
        "{upd:?}"
    );
    let t2 = PageRef(&g).tuple(2).unwrap().to_vec();
    let grow = plan_update(
        &t2,
        &UndoHeader::read(&t2),
        b"gamma-grown-longer",
        4000,
        2,
        &mut undo_rec,
    )
    .unwrap();
    assert!(matches!(grow, ChangeOp::Resize { .. }));
    let ops = vec![
        upd,
        ChangeOp::Delete { slot: 1 },
        grow,
        ChangeOp::Move {
            slot: 3,
            old_flags: UndoHeader::read(PageRef(&g).tuple(3).unwrap()).flags,
            old: before[3][..6].try_into().unwrap(),
            next_page: 9,
            next_slot: 4,
        },
    ];
    let rec = UndoTableRecord::Change {
        page: 3,
        cid: 1,
        ops,
    };
    let mut bytes = Vec::new();
    rec.encode_payload(&mut bytes);
    let rec = UndoTableRecord::decode(UNDO_CHANGE, &bytes).unwrap();
    let UndoTableRecord::Change { ops, cid, .. } = &rec else {
        panic!()
    };
    for op in ops {
        apply_change(&mut g, op, 5, *cid, 0).unwrap();
    }
    assert_ne!(PageRef(&g).tuple(0).unwrap()[HDR..], before[0][..]);
    revert_record(&mut g, &rec).unwrap();
    for (s, b) in before.iter().enumerate() {
        let t = PageRef(&g).tuple_ref(s as u16).unwrap();
        assert_eq!(&t[HDR..], &b[..], "slot {s}");
        let h = UndoHeader::read(t);
        assert_eq!(h.flags & (FLAG_DELETED | FLAG_MOVED), 0, "slot {s}");
        assert_eq!(row_of(&t[HDR..], h.flags).unwrap(), rows[s]);
    }
}

#[test]
fn header_round_trips() {
    let h = UndoHeader {
        xid: (1 << 47) + 5,
        cid: 9,
        ptr: 123_456_789,
        flags: FLAG_DELETED | FLAG_PADDED,
    };
    assert_eq!(UndoHeader::read(&h.bytes()), h);
}

/// A page's inserted rows are kept as runs of consecutive slots: one op for a page an
/// insert filled, more where it reused slots out of order.
#[test]
fn inserted_slots_are_kept_as_runs() {
    let runs = |slots: &[u16]| -> Vec<(u16, u16)> {
        super::EntryOp::inserts(slots)
            .into_iter()
            .map(|op| match op.op() {
                super::Op::Insert { first, count } => (first, count),
                super::Op::Change { .. } => panic!("an insert made a change op"),
            })
            .collect()
    };
    let filled: Vec<u16> = (0..200).collect();
    assert_eq!(runs(&filled), vec![(0, 200)]);
    assert_eq!(runs(&[3, 7, 8, 9, 2]), vec![(3, 1), (7, 3), (2, 1)]);
    assert_eq!(runs(&[65534, 65535]), vec![(65534, 2)]);
    assert_eq!(runs(&[]), Vec::<(u16, u16)>::new());
    let c = super::EntryOp::change(65535, super::MAX_ENTRY_PTR - 1).unwrap();
    assert_eq!(
        c.op(),
        super::Op::Change {
            slot: 65535,
            ptr: super::MAX_ENTRY_PTR - 1
        }
    );
    assert!(super::EntryOp::change(0, super::MAX_ENTRY_PTR).is_none());
    assert_eq!(std::mem::size_of::<super::EntryOp>(), 8);
}
