//! Memory sizes as the settings take them: `work_mem` and `statement_mem`'s defaults,
//! and the text PostgreSQL's memory settings accept.

/// The default of the `work_mem` setting: the memory each sort and each grouping of a
/// statement may use before it writes what does not fit to temporary files (an
/// external merge sort, a grouping's partitions), 64 MiB. As PostgreSQL's work_mem
/// (4MB by default there): a statement with several sorts may use it several times,
/// within `statement_mem`.
pub const DEFAULT_WORK_MEM_BYTES: u64 = 64 << 20;

/// The default of the `statement_mem` setting: the most memory one statement may keep
/// in all (returned rows, joined sides, window partitions, recursive queries' rows, and
/// the sorts and groupings in memory), 1 GiB. Past it the statement fails with 53200
/// instead of taking the process down. The charge is an estimate that may be up to
/// about half the real use, so a statement stays under about 2 GiB of real memory, and
/// a 24 GiB machine stays safe with a dozen such statements at once.
pub const DEFAULT_STATEMENT_MEM_BYTES: u64 = 1 << 30;

/// A size as PostgreSQL's memory settings take it: a number (here, of bytes), maybe with
/// a fraction, and an optional unit `B`, `kB`, `MB`, `GB` or `TB` (1024-based, case
/// as written), white space allowed around both. None if it is not one or exceeds
/// `i64::MAX` bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let multiplier: u64 = match unit.trim() {
        "" | "B" => 1,
        "kB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => return None,
    };
    if number.is_empty() || number == "." {
        return None;
    }
    let bytes = if let Ok(n) = number.parse::<u64>() {
        n.checked_mul(multiplier)?
    } else {
        let x = number.parse::<f64>().ok()? * multiplier as f64;
        // Rounded to whole bytes, as PostgreSQL rounds a fraction of its unit.
        if !x.is_finite() || x.round() >= i64::MAX as f64 {
            return None;
        }
        x.round() as u64
    };
    (bytes <= i64::MAX as u64).then_some(bytes)
}
