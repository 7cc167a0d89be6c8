//! A connection's byte stream and its framing: whole messages in (decoded by `pgwire`,
//! after a check of their length against the server's limit), messages out through one
//! buffer flushed when the client waits for an answer.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use bytes::BytesMut;
use pgwire::messages::{DecodeContext, PgWireBackendMessage, PgWireFrontendMessage};

/// A client's stream.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
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
    max_message: usize,
}

impl Wire {
    pub fn new(stream: Stream, max_message: usize) -> io::Result<Wire> {
        stream.set_read_timeout(Some(POLL))?;
        Ok(Wire {
            stream,
            inbuf: BytesMut::with_capacity(8192),
            outbuf: BytesMut::with_capacity(8192),
            ctx: DecodeContext::default(),
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
            self.check_length()?;
            match PgWireFrontendMessage::decode(&mut self.inbuf, &self.ctx) {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => {}
                Err(e) => return Err(WireError::Malformed(e.to_string())),
            }
            // Send what is written before waiting for the client.
            self.flush()?;
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(WireError::Closed),
                Ok(n) => self.inbuf.extend_from_slice(&chunk[..n]),
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

    /// Refuses a message whose length word is past the limit before its bytes are
    /// read (or negative: lengths are signed 32-bit words that count themselves).
    fn check_length(&self) -> Result<(), WireError> {
        let startup = self.ctx.awaiting_frontend_startup || self.ctx.awaiting_frontend_ssl;
        let at = if startup { 0 } else { 1 };
        let Some(word) = self.inbuf.get(at..at + 4) else {
            return Ok(());
        };
        let len = i32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        if len < 4 {
            return Err(WireError::Malformed(format!(
                "invalid message length {len}"
            )));
        }
        // A startup packet is small (PostgreSQL allows 10,000 bytes).
        let max = if startup { 10_000 } else { self.max_message };
        if len as usize > max {
            return Err(WireError::TooLarge(len as usize));
        }
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

    /// Sends what was added.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.outbuf.is_empty() {
            self.stream.write_all(&self.outbuf)?;
            self.outbuf.clear();
        }
        self.stream.flush()
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
