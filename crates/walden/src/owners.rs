//! The one list of WAL record owners (PostgreSQL's rmgrlist.h). Recovery and `waldump`
//! read the log through it; a new owner is a module that implements
//! `wal::RecordOwner` and a line here.

use std::sync::LazyLock;

use crate::access::heap::wal_records::HeapOwner;
use crate::access::slotted::SlottedOwner;
use crate::access::undo_table::wal_records::UndoTableOwner;
use crate::catalog::CatalogOwner;
use crate::txn::XactOwner;
use crate::wal::owner::{Owners, WalOwner};

/// Every owner of WAL records, by record code.
pub static OWNERS: LazyLock<Owners> = LazyLock::new(|| {
    Owners::new(&[
        &WalOwner,
        &XactOwner,
        &CatalogOwner,
        &SlottedOwner,
        &HeapOwner,
        &UndoTableOwner,
    ])
});

/// The registry, for the WAL reader.
pub fn owners() -> &'static Owners {
    &OWNERS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::record::{put_record, LogRecord};

    /// The codes are on disk: each keeps its number and name (WAL format 3).
    #[test]
    fn record_codes_are_stable() {
        let got: Vec<(u8, &str)> = owners().types().map(|t| (t.code, t.name)).collect();
        let want = [
            (1, "heap_init"),
            (2, "heap_insert"),
            (3, "heap_delete"),
            (4, "heap_update_old"),
            (5, "heap_prune"),
            (6, "commit"),
            (7, "abort"),
            (8, "create_table"),
            (9, "drop_table"),
            (10, "page_image"),
            (11, "checkpoint"),
            (12, "undo_insert"),
            (13, "undo_change"),
            (14, "undo_revert"),
            (15, "undo_only"),
            (16, "heap_update_new"),
        ];
        assert_eq!(got, want);
        for t in owners().types() {
            let o = owners().owner(t.code).unwrap();
            assert!(o.types().contains(&t), "{} lists {}", o.name(), t.name);
        }
    }

    #[test]
    fn an_unknown_code_is_an_error() {
        for code in [0u8, 17, 31, 200] {
            let mut b = Vec::new();
            put_record(&mut b, code, 1, &[&[1, 2]]);
            let e = owners().decode(&b, 0).unwrap_err();
            assert!(e.contains("unknown record kind"), "{e}");
        }
    }

    #[test]
    fn undo_only_keeps_only_what_may_be_kept() {
        let rec = |payload: Vec<u8>| LogRecord {
            lsn: 0,
            len: 0,
            rtype: crate::wal::record::UNDO_ONLY,
            xid: 1,
            payload,
        };
        // A commit cannot be kept beside a page image; nor can nothing.
        assert!(owners().check(&rec(vec![6])).is_err());
        assert!(owners().check(&rec(vec![])).is_err());
        // An undo delete of slot 5 on page 4, kept.
        use crate::access::undo_table::wal_records::{ChangeOp, UndoTableRecord};
        use crate::wal::payload::Payload;
        let mut payload = vec![13];
        UndoTableRecord::Change {
            page: 4,
            cid: 7,
            ops: vec![ChangeOp::Delete { slot: 5 }],
        }
        .encode_payload(&mut payload);
        let kept = rec(payload);
        assert_eq!(
            owners().describe(&kept).unwrap(),
            "undo_change: page 4 cid 7 updated 0 resized 0 moved 0 deleted 1"
        );
    }

    mod fuzz {
        use super::super::*;
        use crate::access::heap::wal_records::{DeltaRow, HeapRecord};
        use crate::access::slotted::SlottedRecord;
        use crate::access::undo_table::wal_records::{ChangeOp, UndoTableRecord};
        use crate::wal::payload::{encode_record, Payload};
        use proptest::prelude::*;

        /// A valid record of several owners' types.
        fn samples() -> Vec<Box<dyn Payload>> {
            vec![
                Box::new(SlottedRecord::Prune {
                    page: 3,
                    slots: vec![1, 2, 9],
                }),
                Box::new(HeapRecord::UpdateNew {
                    page: 8,
                    cid: 3,
                    rows: vec![DeltaRow {
                        slot: 2,
                        old_page: 1,
                        old_slot: 4,
                        prefix: 10,
                        suffix: 90,
                        middle: vec![1, 2, 3, 4],
                    }],
                }),
                Box::new(UndoTableRecord::Change {
                    page: 4,
                    cid: 7,
                    ops: vec![
                        ChangeOp::Resize {
                            slot: 3,
                            old_flags: 0,
                            new_flags: 4,
                            old_area: vec![1; 6],
                            new_area: vec![2; 9],
                        },
                        ChangeOp::Delete { slot: 5 },
                    ],
                }),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(crate::testing::proptest_cases()))]

            /// Random bytes as a record or as the payload of any type: an error or a
            /// record, never a panic.
            #[test]
            fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
                if let Ok(rec) = owners().decode(&bytes, 0) {
                    prop_assert!(rec.len as usize <= bytes.len());
                    prop_assert!(owners().describe(&rec).is_ok());
                }
                for rtype in owners().types() {
                    let rec = crate::wal::record::LogRecord {
                        lsn: 0,
                        len: 0,
                        rtype,
                        xid: 1,
                        payload: bytes.clone(),
                    };
                    let _ = owners().describe(&rec);
                }
            }

            /// A valid record with random damage: never a panic.
            #[test]
            fn damaged_records_never_panic(
                which in 0usize..3,
                at in any::<prop::sample::Index>(),
                byte in any::<u8>(),
                cut in any::<prop::sample::Index>(),
            ) {
                let mut buf = Vec::new();
                encode_record(&mut buf, samples()[which].as_ref(), 7);
                prop_assert!(owners().decode(&buf, 0).is_ok());
                let i = at.index(buf.len());
                buf[i] = byte;
                let _ = owners().decode(&buf, 0);
                let _ = owners().decode(&buf[..cut.index(buf.len())], 0);
            }
        }
    }
}
