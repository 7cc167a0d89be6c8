//! `walden sql`: a psql-like SQL shell — interactive, or running -c, -f or piped input.

use std::io::{BufRead, BufWriter, IsTerminal, Read, Stdout, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustyline::error::ReadlineError;
use rustyline::{Config, DefaultEditor};
use walden::{Database, StatsSnapshot};
use walden_sql::{value, CopyStart, Outcome, Session, SqlError, StatementResult};

use crate::describe::{self, Described, Listing};
use crate::CliError;

/// `walden sql [DIR] [-c SQL]... [-f FILE]...`. Without -c or -f it reads standard input:
/// a terminal gets the interactive shell, anything else is run as one script (like
/// `psql < file`). The -c strings run first, in order, then the -f files, in order.
/// Backslash commands (`\d`, `\dt`, `\di`, `\dv`, `\d NAME`, `\timing`, `\wal`,
/// `\undo`, `\q`, `\?`) work everywhere, as in psql: SQL before one on its line goes first
/// (statements it ends run), and `\\` ends a command's arguments.
///
/// Ctrl-C cancels the running statement (57014; a transaction block is aborted) as psql
/// does: the interactive shell goes back to its prompt, a -c string goes on with the next
/// statement, and a script (-f or piped input) stops.
///
/// `COPY ... FROM STDIN` reads its data as psql does: in a script, the lines after the
/// statement up to a line `\.`; for a -c string, standard input; at the terminal, lines
/// typed at a `>>` prompt. `COPY ... TO STDOUT` writes its rows to standard output.
///
/// The exit code is 3 if Ctrl-C stopped a script, else 1 if any statement or backslash
/// command failed (0 in the interactive shell), else 0.
#[derive(clap::Args)]
#[command(after_help = "\
Without -c or -f, a terminal on standard input gets the interactive shell (\\? for help);
other input runs as one script. All -c run, in order, before the -f files. Backslash
commands work in scripts too; SQL before one on its line goes first.
Ctrl-C cancels the running statement: the interactive shell returns to its prompt, -c goes
on with the next statement, a script (-f or piped input) stops.
Exit code: 3 if Ctrl-C stopped a script; else 1 if any statement or backslash command
failed (in the interactive shell, always 0).")]
pub struct Args {
    /// The database directory (created if it holds no database).
    #[arg(default_value = "walden-data")]
    pub dir: PathBuf,
    /// SQL (one or more statements) or one backslash command to run; may be repeated.
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    pub commands: Vec<String>,
    /// A file of SQL and backslash commands to run ("-" for standard input); may be repeated.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print what each statement wrote (as `\wal on`) with -c, -f or piped input; the
    /// interactive shell starts with it on.
    #[arg(long)]
    pub wal: bool,
    /// Stop at the first failed statement instead of going on with the next.
    #[arg(long)]
    pub on_error_stop: bool,
    /// The buffer pool's size (`8GB`, `512MB`); default a quarter of the machine's RAM.
    #[arg(long, value_parser = crate::memory::parse_pool_size)]
    pub buffer_pool: Option<u64>,
}

pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    let interactive = args.commands.is_empty() && args.files.is_empty();
    let interactive = interactive && std::io::stdin().is_terminal();
    // Read every script before opening the database, so a missing file creates nothing.
    let scripts = if interactive {
        Vec::new()
    } else {
        read_scripts(args)?
    };
    let db = Database::open_or_create(&args.dir, crate::memory::options(args.buffer_pool))?;
    let (failed, stopped_by_user) = {
        let mut shell = Shell::new(&db, args, interactive);
        shell.catch_interrupts()?;
        if interactive {
            shell.interactive(&args.dir)?;
        } else {
            shell.scripts(&scripts)?;
        }
        (shell.printer.failed && !interactive, shell.stopped_by_user)
    };
    db.close()?;
    Ok(if stopped_by_user {
        // psql's exit code for a script stopped with Ctrl-C.
        ExitCode::from(3)
    } else if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Where a script comes from, which decides what Ctrl-C does to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A -c string: a canceled statement is one more failed statement.
    Command,
    /// A -f file or piped input: Ctrl-C stops it (and every script after it).
    File,
    /// The interactive shell: Ctrl-C drops the rest of the input line.
    Terminal,
}

/// The -c strings, then the -f files; standard input when there is neither.
fn read_scripts(args: &Args) -> Result<Vec<(Origin, String)>, CliError> {
    let mut scripts: Vec<(Origin, String)> = args
        .commands
        .iter()
        .map(|c| (Origin::Command, c.clone()))
        .collect();
    let stdin = PathBuf::from("-");
    let files = if args.files.is_empty() && args.commands.is_empty() {
        std::slice::from_ref(&stdin)
    } else {
        args.files.as_slice()
    };
    for path in files {
        let text = if path.as_os_str() == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CliError::io("reading standard input", e))?;
            text
        } else {
            std::fs::read_to_string(path)
                .map_err(|e| CliError::io(format!("reading {}", path.display()), e))?
        };
        scripts.push((Origin::File, text));
    }
    Ok(scripts)
}

