//! The server's side of a SCRAM-SHA-256 exchange (RFC 5802 and 7677, as PostgreSQL 15
//! runs it, without channel binding) as a state machine with no I/O: the connection
//! feeds it the client's two messages (the data of SASLInitialResponse and of
//! SASLResponse) and sends what it returns (AuthenticationSASLContinue, then
//! AuthenticationSASLFinal and AuthenticationOk), or the error.
//!
//! Only `SCRAM-SHA-256` is advertised (no `-PLUS`: Walden's TLS offers no channel
//! binding): a client-first-message asking for channel binding (`p=…`) is refused; `n,,`
//! (the client has none) and `y,,` (the client has it but thinks the server has not)
//! are accepted. For a user that does not exist, has no password or whose password has
//! expired, [`ScramServer::mock`] runs the same exchange with a salt derived from the
//! user's name and a secret of the database, and fails at the end exactly as a wrong
//! password does, so a client cannot tell which users exist (PostgreSQL's
//! `scram_mock_salt`).

use walden::RoleDef;
use walden_sql::scram::{self, Verifier, KEY_BYTES, MECHANISM, SALT_BYTES};

/// The SASL mechanisms to advertise in AuthenticationSASL.
pub const MECHANISMS: &[&str] = &[MECHANISM];

/// Bytes of the server's part of the nonce (PostgreSQL's `SCRAM_RAW_NONCE_LEN`), sent
/// in base64.
pub const SERVER_NONCE_BYTES: usize = 18;

/// Why an exchange failed, with PostgreSQL's SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// A message breaks the exchange's syntax or order (08P01).
    Protocol {
        message: &'static str,
        detail: Option<String>,
    },
    /// The client asks for what Walden does not do (0A000).
    Unsupported(&'static str),
    /// The proof does not match: a wrong password, or a mock exchange (28P01). Reported
    /// as PostgreSQL does, `password authentication failed for user "…"`
    /// ([`AuthError::message_for`]), whichever it was.
    Failed,
    /// The user may not log in, whatever the password (28000): the role does not exist
    /// (after trust authentication) or lacks LOGIN.
    NotPermitted(String),
}

impl AuthError {
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::Protocol { .. } => "08P01",
            AuthError::Unsupported(_) => "0A000",
            AuthError::Failed => "28P01",
            AuthError::NotPermitted(_) => "28000",
        }
    }

    /// The error's message for the client, `user` being the startup message's.
    pub fn message_for(&self, user: &str) -> String {
        match self {
            AuthError::Protocol { message, .. } => message.to_string(),
            AuthError::Unsupported(message) => message.to_string(),
            AuthError::Failed => format!("password authentication failed for user \"{user}\""),
            AuthError::NotPermitted(message) => message.clone(),
        }
    }

    pub fn detail(&self) -> Option<&str> {
        match self {
            AuthError::Protocol { detail, .. } => detail.as_deref(),
            _ => None,
        }
    }
}

fn malformed(detail: String) -> AuthError {
    AuthError::Protocol {
        message: "malformed SCRAM message",
        detail: Some(detail),
    }
}

/// Whether `user`, authenticated (by password or trust), may start a session, as
/// PostgreSQL checks after authentication: its role must exist and have LOGIN. (The
/// role's connection limit is the server's to count: 53300 `too many connections for
/// role "…"`.)
pub fn check_login(role: Option<&RoleDef>, user: &str) -> Result<(), AuthError> {
    match role {
        None => Err(AuthError::NotPermitted(format!(
            "role \"{user}\" does not exist"
        ))),
        Some(r) if !r.login => Err(AuthError::NotPermitted(format!(
            "role \"{user}\" is not permitted to log in"
        ))),
        Some(_) => Ok(()),
    }
}

/// A fresh server nonce from the operating system's random source (an error only when
/// the system has none to give).
pub fn server_nonce() -> Result<[u8; SERVER_NONCE_BYTES], String> {
    scram::random_bytes()
}

