//! The database directory as a whole: the lock that keeps a second opener out, and the
//! checks that keep Walden from creating a database over files it does not know or from
//! taking a directory with database files but no `control` for an empty one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::vfs::{FileLock, LockMode, Vfs};

/// The lock file's name. It holds the process id of the exclusive holder (for the error
/// a second opener gets); its contents are never trusted for anything else.
pub const LOCK_FILE: &str = "lock";
/// Present while a database is being created: written (durably) before any other
/// file, removed once `control` is. Found without `control`, it says the creation was
/// interrupted, so nothing in the directory was ever acknowledged to anyone.
pub const CREATING_FILE: &str = "creating";

/// Names of the files a database keeps at its top level (besides `control` and the lock),
/// and the `wal` directory: their presence without `control` means a damaged database,
/// not an empty directory.
fn is_database_file(name: &str) -> bool {
    name == "data"
        || name == "xact"
        || name.starts_with("checkpoint.")
        || name.starts_with("xact.")
        || name.starts_with("control.")
}

pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join(LOCK_FILE)
}

/// Takes the database directory's lock, held for the database's lifetime. A second
/// opener, in this process or another, gets `Error::Locked` naming the holder.
pub fn lock_database_dir(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    mode: LockMode,
) -> Result<Box<dyn FileLock>> {
    let path = lock_path(dir);
    match vfs.try_lock(&path, mode) {
        Ok(Some(guard)) => Ok(guard),
        Ok(None) => {
            let holder = match vfs.lock_holder(&path) {
                Some(pid) if pid == std::process::id() => {
                    format!("this process (pid {pid}), which has it open already")
                }
                Some(pid) => format!("process {pid}"),
                None => "another process".to_string(),
            };
            Err(Error::Locked {
                dir: dir.to_path_buf(),
                lock: path,
                holder,
            })
        }
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// The database files present in `dir` (none: not a database, or not one any more).
pub fn database_files(vfs: &Arc<dyn Vfs>, dir: &Path) -> Result<Vec<String>> {
    let mut found: Vec<String> = match vfs.list_dir(dir) {
        Ok(names) => names.into_iter().filter(|n| is_database_file(n)).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let wal = dir.join("wal");
    if vfs.exists(&wal).map_err(|e| Error::io(&wal, e))? {
        found.push("wal/".to_string());
    }
    Ok(found)
}

/// Whether a creation of a database in `dir` was interrupted: its marker is there and
/// `control` is not.
pub fn creation_interrupted(vfs: &Arc<dyn Vfs>, dir: &Path) -> Result<bool> {
    let marker = dir.join(CREATING_FILE);
    let control = crate::control::control_path(dir);
    Ok(vfs.exists(&marker).map_err(|e| Error::io(&marker, e))?
        && !vfs.exists(&control).map_err(|e| Error::io(&control, e))?)
}

/// Removes what an interrupted creation left (every file of `dir` and of `dir/wal`,
/// the lock file aside, the marker last), so that the creation can start again. Only
/// when `creation_interrupted`: those files never held an acknowledged commit.
pub fn clear_interrupted_creation(vfs: &Arc<dyn Vfs>, dir: &Path) -> Result<()> {
    let wal = dir.join("wal");
    if vfs.exists(&wal).map_err(|e| Error::io(&wal, e))? {
        for name in vfs.list_dir(&wal).map_err(|e| Error::io(&wal, e))? {
            let p = wal.join(name);
            vfs.remove(&p).map_err(|e| Error::io(&p, e))?;
        }
        vfs.sync_dir(&wal).map_err(|e| Error::io(&wal, e))?;
    }
    for name in vfs.list_dir(dir).map_err(|e| Error::io(dir, e))? {
        if name != LOCK_FILE && name != CREATING_FILE {
            let p = dir.join(name);
            vfs.remove(&p).map_err(|e| Error::io(&p, e))?;
        }
    }
    vfs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// Removes the creation marker, if there is one, durably.
pub fn remove_creation_marker(vfs: &Arc<dyn Vfs>, dir: &Path) -> Result<()> {
    let marker = dir.join(CREATING_FILE);
    if vfs.exists(&marker).map_err(|e| Error::io(&marker, e))? {
        vfs.remove(&marker).map_err(|e| Error::io(&marker, e))?;
        vfs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

/// Why `dir` holds no readable database: the error for a missing `control`.
pub fn missing_control_error(vfs: &Arc<dyn Vfs>, dir: &Path) -> Error {
    // A creation that never finished left no database (and acknowledged nothing).
    if creation_interrupted(vfs, dir).unwrap_or(false) {
        return Error::NotADatabase {
            path: dir.to_path_buf(),
        };
    }
    match database_files(vfs, dir) {
        Ok(found) if found.is_empty() => Error::NotADatabase {
            path: dir.to_path_buf(),
        },
        Ok(found) => Error::MissingControlFile {
            dir: dir.to_path_buf(),
            found: found.join(", "),
        },
        Err(e) => e,
    }
}

/// A database may be created only in a missing or empty directory (a lock file left by
/// an earlier attempt aside): never over a user's files or a damaged database.
pub fn check_can_create(vfs: &Arc<dyn Vfs>, dir: &Path) -> Result<()> {
    let mut entries: Vec<String> = match vfs.list_dir(dir) {
        Ok(names) => names.into_iter().filter(|n| n != LOCK_FILE).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let wal = dir.join("wal");
    if vfs.exists(&wal).map_err(|e| Error::io(&wal, e))? {
        entries.push("wal/".to_string());
    }
    if entries.is_empty() || creation_interrupted(vfs, dir)? {
        return Ok(());
    }
    let control = crate::control::control_path(dir);
    if vfs.exists(&control).map_err(|e| Error::io(&control, e))? {
        return Err(Error::AlreadyExists {
            path: dir.to_path_buf(),
        });
    }
    let shown: Vec<&str> = entries.iter().take(5).map(String::as_str).collect();
    let more = entries.len().saturating_sub(shown.len());
    Err(Error::DirectoryNotEmpty {
        dir: dir.to_path_buf(),
        entries: if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        },
    })
}
