//! The exchange against RFC 7677's example, against a real client's side of SCRAM
//! (postgres-protocol's, which tokio-postgres and the `postgres` crate run) with
//! verifiers PostgreSQL 15 and Walden made, and every refusal PostgreSQL makes.

use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256};

use super::*;

/// Made by PostgreSQL 15: `CREATE ROLE a PASSWORD 'p'`, then `pg_authid.rolpassword`.
const PG_VERIFIER: &str = "SCRAM-SHA-256$4096:OjXxs19fwE7OOFIYZo9E+g==$\
    JEFKDZl+yfE+N85rDMpMk697d+v0mPM455qhNz3ro6A=:\
    IsnQyppljIPp83ReEMzI2IF91qFHRPwbtSig3UT1Zu4=";

const NONCE: [u8; SERVER_NONCE_BYTES] = [7; SERVER_NONCE_BYTES];

/// What the client ends with: Ok when it accepted the server's signature.
fn exchange(
    server: &mut ScramServer,
    password: &str,
    binding: ChannelBinding,
) -> Result<(), AuthError> {
    let mut client = ScramSha256::new(password.as_bytes(), binding);
    let first = server.client_first(client.message())?;
    client
        .update(&first)
        .expect("the client takes the server-first-message");
    let last = server.client_final(client.message())?;
    client
        .finish(&last)
        .expect("the client accepts the server's signature");
    Ok(())
}

