//! Finding an installed PostgreSQL server: the directory holding its binaries.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where Debian and Ubuntu install one directory per server major version.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";
/// The binaries a usable bin directory must hold.
const REQUIRED_BINARIES: [&str; 4] = ["postgres", "initdb", "pg_ctl", "psql"];

/// Finds the server's bin directory: `explicit` if given (None if it lacks the server),
/// else `pg_config --bindir` if it holds the server, else the highest
/// `/usr/lib/postgresql/*/bin` that does. None when no server is installed.
pub fn find_bindir(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = explicit {
        return has_server(dir).then(|| dir.to_path_buf());
    }
    if let Some(dir) = pg_config_bindir().filter(|dir| has_server(dir)) {
        return Some(dir);
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = fs::read_dir(DEBIAN_ROOT)
        .ok()?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let version = parse_version(entry.file_name().to_str()?)?;
            let bin = entry.path().join("bin");
            has_server(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Finds a server of one major version (as `postgres --version` reports it): the
/// directory `find_bindir` picks if it is that version, else
/// `/usr/lib/postgresql/<major>/bin`. Tests that compare against a given version use it.
pub fn find_major(major: u32) -> Option<PathBuf> {
    let debian = Path::new(DEBIAN_ROOT).join(major.to_string()).join("bin");
    [find_bindir(None), find_bindir(Some(&debian))]
        .into_iter()
        .flatten()
        .find(|dir| server_major(dir) == Some(major))
}

/// The major version of the server in `bindir`, from `postgres --version`
/// ("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)" → 15).
pub fn server_major(bindir: &Path) -> Option<u32> {
    let output = Command::new(bindir.join("postgres"))
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    parse_major(&text)
}

fn parse_major(version_line: &str) -> Option<u32> {
    let (_, rest) = version_line.split_once(") ")?;
    rest.split(['.', ' ', '\n']).next()?.trim().parse().ok()
}

fn has_server(dir: &Path) -> bool {
    REQUIRED_BINARIES
        .iter()
        .all(|name| dir.join(name).is_file())
}

fn pg_config_bindir() -> Option<PathBuf> {
    let output = Command::new("pg_config")
        .arg("--bindir")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| PathBuf::from(text.trim()))
}

/// "15" → [15], "9.6" → [9, 6]; None for names that are not versions.
fn parse_version(name: &str) -> Option<Vec<u32>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_version_directory_names() {
        assert_eq!(parse_version("15"), Some(vec![15]));
        assert_eq!(parse_version("9.6"), Some(vec![9, 6]));
        assert_eq!(parse_version("main"), None);
    }

    #[test]
    fn reads_the_major_version_of_postgres_version() {
        let line = "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n";
        assert_eq!(parse_major(line), Some(15));
        assert_eq!(parse_major("postgres (PostgreSQL) 17beta1\n"), None);
        assert_eq!(parse_major("postgres (PostgreSQL) 16.2\n"), Some(16));
        assert_eq!(parse_major("nonsense"), None);
    }

    #[test]
    fn an_explicit_directory_without_the_server_is_refused() {
        assert_eq!(find_bindir(Some(Path::new("/nonexistent/bin"))), None);
    }
}
