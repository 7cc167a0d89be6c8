//! Unit tests of the simulated file layer: what survives each kind of crash, when names
//! become durable, the crash point, stale handles and injected faults.
#![allow(clippy::unwrap_used)] // A failed unwrap in a test is a failed test.

use super::*;
use std::path::PathBuf;

const SECTOR: usize = SECTOR_SIZE_BYTES as usize;

fn db() -> PathBuf {
    PathBuf::from("db")
}

fn file_path(name: &str) -> PathBuf {
    db().join(name)
}

/// Creates `db/<name>` holding `contents`, with data and name both durable.
fn durable_file(vfs: &SimVfs, name: &str, contents: &[u8]) -> Arc<dyn VfsFile> {
    vfs.create_dir_all(&db()).unwrap();
    let file = vfs.open(&file_path(name), OpenMode::CreateNew).unwrap();
    file.write_all_at(contents, 0).unwrap();
    file.sync_data().unwrap();
    vfs.sync_dir(&db()).unwrap();
    file
}

fn read_all(file: &Arc<dyn VfsFile>) -> Vec<u8> {
    let mut buf = vec![0u8; usize::try_from(file.len().unwrap()).unwrap()];
    file.read_exact_at(&mut buf, 0).unwrap();
    buf
}

fn reopen(vfs: &SimVfs, name: &str) -> Arc<dyn VfsFile> {
    vfs.open(&file_path(name), OpenMode::Existing).unwrap()
}

fn assert_power_loss(result: io::Result<()>) {
    let err = result.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::Other);
    assert_eq!(err.to_string(), "simulated power loss");
}

#[test]
fn sim_vfs_is_send_and_sync() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<SimVfs>();
    // Usable as the engine's shared file system object.
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new(0));
    assert!(vfs.exists(Path::new("")).unwrap());
}

#[test]
fn unsynced_write_is_dropped_on_drop_unsynced() {
    let vfs = SimVfs::new(1);
    let file = durable_file(&vfs, "a", b"old!");
    file.write_all_at(b"new!", 0).unwrap();
    file.write_all_at(b"tail", 4).unwrap();
    assert_eq!(read_all(&file), b"new!tail");
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(read_all(&reopen(&vfs, "a")), b"old!");
}

#[test]
fn unsynced_write_is_kept_on_keep_unsynced() {
    let vfs = SimVfs::new(1);
    let file = durable_file(&vfs, "a", b"old!");
    file.write_all_at(b"new!", 0).unwrap();
    file.write_all_at(b"tail", 4).unwrap();
    vfs.restart(CrashMode::KeepUnsynced);
    assert_eq!(read_all(&reopen(&vfs, "a")), b"new!tail");
}

/// Classifies each sector of `after` as entirely `old` or entirely `new`; panics on a
/// sector that mixes them.
fn sector_fates(after: &[u8], old: u8, new: u8) -> Vec<bool> {
    after
        .chunks(SECTOR)
        .map(|sector| {
            if sector.iter().all(|&b| b == new) {
                true
            } else {
                assert!(sector.iter().all(|&b| b == old), "sector mixes old and new");
                false
            }
        })
        .collect()
}

#[test]
fn torn_write_keeps_or_loses_whole_sectors() {
    let mut seen_old = false;
    let mut seen_new = false;
    let mut seen_mix = false;
    for seed in 0..16 {
        let vfs = SimVfs::new(seed);
        let file = durable_file(&vfs, "a", &[0xAA; 4 * SECTOR]);
        file.write_all_at(&[0xBB; 4 * SECTOR], 0).unwrap();
        vfs.restart(CrashMode::TearUnsynced);
        let after = read_all(&reopen(&vfs, "a"));
        assert_eq!(after.len(), 4 * SECTOR);
        let fates = sector_fates(&after, 0xAA, 0xBB);
        seen_new |= fates.iter().any(|&f| f);
        seen_old |= fates.iter().any(|&f| !f);
        seen_mix |= fates.iter().any(|&f| f) && fates.iter().any(|&f| !f);
    }
    assert!(seen_old && seen_new && seen_mix);
}

