//! The memory the commands give a database: the buffer pool a quarter of the machine's
//! RAM unless told otherwise (`--buffer-pool`), as PostgreSQL's documentation suggests for
//! `shared_buffers` on a dedicated server. The engine's own default (`Options::default`,
//! for embedding and tests) stays a fixed 256 MiB; this is the commands' choice.

use walden::Options;

/// Smallest buffer pool the commands choose on their own.
const MIN_POOL_BYTES: u64 = 128 << 20;
/// What the commands use when the machine's memory cannot be read.
const FALLBACK_POOL_BYTES: u64 = 256 << 20;

/// The machine's memory (`MemTotal` of /proc/meminfo), if it can be read.
fn machine_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_total(&text)
}

/// `MemTotal:  24576000 kB` → bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        _ => None,
    }
}

/// A quarter of `memory`, at least `MIN_POOL_BYTES`, in whole MiB.
fn quarter_of(memory: Option<u64>) -> u64 {
    memory.map_or(FALLBACK_POOL_BYTES, |m| {
        (m / 4).max(MIN_POOL_BYTES) >> 20 << 20
    })
}

/// The buffer pool the commands give a database by default.
pub fn default_buffer_pool_bytes() -> u64 {
    quarter_of(machine_memory_bytes())
}

/// Parses `--buffer-pool` (`8GB`, `512MB`, bytes), as SQL's sizes are written.
pub fn parse_pool_size(text: &str) -> Result<u64, String> {
    match walden_sql::session::parse_size(text) {
        Some(n) if n >= 1 << 20 => Ok(n),
        Some(_) => Err("the buffer pool is at least 1MB".into()),
        None => Err(format!(
            "{text:?} is not a size (a number with an optional unit B, kB, MB, GB or TB)"
        )),
    }
}

/// The options the commands open a database with: the engine's defaults, and the
/// buffer pool `pool` or the machine's default.
pub fn options(pool: Option<u64>) -> Options {
    Options {
        buffer_pool_bytes: pool.unwrap_or_else(default_buffer_pool_bytes),
        ..Options::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pool_is_a_quarter_of_the_memory() {
        let info = "MemTotal:       25165824 kB\nMemFree:  100 kB\n";
        assert_eq!(mem_total(info), Some(24 << 30));
        assert_eq!(quarter_of(mem_total(info)), 6 << 30);
        assert_eq!(
            quarter_of(Some(256 << 20)),
            128 << 20,
            "never below 128 MiB"
        );
        assert_eq!(quarter_of(None), 256 << 20);
        assert_eq!(quarter_of(Some((4 << 30) + 12345)), 1 << 30, "whole MiB");
        for bad in ["", "MemFree: 1 kB", "MemTotal: lots kB", "MemTotal: 5 MB"] {
            assert_eq!(mem_total(bad), None, "{bad:?}");
        }
        assert!(default_buffer_pool_bytes() >= 128 << 20);
    }

    #[test]
    fn pool_sizes_parse_as_sql_writes_them() {
        assert_eq!(parse_pool_size("8GB"), Ok(8 << 30));
        assert_eq!(parse_pool_size("512MB"), Ok(512 << 20));
        assert!(parse_pool_size("100kB").is_err());
        assert!(parse_pool_size("8 gigs").is_err());
    }
}