/// A line of standard input without its newline; None at its end (or on a read error).
fn read_stdin_line(stdin: &mut std::io::StdinLock) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    match stdin.read_until(b'\n', &mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            Some(line)
        }
    }
}

/// Runs a COPY to or from the shell's client side, as psql does: FROM STDIN takes the
/// lines `more` gives up to a line `\.` or their end (after an error it reads on to
/// there, sending nothing); TO STDOUT writes each row to standard output.
fn copy_through_shell(
    session: &mut Session,
    start: CopyStart,
    more: &mut dyn FnMut() -> Option<Vec<u8>>,
    terminal: bool,
) -> Result<StatementResult, SqlError> {
    match start {
        CopyStart::In(mut c) => {
            if terminal {
                println!(
                    "Enter data to be copied followed by a newline.\n\
                     End with a backslash and a period on a line by itself, or an EOF signal."
                );
            }
            let mut failed = None;
            while let Some(mut line) = more() {
                if line == b"\\." || line == b"\\.\r" {
                    break;
                }
                if failed.is_none() {
                    line.push(b'\n');
                    failed = c.data(session, &line).err();
                }
            }
            match failed {
                Some(e) => Err(e),
                None => c.finish(session),
            }
        }
        CopyStart::Out(c) => {
            let io_error = |e: std::io::Error| {
                SqlError::new(
                    walden_sql::code::IO_ERROR,
                    format!("could not write COPY data to standard output: {e}"),
                )
            };
            let mut out = BufWriter::new(std::io::stdout().lock());
            let mut r = c.run(session, &mut |line| out.write_all(line).map_err(io_error))?;
            out.flush().map_err(io_error)?;
            // Written: the printer adds no tag (as psql) and nothing more.
            r.copy_data = Some(String::new());
            Ok(r)
        }
    }
}

/// Where a scan of SQL text stands at its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Lexical {
    #[default]
    Code,
    SingleQuote,
    DoubleQuote,
    LineComment,
    /// Inside `/* */`, nested this deep (PostgreSQL nests block comments).
    BlockComment(u32),
}

/// SQL read but not yet run. A statement is complete at a `;` outside quotes and
/// comments. (Not understood: dollar quoting and backslash escapes in `E'...'`, which
/// the SQL layer does not need yet.)
#[derive(Debug, Default)]
struct QueryBuffer {
    text: String,
    state: Lexical,
}

impl QueryBuffer {
    /// Where in `text`, read after what is buffered, a backslash command starts: the
    /// first backslash outside quotes and comments.
    fn command_start(&self, text: &str) -> Option<usize> {
        let mut state = self.state;
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if state == Lexical::Code && c == '\\' {
                return Some(i);
            }
            let next = chars.peek().map(|&(_, n)| n);
            let (after, skip_next) = step(state, c, next);
            state = after;
            if skip_next {
                chars.next();
            }
        }
        None
    }

    /// Appends text and returns the complete statements it ends: the text up to the last
    /// `;` outside quotes and comments. The rest stays buffered.
    fn push(&mut self, text: &str) -> Option<String> {
        let start = self.text.len();
        self.text.push_str(text);
        let mut end = None;
        let mut chars = self.text[start..].char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let next = chars.peek().map(|&(_, n)| n);
            let (state, skip_next) = step(self.state, c, next);
            if self.state == Lexical::Code && state == Lexical::Code && c == ';' {
                end = Some(start + i + 1);
            }
            self.state = state;
            if skip_next {
                chars.next();
            }
        }
        let end = end?;
        let rest = self.text.split_off(end);
        Some(std::mem::replace(&mut self.text, rest))
    }

    /// True if nothing but white space is buffered.
    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }

    fn take(&mut self) -> String {
        self.state = Lexical::Code;
        std::mem::take(&mut self.text)
    }
}

/// One character of the scan: the state after `c`, and whether `next` was consumed too
/// (the second character of `--`, `/*` or `*/`).
fn step(state: Lexical, c: char, next: Option<char>) -> (Lexical, bool) {
    match (state, c, next) {
        (Lexical::Code, '\'', _) => (Lexical::SingleQuote, false),
        (Lexical::Code, '"', _) => (Lexical::DoubleQuote, false),
        (Lexical::Code, '-', Some('-')) => (Lexical::LineComment, true),
        (Lexical::Code, '/', Some('*')) => (Lexical::BlockComment(1), true),
        // A doubled quote inside a string leaves and re-enters it: no special case.
        (Lexical::SingleQuote, '\'', _) | (Lexical::DoubleQuote, '"', _) => (Lexical::Code, false),
        (Lexical::LineComment, '\n', _) => (Lexical::Code, false),
        (Lexical::BlockComment(d), '/', Some('*')) => (Lexical::BlockComment(d + 1), true),
        (Lexical::BlockComment(1), '*', Some('/')) => (Lexical::Code, true),
        (Lexical::BlockComment(d), '*', Some('/')) => (Lexical::BlockComment(d - 1), true),
        (s, _, _) => (s, false),
    }
}

/// Prints results and errors as psql does, and keeps what the display settings are.
struct Printer {
    out: BufWriter<Stdout>,
    timing: bool,
    wal: bool,
    on_error_stop: bool,
    /// Set once any statement or backslash command failed.
    failed: bool,
    /// A write to standard output failed; the script stops and this is returned.
    io_error: Option<std::io::Error>,
}