#[test]
fn torn_write_splits_at_absolute_sector_boundaries() {
    // A write from 100 to 1124 has pieces [100, 512), [512, 1024) and [1024, 1124).
    let mut lengths = BTreeSet::new();
    for seed in 0..32 {
        let vfs = SimVfs::new(seed);
        let file = durable_file(&vfs, "a", &[0xAA; 3 * SECTOR]);
        file.write_all_at(&[0xBB; 1024], 100).unwrap();
        vfs.restart(CrashMode::TearUnsynced);
        let after = read_all(&reopen(&vfs, "a"));
        assert_eq!(after.len(), 3 * SECTOR);
        assert!(after[..100].iter().all(|&b| b == 0xAA));
        assert!(after[1124..].iter().all(|&b| b == 0xAA));
        for piece in [100..512, 512..1024, 1024..1124] {
            let bytes = &after[piece];
            assert!(bytes.iter().all(|&b| b == 0xBB) || bytes.iter().all(|&b| b == 0xAA));
        }
        lengths.insert(after.iter().filter(|&&b| b == 0xBB).count());
    }
    // Every combination of the three pieces is some subset sum of 412, 512 and 100.
    assert!(lengths.len() > 4, "too few tear outcomes: {lengths:?}");
}

#[test]
fn torn_extension_sets_length_to_last_surviving_piece() {
    for seed in 0..16 {
        let vfs = SimVfs::new(seed);
        let file = durable_file(&vfs, "a", b"");
        file.write_all_at(&[0xBB; 2 * SECTOR], 0).unwrap();
        vfs.restart(CrashMode::TearUnsynced);
        let after = read_all(&reopen(&vfs, "a"));
        match after.len() {
            0 => {}
            SECTOR => assert!(after.iter().all(|&b| b == 0xBB)),
            len => {
                assert_eq!(len, 2 * SECTOR);
                // The first sector may be lost while the second survives: zeros then.
                let first = &after[..SECTOR];
                assert!(first.iter().all(|&b| b == 0xBB) || first.iter().all(|&b| b == 0));
                assert!(after[SECTOR..].iter().all(|&b| b == 0xBB));
            }
        }
    }
}

#[test]
fn random_mode_replays_from_seed() {
    let run = |seed: u64| {
        let vfs = SimVfs::new(seed);
        let file = durable_file(&vfs, "a", &[0; 8 * SECTOR]);
        for i in 0..8u8 {
            file.write_all_at(&[i + 1; SECTOR], u64::from(i) * 512)
                .unwrap();
        }
        vfs.restart(CrashMode::Random);
        read_all(&reopen(&vfs, "a"))
    };
    assert_eq!(run(42), run(42));
    let outcomes: BTreeSet<Vec<u8>> = (0..8).map(run).collect();
    assert!(outcomes.len() > 1);
}

#[test]
fn synced_data_survives_every_mode() {
    for mode in [
        CrashMode::DropUnsynced,
        CrashMode::KeepUnsynced,
        CrashMode::TearUnsynced,
        CrashMode::Random,
    ] {
        for seed in 0..4 {
            let vfs = SimVfs::new(seed);
            let file = durable_file(&vfs, "a", b"first");
            file.write_all_at(b"second", 5).unwrap();
            file.sync_data().unwrap();
            vfs.restart(mode);
            assert_eq!(read_all(&reopen(&vfs, "a")), b"firstsecond", "{mode:?}");
        }
    }
}

#[test]
fn created_file_needs_sync_dir_to_survive() {
    let vfs = SimVfs::new(3);
    vfs.create_dir_all(&db()).unwrap();
    let lost = vfs.open(&file_path("lost"), OpenMode::CreateNew).unwrap();
    lost.write_all_at(b"data", 0).unwrap();
    lost.sync_data().unwrap();
    assert!(vfs.exists(&file_path("lost")).unwrap());
    vfs.restart(CrashMode::KeepUnsynced);
    assert!(!vfs.exists(&file_path("lost")).unwrap());
    assert_eq!(vfs.list_dir(&db()).unwrap(), Vec::<String>::new());

    let kept = vfs.open(&file_path("kept"), OpenMode::CreateNew).unwrap();
    kept.write_all_at(b"data", 0).unwrap();
    kept.sync_data().unwrap();
    vfs.sync_dir(&db()).unwrap();
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(read_all(&reopen(&vfs, "kept")), b"data");
}

#[test]
fn rename_is_durable_only_after_sync_dir() {
    let vfs = SimVfs::new(4);
    durable_file(&vfs, "tmp", b"v1");
    vfs.rename(&file_path("tmp"), &file_path("final")).unwrap();
    assert_eq!(vfs.list_dir(&db()).unwrap(), vec!["final"]);
    vfs.restart(CrashMode::KeepUnsynced);
    assert_eq!(vfs.list_dir(&db()).unwrap(), vec!["tmp"]);

    vfs.rename(&file_path("tmp"), &file_path("final")).unwrap();
    vfs.sync_dir(&db()).unwrap();
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(vfs.list_dir(&db()).unwrap(), vec!["final"]);
    assert_eq!(read_all(&reopen(&vfs, "final")), b"v1");
}

