//! Helpers shared by the engine's scenario tests: options, schemas and rows, the files of
//! a test database, and a gated file layer for race tests. Each test binary uses a part.
// A test binary that uses part of the helpers would warn of the rest, and of the
// re-exports below that it does not use.
#![allow(dead_code, unused_imports, clippy::unwrap_used)]

mod crafted;
mod data;
mod env;
mod files;
mod gate;
mod options;

pub use crafted::*;
pub use data::*;
pub use env::*;
pub use files::*;
pub use gate::{Gate, GateVfs, Hold};
pub use options::*;
