//! A connection's byte stream and its framing: whole messages in (decoded by `pgwire`,
//! after a check of their length against the server's limit), messages out through one
//! buffer flushed when the client waits for an answer.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use bytes::BytesMut;
use pgwire::messages::{
    DecodeContext, PgWireBackendMessage, PgWireFrontendMessage, ProtocolVersion,
};

/// A client's stream.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
    /// In the middle of becoming another (never read or written).
    Gone,
}

impl Stream {
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tls(s) => s.sock.set_read_timeout(t),
            Stream::Gone => Ok(()),
        }
    }

    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(t),
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tls(s) => s.sock.set_write_timeout(t),
            Stream::Gone => Ok(()),
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "stream closed")
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
            Stream::Gone => Err(gone()),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
            Stream::Gone => Err(gone()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
            Stream::Gone => Err(gone()),
        }
    }
}

/// Why a connection cannot go on reading messages.
#[derive(Debug)]
pub(crate) enum WireError {
    /// The client closed the connection (between messages, or in the middle of one).
    Closed,
    Io,
    /// Bytes that are not a message of the protocol.
    Malformed(String),
    /// A message longer than the server's limit (its length as the client gave it).
    TooLarge(usize),
    /// The waiting was stopped by the caller's check (shutdown, startup timeout).
    Stopped,
    /// A startup packet asking for a protocol other than 3.x (its major and minor
    /// version): PostgreSQL answers it with a FATAL error and closes.
    UnsupportedProtocol {
        major: u16,
        minor: u16,
    },
    /// A whole message (consumed) whose strings are not UTF-8: the statement fails with
    /// 22021 and the session goes on, as in PostgreSQL.
    BadEncoding {
        /// The message's type byte.
        kind: u8,
        message: String,
    },
}

impl From<io::Error> for WireError {
    fn from(_: io::Error) -> Self {
        WireError::Io
    }
}

/// How often a blocked read wakes to look at the server's state.
pub(crate) const POLL: Duration = Duration::from_millis(200);

pub(crate) struct Wire {
    pub stream: Stream,
    inbuf: BytesMut,
    outbuf: BytesMut,
    pub ctx: DecodeContext,
    /// The largest message taken (`set_max_message`).
    max_message: usize,
}

impl Wire {
    /// Changes the largest message taken from now on (a connection takes small ones
    /// until it is authenticated).
    pub fn set_max_message(&mut self, bytes: usize) {
        self.max_message = bytes;
    }

    pub fn new(stream: Stream, max_message: usize) -> io::Result<Wire> {
        stream.set_read_timeout(Some(POLL))?;
        Ok(Wire {
            stream,
            inbuf: BytesMut::with_capacity(8192),
            outbuf: BytesMut::with_capacity(8192),
            // Protocol 3.0 (cancel keys of four bytes); a client asking for a newer
            // minor version is told 3.0 at startup.
            ctx: DecodeContext::new(ProtocolVersion::PROTOCOL3_0),
            max_message,
        })
    }

