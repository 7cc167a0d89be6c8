//! `walden user add | password | list | drop DIR …`: the roles `walden serve`
//! authenticates against, managed on a database that is not being served (the command
//! opens it exclusively; through a server, use `CREATE ROLE … PASSWORD`).
//!
//! A password is read from the terminal without echo (asked twice), or from a file
//! (`--password-file`, `-` for standard input), never from the command line, where any
//! user could read it in `ps`. Only its SCRAM-SHA-256 verifier leaves this process: the
//! statement run is `CREATE ROLE … PASSWORD '<verifier>'`, so the role gets every check
//! SQL makes (reserved names, an existing role).

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use walden::{Database, Options, RoleDef};
use walden_sql::{roles, scram, Session};

use crate::CliError;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Creates a role that can log in, with a password.
    Add {
        /// The database directory.
        dir: PathBuf,
        /// The role's name (as given: no case folding).
        name: String,
        /// Makes the role a superuser.
        #[arg(long)]
        superuser: bool,
        #[command(flatten)]
        password: PasswordSource,
    },
    /// Sets a role's password (the bootstrap superuser `postgres` included).
    Password {
        /// The database directory.
        dir: PathBuf,
        name: String,
        #[command(flatten)]
        password: PasswordSource,
    },
    /// Lists the roles and their attributes.
    List {
        /// The database directory.
        dir: PathBuf,
    },
    /// Drops a role.
    Drop {
        /// The database directory.
        dir: PathBuf,
        name: String,
    },
}

#[derive(clap::Args)]
pub struct PasswordSource {
    /// Reads the password from this file (its first line; `-` for standard input)
    /// instead of asking on the terminal.
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
}

fn fail(text: impl Into<String>) -> CliError {
    CliError::io("user", std::io::Error::other(text.into()))
}

pub fn run(command: &Command) -> Result<ExitCode, CliError> {
    match command {
        Command::Add {
            dir,
            name,
            superuser,
            password,
        } => {
            let verifier = new_verifier(password, &format!("new role {name}"))?;
            let attributes = if *superuser { " superuser" } else { "" };
            let db = Database::open(dir, Options::default())?;
            execute(
                &db,
                &format!(
                    "create role {} login{attributes} password '{verifier}'",
                    quote_ident(name)
                ),
            )?;
            db.close()?;
        }
        Command::Password {
            dir,
            name,
            password,
        } => {
            let db = Database::open(dir, Options::default())?;
            if roles::find(&db, name).is_none() {
                return Err(fail(format!("role \"{name}\" does not exist")));
            }
            let verifier = new_verifier(password, &format!("role {name}"))?;
            execute(
                &db,
                &format!("alter role {} password '{verifier}'", quote_ident(name)),
            )?;
            db.close()?;
        }
        Command::List { dir } => {
            let db = Database::open(dir, Options::default())?;
            list(&roles::all(&db))?;
            db.close()?;
        }
        Command::Drop { dir, name } => {
            let db = Database::open(dir, Options::default())?;
            execute(&db, &format!("drop role {}", quote_ident(name)))?;
            db.close()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A name as a quoted identifier (taken exactly as given, whatever its case or words).
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Runs one role statement; its notices go to stderr.
fn execute(db: &Database, sql: &str) -> Result<(), CliError> {
    let mut session = Session::new(db);
    let result = session
        .execute_one(sql)
        .map_err(|e| fail(format!("{} (SQLSTATE {})", e.message, e.code)))?;
    for n in &result.notices {
        let _ = writeln!(std::io::stderr().lock(), "NOTICE: {n}");
    }
    Ok(())
}

/// The verifier of the password the source gives.
fn new_verifier(source: &PasswordSource, whom: &str) -> Result<String, CliError> {
    let password = match &source.password_file {
        Some(path) => from_file(path)?,
        None => from_terminal(whom)?,
    };
    if password.is_empty() {
        return Err(fail("the password is empty"));
    }
    let verifier = scram::build_verifier(&password).map_err(|e| fail(e.to_string()))?;
    Ok(verifier)
}

/// The first line of the file (or of standard input), without its line end.
fn from_file(path: &Path) -> Result<Vec<u8>, CliError> {
    let mut line = Vec::new();
    let read = if path == Path::new("-") {
        std::io::stdin().lock().read_until(b'\n', &mut line)
    } else {
        std::fs::File::open(path)
            .and_then(|f| std::io::BufReader::new(f).read_until(b'\n', &mut line))
    };
    read.map_err(|e| CliError::io(format!("reading {}", path.display()), e))?;
    Ok(trim_line_end(line))
}

fn trim_line_end(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    line
}

/// Asks for the password twice on the terminal, echo off.
fn from_terminal(whom: &str) -> Result<Vec<u8>, CliError> {
    let mut tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|e| {
            fail(format!(
                "no terminal to ask for the password ({e}); give --password-file"
            ))
        })?;
    let first = ask(&mut tty, &format!("Enter password for {whom}: "))?;
    let second = ask(&mut tty, "Enter it again: ")?;
    if first != second {
        return Err(fail("the passwords did not match"));
    }
    Ok(first)
}

/// One line from the terminal with echo off (restored even when reading fails).
fn ask(tty: &mut std::fs::File, prompt: &str) -> Result<Vec<u8>, CliError> {
    use std::os::unix::io::AsRawFd;
    let io = |e| CliError::io("the terminal", e);
    tty.write_all(prompt.as_bytes()).map_err(io)?;
    tty.flush().map_err(io)?;
    let fd = tty.as_raw_fd();
    // SAFETY: termios is plain data; tcgetattr fills it for the open descriptor `fd`.
    let mut saved: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is the open terminal and `saved` a valid termios to fill.
    if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
        return Err(io(std::io::Error::last_os_error()));
    }
    let mut quiet = saved;
    quiet.c_lflag &= !libc::ECHO;
    quiet.c_lflag |= libc::ECHONL;
    // SAFETY: as above, with a termios derived from the one read.
    if unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &quiet) } != 0 {
        return Err(io(std::io::Error::last_os_error()));
    }
    let read = read_line(tty);
    // SAFETY: restores the settings read above on the same descriptor.
    unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &saved) };
    Ok(trim_line_end(read.map_err(io)?))
}

/// One line, a byte at a time (nothing read past it), at most 64 KiB.
fn read_line(mut from: impl Read) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 64 << 10 && from.read(&mut byte)? == 1 {
        line.push(byte[0]);
        if byte[0] == b'\n' {
            break;
        }
    }
    Ok(line)
}

/// One line per role: its name, attributes as psql's `\du` names them, and whether it
/// has a password.
fn list(all: &[RoleDef]) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    let width = all
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(9);
    outln!(out, "{:width$}  Attributes", "Role name")?;
    for r in all {
        let mut attributes: Vec<&str> = Vec::new();
        for (set, name) in [
            (r.superuser, "Superuser"),
            (!r.inherit, "No inheritance"),
            (r.createrole, "Create role"),
            (r.createdb, "Create DB"),
            (!r.login, "Cannot login"),
            (r.replication, "Replication"),
            (r.bypassrls, "Bypass RLS"),
        ] {
            if set {
                attributes.push(name);
            }
        }
        let limit =
            (r.connection_limit >= 0).then(|| format!("{} connections", r.connection_limit));
        attributes.extend(limit.as_deref());
        attributes.push(if r.password.is_some() {
            "Password"
        } else {
            "No password"
        });
        outln!(out, "{:width$}  {}", r.name, attributes.join(", "))?;
    }
    Ok(())
}
