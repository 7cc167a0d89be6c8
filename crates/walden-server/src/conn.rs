//! One connection: startup and authentication, then the simple and extended query
//! protocols over one SQL session, until the client terminates or the server stops.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use pgwire::messages::copy::{CopyData, CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{
    DataRow, FieldDescription, NoData, ParameterDescription, RowDescription,
};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    PortalSuspended,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, NoticeResponse, ReadyForQuery, SslResponse,
    TransactionStatus,
};
use pgwire::messages::startup::{
    Authentication, BackendKeyData, NegotiateProtocolVersion, ParameterStatus, SecretKey, Startup,
};
use pgwire::messages::{
    PgWireBackendMessage as B, PgWireFrontendMessage as F, SslNegotiationMetaMessage,
};
use walden::Value;
use walden_sql::copy::CopyStart;
use walden_sql::error::code;
use walden_sql::{Prepared, Session, SqlError, SqlType, StatementResult};

use crate::values::{decode_param, encode_binary, encode_text, type_len, type_of_oid, type_oid};
use crate::wire::{Stream, Wire, WireError};
use crate::Shared;

use walden_sql::settings::SERVER_VERSION;

/// The largest message taken before authentication (PostgreSQL's
/// PG_MAX_AUTH_TOKEN_LENGTH).
const PRE_AUTH_MAX_MESSAGE: usize = 65_535;

/// Serves one client until it leaves.
pub(crate) fn serve(stream: Stream, local: bool, shared: &Shared) {
    // Until it is authenticated, a client's messages are small (PostgreSQL takes at most
    // 65,535 bytes of a password or SASL message): an unknown client cannot make the
    // server hold max_message_bytes for it.
    let Ok(mut wire) = Wire::new(
        stream,
        PRE_AUTH_MAX_MESSAGE.min(shared.config.max_message_bytes),
    ) else {
        return;
    };
    // Startup and authentication together take at most startup_timeout.
    let deadline = Instant::now() + shared.config.startup_timeout;
    let Some(startup) = startup(&mut wire, shared, deadline) else {
        return;
    };
    let mut session = Session::new(&shared.db);
    session.set_max_connections(u32::try_from(shared.config.max_connections).unwrap_or(u32::MAX));
    let Some((pid, secret)) = shared.register(session.cancel_handle()) else {
        let _ = fatal(
            &mut wire,
            SqlError::new("53300", "sorry, too many clients already"),
        );
        return;
    };
    let mut conn = Conn {
        wire,
        shared,
        pid,
        session: &mut session,
        skip_to_sync: false,
        statements: HashMap::new(),
        portals: HashMap::new(),
        reported: Vec::new(),
    };
    if conn.begin(&startup, local, secret, deadline).is_ok() {
        conn.run();
    }
    shared.unregister(pid);
    // The session's open transaction, if any, is rolled back as it drops.
}

/// Refuses a connection the server has no thread for (from the accepting thread, so
/// it waits at most a moment on a client that does not read): PostgreSQL's 53300.
pub(crate) fn refuse(stream: Stream) {
    let wait = Some(std::time::Duration::from_millis(50));
    if stream.set_write_timeout(wait).is_err() {
        return;
    }
    if let Ok(mut wire) = Wire::new(stream, PRE_AUTH_MAX_MESSAGE) {
        let _ = fatal(
            &mut wire,
            SqlError::new("53300", "sorry, too many clients already"),
        );
    }
}

/// Reads the startup packet: answers SSL and GSS requests (no encryption is offered
/// yet), serves a cancel request, and gives the Startup message.
fn startup(wire: &mut Wire, shared: &Shared, deadline: Instant) -> Option<Startup> {
    let mut check = || Instant::now() < deadline && !shared.stopping.load(Ordering::Relaxed);
    loop {
        let m = match wire.recv(&mut check) {
            Ok(m) => m,
            Err(WireError::UnsupportedProtocol { major, minor }) => {
                let message = format!(
                    "unsupported frontend protocol {major}.{minor}: server supports 3.0 to 3.0"
                );
                // As PostgreSQL: a client of an older protocol is told in its own
                // format, a newer one in 3.0's.
                let _ = if major < 3 {
                    wire.send_raw(format!("EFATAL:  {message}\n\0").as_bytes())
                } else {
                    fatal(wire, SqlError::new(code::FEATURE_NOT_SUPPORTED, message))
                };
                return None;
            }
            Err(WireError::TooLarge(_)) | Err(WireError::Malformed(_)) => {
                // PostgreSQL closes such a connection with only a log line: the
                // client has not said which protocol it speaks.
                return None;
            }
            Err(_) => return None,
        };
        match m {
            F::SslNegotiation(SslNegotiationMetaMessage::PostgresSsl(_)) => {
                wire.ctx.awaiting_frontend_ssl = false;
                match (&shared.config.tls, &wire.stream) {
                    (Some(tls), Stream::Tcp(_)) => {
                        wire.send(B::SslResponse(SslResponse::Accept)).ok()?;
                        wire.flush().ok()?;
                        wire.start_tls(tls.clone()).ok()?;
                    }
                    _ => {
                        wire.send(B::SslResponse(SslResponse::Refuse)).ok()?;
                        wire.flush().ok()?;
                    }
                }
            }
            F::SslNegotiation(SslNegotiationMetaMessage::PostgresGss(_)) => {
                wire.send(B::GssEncResponse(
                    pgwire::messages::response::GssEncResponse::Refuse,
                ))
                .ok()?;
                wire.flush().ok()?;
                wire.ctx.awaiting_frontend_ssl = false;
            }
            F::SslNegotiation(_) => wire.ctx.awaiting_frontend_ssl = false,
            F::CancelRequest(c) => {
                if let Some(secret) = c.secret_key.as_i32() {
                    shared.cancel(c.pid, secret);
                }
                return None;
            }
            F::Startup(s) => {
                wire.ctx.awaiting_frontend_ssl = false;
                wire.ctx.awaiting_frontend_startup = false;
                return Some(s);
            }
            _ => return None,
        }
    }
}

