//! SCRAM-SHA-256 password verifiers as PostgreSQL makes and reads them (RFC 5802 and
//! 7677; PostgreSQL's `scram_build_secret` and `parse_scram_secret`): what `CREATE ROLE
//! … PASSWORD` stores instead of the password, and the primitives a server's side of
//! the exchange checks a client's proof with (walden-server's `scram.rs`).
//!
//! A verifier is `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (base64),
//! where SaltedPassword = PBKDF2-HMAC-SHA-256(password, salt, iterations), ClientKey =
//! HMAC(SaltedPassword, "Client Key"), StoredKey = SHA-256(ClientKey) and ServerKey =
//! HMAC(SaltedPassword, "Server Key"). It lets a server check that a client knows the
//! password without holding anything a client could log in with.

use std::borrow::Cow;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = hmac::Hmac<Sha256>;

/// The mechanism's name, as a verifier starts with it and SASL negotiates it.
pub const MECHANISM: &str = "SCRAM-SHA-256";
/// PostgreSQL 15's iteration count for new verifiers (`SCRAM_DEFAULT_ITERATIONS`).
pub const DEFAULT_ITERATIONS: u32 = 4096;
/// Salt bytes of a new verifier (`SCRAM_DEFAULT_SALT_LEN`).
pub const SALT_BYTES: usize = 16;
/// SHA-256's output: the length of every key and proof.
pub const KEY_BYTES: usize = 32;
/// The longest password PostgreSQL's SASLprep accepts (`MAX_PASSWORD_LENGTH`); a
/// longer one is refused ("password too long").
pub const MAX_PASSWORD_BYTES: usize = 1024;
/// The most iterations a stored verifier may ask for: each login costs a client that
/// many HMACs (PostgreSQL 16 lets an administrator go this far too).
pub const MAX_ITERATIONS: u32 = i32::MAX as u32;

/// A parsed verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: [u8; KEY_BYTES],
    pub server_key: [u8; KEY_BYTES],
}

impl Verifier {
    /// The verifier of `password` with this salt and iteration count, as PostgreSQL's
    /// `scram_build_secret` makes it (the password through SASLprep first, or as it is
    /// when that fails).
    pub fn from_password(password: &[u8], salt: &[u8], iterations: u32) -> Verifier {
        let prepared = saslprep(password);
        let salted = salted_password(&prepared, salt, iterations);
        let client_key = hmac_sha256(&salted, &[b"Client Key"]);
        Verifier {
            iterations,
            salt: salt.to_vec(),
            stored_key: sha256(&client_key),
            server_key: hmac_sha256(&salted, &[b"Server Key"]),
        }
    }

    /// Reads `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, as
    /// PostgreSQL's `parse_scram_secret`: the iteration count a decimal number (1 to
    /// `MAX_ITERATIONS`), the salt any non-empty base64, each key base64 of exactly 32
    /// bytes. None for anything else.
    pub fn parse(text: &str) -> Option<Verifier> {
        let rest = text.strip_prefix(MECHANISM)?.strip_prefix('$')?;
        let (iterations_and_salt, keys) = rest.split_once('$')?;
        let (iterations, salt) = iterations_and_salt.split_once(':')?;
        let (stored_key, server_key) = keys.split_once(':')?;
        if iterations.is_empty() || !iterations.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let iterations: u32 = iterations.parse().ok()?;
        if iterations == 0 || iterations > MAX_ITERATIONS {
            return None;
        }
        let salt = b64_decode(salt)?;
        if salt.is_empty() {
            return None;
        }
        Some(Verifier {
            iterations,
            salt,
            stored_key: b64_decode(stored_key)?.try_into().ok()?,
            server_key: b64_decode(server_key)?.try_into().ok()?,
        })
    }

    /// Whether `password` is the one this verifier was made from.
    pub fn matches(&self, password: &[u8]) -> bool {
        let made = Verifier::from_password(password, &self.salt, self.iterations);
        constant_time_eq(&made.stored_key, &self.stored_key)
            && constant_time_eq(&made.server_key, &self.server_key)
    }
}

impl std::fmt::Display for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{MECHANISM}${}:{}${}:{}",
            self.iterations,
            b64_encode(&self.salt),
            b64_encode(&self.stored_key),
            b64_encode(&self.server_key)
        )
    }
}

/// Why a verifier could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    #[error("password too long")]
    PasswordTooLong,
    #[error("could not generate random salt: {0}")]
    Random(String),
}

