//! What the binary's tests share: running `walden`.
#![allow(dead_code)]

pub mod wire;

use std::process::{Command, Output};

/// The `walden` binary under test.
pub fn walden() -> Command {
    Command::new(env!("CARGO_BIN_EXE_walden"))
}

/// Runs `walden` with `args` and waits for it.
pub fn run(args: &[&str]) -> Output {
    walden()
        .args(args)
        .output()
        .expect("the walden binary runs")
}