/// Sends a FATAL error and flushes (the connection ends after it).
fn fatal(wire: &mut Wire, e: SqlError) -> std::io::Result<()> {
    wire.send(B::ErrorResponse(ErrorResponse::new(error_fields(
        &e, "FATAL",
    ))))?;
    wire.flush()
}

/// An error's fields as the protocol carries them.
fn error_fields(e: &SqlError, severity: &str) -> Vec<(u8, String)> {
    let mut fields = vec![
        (b'S', severity.to_string()),
        (b'V', severity.to_string()),
        (b'C', e.code.to_string()),
        (b'M', e.message.clone()),
    ];
    if let Some(d) = &e.detail {
        fields.push((b'D', d.to_string()));
    }
    if let Some(h) = &e.hint {
        fields.push((b'H', h.to_string()));
    }
    if let Some(p) = e.position {
        fields.push((b'P', p.to_string()));
    }
    if let Some(c) = &e.context {
        fields.push((b'W', c.to_string()));
    }
    fields
}

struct Conn<'a> {
    wire: Wire,
    shared: &'a Shared,
    pid: i32,
    session: &'a mut Session,
    /// After an error in the extended protocol, messages up to the next Sync are read
    /// and dropped.
    skip_to_sync: bool,
    /// Prepared statements by name ("" is the unnamed one).
    statements: HashMap<String, Arc<Statement>>,
    /// Portals by name ("" is the unnamed one).
    portals: HashMap<String, Portal>,
    /// The settings whose changes the client is told of (ParameterStatus), as last
    /// told.
    reported: Vec<(&'static str, String)>,
}

/// The settings PostgreSQL reports to the client when they change (GUC_REPORT).
const REPORTED: &[&str] = &[
    "application_name",
    "client_encoding",
    "DateStyle",
    "IntervalStyle",
    "TimeZone",
    "standard_conforming_strings",
];

fn reported(session: &Session) -> Vec<(&'static str, String)> {
    let settings = session.client_settings();
    REPORTED
        .iter()
        .map(|n| (*n, settings.get(n).unwrap_or_default()))
        .collect()
}

/// The settings in a startup packet's `options`: `-c name=value` and `--name=value`.
fn startup_options(options: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        let pair = if w == "-c" {
            words.next()
        } else if let Some(rest) = w.strip_prefix("-c") {
            Some(rest)
        } else {
            w.strip_prefix("--")
        };
        if let Some((name, value)) = pair.and_then(|p| p.split_once('=')) {
            out.push((name.replace('-', "_"), value.to_string()));
        }
    }
    out
}

/// A statement of the extended protocol: prepared, with what Describe tells of it.
struct Statement {
    /// The query as the client sent it.
    text: String,
    /// None for an empty query (Execute answers EmptyQueryResponse).
    prepared: Option<Prepared>,
    /// The types the client gave its parameters (0: none), as Parse sent them.
    client_oids: Vec<u32>,
    params: Vec<SqlType>,
    columns: Vec<(String, SqlType)>,
}

/// A statement bound to values, run by Execute (at once in full; its rows are handed
/// out as Execute's row limits ask).
struct Portal {
    statement: Arc<Statement>,
    values: Vec<Value>,
    /// Result column formats as Bind gave them.
    formats: Vec<i16>,
    /// After the first Execute: the rows not yet sent, and the tag to send after them.
    pending: Option<(std::collections::VecDeque<Vec<Value>>, String, Vec<String>)>,
    /// A query in a transaction block run with a row limit: read through the session's
    /// cursor of the portal's name, a batch per Execute (`Session::open_portal`).
    cursor: bool,
}