impl Printer {
    /// Handles one statement's outcome; false stops the script.
    fn outcome(&mut self, outcome: Outcome) -> bool {
        let written = match &outcome.result {
            Ok(result) => self.result(result),
            Err(e) => {
                self.failed = true;
                self.error(&error_text(&outcome.text, e))
            }
        };
        if let Err(e) = written {
            self.io_error = Some(e);
            return false;
        }
        outcome.result.is_ok() || !self.on_error_stop
    }

    fn result(&mut self, r: &StatementResult) -> std::io::Result<()> {
        for notice in &r.notices {
            self.error(notice)?;
        }
        if let Some(data) = &r.copy_data {
            // COPY TO STDOUT: its rows (already written when the shell ran it), and no
            // tag, as psql.
            self.out.write_all(data.as_bytes())?;
        } else if r.columns.is_empty() {
            writeln!(self.out, "{}", r.tag)?;
        } else {
            let columns: Vec<(&str, bool)> = r
                .columns
                .iter()
                .map(|(name, ty)| (name.as_str(), ty.is_numeric()))
                .collect();
            let rows: Vec<Vec<String>> = r
                .rows
                .iter()
                .map(|row| row.iter().map(value::display).collect())
                .collect();
            write_table(&mut self.out, None, &columns, &rows)?;
            writeln!(self.out, "{}\n", rows_footer(rows.len()))?;
            // INSERT, UPDATE and DELETE … RETURNING: the tag after the rows, as psql.
            if ["INSERT", "UPDATE", "DELETE", "MERGE"]
                .iter()
                .any(|t| r.tag.starts_with(t))
            {
                writeln!(self.out, "{}", r.tag)?;
            }
        }
        if let (true, Some(stats)) = (self.wal, &r.stats) {
            writeln!(self.out, "{}", wal_line(stats, r.elapsed))?;
        }
        if self.timing {
            writeln!(self.out, "{}", timing_line(r.elapsed))?;
        }
        self.out.flush()
    }

    /// Writes to standard error, after what is pending for standard output so that a
    /// terminal shows both in order. A closed standard error is ignored.
    fn error(&mut self, text: &str) -> std::io::Result<()> {
        self.out.flush()?;
        let _ = writeln!(std::io::stderr().lock(), "{text}");
        Ok(())
    }

    /// Reports a failed backslash command.
    fn fail(&mut self, text: &str) -> Result<(), CliError> {
        self.failed = true;
        self.error(text).map_err(stdout_error)
    }
}

fn stdout_error(e: std::io::Error) -> CliError {
    CliError::io("writing to standard output", e)
}

/// A session and its printer, fed line by line.
struct Shell {
    session: Session,
    printer: Printer,
    /// Set by `\q`: no more input is run.
    quit: bool,
    /// Set by Ctrl-C (SIGINT), together with the session's cancel flag, which stops the
    /// running statement. This one tells the shell: the interactive shell drops the rest
    /// of its input line and clears it before each prompt; a script stops.
    interrupted: Arc<AtomicBool>,
    /// Where the input comes from.
    origin: Origin,
    /// Ctrl-C stopped a script.
    stopped_by_user: bool,
}

impl Shell {
    fn new(db: &Database, args: &Args, interactive: bool) -> Shell {
        let mut session = Session::new(db);
        // Each statement's WAL, for the line after its result.
        session.set_statement_stats(true);
        Shell {
            session,
            printer: Printer {
                out: BufWriter::new(std::io::stdout()),
                timing: false,
                wal: args.wal || interactive,
                // The interactive shell goes on after an error whatever the flag says.
                on_error_stop: args.on_error_stop && !interactive,
                failed: false,
                io_error: None,
            },
            quit: false,
            interrupted: Arc::new(AtomicBool::new(false)),
            origin: if interactive {
                Origin::Terminal
            } else {
                Origin::File
            },
            stopped_by_user: false,
        }
    }

    /// From now on Ctrl-C (SIGINT) cancels the running statement instead of ending the
    /// process. The handlers only store to atomic flags, which is async-signal-safe.
    /// (At the interactive prompt the terminal is in raw mode and Ctrl-C is a key the
    /// line editor reads.)
    fn catch_interrupts(&self) -> Result<(), CliError> {
        let sigint = signal_hook::consts::SIGINT;
        for flag in [
            self.session.cancel_handle().flag(),
            self.interrupted.clone(),
        ] {
            signal_hook::flag::register(sigint, flag)
                .map_err(|e| CliError::io("catching Ctrl-C (SIGINT)", e))?;
        }
        Ok(())
    }

    /// True once Ctrl-C asked a script (not a -c string) to stop.
    fn interrupted_script(&mut self) -> bool {
        if self.origin == Origin::File && self.interrupted.load(Ordering::Relaxed) {
            self.stopped_by_user = true;
        }
        self.stopped_by_user
    }