    /// The next message, waiting for it; `check` runs each time the wait wakes
    /// without one and stops the wait by returning false.
    pub fn recv(
        &mut self,
        check: &mut dyn FnMut() -> bool,
    ) -> Result<PgWireFrontendMessage, WireError> {
        loop {
            if let Some(m) = self.next_message()? {
                return Ok(m);
            }
            // Send what is written before waiting for the client.
            self.flush()?;
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(WireError::Closed),
                Ok(n) => {
                    self.inbuf.extend_from_slice(&chunk[..n]);
                    // Checked on data too, not only when the client is silent: a client
                    // that sends a byte now and then must not outlast a deadline.
                    if !check() {
                        return Err(WireError::Stopped);
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    if !check() {
                        return Err(WireError::Stopped);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_disconnect(&e) => return Err(WireError::Closed),
                Err(_) => return Err(WireError::Io),
            }
        }
    }

    /// Appends to `out` the payloads of the whole CopyData messages at the front of what
    /// was received, and consumes them, without decoding each as a message; stops at
    /// any other message or a partial one. Returns how many it took. Each length word is
    /// checked as `next_message` checks it.
    pub fn take_copy_data(&mut self, out: &mut Vec<u8>) -> Result<usize, WireError> {
        if self.ctx.awaiting_frontend_startup || self.ctx.awaiting_frontend_ssl {
            return Ok(0);
        }
        let mut taken = 0;
        let mut at = 0;
        while let Some(head) = self.inbuf.get(at..at + 5) {
            if head[0] != b'd' {
                break;
            }
            let len = checked_length([head[1], head[2], head[3], head[4]], self.max_message)?;
            let end = at + 1 + len;
            let Some(payload) = self.inbuf.get(at + 5..end) else {
                break;
            };
            out.extend_from_slice(payload);
            at = end;
            taken += 1;
        }
        let _ = self.inbuf.split_to(at);
        Ok(taken)
    }

    /// The first whole message received, if there is one. Its length word is checked
    /// against the limit before its bytes are awaited; then the message's own bytes
    /// alone, checked against its layout, are decoded (pgwire's decoders read past a
    /// message whose counts or lengths lie, into the next one, or panic at the end of
    /// the buffer).
    fn next_message(&mut self) -> Result<Option<PgWireFrontendMessage>, WireError> {
        let startup = self.ctx.awaiting_frontend_startup || self.ctx.awaiting_frontend_ssl;
        let at = if startup { 0 } else { 1 };
        let Some(word) = self.inbuf.get(at..at + 4) else {
            return Ok(None);
        };
        // A startup packet is small (PostgreSQL allows 10,000 bytes).
        let max = if startup { 10_000 } else { self.max_message };
        let len = checked_length([word[0], word[1], word[2], word[3]], max)?;
        let total = at + len;
        if self.inbuf.len() < total {
            return Ok(None);
        }
        if startup && total >= 8 {
            // The protocol version; the special request codes have major 1234.
            let major = u16::from_be_bytes([self.inbuf[4], self.inbuf[5]]);
            let minor = u16::from_be_bytes([self.inbuf[6], self.inbuf[7]]);
            if major != 3 && major != 1234 {
                return Err(WireError::UnsupportedProtocol { major, minor });
            }
        }
        let mut frame = if startup && self.ctx.awaiting_frontend_ssl {
            // The SSL check looks at the first bytes only and leaves them in place.
            self.inbuf.clone().split_to(total)
        } else {
            self.inbuf.split_to(total)
        };
        if !startup {
            check_layout(frame[0], &frame[5..]).map_err(WireError::Malformed)?;
            check_encoding(frame[0], &frame[5..]).map_err(|message| WireError::BadEncoding {
                kind: frame[0],
                message,
            })?;
        }
        match PgWireFrontendMessage::decode(&mut frame, &self.ctx) {
            Ok(Some(m)) => {
                if startup && self.ctx.awaiting_frontend_ssl {
                    // Consumed only if it was an SSL or GSS request (the same length).
                    if !matches!(
                        m,
                        PgWireFrontendMessage::SslNegotiation(
                            pgwire::messages::SslNegotiationMetaMessage::None
                        )
                    ) {
                        let _ = self.inbuf.split_to(total);
                    }
                }
                Ok(Some(m))
            }
            Ok(None) => Err(WireError::Malformed("incomplete message".into())),
            Err(e) => Err(WireError::Malformed(e.to_string())),
        }
    }

    /// Turns a TCP stream into TLS (after the client's SSLRequest was accepted). Bytes
    /// the client sent after its SSLRequest and before the handshake are refused: they
    /// would be taken as if encrypted (CVE-2021-23214).
    pub fn start_tls(&mut self, config: std::sync::Arc<rustls::ServerConfig>) -> io::Result<()> {
        if !self.inbuf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "unencrypted data after SSL request",
            ));
        }
        let Stream::Tcp(tcp) = std::mem::replace(&mut self.stream, Stream::Gone) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "TLS is offered on TCP connections only",
            ));
        };
        let conn =
            rustls::ServerConnection::new(config).map_err(|e| io::Error::other(e.to_string()))?;
        self.stream = Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)));
        Ok(())
    }

    /// Adds a message to what will be sent.
    pub fn send(&mut self, m: PgWireBackendMessage) -> io::Result<()> {
        m.encode(&mut self.outbuf)
            .map_err(|e| io::Error::other(e.to_string()))?;
        // Keep the buffer to a size: a large result goes out as it is made.
        if self.outbuf.len() >= 256 * 1024 {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes raw bytes, unframed: what PostgreSQL sends a client of a protocol before
    /// 3.0 (`E`, the text, a NUL).
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.outbuf.extend_from_slice(bytes);
        self.flush()
    }

    /// Sends what was added.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.outbuf.is_empty() {
            self.stream.write_all(&self.outbuf)?;
            self.outbuf.clear();
        }
        self.stream.flush()
    }
}