impl Conn<'_> {
    /// Authenticates the client and tells it the session's parameters.
    fn begin(
        &mut self,
        startup: &Startup,
        local: bool,
        secret: i32,
        deadline: Instant,
    ) -> std::io::Result<()> {
        if startup.protocol_number_major != 3 {
            fatal(
                &mut self.wire,
                SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    format!(
                        "unsupported frontend protocol {}.{}: server supports 3.0 to 3.0",
                        startup.protocol_number_major, startup.protocol_number_minor
                    ),
                ),
            )?;
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        // A newer minor version, or protocol options (`_pq_.*`), are answered with
        // what this server speaks: 3.0 and no options.
        let options: Vec<String> = startup
            .parameters
            .keys()
            .filter(|k| k.starts_with("_pq_."))
            .cloned()
            .collect();
        if startup.protocol_number_minor > 0 || !options.is_empty() {
            self.wire
                .send(B::NegotiateProtocolVersion(NegotiateProtocolVersion::new(
                    0, options,
                )))?;
        }
        let Some(user) = startup.parameters.get("user").filter(|u| !u.is_empty()) else {
            fatal(
                &mut self.wire,
                SqlError::new(
                    "28000",
                    "no PostgreSQL user name specified in startup packet",
                ),
            )?;
            return Err(std::io::ErrorKind::InvalidData.into());
        };
        if !local && self.shared.config.require_tls && !self.wire.stream.is_tls() {
            fatal(
                &mut self.wire,
                SqlError::new(
                    "28000",
                    format!("connection for user \"{user}\" refused: this server requires TLS (sslmode=require)"),
                ),
            )?;
            return Err(std::io::ErrorKind::PermissionDenied.into());
        }
        // Trust is for the Unix socket only (its file's permissions say who may
        // connect); a TCP client is always asked for a password.
        let trusted = local && self.shared.config.trust_local;
        let role = walden_sql::roles::find(&self.shared.db, user);
        let authenticated = if trusted {
            Ok(())
        } else {
            self.scram(user, role.as_ref(), deadline)?
        };
        if let Err(e) = authenticated.and_then(|()| crate::scram::check_login(role.as_ref(), user))
        {
            let mut err = SqlError::new(e.code(), e.message_for(user));
            if let Some(d) = e.detail() {
                err = err.with_detail(d);
            }
            fatal(&mut self.wire, err)?;
            return Err(std::io::ErrorKind::PermissionDenied.into());
        }
        self.wire.send(B::Authentication(Authentication::Ok))?;
        self.wire
            .set_max_message(self.shared.config.max_message_bytes);
        // The session runs as the role that logged in.
        self.session.set_user(user);
        // The client's settings: its startup parameters, and `options` ("-c name=value"
        // or "--name=value", space-separated).
        let mut settings: Vec<(String, String)> = Vec::new();
        for (name, value) in &startup.parameters {
            match name.as_str() {
                "user" | "database" => {}
                n if n.starts_with("_pq_.") => {}
                "replication" if !matches!(value.as_str(), "false" | "off" | "0" | "no") => {
                    fatal(
                        &mut self.wire,
                        SqlError::new(
                            code::FEATURE_NOT_SUPPORTED,
                            "replication connections are not supported yet",
                        ),
                    )?;
                    return Err(std::io::ErrorKind::Unsupported.into());
                }
                "replication" => {}
                "options" => settings.extend(startup_options(value)),
                _ => settings.push((name.clone(), value.clone())),
            }
        }
        for (name, value) in settings {
            if let Err(e) = self.session.set_setting(&name, &value) {
                // A time zone other than UTC is not refused at startup (JDBC sends the
                // JVM's): timestamps with time zone go out with their offset, and
                // ParameterStatus tells the client the zone is UTC.
                if name.eq_ignore_ascii_case("timezone") {
                    continue;
                }
                fatal(&mut self.wire, e)?;
                return Err(std::io::ErrorKind::InvalidInput.into());
            }
        }
        for (name, value) in [
            ("server_version", SERVER_VERSION.to_string()),
            ("server_encoding", "UTF8".into()),
            ("integer_datetimes", "on".into()),
            (
                "is_superuser",
                if role.as_ref().is_some_and(|r| r.superuser) {
                    "on"
                } else {
                    "off"
                }
                .into(),
            ),
            ("session_authorization", user.clone()),
            ("default_transaction_read_only", "off".into()),
            ("in_hot_standby", "off".into()),
        ] {
            self.wire
                .send(B::ParameterStatus(ParameterStatus::new(name.into(), value)))?;
        }
        self.reported = reported(self.session);
        for (name, value) in self.reported.clone() {
            self.wire
                .send(B::ParameterStatus(ParameterStatus::new(name.into(), value)))?;
        }
        self.wire.send(B::BackendKeyData(BackendKeyData::new(
            self.pid,
            SecretKey::I32(secret),
        )))?;
        self.ready()
    }

    /// A SCRAM-SHA-256 exchange with the client (AuthenticationSASL, its
    /// SASLInitialResponse, AuthenticationSASLContinue, its SASLResponse,
    /// AuthenticationSASLFinal). The outer error is the connection's (it ended, or took
    /// past `deadline`); the inner, why authentication failed.
    fn scram(
        &mut self,
        user: &str,
        role: Option<&walden::RoleDef>,
        deadline: Instant,
    ) -> std::io::Result<Result<(), crate::scram::AuthError>> {
        use crate::scram::{AuthError, ScramServer};
        self.wire.send(B::Authentication(Authentication::SASL(
            crate::scram::MECHANISMS
                .iter()
                .map(|m| m.to_string())
                .collect(),
        )))?;
        let stopping = &self.shared.stopping;
        let mut check = || Instant::now() < deadline && !stopping.load(Ordering::Relaxed);
        let expected = |what: &'static str| AuthError::Protocol {
            message: what,
            detail: None,
        };
        let first = match self.wire.recv(&mut check) {
            Ok(F::PasswordMessageFamily(p)) => match &p {
                pgwire::messages::startup::PasswordMessageFamily::Raw(body)
                    if crate::wire::check_sasl_initial(body).is_err() =>
                {
                    return Ok(Err(expected("malformed SASLInitialResponse message")));
                }
                _ => p.into_sasl_initial_response(),
            },
            Ok(_) => return Ok(Err(expected("expected SASL response, got another message"))),
            Err(WireError::TooLarge(_)) => return Ok(Err(expected("invalid message length"))),
            Err(_) => return Err(std::io::ErrorKind::TimedOut.into()),
        };
        let Ok(first) = first else {
            return Ok(Err(expected("malformed SASLInitialResponse message")));
        };
        if let Err(e) = crate::scram::check_mechanism(&first.auth_method) {
            return Ok(Err(e));
        }
        let nonce = match crate::scram::server_nonce() {
            Ok(n) => n,
            Err(why) => return Err(std::io::Error::other(why)),
        };
        let mut exchange = ScramServer::for_role(
            role,
            user,
            // What valid_until is compared with: now as a timestamptz.
            walden_sql::datetime::system_now_micros(),
            &self.shared.db.secret_seed(),
            nonce,
        );
        let data = first.data.as_deref().unwrap_or_default();
        let server_first = match exchange.client_first(data) {
            Ok(m) => m,
            Err(e) => return Ok(Err(e)),
        };
        self.wire
            .send(B::Authentication(Authentication::SASLContinue(
                bytes::Bytes::from(server_first),
            )))?;
        let last = match self.wire.recv(&mut check) {
            Ok(F::PasswordMessageFamily(p)) => p.into_sasl_response(),
            Ok(_) => return Ok(Err(expected("expected SASL response, got another message"))),
            Err(WireError::TooLarge(_)) => return Ok(Err(expected("invalid message length"))),
            Err(_) => return Err(std::io::ErrorKind::TimedOut.into()),
        };
        let Ok(last) = last else {
            return Ok(Err(expected("malformed SASLResponse message")));
        };
        match exchange.client_final(&last.data) {
            Ok(server_final) => {
                self.wire.send(B::Authentication(Authentication::SASLFinal(
                    bytes::Bytes::from(server_final),
                )))?;
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    /// ReadyForQuery with the session's transaction state.
    fn ready(&mut self) -> std::io::Result<()> {
        if !self.reported.is_empty() {
            let now = reported(self.session);
            for (i, (name, value)) in now.iter().enumerate() {
                if self.reported.get(i).is_none_or(|(_, v)| v != value) {
                    self.wire.send(B::ParameterStatus(ParameterStatus::new(
                        (*name).into(),
                        value.clone(),
                    )))?;
                }
            }
            self.reported = now;
        }
        let status = if self.session.in_failed_block() {
            TransactionStatus::Error
        } else if self.session.in_transaction_block() {
            TransactionStatus::Transaction
        } else {
            TransactionStatus::Idle
        };
        self.wire
            .send(B::ReadyForQuery(ReadyForQuery::new(status)))?;
        self.wire.flush()
    }

    /// Messages until the client leaves or the server stops.
    fn run(&mut self) {
        loop {
            let stopping = &self.shared.stopping;
            let m = match self.wire.recv(&mut || !stopping.load(Ordering::Relaxed)) {
                Ok(m) => m,
                Err(WireError::Stopped) => {
                    let _ = fatal(
                        &mut self.wire,
                        SqlError::new(
                            "57P01",
                            "terminating connection due to administrator command",
                        ),
                    );
                    return;
                }
                Err(WireError::TooLarge(n)) => {
                    let _ = fatal(
                        &mut self.wire,
                        SqlError::new(
                            code::PROTOCOL_VIOLATION,
                            format!(
                                "invalid message length: {n} bytes is more than this server takes ({} bytes)",
                                self.shared.config.max_message_bytes
                            ),
                        ),
                    );
                    return;
                }
                Err(WireError::Malformed(why)) => {
                    let _ = fatal(
                        &mut self.wire,
                        SqlError::new(code::PROTOCOL_VIOLATION, format!("invalid message: {why}")),
                    );
                    return;
                }
                Err(WireError::BadEncoding { kind, message }) => {
                    if self.bad_encoding(kind, message).is_err() {
                        return;
                    }
                    continue;
                }
                // (A protocol version is read only at startup.)
                Err(WireError::Closed)
                | Err(WireError::Io)
                | Err(WireError::UnsupportedProtocol { .. }) => return,
            };
            let result = match m {
                F::Query(q) => self.simple_query(&q.query),
                F::Terminate(_) => return,
                // Outside COPY these are ignored, as the protocol says.
                F::CopyData(_) | F::CopyDone(_) | F::CopyFail(_) => Ok(()),
                other if other.is_extended_query() => self.extended(other),
                _ => {
                    let _ = fatal(
                        &mut self.wire,
                        SqlError::new(
                            code::PROTOCOL_VIOLATION,
                            "unexpected message during a session",
                        ),
                    );
                    return;
                }
            };
            if result.is_err() {
                return;
            }
        }
    }

    /// A Query message: each statement of its text in turn, until one fails.
    fn simple_query(&mut self, query: &str) -> std::io::Result<()> {
        if query.trim().trim_matches(';').trim().is_empty() {
            self.wire
                .send(B::EmptyQueryResponse(EmptyQueryResponse::new()))?;
            return self.ready();
        }
        // A COPY exchanges data with the client between its start and its end, so a
        // query holding one runs statement by statement (the others through the
        // session as usual).
        if query
            .as_bytes()
            .windows(4)
            .any(|w| w.eq_ignore_ascii_case(b"copy"))
        {
            if let Ok(statements) = walden_sql::script::parse_script(query) {
                if statements
                    .iter()
                    .any(|s| walden_sql::copy::is_copy(&s.text))
                {
                    for s in statements {
                        let go_on = if walden_sql::copy::is_copy(&s.text) {
                            match self.copy(&s.text) {
                                Ok(tag) => {
                                    self.wire
                                        .send(B::CommandComplete(CommandComplete::new(tag)))?;
                                    true
                                }
                                Err(Failure::Sql(mut e)) => {
                                    e.position = e.position.map(|p| p + s.start_char);
                                    self.send_error(&e)?;
                                    false
                                }
                                Err(Failure::Io(e)) => return Err(e),
                            }
                        } else {
                            self.run_text(&s.text, s.start_char)?
                        };
                        if !go_on {
                            break;
                        }
                    }
                    return self.ready();
                }
            }
        }
        self.run_text(query, 0)?;
        self.ready()
    }

    /// A message whose strings are not UTF-8 (consumed whole): an error, as its statement
    /// would have failed — in an extended-query exchange the rest up to Sync is skipped,
    /// a Query is answered ReadyForQuery — and a transaction block is aborted.
    fn bad_encoding(&mut self, kind: u8, message: String) -> std::io::Result<()> {
        let e = self
            .session
            .fail_statement(SqlError::new(code::CHARACTER_NOT_IN_REPERTOIRE, message));
        if self.skip_to_sync && kind != b'Q' {
            return Ok(());
        }
        self.send_error(&e)?;
        if kind == b'Q' {
            self.ready()
        } else {
            self.skip_to_sync = true;
            Ok(())
        }
    }

    fn send_error(&mut self, e: &SqlError) -> std::io::Result<()> {
        self.wire
            .send(B::ErrorResponse(ErrorResponse::new(error_fields(
                e, "ERROR",
            ))))
    }

    /// Runs a text's statements, sending each one's result, until one fails (false).
    /// `base_chars`: where the text starts in the client's query, for error positions.
    fn run_text(&mut self, query: &str, base_chars: usize) -> std::io::Result<bool> {
        let mut io_error = None;
        let mut all_ok = true;
        // Where each statement's text lies in the query, so an error's position
        // (counted from its statement's start) is given from the query's start.
        let mut from_byte = 0usize;
        let session = &mut *self.session;
        let wire = std::cell::RefCell::new(&mut self.wire);
        let mut rows = WireRows {
            wire: &wire,
            formats: Vec::new(),
            columns: Vec::new(),
            describe: true,
            failed: None,
        };
        session.run_script_to(query, &mut rows, &mut |outcome| {
            let mut wire = wire.borrow_mut();
            let wire = &mut **wire;
            let start = query[from_byte..]
                .find(outcome.text.as_str())
                .map(|i| from_byte + i);
            if let Some(s) = start {
                from_byte = s + outcome.text.len();
            }
            let sent = match outcome.result {
                Ok(r) => send_result(wire, &r, None),
                Err(mut e) => {
                    all_ok = false;
                    if let (Some(p), Some(s)) = (e.position, start) {
                        e.position = Some(p + base_chars + query[..s].chars().count());
                    }
                    wire.send(B::ErrorResponse(ErrorResponse::new(error_fields(
                        &e, "ERROR",
                    ))))
                    .map(|_| false)
                }
            };
            match sent {
                Ok(go_on) => go_on,
                Err(e) => {
                    io_error = Some(e);
                    false
                }
            }
        });
        if let Some(e) = rows.failed.take().or(io_error) {
            return Err(e);
        }
        Ok(all_ok)
    }

    /// A COPY with the client: its data in (CopyInResponse, CopyData until CopyDone or
    /// CopyFail) or out (CopyOutResponse, a CopyData per row, CopyDone). Gives the
    /// tag, or the statement's error (not yet sent). After an error in the middle of
    /// data coming in, the client's remaining CopyData messages are read and dropped by
    /// the main loop, as PostgreSQL does.
    fn copy(&mut self, sql: &str) -> Result<String, Failure> {
        let n_columns = |n: usize| i16::try_from(n).unwrap_or(i16::MAX);
        match self.session.copy_start(sql)? {
            CopyStart::In(mut copy) => {
                let n = n_columns(copy.columns());
                self.wire.send(B::CopyInResponse(CopyInResponse::new(
                    0,
                    n,
                    vec![0; n as usize],
                )))?;
                self.wire.flush()?;
                let mut batch = Vec::new();
                let ended = |e: WireError| {
                    Failure::Io(std::io::Error::other(format!(
                        "connection ended during COPY: {e:?}"
                    )))
                };
                loop {
                    // The CopyData messages already received, in one piece (pgbench -i
                    // sends a message per row: a million for scale 10).
                    batch.clear();
                    match self.wire.take_copy_data(&mut batch) {
                        Ok(0) => {}
                        Ok(_) => {
                            copy.data(self.session, &batch)?;
                            continue;
                        }
                        // The COPY is rolled back as it drops; the connection ends.
                        Err(e) => return Err(ended(e)),
                    }
                    let stopping = &self.shared.stopping;
                    let m = self
                        .wire
                        .recv(&mut || !stopping.load(Ordering::Relaxed))
                        .map_err(ended)?;
                    match m {
                        F::CopyData(d) => copy.data(self.session, &d.data)?,
                        F::CopyDone(_) => return Ok(copy.finish(self.session)?.tag),
                        F::CopyFail(f) => return Err(copy.fail(self.session, &f.message).into()),
                        // PostgreSQL lets these pass during COPY FROM STDIN.
                        F::Flush(_) | F::Sync(_) => {}
                        other => {
                            let what = frontend_name(&other);
                            let e = copy.fail(self.session, "unexpected message");
                            drop(e);
                            return Err(SqlError::new(
                                code::PROTOCOL_VIOLATION,
                                format!("unexpected message {what} during COPY from stdin"),
                            )
                            .into());
                        }
                    }
                }
            }
            CopyStart::Out(copy) => {
                let n = n_columns(copy.columns());
                self.wire.send(B::CopyOutResponse(CopyOutResponse::new(
                    0,
                    n,
                    vec![0; n as usize],
                )))?;
                let wire = &mut self.wire;
                let mut io_error = None;
                let result = copy.run(self.session, &mut |bytes| {
                    wire.send(B::CopyData(CopyData::new(bytes::Bytes::copy_from_slice(
                        bytes,
                    ))))
                    .map_err(|e| {
                        let sql =
                            SqlError::new("08006", format!("could not send data to client: {e}"));
                        io_error = Some(e);
                        sql
                    })
                });
                if let Some(e) = io_error {
                    return Err(Failure::Io(e));
                }
                let r = result?;
                self.wire.send(B::CopyDone(CopyDone::new()))?;
                Ok(r.tag)
            }
        }
    }

    /// Parse, Bind, Describe, Execute, Close, Flush, Sync.
    fn extended(&mut self, m: F) -> std::io::Result<()> {
        match m {
            F::Sync(_) => {
                self.skip_to_sync = false;
                // Portals end with their transaction.
                if !self.session.in_transaction_block() {
                    self.portals.clear();
                }
                return self.ready();
            }
            F::Flush(_) => return self.wire.flush(),
            _ if self.skip_to_sync => return Ok(()),
            _ => {}
        }
        let result = match m {
            F::Parse(p) => self.parse(p),
            F::Bind(b) => self.bind(b),
            F::Describe(d) => self.describe(d),
            F::Execute(e) => self.execute(e),
            F::Close(c) => self.close(c),
            _ => Err(SqlError::new(code::PROTOCOL_VIOLATION, "unexpected message").into()),
        };
        match result {
            Ok(()) => Ok(()),
            Err(Failure::Io(e)) => Err(e),
            Err(Failure::Sql(e)) => {
                self.skip_to_sync = true;
                self.wire
                    .send(B::ErrorResponse(ErrorResponse::new(error_fields(
                        &e, "ERROR",
                    ))))
            }
        }
    }

    fn parse(&mut self, p: Parse) -> Result<(), Failure> {
        let name = p.name.unwrap_or_default();
        if !name.is_empty() && self.statements.contains_key(&name) {
            return Err(SqlError::new(
                code::DUPLICATE_PSTATEMENT,
                format!("prepared statement \"{name}\" already exists"),
            )
            .into());
        }
        let mut declared = Vec::with_capacity(p.type_oids.len());
        for &o in &p.type_oids {
            declared.push(match o {
                // Unspecified, or "unknown": inferred from the statement.
                0 | 705 => None,
                o => Some(type_of_oid(o).ok_or_else(|| {
                    SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        format!("parameters of the type with OID {o} are not supported"),
                    )
                })?),
            });
        }
        let statement = if p.query.trim().trim_matches(';').trim().is_empty() {
            Statement {
                text: p.query.clone(),
                prepared: None,
                client_oids: p.type_oids,
                params: Vec::new(),
                columns: Vec::new(),
            }
        } else {
            let prepared = Prepared::with_types(&p.query, declared)?;
            let described = self.session.describe(&prepared)?;
            Statement {
                text: p.query.clone(),
                prepared: Some(prepared),
                client_oids: p.type_oids,
                params: described.params,
                columns: described.columns,
            }
        };
        self.statements.insert(name, Arc::new(statement));
        self.wire.send(B::ParseComplete(ParseComplete::new()))?;
        Ok(())
    }

    fn bind(&mut self, b: Bind) -> Result<(), Failure> {
        let name = b.statement_name.unwrap_or_default();
        let statement = self.statements.get(&name).cloned().ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_PSTATEMENT,
                format!("prepared statement \"{name}\" does not exist"),
            )
        })?;
        let portal = b.portal_name.unwrap_or_default();
        if !portal.is_empty() && self.portals.contains_key(&portal) {
            return Err(
                SqlError::new("42P03", format!("cursor \"{portal}\" already exists")).into(),
            );
        }
        if b.parameters.len() != statement.params.len() {
            return Err(SqlError::new(
                code::PROTOCOL_VIOLATION,
                format!(
                    "bind message supplies {} parameters, but prepared statement \"{name}\" requires {}",
                    b.parameters.len(),
                    statement.params.len()
                ),
            )
            .into());
        }
        let formats = &b.parameter_format_codes;
        if formats.len() > 1 && formats.len() != b.parameters.len() {
            return Err(SqlError::new(
                code::PROTOCOL_VIOLATION,
                format!(
                    "bind message has {} parameter formats but {} parameters",
                    formats.len(),
                    b.parameters.len()
                ),
            )
            .into());
        }
        let mut values = Vec::with_capacity(b.parameters.len());
        for (i, bytes) in b.parameters.iter().enumerate() {
            let binary = match format_of(formats, i) {
                0 => false,
                1 => true,
                f => {
                    return Err(SqlError::new(
                        code::PROTOCOL_VIOLATION,
                        format!("unsupported format code: {f}"),
                    )
                    .into())
                }
            };
            let client_oid = statement.client_oids.get(i).copied().unwrap_or(0);
            values.push(match bytes {
                None => Value::Null,
                Some(bytes) => decode_param(bytes, binary, client_oid, statement.params[i])
                    .map_err(|e| {
                        let mut e = e;
                        e.message = format!("{} (parameter ${})", e.message, i + 1);
                        e
                    })?,
            });
        }
        let columns = statement.columns.len();
        let result_formats = b.result_column_format_codes;
        if result_formats.len() > 1 && result_formats.len() != columns {
            return Err(SqlError::new(
                code::PROTOCOL_VIOLATION,
                format!(
                    "bind message has {} result formats but query has {columns} columns",
                    result_formats.len()
                ),
            )
            .into());
        }
        if let Some(f) = result_formats.iter().find(|f| !matches!(f, 0 | 1)) {
            return Err(SqlError::new(
                code::PROTOCOL_VIOLATION,
                format!("unsupported format code: {f}"),
            )
            .into());
        }
        // A portal of that name read through a cursor ends with this Bind.
        self.session.close_portal(&portal);
        self.portals.insert(
            portal,
            Portal {
                statement,
                values,
                formats: result_formats,
                pending: None,
                cursor: false,
            },
        );
        self.wire.send(B::BindComplete(BindComplete::new()))?;
        Ok(())
    }

    fn describe(&mut self, d: Describe) -> Result<(), Failure> {
        let name = d.name.unwrap_or_default();
        match d.target_type {
            b'S' => {
                let s = self.statements.get(&name).ok_or_else(|| {
                    SqlError::new(
                        code::UNDEFINED_PSTATEMENT,
                        format!("prepared statement \"{name}\" does not exist"),
                    )
                })?;
                let types = s
                    .params
                    .iter()
                    .enumerate()
                    .map(|(i, t)| match s.client_oids.get(i) {
                        Some(&o) if o != 0 => o,
                        _ => type_oid(*t),
                    })
                    .collect();
                let columns = s.columns.clone();
                self.wire
                    .send(B::ParameterDescription(ParameterDescription::new(types)))?;
                self.send_description(&columns, &[])?;
            }
            b'P' => {
                let (columns, formats) = match self.portals.get(&name) {
                    Some(p) => (p.statement.columns.clone(), p.formats.clone()),
                    // A cursor is a portal too (DECLARE's, in PostgreSQL).
                    None => match self.session.cursor_description(&name) {
                        Some(columns) => (columns, Vec::new()),
                        None => return Err(no_portal(&name).into()),
                    },
                };
                self.send_description(&columns, &formats)?;
            }
            other => {
                return Err(SqlError::new(
                    code::PROTOCOL_VIOLATION,
                    format!("invalid DESCRIBE message subtype {other}"),
                )
                .into())
            }
        }
        Ok(())
    }

    fn send_description(
        &mut self,
        columns: &[(String, SqlType)],
        formats: &[i16],
    ) -> std::io::Result<()> {
        if columns.is_empty() {
            self.wire.send(B::NoData(NoData::new()))
        } else {
            self.wire
                .send(B::RowDescription(row_description(columns, formats)))
        }
    }

    fn execute(&mut self, e: Execute) -> Result<(), Failure> {
        let name = e.name.unwrap_or_default();
        let portal = self
            .portals
            .get_mut(&name)
            .ok_or_else(|| no_portal(&name))?;
        if portal.pending.is_none() && walden_sql::copy::is_copy(&portal.statement.text) {
            let text = portal.statement.text.clone();
            let tag = self.copy(&text)?;
            if let Some(p) = self.portals.get_mut(&name) {
                p.pending = Some((Default::default(), tag.clone(), Vec::new()));
            }
            self.wire
                .send(B::CommandComplete(CommandComplete::new(tag)))?;
            return Ok(());
        }
        let portal = self
            .portals
            .get_mut(&name)
            .ok_or_else(|| no_portal(&name))?;
        if portal.pending.is_none() && !portal.cursor && e.max_rows > 0 {
            if let Some(prepared) = &portal.statement.prepared {
                portal.cursor = self.session.open_portal(&name, prepared, &portal.values)?;
            }
        }
        if portal.cursor {
            // A batch of the cursor's rows; the portal is suspended until the last.
            let wire = std::cell::RefCell::new(&mut self.wire);
            let mut rows = WireRows {
                wire: &wire,
                formats: portal.formats.clone(),
                columns: portal.statement.columns.clone(),
                describe: false,
                failed: None,
            };
            let r = self
                .session
                .fetch_portal(&name, e.max_rows.max(0) as u64, &mut rows);
            if let Some(e) = rows.failed.take() {
                return Err(Failure::Io(e));
            }
            let (n, done) = r?;
            if done {
                let tag = format!("SELECT {n}");
                portal.cursor = false;
                portal.pending = Some((Default::default(), tag.clone(), Vec::new()));
                self.wire
                    .send(B::CommandComplete(CommandComplete::new(tag)))?;
            } else {
                self.wire.send(B::PortalSuspended(PortalSuspended::new()))?;
            }
            return Ok(());
        }
        if portal.pending.is_none() {
            let Some(prepared) = &portal.statement.prepared else {
                self.wire
                    .send(B::EmptyQueryResponse(EmptyQueryResponse::new()))?;
                return Ok(());
            };
            let r = if e.max_rows <= 0 {
                // Every row: a query's go out as they are made (Describe sent their
                // description).
                let wire = std::cell::RefCell::new(&mut self.wire);
                let mut rows = WireRows {
                    wire: &wire,
                    formats: portal.formats.clone(),
                    columns: Vec::new(),
                    describe: false,
                    failed: None,
                };
                let r = self
                    .session
                    .execute_prepared_to(prepared, &portal.values, &mut rows);
                if let Some(e) = rows.failed.take() {
                    return Err(Failure::Io(e));
                }
                r?
            } else {
                self.session.execute_prepared(prepared, &portal.values)?
            };
            let notices = r.notices;
            portal.pending = Some((r.rows.into(), r.tag, notices));
        }
        let Some((rows, tag, notices)) = portal.pending.as_mut() else {
            return Ok(());
        };
        for n in std::mem::take(notices) {
            send_notice(&mut self.wire, &n)?;
        }
        let limit = if e.max_rows > 0 {
            e.max_rows as usize
        } else {
            usize::MAX
        };
        let columns = &portal.statement.columns;
        let mut sent = 0usize;
        while sent < limit {
            let Some(row) = rows.pop_front() else { break };
            self.wire
                .send(B::DataRow(encode_row(&row, columns, &portal.formats)?))?;
            sent += 1;
        }
        if rows.is_empty() {
            let tag = tag.clone();
            // The portal is used up: another Execute gives its tag again and no rows.
            self.wire
                .send(B::CommandComplete(CommandComplete::new(tag)))?;
        } else {
            self.wire.send(B::PortalSuspended(PortalSuspended::new()))?;
        }
        Ok(())
    }

    fn close(&mut self, c: Close) -> Result<(), Failure> {
        let name = c.name.unwrap_or_default();
        match c.target_type {
            b'S' => {
                self.statements.remove(&name);
            }
            b'P' => {
                if self.portals.remove(&name).is_some_and(|p| p.cursor) {
                    self.session.close_portal(&name);
                }
            }
            other => {
                return Err(SqlError::new(
                    code::PROTOCOL_VIOLATION,
                    format!("invalid CLOSE message subtype {other}"),
                )
                .into())
            }
        }
        self.wire.send(B::CloseComplete(CloseComplete::new()))?;
        Ok(())
    }
}