/// Checks the mechanism a client chose in SASLInitialResponse.
pub fn check_mechanism(name: &str) -> Result<(), AuthError> {
    if name == MECHANISM {
        Ok(())
    } else {
        Err(AuthError::Protocol {
            message: "client selected an invalid SASL authentication mechanism",
            detail: None,
        })
    }
}

/// Where the exchange stands.
#[derive(Debug)]
enum State {
    /// Waiting for the client-first-message.
    First,
    /// The server-first-message went out; waiting for the client-final-message.
    Final {
        /// `n` or `y`: the client's channel-binding flag, which `c=` must repeat.
        cbind_flag: u8,
        client_first_bare: String,
        server_first: String,
        /// The client's nonce followed by the server's.
        nonce: String,
    },
    /// Succeeded or failed: no further message is taken.
    Over,
}

/// One SCRAM-SHA-256 exchange, server side.
#[derive(Debug)]
pub struct ScramServer {
    verifier: Verifier,
    /// A mock exchange: it fails at the end whatever the proof.
    doomed: bool,
    /// The server's part of the nonce, as sent (base64).
    server_nonce: String,
    state: State,
}

impl ScramServer {
    /// An exchange against a role's stored verifier. A verifier that does not parse
    /// (it cannot come from Walden's SQL layer) gives a doomed exchange salted from its
    /// text, as PostgreSQL mocks a role without a valid SCRAM secret.
    pub fn new(verifier: &str, server_nonce: [u8; SERVER_NONCE_BYTES]) -> ScramServer {
        match Verifier::parse(verifier) {
            Some(v) => ScramServer::with(v, false, &server_nonce),
            None => ScramServer::with(mock_verifier(verifier.as_bytes(), b""), true, &server_nonce),
        }
    }

    /// The exchange PostgreSQL runs for a user that does not exist or cannot log in by
    /// password: salted with the first 16 bytes of SHA-256(`username` ‖
    /// `secret_seed`), so the same user meets the same salt at every attempt (and
    /// after a restart, with `walden::Database::secret_seed` as the seed), and it fails
    /// at the end with [`AuthError::Failed`], as a wrong password does.
    pub fn mock(
        username: &str,
        secret_seed: &[u8],
        server_nonce: [u8; SERVER_NONCE_BYTES],
    ) -> ScramServer {
        ScramServer::with(
            mock_verifier(username.as_bytes(), secret_seed),
            true,
            &server_nonce,
        )
    }

    /// The exchange for a login as `user`, whose role (`walden_sql::roles::find`) is
    /// `role`: against its verifier, or a mock one when the role does not exist, has no
    /// password, or its password expired (`valid_until` before `now_micros`, a
    /// timestamptz: microseconds since 2000-01-01 UTC). Whether the role may log in
    /// (`login`, its connection limit) is for the caller to check after a success, as
    /// PostgreSQL does.
    pub fn for_role(
        role: Option<&RoleDef>,
        user: &str,
        now_micros: i64,
        secret_seed: &[u8],
        server_nonce: [u8; SERVER_NONCE_BYTES],
    ) -> ScramServer {
        let usable = role
            .filter(|r| r.valid_until.is_none_or(|t| t >= now_micros))
            .and_then(|r| r.password.as_deref());
        match usable {
            Some(verifier) => ScramServer::new(verifier, server_nonce),
            None => ScramServer::mock(user, secret_seed, server_nonce),
        }
    }

    fn with(verifier: Verifier, doomed: bool, server_nonce: &[u8]) -> ScramServer {
        ScramServer {
            verifier,
            doomed,
            server_nonce: scram::b64_encode(server_nonce),
            state: State::First,
        }
    }

