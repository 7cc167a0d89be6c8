//! Roles through crashes: created, changed, renamed and dropped, with a checkpoint
//! before, between or after the changes, then a power loss; and role records whose
//! transaction never committed. What could go wrong: a role or password lost or brought
//! back by redo, a checkpoint's catalog without its roles, or a role change that never
//! committed (a password an attacker's half-done change set) in place after a crash.
#![allow(clippy::unwrap_used)]

use walden::catalog::CatalogRecord;
use walden::txn::{ABORT, COMMIT};
use walden::vfs::{CrashMode, SimVfs};
use walden::wal::payload::Payload;
use walden::wal::RecordType;
use walden::{Database, Error, Protection, RoleDef};

mod support;
use support::{append_frame, opts, DIR};

fn verifier(tag: &str) -> String {
    format!("SCRAM-SHA-256$4096:c2FsdA==${tag}:c2VydmVy")
}

fn login(name: &str, tag: &str) -> RoleDef {
    RoleDef {
        login: true,
        password: Some(verifier(tag)),
        ..RoleDef::new(name)
    }
}

/// The changes, in order; a checkpoint may come before any of them.
fn change(db: &Database, step: usize) {
    match step {
        0 => db.create_role(login("alice", "a1")).unwrap(),
        1 => db.create_role(RoleDef::new("bob")).unwrap(),
        2 => db
            .alter_role(
                "alice",
                RoleDef {
                    superuser: true,
                    connection_limit: 5,
                    valid_until: Some(i64::MAX),
                    ..login("alice", "a2")
                },
            )
            .unwrap(),
        3 => db.alter_role("bob", RoleDef::new("carol")).unwrap(),
        4 => db.drop_role("carol").unwrap(),
        5 => db.create_role(login("bob", "b2")).unwrap(),
        _ => unreachable!(),
    }
}

const STEPS: usize = 6;

fn want() -> Vec<RoleDef> {
    vec![
        RoleDef {
            superuser: true,
            connection_limit: 5,
            valid_until: Some(i64::MAX),
            ..login("alice", "a2")
        },
        login("bob", "b2"),
    ]
}

fn crash(db: Database, vfs: &SimVfs, protection: Protection) -> Database {
    vfs.crash_now();
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    Database::open(DIR, opts(vfs, protection)).unwrap()
}

#[test]
fn roles_survive_redo_and_checkpoints() {
    for protection in [Protection::Cow, Protection::FullPage] {
        for checkpoint_at in 0..=STEPS {
            let vfs = SimVfs::new(checkpoint_at as u64);
            let db = Database::create(DIR, opts(&vfs, protection)).unwrap();
            for step in 0..STEPS {
                if step == checkpoint_at {
                    db.checkpoint().unwrap();
                }
                change(&db, step);
            }
            if checkpoint_at == STEPS {
                db.checkpoint().unwrap();
            }
            assert_eq!(db.roles(), want());
            let db = crash(db, &vfs, protection);
            assert_eq!(
                db.roles(),
                want(),
                "{protection:?} checkpoint at {checkpoint_at}"
            );
            assert_eq!(db.role("carol"), None);
            assert_eq!(db.role("bob"), Some(login("bob", "b2")));
            // The end-of-recovery checkpoint's catalog holds them too.
            let db = crash(db, &vfs, protection);
            assert_eq!(
                db.roles(),
                want(),
                "{protection:?} checkpoint at {checkpoint_at}"
            );
        }
    }
}

#[test]
fn role_errors_change_nothing() {
    let vfs = SimVfs::new(1);
    let db = Database::create(DIR, opts(&vfs, Protection::Cow)).unwrap();
    db.create_role(login("alice", "a1")).unwrap();
    db.create_role(RoleDef::new("bob")).unwrap();
    let e = db.create_role(RoleDef::new("alice")).unwrap_err();
    assert!(matches!(&e, Error::RoleExists(n) if n == "alice"), "{e:?}");
    let e = db.alter_role("nobody", RoleDef::new("x")).unwrap_err();
    assert!(matches!(&e, Error::NoSuchRole(n) if n == "nobody"), "{e:?}");
    let e = db.alter_role("bob", RoleDef::new("alice")).unwrap_err();
    assert!(matches!(&e, Error::RoleExists(n) if n == "alice"), "{e:?}");
    let e = db.drop_role("nobody").unwrap_err();
    assert!(matches!(&e, Error::NoSuchRole(n) if n == "nobody"), "{e:?}");
    // A password is kept only as a verifier, never in clear.
    let clear = RoleDef {
        password: Some("hunter2".into()),
        ..RoleDef::new("eve")
    };
    let e = db.create_role(clear.clone()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid option: role \"eve\": a password is kept only as a SCRAM-SHA-256$… verifier"
    );
    let e = db.alter_role("bob", clear).unwrap_err();
    assert!(matches!(e, Error::InvalidOption(_)), "{e:?}");
    let e = db.create_role(RoleDef::new("")).unwrap_err();
    assert!(matches!(e, Error::InvalidOption(_)), "{e:?}");
    let e = db
        .create_role(RoleDef {
            connection_limit: -2,
            ..RoleDef::new("eve")
        })
        .unwrap_err();
    assert!(matches!(e, Error::InvalidOption(_)), "{e:?}");
    assert_eq!(db.roles(), vec![login("alice", "a1"), RoleDef::new("bob")]);
    let db = crash(db, &vfs, Protection::Cow);
    assert_eq!(db.roles(), vec![login("alice", "a1"), RoleDef::new("bob")]);
}