/// Why an extended-protocol message failed: the statement (an ErrorResponse, then
/// messages skipped to Sync), or the connection.
enum Failure {
    Sql(SqlError),
    Io(std::io::Error),
}

impl From<SqlError> for Failure {
    fn from(e: SqlError) -> Self {
        Failure::Sql(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Io(e)
    }
}

/// A frontend message's name, for errors.
fn frontend_name(m: &F) -> &'static str {
    match m {
        F::Query(_) => "Query",
        F::Parse(_) => "Parse",
        F::Bind(_) => "Bind",
        F::Describe(_) => "Describe",
        F::Execute(_) => "Execute",
        F::Close(_) => "Close",
        F::Terminate(_) => "Terminate",
        _ => "of another kind",
    }
}

fn no_portal(name: &str) -> SqlError {
    SqlError::new("34000", format!("portal \"{name}\" does not exist"))
}

/// A row in the formats Bind asked for.
fn encode_row(
    row: &[Value],
    columns: &[(String, SqlType)],
    formats: &[i16],
) -> Result<DataRow, SqlError> {
    let mut data = bytes::BytesMut::new();
    for (i, v) in row.iter().enumerate() {
        if format_of(formats, i) == 1 {
            let ty = columns.get(i).map_or(SqlType::Text, |c| c.1);
            put_cell(&mut data, encode_binary(v, ty)?.as_deref());
        } else {
            put_cell(&mut data, encode_text(v).as_deref().map(str::as_bytes));
        }
    }
    Ok(DataRow::new(data, row.len() as i16))
}

