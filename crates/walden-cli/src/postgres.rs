//! What one SQL statement costs PostgreSQL, measured on a throwaway cluster for the
//! side-by-side benchmark (`walden bench seed`): WAL bytes, full-page images, data-file
//! bytes and time. The clusters themselves (initdb in a temporary directory, a private
//! socket, stopped and removed on drop) are the `walden-pgcluster` crate's.

use std::io;
use std::time::{Duration, Instant};

use walden_pgcluster::trim_statement;
pub use walden_pgcluster::{find_bindir, Cluster};

use crate::CliError;

/// How long to wait for the checkpointer to publish the statistics of our CHECKPOINT.
const CHECKPOINT_STATS_TIMEOUT: Duration = Duration::from_secs(30);

/// What one statement cost PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PgMeasure {
    /// WAL the statement generated: the insert position after it minus before it, so page
    /// headers and the commit record count.
    pub wal_bytes: u64,
    /// Full-page images the statement logged (`pg_stat_wal.wal_fpi`).
    pub page_images: u64,
    /// Data-file bytes written by the statement and by the CHECKPOINT issued right after it
    /// (blocks written by the checkpointer, the background writer and backends), so every
    /// page the statement dirtied is counted once it reaches its file.
    pub data_bytes_written: u64,
    /// How much the database's relation files (all forks) grew over the statement; 0 when
    /// they shrank. PostgreSQL 15 adds a page to a file by writing it as zeros first, a
    /// backend write counted in `data_bytes_written`, so `data_bytes_written -
    /// file_growth_bytes` is roughly what was written with content.
    pub file_growth_bytes: u64,
    /// The statement's duration as psql's `\timing` reports it (send to last result).
    pub seconds: f64,
}

/// Measuring statements on a cluster (an extension of `Cluster`, whose psql access it uses).
pub trait Measure {
    /// Runs one statement and measures it (see `PgMeasure`). WAL and full-page images are
    /// counted up to the end of the statement; data-file writes also over a CHECKPOINT
    /// issued right after it, which this runs.
    fn measure(&self, sql: &str) -> Result<PgMeasure, CliError>;

    /// `pg_table_size` of a table: its main fork, free-space and visibility maps, TOAST.
    fn table_bytes(&self, table: &str) -> Result<u64, CliError>;
}

impl Measure for Cluster {
    fn measure(&self, sql: &str) -> Result<PgMeasure, CliError> {
        // pg_stat_wal and pg_stat_bgwriter are shared-memory snapshots that a backend
        // updates only when it flushes its pending counters, at most once a second unless
        // forced. `pg_stat_force_next_flush()` makes this session flush before it reports
        // the next command complete, so "after" includes the statement's full-page images;
        // `query` does the same, so "before" includes every earlier session's.
        let script = format!(
            "select 'walden:before', {STATS};\n\
             select pg_current_wal_insert_lsn() as walden_lsn0 \\gset\n\
             \\timing on\n{}\n;\n\\timing off\n\
             select 'walden:wal', pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'walden_lsn0');\n\
             select pg_stat_force_next_flush();\n\
             select 'walden:after', {STATS};\n\
             checkpoint;\n",
            trim_statement(sql)
        );
        let output = self.psql(&script)?;
        let before = Stats::parse(marked_line(&output, "walden:before")?)?;
        let after = Stats::parse(marked_line(&output, "walden:after")?)?;
        let wal_bytes = parse_number(marked_line(&output, "walden:wal")?.trim(), "WAL bytes")?;
        let seconds = statement_seconds(&output)?;
        let blocks_written = blocks_written_after_checkpoint(self, after.checkpoints_requested)?;
        Ok(PgMeasure {
            wal_bytes,
            page_images: after.page_images.saturating_sub(before.page_images),
            data_bytes_written: blocks_written.saturating_sub(before.blocks_written)
                * before.block_size,
            file_growth_bytes: after.file_bytes.saturating_sub(before.file_bytes),
            seconds,
        })
    }

    fn table_bytes(&self, table: &str) -> Result<u64, CliError> {
        let literal = table.replace('\'', "''");
        let output = self.query(&format!("select pg_table_size('{literal}'::regclass)"))?;
        parse_number(output.trim(), "table size")
    }
}

