//! The one list of WAL record owners (PostgreSQL's rmgrlist.h). Recovery and `waldump`
//! read the log through it; a new owner is a module that implements
//! `wal::RecordOwner` and a line here.

use std::sync::LazyLock;

use crate::access::btree::wal_records::BTreeOwner;
use crate::access::heap::wal_records::HeapOwner;
use crate::access::slotted::SlottedOwner;
use crate::access::undo_table::wal_records::UndoTableOwner;
use crate::catalog::CatalogOwner;
use crate::privilege::PrivilegeOwner;
use crate::sequence::SequenceOwner;
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
        &BTreeOwner,
        &SequenceOwner,
        &PrivilegeOwner,
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

    /// The codes are on disk, and the flags decide what the writer logs (page images,
    /// `undo_only`) and how redo reads a page: each keeps its number, name and flags
    /// (the record layout is unchanged since WAL format 2).
    #[test]
    fn record_codes_are_stable() {
        use crate::wal::record::{
            CARRIES_ROWS as R, CHANGES_PAGE as P, KEEP_WITH_IMAGE as K, NEW_PAGE as N,
            WILL_INIT as I,
        };
        let got: Vec<(u8, &str, u8)> = owners()
            .types()
            .map(|t| (t.code, t.name, t.flags))
            .collect();
        let want = [
            (1, "heap_init", P | I),
            (2, "heap_insert", P | R),
            (3, "heap_delete", P),
            (4, "heap_update_old", P),
            (5, "heap_prune", P),
            (6, "commit", 0),
            (7, "abort", 0),
            (8, "create_table", 0),
            (9, "drop_table", 0),
            (10, "page_image", P | I),
            (11, "checkpoint", 0),
            (12, "undo_insert", P | K | R),
            (13, "undo_change", P | K),
            (14, "undo_revert", P | K),
            (15, "undo_only", 0),
            (16, "heap_update_new", P),
            (17, "create_index", 0),
            (18, "drop_index", 0),
            (19, "btree_page", P | I),
            (20, "btree_insert", P),
            (21, "btree_delete", P),
            (22, "btree_split_left", P),
            (23, "btree_split_right", P | N),
            (24, "btree_meta", P),
            (25, "replace_index", 0),
            (26, "btree_insert_row", P),
            (27, "heap_update_hot", P),
            (28, "heap_prune_hot", P),
            (29, "btree_link", P),
            (30, "create_view", 0),
            (31, "drop_view", 0),
            (32, "alter_table", 0),
            (33, "create_role", 0),
            (34, "alter_role", 0),
            (35, "drop_role", 0),
            (36, "free_table_pages", 0),
            (37, "create_toast", 0),
            (39, "table_stats", 0),
            (40, "undo_update", P | K),
            (41, "create_sequence", 0),
            (42, "alter_sequence", 0),
            (43, "drop_sequence", 0),
            (44, "sequence_values", 0),
            (45, "set_acl", 0),
            (46, "set_member", 0),
            (47, "set_default_acl", 0),
        ];
        assert_eq!(got, want);
        for t in owners().types() {
            let o = owners().owner(t.code).unwrap();
            assert!(o.types().contains(&t), "{} lists {}", o.name(), t.name);
        }
    }

    #[test]
    fn an_unknown_code_is_an_error() {
        for code in [0u8, 38, 48, 200] {
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
        use crate::wal::payload::{encode_record, Payload};
        use crate::wal::record::{put_record, CheckpointRecord, PageImage};
        use proptest::prelude::*;

        /// Every sample decodes (so the damage test starts from valid records).
        #[test]
        fn every_sample_decodes() {
            for rec in samples() {
                let mut buf = Vec::new();
                encode_record(&mut buf, rec.as_ref(), 7);
                let got = owners().decode(&buf, 0).unwrap();
                assert_eq!(got.rtype, rec.record_type());
            }
        }

        /// A valid record of every type but commit and abort (no payload) and
        /// `undo_only` (made from the last sample, an undo-table record): each owner's
        /// own samples, and the WAL's.
        fn samples() -> Vec<Box<dyn Payload>> {
            fn boxed<T: Payload + 'static>(v: Vec<T>) -> Vec<Box<dyn Payload>> {
                v.into_iter()
                    .map(|r| Box::new(r) as Box<dyn Payload>)
                    .collect()
            }
            let mut all = boxed(crate::access::slotted::tests::samples());
            all.extend(boxed(crate::catalog::tests::samples()));
            all.extend(boxed(crate::access::heap::wal_records::tests::samples()));
            all.extend(boxed(crate::access::btree::wal_records::tests::samples()));
            all.extend(boxed(crate::sequence::tests::samples()));
            all.extend(boxed(crate::privilege::tests::samples()));
            all.push(Box::new(PageImage {
                page: 2,
                lower: 40,
                upper: 8000,
                image: vec![7; 232],
            }));
            all.push(Box::new(CheckpointRecord {
                redo_lsn: 77,
                next_xid: 5,
            }));
            all.extend(boxed(
                crate::access::undo_table::wal_records::tests::samples(),
            ));
            all
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

            /// A valid record of any type with random damage: never a panic.
            #[test]
            fn damaged_records_never_panic(
                which in any::<prop::sample::Index>(),
                at in any::<prop::sample::Index>(),
                byte in any::<u8>(),
                cut in any::<prop::sample::Index>(),
            ) {
                let samples = samples();
                let mut buf = Vec::new();
                // Every sample, a commit, and the last sample kept in an undo_only record.
                match which.index(samples.len() + 2) {
                    i if i < samples.len() => {
                        encode_record(&mut buf, samples[i].as_ref(), 7);
                    }
                    i if i == samples.len() => {
                        put_record(&mut buf, crate::txn::COMMIT.code, 7, &[]);
                    }
                    _ => {
                        let kept = samples.last().unwrap();
                        let mut payload = vec![kept.record_type().code];
                        kept.encode_payload(&mut payload);
                        put_record(&mut buf, 15, 7, &[&payload]);
                    }
                }
                prop_assert!(owners().decode(&buf, 0).is_ok());
                let i = at.index(buf.len());
                buf[i] = byte;
                let _ = owners().decode(&buf, 0);
                let _ = owners().decode(&buf[..cut.index(buf.len())], 0);
            }
        }
    }
}