/// Sends a statement's rows (if it returns rows: RowDescription unless `formats` says
/// the description was sent already) and its CommandComplete, with its notices first.
/// Gives true to go on with the next statement.
fn send_result(
    wire: &mut Wire,
    r: &StatementResult,
    _formats: Option<&[i16]>,
) -> std::io::Result<bool> {
    for n in &r.notices {
        send_notice(wire, n)?;
    }
    // Rows streamed went out as they were made (`WireRows`). A FETCH from a BINARY
    // cursor answers a simple Query in binary, every column (PostgreSQL's
    // exec_simple_query), each row encoded before the first is sent, so that a value
    // with no binary form fails the statement before it has answered.
    if !r.columns.is_empty() && !r.streamed {
        let formats: &[i16] = if r.binary { &[1] } else { &[] };
        let rows: Result<Vec<DataRow>, SqlError> = r
            .rows
            .iter()
            .map(|row| {
                if r.binary {
                    encode_row(row, &r.columns, formats)
                } else {
                    Ok(text_row(row))
                }
            })
            .collect();
        let rows = match rows {
            Ok(rows) => rows,
            Err(e) => {
                wire.send(B::ErrorResponse(ErrorResponse::new(error_fields(
                    &e, "ERROR",
                ))))?;
                return Ok(false);
            }
        };
        wire.send(B::RowDescription(row_description(&r.columns, formats)))?;
        for m in rows {
            wire.send(B::DataRow(m))?;
        }
    }
    wire.send(B::CommandComplete(CommandComplete::new(r.tag.clone())))?;
    Ok(true)
}