    /// Reads the client-first-message (`n,,n=user,r=nonce`) and returns the
    /// server-first-message (`r=nonce,s=salt,i=iterations`).
    pub fn client_first(&mut self, data: &[u8]) -> Result<Vec<u8>, AuthError> {
        if !matches!(self.state, State::First) {
            return Err(out_of_order());
        }
        self.state = State::Over;
        let text = std::str::from_utf8(data)
            .map_err(|_| malformed("The message is not valid UTF-8.".into()))?;
        let (cbind_flag, bare) = read_gs2_header(text)?;
        if bare.starts_with('m') {
            return Err(AuthError::Unsupported(
                "client requires an unsupported SCRAM extension",
            ));
        }
        let mut input = bare;
        // The user name is the startup message's; this one is ignored, as PostgreSQL
        // ignores it (libpq sends it empty).
        read_attr_value(&mut input, 'n')?;
        let client_nonce = read_attr_value(&mut input, 'r')?;
        if client_nonce.is_empty() || !client_nonce.bytes().all(printable) {
            return Err(AuthError::Protocol {
                message: "non-printable characters in SCRAM nonce",
                detail: None,
            });
        }
        // Optional extensions: none is supported, so they are read and ignored.
        while !input.is_empty() {
            read_any_attr(&mut input)?;
        }
        let nonce = format!("{client_nonce}{}", self.server_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            scram::b64_encode(&self.verifier.salt),
            self.verifier.iterations
        );
        self.state = State::Final {
            cbind_flag,
            client_first_bare: bare.to_string(),
            server_first: server_first.clone(),
            nonce,
        };
        Ok(server_first.into_bytes())
    }

    /// Reads the client-final-message (`c=biws,r=nonce,p=proof`), checks the proof and
    /// returns the server-final-message (`v=signature`). A wrong proof, or any proof in
    /// a mock exchange, is [`AuthError::Failed`]; the proof is checked in a mock
    /// exchange too, so that both take the same time.
    pub fn client_final(&mut self, data: &[u8]) -> Result<Vec<u8>, AuthError> {
        let State::Final {
            cbind_flag,
            client_first_bare,
            server_first,
            nonce,
        } = std::mem::replace(&mut self.state, State::Over)
        else {
            return Err(out_of_order());
        };
        let text = std::str::from_utf8(data)
            .map_err(|_| malformed("The message is not valid UTF-8.".into()))?;
        let mut input = text;
        let binding = read_attr_value(&mut input, 'c')?;
        // Without channel binding, `c=` is the GS2 header again in base64: "n,," or
        // "y,,", as the client-first-message had it.
        let expected = if cbind_flag == b'y' { "eSws" } else { "biws" };
        if binding != expected {
            return Err(AuthError::Protocol {
                message: "unexpected SCRAM channel-binding attribute in client-final-message",
                detail: None,
            });
        }
        let final_nonce = read_attr_value(&mut input, 'r')?;
        // Extensions up to the proof are ignored; the proof is the last attribute.
        let (without_proof, proof) = loop {
            let at = text.len() - input.len();
            let (attr, value) = read_any_attr(&mut input)?;
            if attr == b'p' {
                // Everything before ",p=".
                break (&text[..at.saturating_sub(1)], value);
            }
        };
        let proof: [u8; KEY_BYTES] = scram::b64_decode(proof)
            .and_then(|p| p.try_into().ok())
            .ok_or_else(|| malformed("Malformed proof in client-final-message.".into()))?;
        if !input.is_empty() {
            return Err(malformed(
                "Garbage found at the end of client-final-message.".into(),
            ));
        }
        if !scram::constant_time_eq(final_nonce.as_bytes(), nonce.as_bytes()) {
            return Err(AuthError::Protocol {
                message: "invalid SCRAM response",
                detail: Some("Nonce does not match.".into()),
            });
        }
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let signature = scram::hmac_sha256(&self.verifier.stored_key, &[auth_message.as_bytes()]);
        let mut client_key = proof;
        for (k, s) in client_key.iter_mut().zip(signature) {
            *k ^= s;
        }
        let proven =
            scram::constant_time_eq(&scram::sha256(&client_key), &self.verifier.stored_key);
        if !proven || self.doomed {
            return Err(AuthError::Failed);
        }
        let server_signature =
            scram::hmac_sha256(&self.verifier.server_key, &[auth_message.as_bytes()]);
        Ok(format!("v={}", scram::b64_encode(&server_signature)).into_bytes())
    }
}

