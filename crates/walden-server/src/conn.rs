//! One connection: startup and authentication, then the simple and extended query
//! protocols over one SQL session, until the client terminates or the server stops.

use std::sync::atomic::Ordering;
use std::time::Instant;

use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, NoticeResponse, ReadyForQuery, SslResponse,
    TransactionStatus,
};
use pgwire::messages::startup::{
    Authentication, BackendKeyData, ParameterStatus, SecretKey, Startup,
};
use pgwire::messages::{
    PgWireBackendMessage as B, PgWireFrontendMessage as F, SslNegotiationMetaMessage,
};
use walden_sql::error::code;
use walden_sql::{Session, SqlError, SqlType, StatementResult};

use crate::values::{encode_text, type_len, type_oid};
use crate::wire::{Stream, Wire, WireError};
use crate::Shared;

/// The version clients are told (`server_version`): PostgreSQL 15's protocol and
/// catalog, as psql and drivers decide what to send by it.
pub(crate) const SERVER_VERSION: &str = "15.0";

/// Serves one client until it leaves.
pub(crate) fn serve(stream: Stream, local: bool, shared: &Shared) {
    let Ok(mut wire) = Wire::new(stream, shared.config.max_message_bytes) else {
        return;
    };
    let Some(startup) = startup(&mut wire, shared) else {
        return;
    };
    let mut session = Session::new(&shared.db);
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
    };
    if conn.begin(&startup, local, secret).is_ok() {
        conn.run();
    }
    shared.unregister(pid);
    // The session's open transaction, if any, is rolled back as it drops.
}

/// Reads the startup packet: answers SSL and GSS requests (no encryption is offered
/// yet), serves a cancel request, and gives the Startup message.
fn startup(wire: &mut Wire, shared: &Shared) -> Option<Startup> {
    let deadline = Instant::now() + shared.config.startup_timeout;
    let mut check = || Instant::now() < deadline && !shared.stopping.load(Ordering::Relaxed);
    loop {
        let m = match wire.recv(&mut check) {
            Ok(m) => m,
            Err(WireError::TooLarge(_)) | Err(WireError::Malformed(_)) => {
                // PostgreSQL closes such a connection with only a log line: the
                // client has not said which protocol it speaks.
                return None;
            }
            Err(_) => return None,
        };
        match m {
            F::SslNegotiation(SslNegotiationMetaMessage::PostgresSsl(_)) => {
                wire.send(B::SslResponse(SslResponse::Refuse)).ok()?;
                wire.flush().ok()?;
                wire.ctx.awaiting_frontend_ssl = false;
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
                if let SecretKey::I32(secret) = c.secret_key {
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
}

impl Conn<'_> {
    /// Authenticates the client and tells it the session's parameters.
    fn begin(&mut self, startup: &Startup, local: bool, secret: i32) -> std::io::Result<()> {
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
        let trusted = if local {
            self.shared.config.trust_local
        } else {
            self.shared.config.trust_tcp
        };
        if !trusted {
            fatal(
                &mut self.wire,
                SqlError::new(
                    "28000",
                    format!(
                        "no authentication method for user \"{user}\": this server trusts no {} connections",
                        if local { "Unix-socket" } else { "TCP" }
                    ),
                )
                .with_hint("Start walden serve with --trust-local (Unix socket) or --trust (TCP)."),
            )?;
            return Err(std::io::ErrorKind::PermissionDenied.into());
        }
        self.wire.send(B::Authentication(Authentication::Ok))?;
        let application_name = startup
            .parameters
            .get("application_name")
            .cloned()
            .unwrap_or_default();
        for (name, value) in [
            ("server_version", SERVER_VERSION.to_string()),
            ("server_encoding", "UTF8".into()),
            ("client_encoding", "UTF8".into()),
            ("DateStyle", "ISO, MDY".into()),
            ("IntervalStyle", "postgres".into()),
            ("TimeZone", "UTC".into()),
            ("integer_datetimes", "on".into()),
            ("standard_conforming_strings", "on".into()),
            ("is_superuser", "on".into()),
            ("session_authorization", user.clone()),
            ("application_name", application_name),
            ("default_transaction_read_only", "off".into()),
            ("in_hot_standby", "off".into()),
        ] {
            self.wire
                .send(B::ParameterStatus(ParameterStatus::new(name.into(), value)))?;
        }
        self.wire.send(B::BackendKeyData(BackendKeyData::new(
            self.pid,
            SecretKey::I32(secret),
        )))?;
        self.ready()
    }

    /// ReadyForQuery with the session's transaction state.
    fn ready(&mut self) -> std::io::Result<()> {
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
                Err(WireError::Closed) | Err(WireError::Io) => return,
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
        let mut io_error = None;
        // Where each statement's text lies in the query, so an error's position
        // (counted from its statement's start) is given from the query's start.
        let mut from_byte = 0usize;
        let session = &mut *self.session;
        let wire = &mut self.wire;
        session.run_script(query, &mut |outcome| {
            let start = query[from_byte..]
                .find(outcome.text.as_str())
                .map(|i| from_byte + i);
            if let Some(s) = start {
                from_byte = s + outcome.text.len();
            }
            let sent = match outcome.result {
                Ok(r) => send_result(wire, &r, None),
                Err(mut e) => {
                    if let (Some(p), Some(s)) = (e.position, start) {
                        e.position = Some(p + query[..s].chars().count());
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
        if let Some(e) = io_error {
            return Err(e);
        }
        self.ready()
    }

    /// Parse, Bind, Describe, Execute, Close, Flush, Sync.
    fn extended(&mut self, m: F) -> std::io::Result<()> {
        match m {
            F::Sync(_) => {
                self.skip_to_sync = false;
                self.ready()
            }
            F::Flush(_) => self.wire.flush(),
            _ if self.skip_to_sync => Ok(()),
            _ => {
                let e = SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "the extended query protocol is not supported yet",
                );
                self.skip_to_sync = true;
                self.wire
                    .send(B::ErrorResponse(ErrorResponse::new(error_fields(
                        &e, "ERROR",
                    ))))
            }
        }
    }
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
    if !r.columns.is_empty() {
        wire.send(B::RowDescription(row_description(&r.columns, &[])))?;
        for row in &r.rows {
            wire.send(B::DataRow(text_row(row)))?;
        }
    }
    wire.send(B::CommandComplete(CommandComplete::new(r.tag.clone())))?;
    Ok(true)
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