/// Sends a query's rows to the client as the session makes them: its RowDescription
/// first (a simple query's; an extended query's Describe sent it), then a DataRow each.
/// A failed write ends the statement; the error is kept for the connection to end on.
struct WireRows<'a, 'w> {
    wire: &'a std::cell::RefCell<&'w mut Wire>,
    /// Result formats as Bind gave them (none: all text).
    formats: Vec<i16>,
    columns: Vec<(String, SqlType)>,
    describe: bool,
    failed: Option<std::io::Error>,
}

impl WireRows<'_, '_> {
    fn sent(&mut self, r: std::io::Result<()>) -> walden_sql::SqlResult<()> {
        r.map_err(|e| {
            let lost = SqlError::new(
                code::CONNECTION_FAILURE,
                format!("could not send data to client: {e}"),
            );
            self.failed = Some(e);
            lost
        })
    }
}

impl walden_sql::RowSink for WireRows<'_, '_> {
    fn start(&mut self, columns: &[(String, SqlType)]) -> walden_sql::SqlResult<()> {
        self.columns = columns.to_vec();
        if !self.describe {
            return Ok(());
        }
        let m = B::RowDescription(row_description(columns, &self.formats));
        let r = self.wire.borrow_mut().send(m);
        self.sent(r)
    }