#[test]
fn rename_replaces_target_and_remove_needs_sync_dir() {
    let vfs = SimVfs::new(5);
    durable_file(&vfs, "a", b"aaa");
    durable_file(&vfs, "b", b"bbb");
    vfs.rename(&file_path("a"), &file_path("b")).unwrap();
    assert_eq!(vfs.file_contents(&file_path("b")).unwrap(), b"aaa");
    vfs.sync_dir(&db()).unwrap();
    vfs.remove(&file_path("b")).unwrap();
    assert!(!vfs.exists(&file_path("b")).unwrap());
    let err = vfs.remove(&file_path("b")).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(vfs.file_contents(&file_path("b")).unwrap(), b"aaa");
    vfs.remove(&file_path("b")).unwrap();
    vfs.sync_dir(&db()).unwrap();
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(vfs.file_contents(&file_path("b")), None);
}

#[test]
fn removed_file_stays_readable_through_open_handle() {
    let vfs = SimVfs::new(6);
    let file = durable_file(&vfs, "a", b"still here");
    vfs.remove(&file_path("a")).unwrap();
    vfs.sync_dir(&db()).unwrap();
    assert_eq!(read_all(&file), b"still here");
    drop(file);
    assert_eq!(vfs.lock().inodes.len(), 0);
}

#[test]
fn crash_after_ops_crashes_at_the_nth_call() {
    let vfs = SimVfs::new(7);
    let file = durable_file(&vfs, "a", b"");
    vfs.crash_after_ops(3);
    file.write_all_at(b"one ", 0).unwrap();
    file.write_all_at(b"two ", 4).unwrap();
    assert!(!vfs.power_lost());
    assert_power_loss(file.write_all_at(b"three", 8));
    assert!(vfs.power_lost());
    assert_power_loss(file.sync_data());
    assert_power_loss(file.read_exact_at(&mut [0u8; 1], 0));
    assert_power_loss(vfs.exists(&file_path("a")).map(drop));
    assert_power_loss(vfs.list_dir(&db()).map(drop));
    assert_power_loss(vfs.open(&file_path("a"), OpenMode::Existing).map(drop));
    assert_power_loss(vfs.open(&file_path("new"), OpenMode::CreateNew).map(drop));
    assert_power_loss(vfs.sync_dir(&db()));
    assert_power_loss(file.len().map(drop));
    assert_eq!(vfs.stats().writes, 3);

    // The crash-point write was in flight: KeepUnsynced shows it reached the disk.
    vfs.restart(CrashMode::KeepUnsynced);
    assert!(!vfs.power_lost());
    assert_eq!(read_all(&reopen(&vfs, "a")), b"one two three");
}

#[test]
fn crash_at_sync_leaves_data_unsynced() {
    let vfs = SimVfs::new(8);
    let file = durable_file(&vfs, "a", b"old");
    file.write_all_at(b"new", 0).unwrap();
    vfs.crash_after_ops(1);
    assert_power_loss(file.sync_data());
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(read_all(&reopen(&vfs, "a")), b"old");
}

#[test]
fn ops_count_counts_mutating_calls_only() {
    let vfs = SimVfs::new(9);
    vfs.create_dir_all(&db()).unwrap();
    assert_eq!(vfs.ops_count(), 0);
    let file = vfs.open(&file_path("a"), OpenMode::CreateOrOpen).unwrap(); // 1
    vfs.open(&file_path("a"), OpenMode::CreateOrOpen).unwrap();
    file.write_all_at(b"x", 0).unwrap(); // 2
    file.preallocate(4096).unwrap(); // 3
    file.sync_data().unwrap(); // 4
    vfs.sync_dir(&db()).unwrap(); // 5
    vfs.rename(&file_path("a"), &file_path("b")).unwrap(); // 6
    vfs.remove(&file_path("b")).unwrap(); // 7
    file.read_exact_at(&mut [0u8; 1], 0).unwrap();
    vfs.list_dir(&db()).unwrap();
    vfs.exists(&db()).unwrap();
    file.len().unwrap();
    assert!(vfs.remove(&file_path("missing")).is_err());
    assert_eq!(vfs.ops_count(), 7);
    assert_eq!(
        vfs.stats(),
        SimStats {
            writes: 1,
            bytes_written: 1,
            syncs: 1,
            dir_syncs: 1
        }
    );
}