    fn scripts(&mut self, scripts: &[(Origin, String)]) -> Result<(), CliError> {
        for (origin, script) in scripts {
            self.origin = *origin;
            if *origin == Origin::Command {
                // A Ctrl-C that came while no statement ran is forgotten, as the
                // session forgets its cancel request.
                self.interrupted.store(false, Ordering::Relaxed);
            }
            let mut buffer = QueryBuffer::default();
            // COPY FROM STDIN takes its data from a script's next lines, or for a -c
            // string from standard input.
            let mut lines = script.lines();
            let mut stdin = std::io::stdin().lock();
            let command = *origin == Origin::Command;
            while let Some(line) = lines.next() {
                if self.stopped() {
                    return Ok(());
                }
                let mut more = || match command {
                    true => read_stdin_line(&mut stdin),
                    false => lines.next().map(|l| l.as_bytes().to_vec()),
                };
                self.feed_line(&mut buffer, line, &mut more)?;
            }
            // As psql does, what is left at the end runs even without a semicolon.
            if !self.stopped() && !buffer.is_blank() {
                let mut more = || match command {
                    true => read_stdin_line(&mut stdin),
                    false => None,
                };
                self.run_sql(&buffer.take(), &mut more)?;
            }
        }
        Ok(())
    }

    /// True after `\q`, after an error with --on-error-stop, or once Ctrl-C stopped a
    /// script.
    fn stopped(&mut self) -> bool {
        self.quit
            || (self.printer.failed && self.printer.on_error_stop)
            || self.interrupted_script()
    }

    /// SQL is buffered until a statement is complete, and complete statements run. A
    /// backslash outside quotes and comments starts a backslash command, as in psql: the
    /// SQL before it on the line goes first (running the statements it completes), then
    /// the command runs with the arguments up to the next backslash; `\\` ends them and
    /// SQL goes on.
    ///
    /// `more` gives the lines after this one, for a COPY FROM STDIN's data.
    fn feed_line(
        &mut self,
        buffer: &mut QueryBuffer,
        line: &str,
        more: &mut dyn FnMut() -> Option<Vec<u8>>,
    ) -> Result<(), CliError> {
        let mut rest = line;
        while let Some(at) = buffer.command_start(rest) {
            let (sql, command) = rest.split_at(at);
            if let Some(sql) = buffer.push(sql) {
                self.run_sql(&sql, more)?;
            }
            if self.stopped() {
                return Ok(());
            }
            // The command's name and arguments end at the next backslash.
            let end = command[1..].find('\\').map_or(command.len(), |i| i + 1);
            self.backslash(command[..end].trim())?;
            if self.stopped() {
                return Ok(());
            }
            rest = &command[end..];
            rest = rest.strip_prefix("\\\\").unwrap_or(rest);
        }
        let sql = buffer.push(rest);
        if !buffer.is_blank() {
            // Keeps the statement's lines as they were typed.
            buffer.push("\n");
        }
        match sql {
            Some(sql) => self.run_sql(&sql, more),
            None => Ok(()),
        }
    }

    /// Runs complete statements, stopping after one that Ctrl-C interrupted unless they
    /// are a -c string. A COPY FROM STDIN reads its data from `more`.
    fn run_sql(
        &mut self,
        sql: &str,
        more: &mut dyn FnMut() -> Option<Vec<u8>>,
    ) -> Result<(), CliError> {
        let printer = &mut self.printer;
        let interrupted = &self.interrupted;
        let go_on_after_interrupt = self.origin == Origin::Command;
        let terminal = self.origin == Origin::Terminal;
        self.session.run_script_with_copy(
            sql,
            &mut |session, start| copy_through_shell(session, start, more, terminal),
            &mut |o| {
                printer.outcome(o)
                    && (go_on_after_interrupt || !interrupted.load(Ordering::Relaxed))
            },
        );
        if let Some(e) = self.printer.io_error.take() {
            return Err(stdout_error(e));
        }
        Ok(())
    }

