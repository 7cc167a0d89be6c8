//! What a client sends, before and after logging in: the server's framing and decoding
//! of PostgreSQL's frontend messages (lengths checked against the limits, each message's
//! layout checked before pgwire decodes it) give messages or a refusal, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    walden_server::decode_client_bytes(bytes, mode % 2 == 0, 1 << 16);
});