/// An end-of-transaction record, crafted.
struct End(RecordType);

impl Payload for End {
    fn record_type(&self) -> RecordType {
        self.0
    }
    fn encode_payload(&self, _out: &mut Vec<u8>) {}
}

/// Role records in the log without their commit (the process died between the two:
/// another transaction's group commit had made the role's record durable) take no
/// effect; with their commit they do, and with an abort they do not.
#[test]
fn a_role_change_without_its_commit_is_gone_after_a_crash() {
    let vfs = SimVfs::new(4);
    {
        let db = Database::create(DIR, opts(&vfs, Protection::Cow)).unwrap();
        db.create_role(login("alice", "a1")).unwrap();
        db.create_role(RoleDef::new("bob")).unwrap();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
    }
    let mallory = CatalogRecord::CreateRole {
        role: RoleDef {
            superuser: true,
            ..login("mallory", "m")
        },
    };
    let alice = CatalogRecord::AlterRole {
        old: "alice".into(),
        role: login("alice", "a2"),
    };
    let hijack = CatalogRecord::AlterRole {
        old: "bob".into(),
        role: login("bob", "stolen"),
    };
    let drop_alice = CatalogRecord::DropRole {
        name: "alice".into(),
    };
    append_frame(
        &vfs,
        &[
            (&mallory, 50),
            (&alice, 51),
            (&hijack, 52),
            (&End(COMMIT), 51),
            (&drop_alice, 53),
            (&End(ABORT), 52),
        ],
    );
    let db = Database::open(DIR, opts(&vfs, Protection::Cow)).unwrap();
    assert_eq!(db.roles(), vec![login("alice", "a2"), RoleDef::new("bob")]);
    // Recovery rolled the unfinished ones back for good: they stay gone.
    let db = crash(db, &vfs, Protection::Cow);
    assert_eq!(db.roles(), vec![login("alice", "a2"), RoleDef::new("bob")]);
}

/// The database's secret seed is drawn at creation, differs between databases, and
/// stays the same through a crash, a checkpoint and a reopen (a server's mock SCRAM
/// salts derive from it: one that changed would tell a missing user from a real one).
#[test]
fn the_secret_seed_is_random_and_stays() {
    let vfs = SimVfs::new(5);
    let db = Database::create(DIR, opts(&vfs, Protection::Cow)).unwrap();
    let seed = db.secret_seed();
    assert_ne!(seed, [0; 32]);
    let other_vfs = SimVfs::new(5);
    let other = Database::create(DIR, opts(&other_vfs, Protection::Cow)).unwrap();
    assert_ne!(other.secret_seed(), seed);
    let db = crash(db, &vfs, Protection::Cow);
    assert_eq!(db.secret_seed(), seed);
    db.checkpoint().unwrap();
    db.close().unwrap();
    let db = Database::open(DIR, opts(&vfs, Protection::Cow)).unwrap();
    assert_eq!(db.secret_seed(), seed);
}

/// `change_role` changes a role from its current definition under the catalog's
/// lock (two threads each setting one attribute keep both), starts from the given
/// definition when the role is not stored (and stores it), and passes the caller's
/// error through.
#[test]
fn change_role_reads_and_writes_in_one_step() {
    let vfs = SimVfs::new(6);
    let db = Database::create(DIR, opts(&vfs, Protection::Cow)).unwrap();
    db.create_role(RoleDef::new("r")).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let db = db.clone();
            s.spawn(move || {
                for _ in 0..25 {
                    db.change_role("r", None, |mut r| {
                        r.connection_limit += 1;
                        if t == 0 {
                            r.login = true;
                        }
                        Ok::<_, Error>(r)
                    })
                    .unwrap();
                }
            });
        }
    });
    let r = db.role("r").unwrap();
    assert_eq!((r.connection_limit, r.login), (99, true));
    // Not stored: the given definition is the start, and is stored.
    let boot = RoleDef {
        superuser: true,
        ..RoleDef::new("boot")
    };
    db.change_role("boot", Some(boot.clone()), |mut r| {
        r.password = Some(verifier("b"));
        Ok::<_, Error>(r)
    })
    .unwrap();
    let stored = db.role("boot").unwrap();
    assert!(stored.superuser && stored.password == Some(verifier("b")));
    let e = db.change_role("nobody", None, Ok::<_, Error>).unwrap_err();
    assert!(matches!(&e, Error::NoSuchRole(n) if n == "nobody"), "{e:?}");
    let e = db
        .change_role("boot", None, |mut r| {
            r.name = "r".into();
            Ok::<_, Error>(r)
        })
        .unwrap_err();
    assert!(matches!(&e, Error::RoleExists(n) if n == "r"), "{e:?}");
    #[derive(Debug)]
    struct Mine(Option<Error>);
    impl From<Error> for Mine {
        fn from(e: Error) -> Mine {
            Mine(Some(e))
        }
    }
    let e = db.change_role("r", None, |_| Err(Mine(None))).unwrap_err();
    assert!(e.0.is_none());
    let db = crash(db, &vfs, Protection::Cow);
    assert_eq!(db.role("r").unwrap().connection_limit, 99);
    assert_eq!(db.role("boot"), Some(stored));
}