    fn interactive(&mut self, dir: &std::path::Path) -> Result<(), CliError> {
        let config = Config::builder().auto_add_history(false).build();
        let mut editor = DefaultEditor::with_config(config)
            .map_err(|e| CliError::io("starting line editing", std::io::Error::other(e)))?;
        let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".walden_history"));
        if let Some(path) = &history {
            let _ = editor.load_history(path);
        }
        let out = &mut self.printer.out;
        outln!(out, "walden sql on {}. Type \\? for help.\n", dir.display())?;
        out.flush().map_err(stdout_error)?;
        let read = self.read_loop(&mut editor);
        if let Some(path) = &history {
            let _ = editor.save_history(path);
        }
        read
    }

    fn read_loop(&mut self, editor: &mut DefaultEditor) -> Result<(), CliError> {
        let mut buffer = QueryBuffer::default();
        while !self.quit {
            // A Ctrl-C that came while no statement ran (while results printed) is
            // forgotten, as the session forgets its cancel request.
            self.interrupted.store(false, Ordering::Relaxed);
            match editor.readline(&self.prompt(&buffer)) {
                Ok(input) => {
                    if !input.trim().is_empty() {
                        let _ = editor.add_history_entry(input.as_str());
                    }
                    if buffer.is_blank() && matches!(input.trim(), "quit" | "exit") {
                        break;
                    }
                    // A paste (bracketed) comes as one input of several lines; a COPY
                    // FROM STDIN reads the rest of them, then lines typed at `>>`.
                    let mut pasted = input.split('\n');
                    let cancel = self.session.cancel_handle();
                    while let Some(line) = pasted.next() {
                        let mut more = || match pasted.next() {
                            Some(l) => Some(l.as_bytes().to_vec()),
                            None => match editor.readline(">> ") {
                                Ok(l) => Some(l.into_bytes()),
                                Err(ReadlineError::Interrupted) => {
                                    // Ctrl-C at `>>` cancels the COPY, as in psql.
                                    cancel.cancel();
                                    None
                                }
                                Err(_) => None,
                            },
                        };
                        self.feed_line(&mut buffer, line, &mut more)?;
                        if self.quit {
                            break;
                        }
                        if self.interrupted.load(Ordering::Relaxed) {
                            // Ctrl-C canceled a statement: the rest of the input and
                            // the statement being typed are dropped, as psql drops its
                            // query buffer.
                            buffer = QueryBuffer::default();
                            break;
                        }
                    }
                }
                Err(ReadlineError::Interrupted) => buffer = QueryBuffer::default(),
                Err(ReadlineError::Eof) => {
                    outln!(self.printer.out, "\\q")?;
                    break;
                }
                Err(ReadlineError::Signal(_)) => {}
                Err(e) => return Err(CliError::io("reading a line", std::io::Error::other(e))),
            }
        }
        self.printer.out.flush().map_err(stdout_error)
    }

    /// psql's prompts: `=` or, in a continued statement, `-` (`'`, `"` or `*` inside a
    /// string, quoted name or comment), then `*` in a transaction block and `!` in a
    /// failed one.
    fn prompt(&self, buffer: &QueryBuffer) -> String {
        let mark = match buffer.state {
            Lexical::SingleQuote => '\'',
            Lexical::DoubleQuote => '"',
            Lexical::BlockComment(_) => '*',
            _ if buffer.is_blank() => '=',
            _ => '-',
        };
        let status = if self.session.in_failed_block() {
            "!"
        } else if self.session.in_transaction_block() {
            "*"
        } else {
            ""
        };
        format!("walden{mark}{status}# ")
    }
}

const HELP: &str = "\
General
  \\q                     quit walden sql (also quit, exit or Ctrl-D)
  \\?                     show this help

Informational
  \\d                     list tables, views and sequences
  \\d PATTERN             describe each table or index PATTERN matches (`*` and `?`
                         wildcards): columns, types, nullability, defaults, indexes
  \\dt [PATTERN]          list tables
  \\di [PATTERN]          list indexes
  \\dv [PATTERN]          list views
  \\ds [PATTERN]          list sequences

Display
  \\timing [on|off]       show how long each statement took (toggles without argument)
  \\wal [on|off]          show what each statement wrote: WAL bytes and records, page
                         images, undo bytes, data file bytes, fsyncs, seconds (toggles)
  \\undo                  show the undo the database holds now, and its limit

SQL statements end with a semicolon; SHOW ALL lists Walden's settings.";

impl Shell {
    /// Runs a backslash command (the whole trimmed line).
    fn backslash(&mut self, line: &str) -> Result<(), CliError> {
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or_default();
        let argument = words.next();
        if let Some(extra) = words.next() {
            let text = format!("{command}: extra argument \"{extra}\" ignored");
            self.printer.error(&text).map_err(stdout_error)?;
        }
        match (command, argument) {
            ("\\q", _) => self.quit = true,
            ("\\?", _) => outln!(self.printer.out, "{HELP}")?,
            ("\\timing", _) => self.toggle("\\timing", argument)?,
            ("\\wal", _) => self.toggle("\\wal", argument)?,
            ("\\undo", None) => {
                let db = self.session.database();
                let text = undo_line(
                    db.undo_bytes(),
                    db.undo_spilled_bytes(),
                    db.undo_memory(),
                    db.undo_limit(),
                );
                outln!(self.printer.out, "{text}")?
            }
            ("\\d", None) => self.described(|s| describe::list(s, Listing::All, None))?,
            ("\\dt", p) => self.described(|s| describe::list(s, Listing::Tables, p))?,
            ("\\di", p) => self.described(|s| describe::list(s, Listing::Indexes, p))?,
            ("\\dv", p) => self.described(|s| describe::list(s, Listing::Views, p))?,
            ("\\ds", p) => self.described(|s| describe::list(s, Listing::Sequences, p))?,
            // pg_dump's guard against a server injecting meta-commands: nothing to
            // guard here (the shell runs no meta-command a server could send).
            ("\\restrict" | "\\unrestrict", Some(_)) => {}
            ("\\d", Some(p)) => self.described(|s| describe::describe(s, p))?,
            _ => {
                let text = format!("invalid command {command}. Try \\? for help.");
                self.printer.fail(&text)?;
            }
        }
        self.printer.out.flush().map_err(stdout_error)
    }