/// A new verifier of `password` (PostgreSQL's `pg_be_scram_build_secret`): a random
/// 16-byte salt, 4096 iterations.
pub fn build_verifier(password: &[u8]) -> Result<String, ScramError> {
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(ScramError::PasswordTooLong);
    }
    let salt: [u8; SALT_BYTES] = random_bytes().map_err(ScramError::Random)?;
    Ok(Verifier::from_password(password, &salt, DEFAULT_ITERATIONS).to_string())
}

/// What kind of password text `CREATE ROLE … PASSWORD` was given (PostgreSQL's
/// `get_password_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordKind {
    /// A password in clear, to be turned into a verifier.
    Plain,
    /// A SCRAM-SHA-256 verifier (pg_dump writes roles' passwords so), kept as it is.
    Scram,
    /// An MD5 hash (`md5` and 32 hex digits), which only MD5 authentication can use.
    Md5,
}

pub fn password_kind(text: &str) -> PasswordKind {
    if text.len() == 35
        && text.starts_with("md5")
        && text[3..].bytes().all(|b| b.is_ascii_hexdigit())
    {
        PasswordKind::Md5
    } else if Verifier::parse(text).is_some() {
        PasswordKind::Scram
    } else {
        PasswordKind::Plain
    }
}

/// The password through SASLprep (RFC 4013) as PostgreSQL's `pg_saslprep` applies it:
/// ASCII is left as it is; anything that is not UTF-8, that SASLprep refuses, or that
/// it maps to nothing is used as it is too (PostgreSQL's passwords need not be valid
/// SASLprep input, so both sides of an exchange fall back alike).
pub fn saslprep(password: &[u8]) -> Cow<'_, [u8]> {
    if password.is_ascii() {
        return Cow::Borrowed(password);
    }
    let Ok(text) = std::str::from_utf8(password) else {
        return Cow::Borrowed(password);
    };
    match stringprep::saslprep(text) {
        Ok(prepared) if !prepared.is_empty() => Cow::Owned(prepared.into_owned().into_bytes()),
        _ => Cow::Borrowed(password),
    }
}

/// `Hi(password, salt, iterations)` of RFC 5802: PBKDF2 with HMAC-SHA-256, one block.
pub fn salted_password(password: &[u8], salt: &[u8], iterations: u32) -> [u8; KEY_BYTES] {
    let mut u = hmac_sha256(password, &[salt, &1u32.to_be_bytes()]);
    let mut out = u;
    for _ in 1..iterations {
        u = hmac_sha256(password, &[&u]);
        for (o, x) in out.iter_mut().zip(u) {
            *o ^= x;
        }
    }
    out
}

/// HMAC-SHA-256 of the parts, one after another, under `key`.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; KEY_BYTES] {
    // HMAC takes a key of any length (a long one is hashed first).
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts keys of every length"),
    };
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

pub fn sha256(data: &[u8]) -> [u8; KEY_BYTES] {
    Sha256::digest(data).into()
}

/// Base64 with padding (RFC 4648's standard alphabet), as SCRAM and PostgreSQL write it.
pub fn b64_encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Base64 with padding; None for anything else.
pub fn b64_decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