    fn row(&mut self, row: &[Value]) -> walden_sql::SqlResult<()> {
        let m = if self.formats.is_empty() {
            text_row(row)
        } else {
            encode_row(row, &self.columns, &self.formats)?
        };
        let r = self.wire.borrow_mut().send(B::DataRow(m));
        self.sent(r)
    }
}

/// A notice as the SQL layer words it ("WARNING:  there is no transaction in
/// progress"): its severity before the colon.
fn send_notice(wire: &mut Wire, text: &str) -> std::io::Result<()> {
    let (severity, message) = match text.split_once(":  ") {
        Some((s, m)) if s.chars().all(|c| c.is_ascii_uppercase()) => (s, m),
        _ => ("NOTICE", text),
    };
    let code = if severity == "WARNING" {
        "01000"
    } else {
        "00000"
    };
    wire.send(B::NoticeResponse(NoticeResponse::new(vec![
        (b'S', severity.to_string()),
        (b'V', severity.to_string()),
        (b'C', code.to_string()),
        (b'M', message.to_string()),
    ])))
}

/// The RowDescription of result columns; `formats` as Bind gave them (none: all text;
/// one: all in that format; else one per column).
fn row_description(columns: &[(String, SqlType)], formats: &[i16]) -> RowDescription {
    RowDescription::new(
        columns
            .iter()
            .enumerate()
            .map(|(i, (name, ty))| {
                FieldDescription::new(
                    name.clone(),
                    0,
                    0,
                    type_oid(*ty),
                    type_len(*ty),
                    -1,
                    format_of(formats, i),
                )
            })
            .collect(),
    )
}

fn format_of(formats: &[i16], i: usize) -> i16 {
    match formats {
        [] => 0,
        [one] => *one,
        many => many.get(i).copied().unwrap_or(0),
    }
}

/// A row in text format.
fn text_row(row: &[walden::Value]) -> DataRow {
    let mut data = bytes::BytesMut::new();
    for v in row {
        put_cell(&mut data, encode_text(v).as_deref().map(str::as_bytes));
    }
    DataRow::new(data, row.len() as i16)
}

fn put_cell(data: &mut bytes::BytesMut, cell: Option<&[u8]>) {
    match cell {
        None => data.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(b) => {
            data.extend_from_slice(&(b.len() as i32).to_be_bytes());
            data.extend_from_slice(b);
        }
    }
}
