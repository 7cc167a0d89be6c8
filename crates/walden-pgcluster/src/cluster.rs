//! A running throwaway cluster: initdb in a private directory, the server started on its
//! own socket, psql and driver access as the superuser, and stop (or drop) removing it all.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::host::{free_port, hand_to_user, make_private_dir, one_line, running_as_root};
use crate::Error;

/// The OS user that runs the server when we are root, and the cluster's superuser name.
pub const SERVER_USER: &str = "postgres";
/// How often a cluster start is tried when the port turns out to be taken.
const START_ATTEMPTS: u32 = 4;

/// Settings every cluster gets unless the caller gives its own value: a buffer pool the
/// size of Walden's default, and no checkpoint or autovacuum in the middle of a measured
/// statement (either would write WAL or data pages that are not the statement's).
const DEFAULT_SETTINGS: [(&str, &str); 5] = [
    ("shared_buffers", "256MB"),
    ("max_wal_size", "8GB"),
    ("checkpoint_timeout", "1h"),
    ("track_wal_io_timing", "off"),
    ("autovacuum", "off"),
];

/// A running throwaway cluster. Dropping it stops the server (immediate mode, killing the
/// postmaster if pg_ctl fails) and removes its directory; `stop` does a fast shutdown and
/// reports errors.
pub struct Cluster {
    bindir: PathBuf,
    /// The temporary directory: `data/` (the cluster), the socket and `server.log`.
    dir: PathBuf,
    port: u16,
    /// Whether server binaries run as `SERVER_USER` through runuser (we are root).
    as_server_user: bool,
    /// Whether a postmaster may be running, so that drop must stop it.
    running: bool,
}

impl Cluster {
    /// Creates a cluster in a fresh directory under the system temporary directory, with
    /// `settings` (name, value) added to its postgresql.conf over the defaults, and starts it
    /// on a private socket (no TCP). Nothing is created inside; use database `postgres`.
    pub fn start(bindir: &Path, settings: &[(&str, &str)]) -> Result<Cluster, Error> {
        let as_server_user = running_as_root();
        let mut cluster = Cluster {
            bindir: bindir.to_path_buf(),
            dir: make_private_dir()?,
            port: 0,
            as_server_user,
            running: false,
        };
        // From here on an early return drops `cluster`, which removes the directory.
        if as_server_user {
            hand_to_user(&cluster.dir, SERVER_USER)?;
        }
        cluster.initdb()?;
        cluster.write_settings(settings)?;
        cluster.start_server()?;
        Ok(cluster)
    }

    /// The cluster's temporary directory (removed by `stop` and by drop).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory of the server's Unix socket (libpq's `host`).
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The port number, which names the socket (`.s.PGSQL.<port>`); nothing listens on TCP.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection string for `dbname` over the private socket as the superuser, in the
    /// key=value form libpq and the `postgres` crate's `Client::connect` read. Values are
    /// quoted, so a temporary directory with spaces still works.
    pub fn connection_string(&self, dbname: &str) -> String {
        let quote = |value: &str| format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"));
        format!(
            "host={} port={} user={} dbname={}",
            quote(&self.dir.to_string_lossy()),
            self.port,
            quote(SERVER_USER),
            quote(dbname)
        )
    }

    /// Runs SQL (one or more statements) through psql and returns its standard output
    /// (unaligned, tuples only). An SQL error is an error carrying psql's message. The
    /// session's statistics are flushed before it ends, so later readers see them.
    pub fn query(&self, sql: &str) -> Result<String, Error> {
        let script = format!(
            "{}\n;\n\\o /dev/null\nselect pg_stat_force_next_flush();\n",
            trim_statement(sql)
        );
        self.psql(&script)
    }

    /// Stops the server (fast shutdown) and removes the cluster's directory.
    pub fn stop(mut self) -> Result<(), Error> {
        let output = self.pg_ctl(&["stop", "-m", "fast"])?;
        if !output.status.success() {
            // Drop kills the postmaster and removes the directory.
            return Err(failed("pg_ctl stop", &output));
        }
        self.running = false;
        fs::remove_dir_all(&self.dir)
            .map_err(|e| Error::io(format!("removing {}", self.dir.display()), e))
    }