    /// `\timing` and `\wal`: on, off, or the other state without an argument.
    fn toggle(&mut self, command: &str, argument: Option<&str>) -> Result<(), CliError> {
        let printer = &mut self.printer;
        let (setting, what) = match command {
            "\\timing" => (&mut printer.timing, "Timing is"),
            _ => (&mut printer.wal, "WAL figures are"),
        };
        let on = match argument.map(parse_bool) {
            None => !*setting,
            Some(Some(on)) => on,
            Some(None) => {
                let text = format!(
                    "unrecognized value \"{}\" for \"{command}\": Boolean expected",
                    argument.unwrap_or_default()
                );
                return printer.fail(&text);
            }
        };
        *setting = on;
        outln!(printer.out, "{what} {}.", if on { "on" } else { "off" })
    }

    /// Runs a describe command (`describe.rs`) through the session and prints what
    /// it gives; a failed query is reported as psql reports one.
    fn described(
        &mut self,
        f: impl FnOnce(&mut Session) -> Result<Described, SqlError>,
    ) -> Result<(), CliError> {
        match f(&mut self.session) {
            Ok(Described::Text(text)) => write!(self.printer.out, "{text}").map_err(stdout_error),
            Ok(Described::NotFound(text)) => self.printer.fail(&text),
            Err(e) => self.printer.fail(&format!("ERROR:  {}", e.message)),
        }
    }
}

/// psql's boolean values for `\timing` and friends.
fn parse_bool(text: &str) -> Option<bool> {
    match text.to_lowercase().as_str() {
        "on" | "true" | "t" | "yes" | "y" | "1" => Some(true),
        "off" | "false" | "f" | "no" | "n" | "0" => Some(false),
        _ => None,
    }
}