/// Waits until the checkpointer has published the statistics of the CHECKPOINT that
/// `measure` issued — it reports them after waking the waiting backend, so they can
/// lag — and returns the total of blocks written by checkpointer, bgwriter and backends.
fn blocks_written_after_checkpoint(
    cluster: &Cluster,
    checkpoints_before: u64,
) -> Result<u64, CliError> {
    let started = Instant::now();
    loop {
        let output = cluster.query(
            "select checkpoints_req, buffers_checkpoint + buffers_clean + buffers_backend \
             from pg_stat_bgwriter",
        )?;
        let fields = split_fields(output.trim(), 2)?;
        let checkpoints = parse_number(fields[0], "checkpoints_req")?;
        if checkpoints > checkpoints_before {
            return parse_number(fields[1], "blocks written");
        }
        if started.elapsed() > CHECKPOINT_STATS_TIMEOUT {
            return Err(error(
                "the checkpointer did not report the statement's checkpoint",
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The counters `measure` reads before and after a statement, in this order.
const STATS: &str = "(select wal_fpi from pg_stat_wal), \
    (select buffers_checkpoint + buffers_clean + buffers_backend from pg_stat_bgwriter), \
    (select checkpoints_req from pg_stat_bgwriter), \
    current_setting('block_size')::int8, \
    (select coalesce(sum(pg_relation_size(oid, 'main') + pg_relation_size(oid, 'fsm') \
        + pg_relation_size(oid, 'vm') + pg_relation_size(oid, 'init')), 0) from pg_class)";

struct Stats {
    page_images: u64,
    blocks_written: u64,
    checkpoints_requested: u64,
    block_size: u64,
    /// Bytes of all relation files of the database.
    file_bytes: u64,
}

impl Stats {
    fn parse(fields: &str) -> Result<Stats, CliError> {
        let fields = split_fields(fields, 5)?;
        Ok(Stats {
            page_images: parse_number(fields[0], "wal_fpi")?,
            blocks_written: parse_number(fields[1], "blocks written")?,
            checkpoints_requested: parse_number(fields[2], "checkpoints_req")?,
            block_size: parse_number(fields[3], "block_size")?,
            file_bytes: parse_number(fields[4], "relation file bytes")?,
        })
    }
}

/// Splits psql's unaligned output line into exactly `count` fields.
fn split_fields(line: &str, count: usize) -> Result<Vec<&str>, CliError> {
    let fields: Vec<&str> = line.split('|').collect();
    if fields.len() == count {
        Ok(fields)
    } else {
        Err(error(format!(
            "expected {count} fields from psql, got {line:?}"
        )))
    }
}

/// The rest of the output line that starts with `marker|`.
fn marked_line<'a>(output: &'a str, marker: &str) -> Result<&'a str, CliError> {
    output
        .lines()
        .find_map(|line| line.strip_prefix(marker)?.strip_prefix('|'))
        .ok_or_else(|| error(format!("no {marker} line in psql output")))
}

/// The sum of psql's `Time: 12.345 ms` lines (one per statement run under `\timing`;
/// durations over a second also print "(mm:ss.fff)" after the milliseconds), in seconds.
fn statement_seconds(output: &str) -> Result<f64, CliError> {
    let mut total_ms = 0.0;
    let mut found = false;
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("Time: ") {
            let ms = rest.split_whitespace().next().unwrap_or("");
            total_ms += ms
                .parse::<f64>()
                .map_err(|_| error(format!("cannot read psql timing {line:?}")))?;
            found = true;
        }
    }
    if found {
        Ok(total_ms / 1000.0)
    } else {
        Err(error("psql printed no timing for the statement"))
    }
}

fn parse_number(text: &str, what: &str) -> Result<u64, CliError> {
    // pg_wal_lsn_diff returns numeric, printed without a fraction for whole numbers.
    text.trim()
        .parse()
        .map_err(|_| error(format!("cannot read {what} from psql output {text:?}")))
}

fn error(message: impl Into<String>) -> CliError {
    CliError::io("postgres", io::Error::other(message.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREATE_DEMO: &str = "create table demo as select generate_series a,generate_series b,\
        generate_series c,generate_series d,generate_series e,generate_series f,\
        lpad('x',100,'x') g from generate_series(0,0);";
    const INSERT_10K: &str = "insert into demo select g,g,g,g,g,g,lpad('x',100,'x') \
        from generate_series(1,10000) g";

    /// The seed's first steps: insert 10,000 rows, checkpoint, update every row. Returns
    /// the two measures and the table's pages before the update.
    fn seed_steps(cluster: &Cluster) -> (PgMeasure, PgMeasure, u64) {
        cluster.query(CREATE_DEMO).unwrap();
        let insert = cluster.measure(INSERT_10K).unwrap();
        cluster.query("checkpoint").unwrap();
        let pages = cluster
            .query("select pg_relation_size('demo') / current_setting('block_size')::int8")
            .unwrap();
        let pages: u64 = pages.trim().parse().unwrap();
        let update = cluster.measure("update demo set b=b+1").unwrap();
        (insert, update, pages)
    }

    #[test]
    fn measures_the_seed_steps_with_and_without_full_page_writes() {
        let Some(bindir) = find_bindir(None) else {
            println!("postgres not installed: skipped");
            return;
        };
        let cluster = Cluster::start(&bindir, &[("full_page_writes", "on")]).unwrap();
        let dir = cluster.dir().to_path_buf();
        assert!(dir.join("data/postmaster.pid").is_file());
        let (insert, update, pages) = seed_steps(&cluster);
        println!("full_page_writes=on: insert {insert:?}");
        println!("full_page_writes=on: update {update:?} over {pages} pages");
        assert!(insert.wal_bytes > 10_000 * 100, "{insert:?}");
        assert!(insert.seconds > 0.0, "{insert:?}");
        assert!(insert.file_growth_bytes >= pages * 8192, "{insert:?}");
        assert!(
            insert.data_bytes_written >= insert.file_growth_bytes,
            "{insert:?}"
        );
        // The first change to each page after the checkpoint logs the page.
        assert!(update.page_images >= pages, "{update:?}");
        assert!(update.data_bytes_written > 0, "{update:?}");
        assert!(cluster.table_bytes("demo").unwrap() > pages * 8192);
        cluster.stop().unwrap();
        assert!(!dir.exists(), "{} left behind", dir.display());

        let cluster = Cluster::start(&bindir, &[("full_page_writes", "off")]).unwrap();
        let dir = cluster.dir().to_path_buf();
        let (insert, update, _) = seed_steps(&cluster);
        println!("full_page_writes=off: insert {insert:?}");
        println!("full_page_writes=off: update {update:?}");
        assert_eq!(insert.page_images, 0);
        assert_eq!(update.page_images, 0);
        assert!(update.wal_bytes > 0);
        // Dropping without stop() must not leave the server or its directory behind.
        drop(cluster);
        assert!(!dir.exists(), "{} left behind", dir.display());
    }

    /// The cluster crate's errors keep the "postgres: " prefix they had when the cluster
    /// code lived here.
    #[test]
    fn an_sql_error_is_reported_with_psql_message() {
        let Some(bindir) = find_bindir(None) else {
            println!("postgres not installed: skipped");
            return;
        };
        let cluster = Cluster::start(&bindir, &[]).unwrap();
        let err = CliError::from(cluster.query("select * from no_such_table").unwrap_err());
        let message = err.to_string();
        assert!(message.starts_with("postgres: psql failed: "), "{message}");
        assert!(message.contains("no_such_table"), "{message}");
        assert!(!message.contains('\n'), "{message}");
        assert_eq!(cluster.query("select 40 + 2").unwrap().trim(), "42");
        cluster.stop().unwrap();
    }

    #[test]
    fn reads_psql_timing_lines() {
        let output = "x\nTime: 12.5 ms\nTime: 1500.000 ms (00:01.500)\n";
        assert_eq!(statement_seconds(output).unwrap(), 1.5125);
        assert!(statement_seconds("no timing").is_err());
    }
}
