//! What a cluster needs from the machine: who we are, a private directory the server
//! user owns, a free port number, and programs' messages on one line.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::Error;

/// Names of temporary directories made by this process, so two clusters never collide.
static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

pub(crate) fn running_as_root() -> bool {
    // /proc/self belongs to the process's effective user.
    if let Ok(meta) = fs::metadata("/proc/self") {
        return meta.uid() == 0;
    }
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// Creates a new directory (mode 0700) under the system temporary directory.
pub(crate) fn make_private_dir() -> Result<PathBuf, Error> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "walden-pg-{}-{}-{nanos:08x}",
        std::process::id(),
        NEXT_DIR.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir().join(name);
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    Ok(dir)
}

/// Gives the directory to `user`, who must own the cluster.
pub(crate) fn hand_to_user(dir: &Path, user: &str) -> Result<(), Error> {
    let uid = id_of(&["-u", user], user)?;
    let gid = id_of(&["-g", user], user)?;
    std::os::unix::fs::chown(dir, Some(uid), Some(gid))
        .map_err(|e| Error::io(format!("giving {} to {user}", dir.display()), e))
}

fn id_of(args: &[&str], user: &str) -> Result<u32, Error> {
    let output = Command::new("id")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io("running id", e))?;
    let text = String::from_utf8_lossy(&output.stdout);
    match text.trim().parse() {
        Ok(id) if output.status.success() => Ok(id),
        _ => Err(Error::Invalid(format!(
            "running as root needs the {user:?} OS user to run the server: {}",
            one_line(&output.stderr)
        ))),
    }
}

/// Picks a TCP port that is free now (the server only uses it to name its socket).
pub(crate) fn free_port() -> Result<u16, Error> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| Error::io("choosing a port", e))
}

/// A program's message on one line.
pub(crate) fn one_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" / ")
}