/// psql's aligned format with its default border: an optional centered title, centered
/// column names, a `-+-` rule, then the cells, right-aligned in numeric columns. The
/// last column is not padded on the right. A cell holding line breaks takes several
/// lines, each but its last marked with `+`. Widths count characters (psql counts
/// screen columns, which differ for wide characters).
pub(crate) fn write_table(
    out: &mut impl Write,
    title: Option<&str>,
    columns: &[(&str, bool)],
    rows: &[Vec<String>],
) -> std::io::Result<()> {
    let widths: Vec<usize> = (0..columns.len())
        .map(|i| {
            let cells = rows.iter().filter_map(|r| r.get(i));
            let lines = cells.flat_map(|c| c.split('\n')).map(width);
            lines.fold(width(columns[i].0), usize::max)
        })
        .collect();
    if let Some(title) = title {
        let total = widths.iter().sum::<usize>() + (3 * widths.len()).saturating_sub(1);
        let pad = total.saturating_sub(width(title)) / 2;
        writeln!(out, "{:pad$}{title}", "")?;
    }
    let header: Vec<String> = columns
        .iter()
        .zip(&widths)
        .map(|((name, _), &w)| {
            let spare = w - width(name);
            let (left, right) = (spare / 2, spare - spare / 2);
            format!(" {:left$}{name}{:right$} ", "", "")
        })
        .collect();
    writeln!(out, "{}", header.join("|"))?;
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(w + 2)).collect();
    writeln!(out, "{}", rule.join("+"))?;
    for row in rows {
        for line in table_row(columns, &widths, row) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// The lines of one row: one per line of its tallest cell.
fn table_row(columns: &[(&str, bool)], widths: &[usize], row: &[String]) -> Vec<String> {
    let cells: Vec<Vec<&str>> = (0..columns.len())
        .map(|i| row.get(i).map_or("", String::as_str).split('\n').collect())
        .collect();
    let height = cells.iter().map(Vec::len).max().unwrap_or(1);
    (0..height)
        .map(|k| {
            let mut line = String::new();
            for (i, (&(_, right), &w)) in columns.iter().zip(widths).enumerate() {
                let part = cells[i].get(k).copied().unwrap_or_default();
                let more = k + 1 < cells[i].len();
                let last = i + 1 == columns.len();
                let padding = " ".repeat(w - width(part));
                line.push(' ');
                if right {
                    line.push_str(&padding);
                }
                line.push_str(part);
                if !right && (!last || more) {
                    line.push_str(&padding);
                }
                line.push_str(match (more, last) {
                    (true, true) => "+",
                    (true, false) => "+|",
                    (false, true) => "",
                    (false, false) => " |",
                });
            }
            line
        })
        .collect()
}

fn width(text: &str) -> usize {
    text.chars().count()
}

pub(crate) fn rows_footer(rows: usize) -> String {
    match rows {
        1 => "(1 row)".into(),
        n => format!("({n} rows)"),
    }
}

/// psql's error report: the message, then (when the error has a position) the line of
/// the statement holding it with a caret under the position, then DETAIL and HINT.
fn error_text(statement: &str, e: &SqlError) -> String {
    let mut text = format!("ERROR:  {}", e.message);
    if let Some(position) = e.position {
        text.push('\n');
        text.push_str(&position_lines(statement, position));
    }
    if let Some(detail) = &e.detail {
        text.push_str(&format!("\nDETAIL:  {detail}"));
    }
    if let Some(hint) = &e.hint {
        text.push_str(&format!("\nHINT:  {hint}"));
    }
    if let Some(context) = &e.context {
        text.push_str(&format!("\nCONTEXT:  {context}"));
    }
    text
}

/// psql shows at most this many characters of the line...
const LINE_DISPLAY_CHARS: usize = 60;
/// ...and keeps the caret at least this far from a cut end.
const MIN_RIGHT_CUT: usize = 10;

/// `LINE n: <line>` and the caret line under the 1-based character `position`, cutting a
/// long line around the caret with `...` as psql does (psql's reportErrorPosition).
fn position_lines(statement: &str, position: usize) -> String {
    let chars: Vec<char> = statement.chars().collect();
    let at = position.saturating_sub(1).min(chars.len());
    let mut begin = chars[..at]
        .iter()
        .rposition(|&c| c == '\n')
        .map_or(0, |i| i + 1);
    let mut end = chars[at..]
        .iter()
        .position(|&c| c == '\n')
        .map_or(chars.len(), |i| at + i);
    let line_no = chars[..at].iter().filter(|&&c| c == '\n').count() + 1;
    let (mut cut_begin, mut cut_end) = (false, false);
    if end - begin > LINE_DISPLAY_CHARS {
        if begin + LINE_DISPLAY_CHARS >= at + MIN_RIGHT_CUT {
            cut_end = true;
            end = begin + LINE_DISPLAY_CHARS;
        } else {
            cut_end = end > at + MIN_RIGHT_CUT;
            end = end.min(at + MIN_RIGHT_CUT);
            cut_begin = end - begin > LINE_DISPLAY_CHARS;
            begin = begin.max(end.saturating_sub(LINE_DISPLAY_CHARS));
        }
    }
    let prefix = format!("LINE {line_no}: {}", if cut_begin { "..." } else { "" });
    let line: String = chars[begin..end]
        .iter()
        .map(|&c| if c == '\t' { ' ' } else { c })
        .collect();
    let suffix = if cut_end { "..." } else { "" };
    let caret = " ".repeat(width(&prefix) + at - begin);
    format!("{prefix}{line}{suffix}\n{caret}^")
}

/// What a statement wrote: the WAL records (logical; the index part apart), what reached the WAL files
/// (physical: compressed frames and their headers), undo, data pages, temporary files
/// (when a sort or grouping passed work_mem), fsyncs, time.
/// `WAL 123.3 MiB (36,365 records, 0 page images), 3.8 MiB written · undo 0 B · data 0 B
/// · fsync 1 · 0.61 s`.
fn wal_line(stats: &StatsSnapshot, elapsed: Duration) -> String {
    // Index WAL, when there is some, apart from the tables': `WAL 1.2 MiB (table 1.0
    // MiB, index 200 KiB; 2,001 records, 0 page images)`.
    let split = if stats.index_wal_bytes > 0 {
        format!(
            "table {}, index {}; ",
            bytes_text(stats.wal_record_bytes - stats.index_wal_bytes),
            bytes_text(stats.index_wal_bytes)
        )
    } else {
        String::new()
    };
    // Undo written to files (past undo_memory), when there is some.
    let undo = if stats.undo_bytes_spilled > 0 {
        format!(
            "{} ({} to files)",
            bytes_text(stats.undo_bytes),
            bytes_text(stats.undo_bytes_spilled)
        )
    } else {
        bytes_text(stats.undo_bytes)
    };
    // Temporary files (sorts and groupings past work_mem), when there are some.
    let temp = if stats.temp_bytes > 0 {
        format!(" · temp {}", bytes_text(stats.temp_bytes))
    } else {
        String::new()
    };
    format!(
        "WAL {} ({split}{} records, {} page images), {} written · undo {undo} · data {}{temp} · fsync {} · {:.2} s",
        bytes_text(stats.wal_record_bytes),
        grouped(stats.wal_records),
        grouped(stats.page_images),
        bytes_text(stats.wal_bytes_written),
        bytes_text(stats.data_bytes_written),
        grouped(stats.fsyncs()),
        elapsed.as_secs_f64()
    )
}

/// `\undo`: `undo held: 0 B (0 B of it in files; 256.0 MiB kept in memory, no limit)`.
fn undo_line(held: u64, in_files: u64, memory: u64, limit: u64) -> String {
    let limit = match limit {
        u64::MAX => "no limit".to_string(),
        n => format!("limit {}", bytes_text(n)),
    };
    format!(
        "undo held: {} ({} of it in files; {} kept in memory, {limit})",
        bytes_text(held),
        bytes_text(in_files),
        bytes_text(memory),
    )
}

/// Bytes in B (whole), KiB, MiB or GiB (one decimal).
fn bytes_text(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut amount = bytes as f64 / 1024.0;
    let mut unit = 0;
    // 1023.95 would print as "1024.0": move on to the next unit before that.
    while amount >= 1023.95 && unit < 2 {
        amount /= 1024.0;
        unit += 1;
    }
    format!("{amount:.1} {}", ["KiB", "MiB", "GiB"][unit])
}

/// A count with thousands separators: 1,000,000.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// psql's `\timing` line: milliseconds, and from one second on also minutes and seconds.
fn timing_line(elapsed: Duration) -> String {
    let ms = elapsed.as_secs_f64() * 1000.0;
    if ms < 1000.0 {
        return format!("Time: {ms:.3} ms");
    }
    let total_secs = elapsed.as_secs_f64();
    let minutes = (total_secs / 60.0).floor();
    let secs = total_secs - 60.0 * minutes;
    if minutes < 60.0 {
        return format!("Time: {ms:.3} ms ({:02}:{secs:06.3})", minutes as u64);
    }
    let hours = (minutes / 60.0).floor();
    let minutes = minutes - 60.0 * hours;
    format!(
        "Time: {ms:.3} ms ({:02}:{:02}:{secs:06.3})",
        hours as u64, minutes as u64
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(lines: &[&str]) -> (Vec<String>, String, Lexical) {
        let mut buffer = QueryBuffer::default();
        let done = lines
            .iter()
            .filter_map(|l| {
                let done = buffer.push(l);
                buffer.push("\n");
                done
            })
            .collect();
        (done, buffer.text, buffer.state)
    }

    #[test]
    fn backslash_commands_start_outside_quotes_and_comments() {
        let buffer = QueryBuffer::default();
        assert_eq!(buffer.command_start("select 1; \\dt"), Some(10));
        assert_eq!(buffer.command_start("\\q"), Some(0));
        assert_eq!(buffer.command_start("select 'a\\b' -- \\q"), None);
        assert_eq!(
            buffer.command_start("select \"a\\b\" /* \\q */ \\q"),
            Some(22)
        );
        assert_eq!(buffer.command_start("select 1"), None);
        // Inside a string begun on an earlier line.
        let mut buffer = QueryBuffer::default();
        buffer.push("select 'it");
        assert_eq!(buffer.command_start("\\q' as x; \\dt"), Some(10));
    }

    #[test]
    fn statements_end_at_semicolons_outside_quotes_and_comments() {
        let (done, rest, state) = complete(&["select ';' -- ;", "as x; select"]);
        assert_eq!(done, ["select ';' -- ;\nas x;"]);
        assert_eq!((rest.as_str(), state), (" select\n", Lexical::Code));
        let (done, rest, state) = complete(&["select \"a;", "b\" /* ; /* ; */ ;", "*/ 1"]);
        assert!(done.is_empty(), "{done:?}");
        assert_eq!(rest, "select \"a;\nb\" /* ; /* ; */ ;\n*/ 1\n");
        assert_eq!(state, Lexical::Code);
        let (done, _, state) = complete(&["select 'it''s;"]);
        assert!(done.is_empty(), "{done:?}");
        assert_eq!(state, Lexical::SingleQuote);
    }

    #[test]
    fn figures_are_formatted() {
        assert_eq!(bytes_text(0), "0 B");
        assert_eq!(bytes_text(1023), "1023 B");
        assert_eq!(bytes_text(1024), "1.0 KiB");
        assert_eq!(bytes_text(13_002_342), "12.4 MiB");
        assert_eq!(bytes_text(1024 * 1024 - 1), "1.0 MiB");
        assert_eq!(bytes_text(5 << 30), "5.0 GiB");
        assert_eq!(
            undo_line(0, 0, 256 << 20, u64::MAX),
            "undo held: 0 B (0 B of it in files; 256.0 MiB kept in memory, no limit)"
        );
        assert_eq!(
            undo_line(3 << 20, 1 << 20, 2 << 20, 1 << 30),
            "undo held: 3.0 MiB (1.0 MiB of it in files; 2.0 MiB kept in memory, limit 1.0 GiB)"
        );
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000_000), "1,000,000");
        assert_eq!(grouped(12_345), "12,345");
        assert_eq!(
            timing_line(Duration::from_micros(12_345)),
            "Time: 12.345 ms"
        );
        assert_eq!(
            timing_line(Duration::from_millis(61_234)),
            "Time: 61234.000 ms (01:01.234)"
        );
    }

    #[test]
    fn table_matches_psql() {
        let mut out = Vec::new();
        let rows = vec![vec!["1".to_string(), "x".to_string()]];
        write_table(&mut out, Some("T"), &[("count", true), ("b", false)], &rows).expect("write");
        let text = String::from_utf8(out).expect("UTF-8");
        assert_eq!(text, "     T\n count | b \n-------+---\n     1 | x\n");
        let mut out = Vec::new();
        let rows = vec![vec![
            "a\nbc".to_string(),
            "x".to_string(),
            "y\nz".to_string(),
        ]];
        let columns = [("t", false), ("u", false), ("v", false)];
        write_table(&mut out, None, &columns, &rows).expect("write");
        let text = String::from_utf8(out).expect("UTF-8");
        assert_eq!(
            text,
            " t  | u | v \n----+---+---\n a +| x | y+\n bc |   | z\n"
        );
    }

    #[test]
    fn long_lines_are_cut_around_the_caret() {
        let statement = format!("select {} + nope", "1 + ".repeat(30));
        let at = statement.find("nope").expect("nope") + 1;
        let lines = position_lines(&statement, at);
        let (line, caret) = lines.split_once('\n').expect("two lines");
        assert!(
            line.starts_with("LINE 1: ...") && line.ends_with("nope"),
            "{line}"
        );
        assert_eq!(line.chars().count(), 11 + 60);
        assert_eq!(caret.len(), line.find("nope").expect("nope") + 1);
        assert_eq!(
            position_lines("select\n  nope", 10),
            "LINE 2:   nope\n          ^"
        );
    }
}