/// Equality that takes as long whatever bytes differ (no early exit for a timing
/// attack to measure).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Bytes from the operating system's random source (salts, nonces).
pub fn random_bytes<const N: usize>() -> Result<[u8; N], String> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's example: user "user", password "pencil", salt
    /// `W22ZaJ0SNY7soEsUEjb6gQ==`, 4096 iterations. Its exchange's AuthMessage gives
    /// the client proof and server signature printed there, which fix StoredKey and
    /// ServerKey.
    #[test]
    fn rfc_7677_example() {
        let salt = b64_decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let v = Verifier::from_password(b"pencil", &salt, 4096);
        let auth_message = "n=user,r=rOprNGfwEbeRWgbNEkqO,\
            r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,\
            c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let salted = salted_password(b"pencil", &salt, 4096);
        let client_key = hmac_sha256(&salted, &[b"Client Key"]);
        let signature = hmac_sha256(&v.stored_key, &[auth_message.as_bytes()]);
        let proof: Vec<u8> = client_key
            .iter()
            .zip(signature)
            .map(|(k, s)| k ^ s)
            .collect();
        assert_eq!(
            b64_encode(&proof),
            "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        let server_signature = hmac_sha256(&v.server_key, &[auth_message.as_bytes()]);
        assert_eq!(
            b64_encode(&server_signature),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        assert!(v.matches(b"pencil"));
        assert!(!v.matches(b"pencil "));
    }

    /// A verifier PostgreSQL 15 made for `CREATE ROLE a PASSWORD 'p'`
    /// (`select rolpassword from pg_authid`): read, written back byte for byte, and made
    /// again from its salt and the password.
    #[test]
    fn a_verifier_postgresql_made() {
        let pg = "SCRAM-SHA-256$4096:OjXxs19fwE7OOFIYZo9E+g==$\
                  JEFKDZl+yfE+N85rDMpMk697d+v0mPM455qhNz3ro6A=:\
                  IsnQyppljIPp83ReEMzI2IF91qFHRPwbtSig3UT1Zu4=";
        let v = Verifier::parse(pg).unwrap();
        assert_eq!(v.iterations, 4096);
        assert_eq!(v.to_string(), pg);
        assert_eq!(Verifier::from_password(b"p", &v.salt, 4096), v);
        assert!(v.matches(b"p"));
        assert!(!v.matches(b"P"));
        assert_eq!(password_kind(pg), PasswordKind::Scram);
    }

    #[test]
    fn new_verifiers_are_salted_at_random_and_check_their_password() {
        let a = build_verifier(b"secret").unwrap();
        let b = build_verifier(b"secret").unwrap();
        assert_ne!(a, b);
        let (a, b) = (Verifier::parse(&a).unwrap(), Verifier::parse(&b).unwrap());
        assert_eq!((a.iterations, a.salt.len()), (4096, 16));
        assert!(a.matches(b"secret") && b.matches(b"secret"));
        assert!(!a.matches(b"Secret"));
        assert_eq!(
            build_verifier(&[b'x'; 1025]),
            Err(ScramError::PasswordTooLong)
        );
        assert!(build_verifier(&[b'x'; 1024]).is_ok());
    }

    /// SASLprep maps a non-ASCII space to a space and soft hyphens to nothing, and
    /// normalizes (NFKC); what it refuses, what is not UTF-8, and ASCII are kept as
    /// they are, as PostgreSQL keeps them.
    #[test]
    fn saslprep_as_postgresql_applies_it() {
        assert_eq!(&*saslprep("a\u{00A0}b".as_bytes()), b"a b");
        assert_eq!(&*saslprep("pa\u{00AD}ss".as_bytes()), b"pass");
        assert_eq!(&*saslprep("\u{2168}".as_bytes()), b"IX");
        // Prohibited (a control character beside a non-ASCII one), not UTF-8, ASCII
        // with a control character, mapped to nothing at all: as they are.
        assert_eq!(&*saslprep("\u{0007}é".as_bytes()), "\u{0007}é".as_bytes());
        assert_eq!(&*saslprep(&[0xff, 0x41]), &[0xff, 0x41]);
        assert_eq!(&*saslprep(b"a\x07b"), b"a\x07b");
        assert_eq!(&*saslprep("\u{00AD}".as_bytes()), "\u{00AD}".as_bytes());
        // So a verifier made of the mapped form matches the unmapped one.
        let v = Verifier::from_password("a\u{00A0}b".as_bytes(), b"salt", 1);
        assert!(v.matches(b"a b"));
    }

    #[test]
    fn malformed_verifiers_are_not_verifiers() {
        let good = "SCRAM-SHA-256$4096:c2FsdA==$\
                    JEFKDZl+yfE+N85rDMpMk697d+v0mPM455qhNz3ro6A=:\
                    IsnQyppljIPp83ReEMzI2IF91qFHRPwbtSig3UT1Zu4=";
        assert!(Verifier::parse(good).is_some());
        for bad in [
            "SCRAM-SHA-256$garbage",
            "SCRAM-SHA-1$4096:c2FsdA==$AAAA:AAAA",
            &good.replace("4096", "0"),
            &good.replace("4096", "-1"),
            &good.replace("4096", "+4096"),
            &good.replace("4096", "99999999999"),
            &good.replace("c2FsdA==", ""),
            &good.replace("c2FsdA==", "c2FsdA"),
            &good.replace("IsnQ", "IsnQIsnQ"),
            &good.replace("JEFK", "!EFK"),
            &format!("{good}:"),
            "md5abcdefabcdefabcdefabcdefabcdefab",
        ] {
            assert_eq!(Verifier::parse(bad), None, "{bad}");
        }
        assert_eq!(
            password_kind("md5abcdefabcdefabcdefabcdefabcdefab"),
            PasswordKind::Md5
        );
        assert_eq!(
            password_kind("md5abcdefabcdefabcdefabcdefabcdefaz"),
            PasswordKind::Plain
        );
        assert_eq!(password_kind("SCRAM-SHA-256$garbage"), PasswordKind::Plain);
    }
}