#[test]
fn crash_now_and_restart_without_crash() {
    let vfs = SimVfs::new(10);
    let file = durable_file(&vfs, "a", b"abc");
    vfs.crash_now();
    assert_power_loss(file.write_all_at(b"x", 0));
    vfs.restart(CrashMode::KeepUnsynced);
    let file = reopen(&vfs, "a");
    file.write_all_at(b"xyz", 0).unwrap();
    // A restart while power is on acts as a crash at that moment.
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(read_all(&reopen(&vfs, "a")), b"abc");
}

#[test]
fn handles_are_stale_after_restart() {
    let vfs = SimVfs::new(11);
    let file = durable_file(&vfs, "a", b"abc");
    vfs.restart(CrashMode::KeepUnsynced);
    let results = [
        file.read_exact_at(&mut [0u8; 1], 0),
        file.write_all_at(b"x", 0),
        file.sync_data(),
        file.preallocate(10),
        file.len().map(drop),
    ];
    for result in results {
        let err = result.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Other);
        assert_eq!(err.to_string(), "stale handle after simulated restart");
    }
    assert_eq!(read_all(&reopen(&vfs, "a")), b"abc");
}

#[test]
fn fail_nth_fires_eio_once() {
    let vfs = SimVfs::new(12);
    let file = durable_file(&vfs, "a", b"");
    vfs.fail_nth(2, FaultOps::Write, FaultKind::Eio);
    file.sync_data().unwrap(); // not a write: does not count
    file.write_all_at(b"one", 0).unwrap();
    let err = file.write_all_at(b"two", 3).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert_eq!(vfs.faults_injected(), 1);
    assert_eq!(read_all(&file), b"one");
    file.write_all_at(b"three", 3).unwrap();
    assert_eq!(read_all(&file), b"onethree");
    assert_eq!(vfs.faults_injected(), 1);
}

#[test]
fn fail_nth_fires_enospc_once_on_sync() {
    let vfs = SimVfs::new(13);
    let file = durable_file(&vfs, "a", b"old");
    file.write_all_at(b"new", 0).unwrap();
    vfs.fail_nth(1, FaultOps::Sync, FaultKind::Enospc);
    let err = file.sync_data().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    assert_eq!(vfs.faults_injected(), 1);
    vfs.restart(CrashMode::DropUnsynced);
    // The failed sync made nothing durable.
    let file = reopen(&vfs, "a");
    assert_eq!(read_all(&file), b"old");
    file.write_all_at(b"new", 0).unwrap();
    file.sync_data().unwrap();
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(read_all(&reopen(&vfs, "a")), b"new");
    assert_eq!(vfs.faults_injected(), 1);
}

#[test]
fn fail_nth_on_reads_and_any() {
    let vfs = SimVfs::new(14);
    let file = durable_file(&vfs, "a", b"abc");
    vfs.fail_nth(1, FaultOps::Read, FaultKind::Eio);
    let err = file.read_exact_at(&mut [0u8; 3], 0).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert_eq!(read_all(&file), b"abc");

    vfs.fail_nth(3, FaultOps::Any, FaultKind::Enospc);
    file.read_exact_at(&mut [0u8; 1], 0).unwrap();
    file.write_all_at(b"d", 3).unwrap();
    let err = vfs.sync_dir(&db()).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    assert_eq!(vfs.faults_injected(), 2);
    assert_eq!(vfs.stats().dir_syncs, 1);
}

#[test]
fn reads_past_end_fail_and_writes_extend_with_zeros() {
    let vfs = SimVfs::new(15);
    let file = durable_file(&vfs, "a", b"ab");
    let err = file.read_exact_at(&mut [0u8; 2], 1).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    let err = file.read_exact_at(&mut [0u8; 1], u64::MAX).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    file.write_all_at(b"z", 5).unwrap();
    assert_eq!(read_all(&file), b"ab\0\0\0z");
    let err = file.write_all_at(b"z", u64::MAX).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EFBIG));
    file.write_all_at(b"", 100).unwrap();
    assert_eq!(file.len().unwrap(), 6);
}

#[test]
fn preallocate_extends_with_zeros_until_synced() {
    let vfs = SimVfs::new(16);
    let file = durable_file(&vfs, "a", b"abc");
    file.preallocate(8).unwrap();
    assert_eq!(read_all(&file), b"abc\0\0\0\0\0");
    file.preallocate(4).unwrap();
    assert_eq!(file.len().unwrap(), 8);
    vfs.restart(CrashMode::DropUnsynced);
    let file = reopen(&vfs, "a");
    assert_eq!(file.len().unwrap(), 3);
    file.preallocate(8).unwrap();
    file.sync_data().unwrap();
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(reopen(&vfs, "a").len().unwrap(), 8);
    assert_eq!(vfs.stats().bytes_written, 3);
}

