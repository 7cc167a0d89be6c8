//! What a statement runs within, below the expressions that read it: the statement's
//! guard (cancel, timeouts), the session's settings, and sequences.

pub mod guard;
pub mod sequences;
pub mod settings;