    /// Runs a psql script (fed on stdin, stopping at the first error) as the superuser
    /// on database `postgres` over the cluster's socket and returns its standard output
    /// (unaligned, tuples only).
    pub fn psql(&self, script: &str) -> Result<String, Error> {
        let mut child = Command::new(self.bindir.join("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-A", "-t"])
            .arg("-h")
            .arg(&self.dir)
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                SERVER_USER,
                "-d",
                "postgres",
            ])
            .env_remove("PGOPTIONS")
            .env_remove("PGSERVICE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::io("running psql", e))?;
        // Written from a thread: a large script and a large result could otherwise fill
        // both pipes and wait on each other.
        let writer = child.stdin.take().map(|mut stdin| {
            let script = script.to_string();
            std::thread::spawn(move || stdin.write_all(script.as_bytes()))
        });
        let output = child
            .wait_with_output()
            .map_err(|e| Error::io("running psql", e))?;
        if !output.status.success() {
            return Err(failed("psql", &output));
        }
        if let Some(writer) = writer {
            writer
                .join()
                .map_err(|_| Error::Invalid("psql: the thread feeding its input panicked".into()))?
                .map_err(|e| Error::io("writing to psql", e))?;
        }
        String::from_utf8(output.stdout)
            .map_err(|_| Error::Invalid("psql printed invalid UTF-8".into()))
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A command that runs a server binary as the user owning the cluster.
    fn server_command(&self, program: &str) -> Command {
        let path = self.bindir.join(program);
        let mut command = if self.as_server_user {
            let mut command = Command::new("runuser");
            command.args(["-u", SERVER_USER, "--"]).arg(path);
            command
        } else {
            Command::new(path)
        };
        // The server user may not be allowed into our working directory.
        command.current_dir(&self.dir).stdin(Stdio::null());
        command
    }

    fn initdb(&self) -> Result<(), Error> {
        let output = self
            .server_command("initdb")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-U", SERVER_USER, "-A", "trust", "-E", "UTF8", "--locale=C"])
            .args(["--no-sync", "--no-instructions"])
            .output()
            .map_err(|e| Error::io("running initdb", e))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(failed("initdb", &output))
        }
    }

    /// Appends the settings to postgresql.conf: defaults, then the caller's (a later line
    /// wins), then the private socket, which the caller may not override.
    fn write_settings(&self, settings: &[(&str, &str)]) -> Result<(), Error> {
        let socket_dir = self.dir.to_string_lossy().into_owned();
        let forced = [
            ("listen_addresses", ""),
            ("unix_socket_directories", socket_dir.as_str()),
        ];
        let mut text = String::from("\n# Added by walden bench.\n");
        for (name, value) in DEFAULT_SETTINGS.iter().chain(settings).chain(&forced) {
            text.push_str(&setting_line(name, value)?);
        }
        let path = self.data_dir().join("postgresql.conf");
        fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(|e| Error::io(format!("writing {}", path.display()), e))
    }

    /// Starts the server on a free port, trying another port when the chosen one was
    /// taken between choosing and binding.
    fn start_server(&mut self) -> Result<(), Error> {
        let mut attempt = 1;
        loop {
            self.port = free_port()?;
            let port_option = format!("-p {}", self.port);
            let log = self.dir.join("server.log");
            let log = log.to_string_lossy();
            self.running = true;
            let output = self.pg_ctl(&["start", "-l", &log, "-o", &port_option])?;
            if output.status.success() {
                return Ok(());
            }
            self.force_stop();
            let log_tail = self.log_tail();
            let port_taken = ["already in use", "could not bind", "lock file"]
                .iter()
                .any(|sign| log_tail.contains(sign));
            if !port_taken || attempt == START_ATTEMPTS {
                let detail = if log_tail.is_empty() {
                    one_line(&output.stderr)
                } else {
                    log_tail
                };
                return Err(Error::Failed {
                    program: "pg_ctl start".into(),
                    detail,
                });
            }
            attempt += 1;
        }
    }

    /// Runs `pg_ctl` on the cluster, waiting (up to a minute) for the action to finish.
    fn pg_ctl(&self, args: &[&str]) -> Result<Output, Error> {
        self.server_command("pg_ctl")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-w", "-t", "60"])
            .args(args)
            .output()
            .map_err(|e| Error::io("running pg_ctl", e))
    }

    /// Stops the server however it can, ignoring errors: immediate shutdown, else SIGKILL to
    /// the postmaster named in postmaster.pid (its children exit when it dies).
    fn force_stop(&mut self) {
        if !self.running {
            return;
        }
        self.running = false;
        let stopped = self
            .pg_ctl(&["stop", "-m", "immediate"])
            .is_ok_and(|output| output.status.success());
        if stopped {
            return;
        }
        let pid_file = self.data_dir().join("postmaster.pid");
        let pid = fs::read_to_string(pid_file).ok().and_then(|text| {
            let first = text.lines().next()?.trim().to_string();
            first.parse::<u32>().ok().map(|_| first)
        });
        if let Some(pid) = pid {
            let _ = Command::new("kill")
                .args(["-KILL", &pid])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    /// The last lines of the server log, as one line.
    fn log_tail(&self) -> String {
        let text = fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(3)..].join(" / ")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.force_stop();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// SQL without its trailing semicolons, so the script can end it on a line of its own
/// (which also ends a trailing `--` comment).
pub fn trim_statement(sql: &str) -> &str {
    sql.trim_end().trim_end_matches(';').trim_end()
}

/// One `name = 'value'` line of postgresql.conf; names are checked and values quoted so
/// that a setting cannot add lines of its own.
fn setting_line(name: &str, value: &str) -> Result<String, Error> {
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if !name_ok || value.contains(['\n', '\r']) {
        return Err(Error::Invalid(format!(
            "invalid setting {name} = {value:?}"
        )));
    }
    Ok(format!("{name} = '{}'\n", value.replace('\'', "''")))
}

/// "<what> failed: <its stderr, or its exit status>".
fn failed(program: &str, output: &Output) -> Error {
    let mut detail = one_line(&output.stderr);
    if detail.is_empty() {
        detail = output.status.to_string();
    }
    Error::Failed {
        program: program.into(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::find_bindir;

    #[test]
    fn starts_answers_and_is_removed_on_stop_and_on_drop() {
        let Some(bindir) = find_bindir(None) else {
            println!("postgres not installed: skipped");
            return;
        };
        let cluster = Cluster::start(&bindir, &[]).unwrap();
        let dir = cluster.dir().to_path_buf();
        assert!(dir.join("data/postmaster.pid").is_file());
        assert!(cluster
            .socket_dir()
            .join(format!(".s.PGSQL.{}", cluster.port()))
            .exists());
        assert_eq!(cluster.query("select 40 + 2").unwrap().trim(), "42");
        cluster.stop().unwrap();
        assert!(!dir.exists(), "{} left behind", dir.display());

        let cluster = Cluster::start(&bindir, &[]).unwrap();
        let dir = cluster.dir().to_path_buf();
        // Dropping without stop() must not leave the server or its directory behind.
        drop(cluster);
        assert!(!dir.exists(), "{} left behind", dir.display());
    }

    #[test]
    fn an_sql_error_is_reported_with_psql_message() {
        let Some(bindir) = find_bindir(None) else {
            println!("postgres not installed: skipped");
            return;
        };
        let cluster = Cluster::start(&bindir, &[]).unwrap();
        let err = cluster.query("select * from no_such_table").unwrap_err();
        let Error::Failed { program, detail } = &err else {
            panic!("not a program failure: {err:?}");
        };
        assert_eq!(program, "psql");
        assert!(detail.contains("no_such_table"), "{detail}");
        assert!(!detail.contains('\n'), "{detail}");
        assert!(err.to_string().starts_with("psql failed: "), "{err}");
        cluster.stop().unwrap();
    }

    #[test]
    fn a_bad_setting_fails_start_with_the_server_log() {
        let Some(bindir) = find_bindir(None) else {
            println!("postgres not installed: skipped");
            return;
        };
        let Err(err) = Cluster::start(&bindir, &[("shared_buffers", "lots")]) else {
            panic!("a cluster started with shared_buffers = 'lots'");
        };
        let message = err.to_string();
        assert!(message.starts_with("pg_ctl start failed: "), "{message}");
        assert!(message.contains("shared_buffers"), "{message}");
        assert!(!message.contains('\n'), "{message}");
    }

    #[test]
    fn settings_cannot_inject_lines() {
        assert_eq!(
            setting_line("wal_compression", "lz4").unwrap(),
            "wal_compression = 'lz4'\n"
        );
        assert_eq!(setting_line("x", "it's").unwrap(), "x = 'it''s'\n");
        assert!(setting_line("a = 1\nb", "2").is_err());
        assert!(setting_line("a", "1\nb = 2").is_err());
    }

    #[test]
    fn connection_strings_quote_their_values() {
        let cluster = Cluster {
            bindir: PathBuf::from("/nonexistent"),
            dir: PathBuf::from("/nonexistent/a b/it's"),
            port: 5999,
            as_server_user: false,
            running: false,
        };
        assert_eq!(
            cluster.connection_string("db1"),
            r"host='/nonexistent/a b/it\'s' port=5999 user='postgres' dbname='db1'"
        );
        // Not running, so drop stops nothing; the directory it removes does not exist.
    }
}
