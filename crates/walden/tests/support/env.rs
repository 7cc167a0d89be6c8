//! Settings a test reads from the environment (each documented where the test uses it).

/// The number in the environment variable `name`, or `default` if it is unset or not a
/// number.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