/// Decodes `bytes` as a client's, message after message, as a connection does (the
/// startup packet first when `startup`, then the messages after it), until the bytes run
/// out or one is refused: the decoding of what a client controls, for the fuzz target
/// `wire` (`fuzz/`) and its regression test. Returns how many messages decoded.
#[doc(hidden)]
pub fn decode_all(bytes: &[u8], startup: bool, max_message: usize) -> usize {
    let mut wire = Wire {
        stream: Stream::Gone,
        inbuf: BytesMut::from(bytes),
        outbuf: BytesMut::new(),
        ctx: DecodeContext::new(ProtocolVersion::PROTOCOL3_0),
        max_message,
    };
    if !startup {
        wire.ctx.awaiting_frontend_ssl = false;
        wire.ctx.awaiting_frontend_startup = false;
    }
    let mut decoded = 0;
    loop {
        match wire.next_message() {
            Ok(Some(m)) => {
                decoded += 1;
                if let PgWireFrontendMessage::SslNegotiation(_) = m {
                    wire.ctx.awaiting_frontend_ssl = false;
                }
                if let PgWireFrontendMessage::Startup(_) = m {
                    wire.ctx.awaiting_frontend_ssl = false;
                    wire.ctx.awaiting_frontend_startup = false;
                }
            }
            // A message whose strings are not UTF-8 is consumed; the connection goes on.
            Err(WireError::BadEncoding { .. }) => decoded += 1,
            Ok(None) | Err(_) => return decoded,
        }
    }
}

fn is_disconnect(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
    )
}

/// Checks that a message's body has the layout its type says, every count and length
/// inside it (so that decoding reads exactly the body, and nothing past it).
fn check_layout(kind: u8, body: &[u8]) -> Result<(), String> {
    let mut r = Layout { body, at: 0 };
    match kind {
        // Query, CopyFail: a string.
        b'Q' | b'f' => r.cstring()?,
        // Parse: name, query, parameter types.
        b'P' => {
            r.cstring()?;
            r.cstring()?;
            let n = r.u16()?;
            r.skip(4 * n as usize)?;
        }
        // Bind: portal, statement, formats, parameters, result formats.
        b'B' => {
            r.cstring()?;
            r.cstring()?;
            let n = r.u16()?;
            r.skip(2 * n as usize)?;
            let params = r.u16()?;
            for _ in 0..params {
                let len = r.i32()?;
                if len < -1 {
                    return Err(format!("invalid parameter length {len}"));
                }
                if len > 0 {
                    r.skip(len as usize)?;
                }
            }
            let n = r.u16()?;
            r.skip(2 * n as usize)?;
        }
        // Describe, Close: a kind byte and a name.
        b'D' | b'C' => {
            r.skip(1)?;
            r.cstring()?;
        }
        // Execute: a portal and a row count.
        b'E' => {
            r.cstring()?;
            r.skip(4)?;
        }
        // Sync, Flush, Terminate, CopyDone: nothing.
        b'S' | b'H' | b'X' | b'c' => {}
        // CopyData, and the password family (read by its own rules later): any bytes.
        b'd' | b'p' => r.at = body.len(),
        other => return Err(format!("invalid frontend message type {other}")),
    }
    if r.at != body.len() {
        return Err(format!(
            "message of type '{}' has {} bytes more than its contents",
            kind as char,
            body.len() - r.at
        ));
    }
    Ok(())
}