#[test]
fn open_modes() {
    let vfs = SimVfs::new(17);
    let err = vfs.open(&file_path("a"), OpenMode::Existing).err().unwrap();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    vfs.open(&file_path("a"), OpenMode::CreateNew).unwrap();
    let err = vfs
        .open(&file_path("a"), OpenMode::CreateNew)
        .err()
        .unwrap();
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    vfs.open(&file_path("a"), OpenMode::CreateOrOpen).unwrap();
    // Paths are normalised: "./db/a" and "db//a" name the same file.
    vfs.open(Path::new("./db//a"), OpenMode::Existing).unwrap();
    assert_eq!(vfs.list_dir(&db()).unwrap(), vec!["a"]);
    let err = vfs.list_dir(Path::new("nowhere")).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
}

#[test]
fn list_dir_lists_only_direct_files_sorted() {
    let vfs = SimVfs::new(18);
    vfs.create_dir_all(&db().join("sub")).unwrap();
    for name in ["c", "a", "b"] {
        vfs.open(&file_path(name), OpenMode::CreateNew).unwrap();
    }
    vfs.open(&db().join("sub").join("x"), OpenMode::CreateNew)
        .unwrap();
    assert_eq!(vfs.list_dir(&db()).unwrap(), vec!["a", "b", "c"]);
    assert_eq!(vfs.list_dir(&db().join("sub")).unwrap(), vec!["x"]);
    assert!(vfs.exists(&db().join("sub")).unwrap());
    assert!(vfs.exists(&db()).unwrap());
    assert!(!vfs.exists(&file_path("d")).unwrap());
}

#[test]
fn bytes_written_with_prefix_counts_whole_components() {
    let vfs = SimVfs::new(19);
    vfs.create_dir_all(&db().join("wal")).unwrap();
    let wal = vfs
        .open(&db().join("wal").join("1"), OpenMode::CreateNew)
        .unwrap();
    let data = vfs.open(&db().join("wal2"), OpenMode::CreateNew).unwrap();
    wal.write_all_at(&[1; 100], 0).unwrap();
    wal.preallocate(4096).unwrap();
    data.write_all_at(&[2; 30], 0).unwrap();
    assert_eq!(vfs.bytes_written_with_prefix(&db().join("wal")), 100);
    assert_eq!(vfs.bytes_written_with_prefix(&db().join("wal2")), 30);
    assert_eq!(vfs.bytes_written_with_prefix(&db()), 130);
    assert_eq!(vfs.bytes_written_with_prefix(Path::new("other")), 0);
    assert_eq!(vfs.stats().bytes_written, 130);
}

#[test]
fn corrupt_byte_and_truncate_hit_current_and_durable() {
    let vfs = SimVfs::new(20);
    durable_file(&vfs, "a", b"abcdef");
    assert!(vfs.corrupt_byte(&file_path("a"), 1, 0x20));
    assert!(!vfs.corrupt_byte(&file_path("a"), 6, 0x20));
    assert!(!vfs.corrupt_byte(&file_path("missing"), 0, 0x20));
    assert_eq!(vfs.file_contents(&file_path("a")).unwrap(), b"aBcdef");
    assert!(vfs.truncate_file(&file_path("a"), 4));
    assert!(!vfs.truncate_file(&file_path("a"), 5));
    assert_eq!(vfs.file_contents(&file_path("a")).unwrap(), b"aBcd");
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(vfs.file_contents(&file_path("a")).unwrap(), b"aBcd");
}

#[test]
fn corrupting_an_unsynced_byte_survives_its_sync() {
    let vfs = SimVfs::new(21);
    let file = durable_file(&vfs, "a", b"ab");
    file.write_all_at(b"Z", 1).unwrap();
    file.write_all_at(b"y", 4).unwrap();
    assert!(vfs.corrupt_byte(&file_path("a"), 1, 0x01));
    assert!(vfs.corrupt_byte(&file_path("a"), 3, 0x01));
    file.sync_data().unwrap();
    vfs.restart(CrashMode::DropUnsynced);
    assert_eq!(vfs.file_contents(&file_path("a")).unwrap(), b"a[\0\x01y");
}