#[test]
fn rfc_7677_example() {
    let salt = scram::b64_decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let mut server = ScramServer {
        verifier: Verifier::from_password(b"pencil", &salt, 4096),
        doomed: false,
        server_nonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".into(),
        state: State::First,
    };
    let first = server
        .client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
        .unwrap();
    assert_eq!(
        String::from_utf8(first).unwrap(),
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    let last = server
        .client_final(
            b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
              p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        )
        .unwrap();
    assert_eq!(
        String::from_utf8(last).unwrap(),
        "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    );
    // Nothing more is taken.
    assert_eq!(server.client_final(b"c=biws").unwrap_err(), out_of_order());
}

/// A real client's proof for a verifier PostgreSQL made, and for ones Walden made, with
/// either channel-binding flag a client without binding sends; a wrong password fails.
#[test]
fn a_real_clients_proof_is_accepted_and_a_wrong_password_is_not() {
    let ours = walden_sql::scram::build_verifier("pässwörd".as_bytes()).unwrap();
    for (verifier, password) in [(PG_VERIFIER, "p"), (ours.as_str(), "pässwörd")] {
        for binding in [ChannelBinding::unrequested, ChannelBinding::unsupported] {
            let mut server = ScramServer::new(verifier, NONCE);
            assert_eq!(exchange(&mut server, password, binding()), Ok(()));
            let mut server = ScramServer::new(verifier, NONCE);
            assert_eq!(
                exchange(&mut server, &format!("{password}!"), binding()),
                Err(AuthError::Failed)
            );
        }
    }
}

/// A user that does not exist meets the same exchange as one whose password is wrong:
/// a salt of the same length that stays the same for that user (and differs between
/// users), the same iteration count, and the same failure at the end, whatever it sends.
#[test]
fn a_mock_exchange_looks_like_a_wrong_password() {
    let seed = [42u8; 32];
    let salt_of = |first: &[u8]| {
        let text = String::from_utf8(first.to_vec()).unwrap();
        let mut parts = text.split(',');
        let r = parts.next().unwrap().to_string();
        let s = parts.next().unwrap().to_string();
        let i = parts.next().unwrap().to_string();
        assert!(
            r.starts_with("r=") && s.starts_with("s=") && i == "i=4096",
            "{text}"
        );
        scram::b64_decode(&s[2..]).unwrap()
    };
    let client_first = b"n,,n=,r=abcdefghijklmnopqrstuvwx";
    let mut real = ScramServer::new(PG_VERIFIER, NONCE);
    let real_salt = salt_of(&real.client_first(client_first).unwrap());
    let mut mock = ScramServer::mock("nobody", &seed, NONCE);
    let mock_salt = salt_of(&mock.client_first(client_first).unwrap());
    assert_eq!(real_salt.len(), mock_salt.len());
    let mut again = ScramServer::mock("nobody", &seed, [9; SERVER_NONCE_BYTES]);
    assert_eq!(
        salt_of(&again.client_first(client_first).unwrap()),
        mock_salt
    );
    let mut other = ScramServer::mock("somebody", &seed, NONCE);
    assert_ne!(
        salt_of(&other.client_first(client_first).unwrap()),
        mock_salt
    );
    let mut reseeded = ScramServer::mock("nobody", &[43; 32], NONCE);
    assert_ne!(
        salt_of(&reseeded.client_first(client_first).unwrap()),
        mock_salt
    );
    // Whatever the password, the end is the wrong password's.
    for password in ["p", "", "anything"] {
        let mut mock = ScramServer::mock("nobody", &seed, NONCE);
        assert_eq!(
            exchange(&mut mock, password, ChannelBinding::unrequested()),
            Err(AuthError::Failed)
        );
    }
    let mut wrong = ScramServer::new(PG_VERIFIER, NONCE);
    let e = exchange(&mut wrong, "q", ChannelBinding::unrequested()).unwrap_err();
    assert_eq!(e, AuthError::Failed);
    assert_eq!(
        (e.code(), e.message_for("nobody"), e.detail()),
        (
            "28P01",
            "password authentication failed for user \"nobody\"".to_string(),
            None
        )
    );
    // A stored password that is no verifier is a mock too.
    let mut broken = ScramServer::new("SCRAM-SHA-256$garbage", NONCE);
    assert_eq!(
        exchange(&mut broken, "garbage", ChannelBinding::unrequested()),
        Err(AuthError::Failed)
    );
}

/// A role's exchange: its verifier while its password is valid; a mock when it has
/// none, when the password expired, or when there is no role.
#[test]
fn for_role_picks_the_verifier_or_a_mock() {
    let seed = [1u8; 32];
    let role = RoleDef {
        login: true,
        password: Some(PG_VERIFIER.into()),
        ..RoleDef::new("a")
    };
    let run = |role: Option<&RoleDef>, now: i64| {
        let mut server = ScramServer::for_role(role, "a", now, &seed, NONCE);
        exchange(&mut server, "p", ChannelBinding::unrequested())
    };
    assert_eq!(run(Some(&role), 0), Ok(()));
    let until = RoleDef {
        valid_until: Some(1_000),
        ..role.clone()
    };
    assert_eq!(run(Some(&until), 1_000), Ok(()));
    assert_eq!(run(Some(&until), 1_001), Err(AuthError::Failed));
    let none = RoleDef {
        password: None,
        ..role.clone()
    };
    assert_eq!(run(Some(&none), 0), Err(AuthError::Failed));
    assert_eq!(run(None, 0), Err(AuthError::Failed));
}

fn first_error(message: &[u8]) -> AuthError {
    ScramServer::new(PG_VERIFIER, NONCE)
        .client_first(message)
        .unwrap_err()
}

fn final_error(first: &[u8], message: &str) -> AuthError {
    let mut server = ScramServer::new(PG_VERIFIER, NONCE);
    server.client_first(first).unwrap();
    server.client_final(message.as_bytes()).unwrap_err()
}

fn malformed_because(detail: &str) -> AuthError {
    malformed(detail.to_string())
}

/// Each refusal of a client-first-message, with PostgreSQL's message and detail.
#[test]
fn client_first_refusals() {
    assert_eq!(
        first_error(b"p=tls-server-end-point,,n=,r=abc"),
        malformed_because("The client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes channel binding data.")
    );
    let e = first_error(b"p=tls-server-end-point,,n=,r=abc");
    assert_eq!(
        (e.code(), e.message_for("u")),
        ("08P01", "malformed SCRAM message".into())
    );
    assert_eq!(
        first_error(b"n,a=someone,n=,r=abc"),
        AuthError::Unsupported("client uses authorization identity, but it is not supported")
    );
    assert_eq!(first_error(b"n,a=someone,n=,r=abc").code(), "0A000");
    assert_eq!(
        first_error(b"n,,m=ext,n=,r=abc"),
        AuthError::Unsupported("client requires an unsupported SCRAM extension")
    );
    assert_eq!(
        first_error(b""),
        malformed_because("Unexpected channel-binding flag \"0x00\".")
    );
    assert_eq!(
        first_error(b"x,,n=,r=abc"),
        malformed_because("Unexpected channel-binding flag \"x\".")
    );
    assert_eq!(
        first_error(b"n;,n=,r=abc"),
        malformed_because("Comma expected, but found character \";\".")
    );
    assert_eq!(
        first_error(b"n,x,n=,r=abc"),
        malformed_because("Unexpected attribute \"x\" in client-first-message.")
    );
    assert_eq!(
        first_error(b"n,,r=abc"),
        malformed_because("Expected attribute \"n\" but found \"r\".")
    );
    assert_eq!(
        first_error(b"n,,n=,r"),
        malformed_because("Expected character \"=\" for attribute \"r\".")
    );
    assert_eq!(
        first_error(b"n,,n=,r=ab\x01c"),
        AuthError::Protocol {
            message: "non-printable characters in SCRAM nonce",
            detail: None
        }
    );
    assert_eq!(
        first_error(b"n,,n=,r=abc,1=x"),
        malformed_because("Attribute expected, but found invalid character \"1\".")
    );
    assert_eq!(
        first_error(b"n,,n=,r=\xff"),
        malformed_because("The message is not valid UTF-8.")
    );
    // Extensions after the nonce are ignored.
    let mut server = ScramServer::new(PG_VERIFIER, NONCE);
    assert!(server.client_first(b"y,,n=x,r=abc,x=1,y=2").is_ok());
    // The final message cannot come first.
    let mut server = ScramServer::new(PG_VERIFIER, NONCE);
    assert_eq!(server.client_final(b"c=biws").unwrap_err(), out_of_order());
}

/// Each refusal of a client-final-message: the channel-binding attribute must repeat
/// the first message's flag, the nonce must be the exchange's, the proof 32 bytes.
#[test]
fn client_final_refusals() {
    let nonce = format!("abc{}", scram::b64_encode(&NONCE));
    let proof = scram::b64_encode(&[0; 32]);
    let binding_error = AuthError::Protocol {
        message: "unexpected SCRAM channel-binding attribute in client-final-message",
        detail: None,
    };
    assert_eq!(
        final_error(b"n,,n=,r=abc", &format!("c=eSws,r={nonce},p={proof}")),
        binding_error
    );
    assert_eq!(
        final_error(b"y,,n=,r=abc", &format!("c=biws,r={nonce},p={proof}")),
        binding_error
    );
    assert_eq!(
        final_error(b"n,,n=,r=abc", &format!("c=biws,r=abcX,p={proof}")),
        AuthError::Protocol {
            message: "invalid SCRAM response",
            detail: Some("Nonce does not match.".into())
        }
    );
    assert_eq!(
        final_error(b"n,,n=,r=abc", &format!("c=biws,r={nonce},p=AAAA")),
        malformed_because("Malformed proof in client-final-message.")
    );
    assert_eq!(
        final_error(b"n,,n=,r=abc", &format!("c=biws,r={nonce},p={proof},x=1")),
        malformed_because("Garbage found at the end of client-final-message.")
    );
    assert_eq!(
        final_error(b"n,,n=,r=abc", &format!("c=biws,r={nonce}")),
        malformed_because("Attribute expected, but found invalid character \"0x00\".")
    );
    // A well-formed message with the wrong proof, extensions before it ignored.
    assert_eq!(
        final_error(b"n,,n=,r=abc", &format!("c=biws,r={nonce},x=1,p={proof}")),
        AuthError::Failed
    );
    // After a failure nothing more is taken.
    let mut server = ScramServer::new(PG_VERIFIER, NONCE);
    server.client_first(b"n,,n=,r=abc").unwrap();
    assert!(server.client_final(b"c=xx").is_err());
    assert_eq!(
        server.client_final(format!("c=biws,r={nonce},p={proof}").as_bytes()),
        Err(out_of_order())
    );
}

#[test]
fn only_scram_sha_256_is_offered() {
    assert_eq!(MECHANISMS, ["SCRAM-SHA-256"]);
    assert_eq!(check_mechanism("SCRAM-SHA-256"), Ok(()));
    assert_eq!(
        check_mechanism("SCRAM-SHA-256-PLUS")
            .unwrap_err()
            .message_for("u"),
        "client selected an invalid SASL authentication mechanism"
    );
}

#[test]
fn logins_need_a_role_with_login() {
    let role = RoleDef {
        login: true,
        ..RoleDef::new("a")
    };
    assert_eq!(check_login(Some(&role), "a"), Ok(()));
    let e = check_login(None, "ghost").unwrap_err();
    assert_eq!(
        (e.code(), e.message_for("ghost")),
        ("28000", "role \"ghost\" does not exist".to_string())
    );
    let group = RoleDef::new("g");
    let e = check_login(Some(&group), "g").unwrap_err();
    assert_eq!(
        (e.code(), e.message_for("g")),
        ("28000", "role \"g\" is not permitted to log in".to_string())
    );
    assert_ne!(server_nonce().unwrap(), server_nonce().unwrap());
}
