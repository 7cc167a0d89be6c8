//! Walden's SCRAM-SHA-256 verifiers against PostgreSQL 15's own: the verifiers
//! PostgreSQL makes check the same passwords in Walden (SASLprep's mappings, and its
//! fallback to the raw password, included), and PostgreSQL lets a client in with the
//! password of a verifier Walden made. What could go wrong: a user whose password works
//! against PostgreSQL but not after `pg_dump` into Walden, or the reverse.
#![allow(clippy::unwrap_used)]

mod support;

use support::pg;
use walden_sql::scram::{build_verifier, Verifier};

/// Passwords that SASLprep leaves, maps, normalizes or refuses (PostgreSQL then uses
/// the password as it is).
const PASSWORDS: &[&str] = &[
    "p",
    "correct horse battery staple",
    "it's",
    "pässwörd",
    "a\u{00A0}b",          // a non-ASCII space: mapped to a space
    "soft\u{00AD}hyphen",  // mapped to nothing
    "\u{2168}",            // ROMAN NUMERAL NINE: "IX" after NFKC
    "\u{0627}\u{0644}",    // right-to-left throughout: allowed
    "mixed\u{0627}",       // right-to-left and left-to-right: refused, used raw
    "\u{0007}\u{00E9}",    // a control character: refused, used raw
    "caf\u{0065}\u{0301}", // e + combining acute: composed by NFKC
    "\u{1F600} smile",     // outside the BMP
];

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[test]
fn postgresql_verifiers_check_the_same_passwords_here() {
    let Some(cluster) = pg::cluster() else {
        eprintln!("{}", pg::SKIPPED);
        return;
    };
    let mut c = pg::connect(&cluster, "postgres");
    for (i, password) in PASSWORDS.iter().enumerate() {
        c.batch_execute(&format!("create role r{i} password {}", quoted(password)))
            .unwrap();
        let row = c
            .query_one(
                "select rolpassword from pg_authid where rolname = $1",
                &[&format!("r{i}")],
            )
            .unwrap();
        let stored: String = row.get(0);
        let v = Verifier::parse(&stored).unwrap_or_else(|| panic!("{stored}"));
        assert_eq!(v.to_string(), stored);
        assert!(v.matches(password.as_bytes()), "{password:?}");
        assert!(
            !v.matches(format!("{password}x").as_bytes()),
            "{password:?}"
        );
    }
}

#[test]
fn postgresql_lets_a_client_in_with_a_walden_verifier() {
    let Some(cluster) = pg::cluster() else {
        eprintln!("{}", pg::SKIPPED);
        return;
    };
    let mut admin = pg::connect(&cluster, "postgres");
    // Password logins for the test's roles over the socket (the first matching line
    // of pg_hba.conf wins; the rest of the cluster stays trust).
    let hba: String = admin.query_one("show hba_file", &[]).unwrap().get(0);
    let rest = std::fs::read_to_string(&hba).unwrap();
    let users: Vec<String> = (0..PASSWORDS.len()).map(|i| format!("scram_{i}")).collect();
    let line = format!("local all {} scram-sha-256\n", users.join(","));
    std::fs::write(&hba, format!("{line}{rest}")).unwrap();
    admin.batch_execute("select pg_reload_conf()").unwrap();
    for (i, password) in PASSWORDS.iter().enumerate() {
        let verifier = build_verifier(password.as_bytes()).unwrap();
        let user = format!("scram_{i}");
        admin
            .batch_execute(&format!(
                "create role {user} login password {}",
                quoted(&verifier)
            ))
            .unwrap();
        let stored: String = admin
            .query_one(
                "select rolpassword from pg_authid where rolname = $1",
                &[&user],
            )
            .unwrap()
            .get(0);
        assert_eq!(stored, verifier, "PostgreSQL keeps a verifier as it is");
        let connect = |password: &str| {
            let mut config: postgres::Config =
                cluster.connection_string("postgres").parse().unwrap();
            config.user(&user).password(password);
            config.connect(postgres::NoTls)
        };
        let mut client = connect(password).unwrap_or_else(|e| panic!("{password:?}: {e}"));
        let who: String = client
            .query_one("select current_user::text", &[])
            .unwrap()
            .get(0);
        assert_eq!(who, user);
        let e = connect(&format!("{password}x")).err().unwrap();
        let code = e.as_db_error().map(|d| d.code().code().to_string());
        assert_eq!(code.as_deref(), Some("28P01"), "{e}");
    }
}