/// A verifier no password matches (its keys are zero: a doomed exchange never
/// succeeds anyway), salted from SHA-256 of `name` and `seed`.
fn mock_verifier(name: &[u8], seed: &[u8]) -> Verifier {
    let digest = scram::sha256(&[name, seed].concat());
    Verifier {
        iterations: scram::DEFAULT_ITERATIONS,
        salt: digest[..SALT_BYTES].to_vec(),
        stored_key: [0; KEY_BYTES],
        server_key: [0; KEY_BYTES],
    }
}

fn out_of_order() -> AuthError {
    AuthError::Protocol {
        message: "malformed SCRAM message",
        detail: Some("The SCRAM exchange is already past this message.".into()),
    }
}

/// A nonce character: printable ASCII other than a comma (RFC 5802's `printable`).
fn printable(b: u8) -> bool {
    (0x21..=0x7e).contains(&b) && b != b','
}

/// PostgreSQL's `sanitize_char`: a printable character as itself, others in hex.
fn shown(c: Option<u8>) -> String {
    match c {
        Some(c) if (0x21..=0x7e).contains(&c) => (c as char).to_string(),
        Some(c) => format!("0x{c:02x}"),
        None => "0x00".into(),
    }
}

/// The GS2 header (`n,,`, `y,,`; `p=…` refused; an authorization identity refused):
/// the channel-binding flag and the client-first-message-bare after it.
fn read_gs2_header(text: &str) -> Result<(u8, &str), AuthError> {
    let bytes = text.as_bytes();
    let flag = match bytes.first() {
        Some(&f @ (b'n' | b'y')) => f,
        Some(b'p') => {
            return Err(malformed(
                "The client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes channel binding data.".into(),
            ))
        }
        other => {
            return Err(malformed(format!(
                "Unexpected channel-binding flag \"{}\".",
                shown(other.copied())
            )))
        }
    };
    if bytes.get(1) != Some(&b',') {
        return Err(malformed(format!(
            "Comma expected, but found character \"{}\".",
            shown(bytes.get(1).copied())
        )));
    }
    match bytes.get(2) {
        Some(b'a') => {
            return Err(AuthError::Unsupported(
                "client uses authorization identity, but it is not supported",
            ))
        }
        Some(b',') => {}
        other => {
            return Err(malformed(format!(
                "Unexpected attribute \"{}\" in client-first-message.",
                shown(other.copied())
            )))
        }
    }
    Ok((flag, &text[3..]))
}

/// Reads `attr=value` and the comma after it, if any; the value runs to the comma.
fn read_attr_value<'a>(input: &mut &'a str, attr: char) -> Result<&'a str, AuthError> {
    let bytes = input.as_bytes();
    if bytes.first() != Some(&(attr as u8)) {
        return Err(malformed(format!(
            "Expected attribute \"{attr}\" but found \"{}\".",
            shown(bytes.first().copied())
        )));
    }
    if bytes.get(1) != Some(&b'=') {
        return Err(malformed(format!(
            "Expected character \"=\" for attribute \"{attr}\"."
        )));
    }
    Ok(take_value(input))
}

/// Reads any `x=value` (x a letter) and the comma after it, if any.
fn read_any_attr<'a>(input: &mut &'a str) -> Result<(u8, &'a str), AuthError> {
    let bytes = input.as_bytes();
    let attr = bytes.first().copied();
    let Some(attr) = attr.filter(u8::is_ascii_alphabetic) else {
        return Err(malformed(format!(
            "Attribute expected, but found invalid character \"{}\".",
            shown(attr)
        )));
    };
    if bytes.get(1) != Some(&b'=') {
        return Err(malformed(format!(
            "Expected character \"=\" for attribute \"{}\".",
            attr as char
        )));
    }
    Ok((attr, take_value(input)))
}

/// The value after `x=`, up to the next comma, which is consumed too.
fn take_value<'a>(input: &mut &'a str) -> &'a str {
    let rest = &input[2..];
    match rest.find(',') {
        Some(end) => {
            *input = &rest[end + 1..];
            &rest[..end]
        }
        None => {
            *input = "";
            rest
        }
    }
}

#[cfg(test)]
mod tests;