struct Layout<'a> {
    body: &'a [u8],
    at: usize,
}

impl Layout<'_> {
    fn skip(&mut self, n: usize) -> Result<(), String> {
        if self.body.len() - self.at < n {
            return Err("message contents end early".into());
        }
        self.at += n;
        Ok(())
    }
    fn cstring(&mut self) -> Result<(), String> {
        match self.body[self.at..].iter().position(|&b| b == 0) {
            Some(i) => {
                self.at += i + 1;
                Ok(())
            }
            None => Err("string without its terminator".into()),
        }
    }
    fn u16(&mut self) -> Result<u16, String> {
        let b = self
            .body
            .get(self.at..self.at + 2)
            .ok_or("message contents end early")?;
        self.at += 2;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Result<i32, String> {
        let b = self
            .body
            .get(self.at..self.at + 4)
            .ok_or("message contents end early")?;
        self.at += 4;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Checks that the strings of a message whose layout holds (`check_layout`) are UTF-8:
/// the query of Query and Parse, and the names of statements and portals. pgwire would
/// decode them lossily, turning bytes into U+FFFD that a statement then stores. The
/// error is PostgreSQL's (22021). CopyFail's message is only shown, and stays lossy.
fn check_encoding(kind: u8, body: &[u8]) -> Result<(), String> {
    let strings = match kind {
        b'Q' | b'E' => 1,
        b'P' | b'B' => 2,
        b'D' | b'C' => {
            return check_strings(&body[1..], 1);
        }
        _ => 0,
    };
    check_strings(body, strings)
}

/// The first `n` NUL-terminated strings of `body` (which are there) are UTF-8.
fn check_strings(body: &[u8], n: usize) -> Result<(), String> {
    for s in body.split(|&b| b == 0).take(n) {
        if let Err(e) = std::str::from_utf8(s) {
            let at = e.valid_up_to();
            let bad = &s[at..at + e.error_len().unwrap_or(s.len() - at)];
            let shown: Vec<String> = bad.iter().map(|b| format!("0x{b:02x}")).collect();
            return Err(format!(
                "invalid byte sequence for encoding \"UTF8\": {}",
                shown.join(" ")
            ));
        }
    }
    Ok(())
}

/// Checks a SASLInitialResponse body (mechanism, then a length that is -1 or exactly
/// what follows): pgwire's decoder trusts the length and panics past the end.
pub fn check_sasl_initial(body: &[u8]) -> Result<(), String> {
    let mut r = Layout { body, at: 0 };
    r.cstring()?;
    let n = r.i32()?;
    let rest = body.len() - r.at;
    if (n == -1 && rest == 0) || usize::try_from(n).is_ok_and(|n| n == rest) {
        Ok(())
    } else {
        Err(format!(
            "SASL response length {n} with {rest} bytes after it"
        ))
    }
}

/// A message's length word (it counts itself), checked: at least 4, at most `max`.
fn checked_length(word: [u8; 4], max: usize) -> Result<usize, WireError> {
    let len = i32::from_be_bytes(word);
    if len < 4 {
        return Err(WireError::Malformed(format!(
            "invalid message length {len}"
        )));
    }
    if len as usize > max {
        return Err(WireError::TooLarge(len as usize));
    }
    Ok(len as usize)
}
