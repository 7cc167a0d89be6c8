//! The key-type workload on a throwaway PostgreSQL cluster. The statements run in plpgsql
//! procedures, one call per chunk (COMMIT inside a procedure every 1,000 rows; CHECKPOINT
//! cannot run inside one, so the driver runs it between calls). Each call reports the
//! seconds of its loop, measured with clock_timestamp(): the time of psql and of setting
//! up the call (reading the keys into an array) is left out.

use std::path::Path;

use walden::rng::SimRng;

use super::{KeyType, KeysEngine, LogTotals, Sizes, HOT_KEY_PERCENT, HOT_UPDATE_PERCENT};
use crate::postgres::Cluster;
use crate::CliError;

/// The cluster settings of a configuration (None: not a PostgreSQL one).
pub fn settings(config: &str) -> Option<Vec<(&'static str, &'static str)>> {
    Some(match config {
        "postgres/fpw-on" => vec![("full_page_writes", "on"), ("wal_compression", "off")],
        "postgres/fpw-off" => vec![("full_page_writes", "off"), ("wal_compression", "off")],
        _ => return None,
    })
}

pub struct PostgresKeys {
    cluster: Cluster,
}

fn unexpected(what: &str, detail: &str) -> CliError {
    CliError::io(
        "bench keys",
        std::io::Error::other(format!("postgres: {what}: {detail:?}")),
    )
}

/// The procedures of the workload for one key type. Keys are picked as `keys::pick_key`
/// picks them: the hot keys are the last loaded, at the end of the `ids` array.
fn procedures(key: KeyType) -> String {
    let (sql_type, insert) = match key {
        KeyType::Bigserial => ("bigint", "insert into t (v) values (i)"),
        KeyType::Uuid => (
            "uuid",
            "insert into t (id, v) values (gen_random_uuid(), i)",
        ),
    };
    // `ids` is the helper table of the loaded keys in load order (collect_keys).
    let read_keys = format!(
        "declare key_ids {sql_type}[]; key_count int; hot int; k int; found_v int; \
         t0 timestamptz;
         begin
           perform setseed(seed);
           select array_agg(i.id order by i.n) into key_ids from ids i;
           key_count := cardinality(key_ids);
           hot := greatest(key_count * {HOT_KEY_PERCENT} / 100, 1);
           t0 := clock_timestamp();"
    );
    format!(
        "create procedure keys_load(first int, count int, inout seconds float8 default null)
         language plpgsql as $$
         declare t0 timestamptz := clock_timestamp();
         begin
           for i in first .. first + count - 1 loop
             {insert};
             if (i - first + 1) % 1000 = 0 then commit; end if;
           end loop;
           commit;
           seconds := extract(epoch from clock_timestamp() - t0);
         end $$;
         create procedure keys_update(count int, skewed bool, seed float8,
           inout seconds float8 default null)
         language plpgsql as $$
         {read_keys}
           for i in 1 .. count loop
             if skewed and key_count > hot then
               if random() < {HOT_UPDATE_PERCENT} / 100.0 then
                 k := key_count - hot + 1 + floor(random() * hot)::int;
               else
                 k := 1 + floor(random() * (key_count - hot))::int;
               end if;
             else
               k := 1 + floor(random() * key_count)::int;
             end if;
             update t set v = v + 1 where id = key_ids[k];
             if not found then raise exception 'no row with key %', key_ids[k]; end if;
             if i % 1000 = 0 then commit; end if;
           end loop;
           commit;
           seconds := extract(epoch from clock_timestamp() - t0);
         end $$;
         create procedure keys_lookup(count int, seed float8, inout seconds float8 default null)
         language plpgsql as $$
         {read_keys}
           for i in 1 .. count loop
             k := 1 + floor(random() * key_count)::int;
             select v into found_v from t where id = key_ids[k];
             if not found then raise exception 'no row with key %', key_ids[k]; end if;
           end loop;
           seconds := extract(epoch from clock_timestamp() - t0);
         end $$;"
    )
}

/// A seed for PostgreSQL's setseed (-1 to 1) from the driver's generator.
fn setseed_value(rng: &mut SimRng) -> f64 {
    (rng.below(2_000_001) as f64 - 1_000_000.0) / 1_000_000.0
}

impl PostgresKeys {
    pub fn start(
        bindir: &Path,
        settings: &[(&str, &str)],
        key: KeyType,
    ) -> Result<PostgresKeys, CliError> {
        let cluster = Cluster::start(bindir, settings)?;
        cluster.query(key.create_table_sql())?;
        cluster.query(&procedures(key))?;
        // The key type of `ids` is the key column's.
        let id_type = match key {
            KeyType::Bigserial => "bigint",
            KeyType::Uuid => "uuid",
        };
        // Unlogged: filling it writes no WAL.
        cluster.query(&format!(
            "create unlogged table ids (n serial primary key, id {id_type})"
        ))?;
        Ok(PostgresKeys { cluster })
    }

    /// Runs a CALL and returns the seconds its procedure reports.
    fn call(&self, sql: &str) -> Result<f64, CliError> {
        let output = self.cluster.query(sql)?;
        output
            .trim()
            .parse()
            .map_err(|_| unexpected(sql, output.trim()))
    }
}

fn numbers(output: &str, count: usize) -> Result<Vec<u64>, CliError> {
    let fields: Vec<u64> = output
        .trim()
        .split('|')
        .filter_map(|f| f.trim().parse().ok())
        .collect();
    if fields.len() == count {
        Ok(fields)
    } else {
        Err(unexpected("reading numbers", output.trim()))
    }
}

impl KeysEngine for PostgresKeys {
    fn checkpoint(&mut self) -> Result<(), CliError> {
        self.cluster.query("checkpoint")?;
        Ok(())
    }

    fn log_totals(&mut self) -> Result<LogTotals, CliError> {
        // Every psql session of `Cluster::query` flushes its statistics before it ends,
        // so pg_stat_wal holds the full-page images of every call so far.
        let output = self.cluster.query(
            "select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::int8, wal_fpi \
             from pg_stat_wal",
        )?;
        let n = numbers(&output, 2)?;
        Ok(LogTotals {
            // The insert position counts records as appended, page headers included:
            // PostgreSQL's WAL is not compressed here, so logical and physical are one.
            physical_bytes: n[0],
            logical_bytes: n[0],
            index_logical_bytes: None,
            page_images: n[1],
            undo_bytes: 0,
        })
    }

    fn load(
        &mut self,
        first: u64,
        count: u64,
        _tick: &mut dyn FnMut(u64),
    ) -> Result<f64, CliError> {
        self.call(&format!("call keys_load({first}, {count})"))
    }

    fn collect_keys(&mut self) -> Result<u64, CliError> {
        let output = self.cluster.query(
            "insert into ids (id) select id from t order by v; \
             vacuum analyze ids; \
             select count(*) from ids",
        )?;
        Ok(numbers(&output, 1)?[0])
    }

    fn update(
        &mut self,
        count: u64,
        skewed: bool,
        rng: &mut SimRng,
        _tick: &mut dyn FnMut(u64),
    ) -> Result<f64, CliError> {
        let seed = setseed_value(rng);
        self.call(&format!("call keys_update({count}, {skewed}, {seed})"))
    }

    fn lookup(
        &mut self,
        count: u64,
        rng: &mut SimRng,
        _tick: &mut dyn FnMut(u64),
    ) -> Result<f64, CliError> {
        let seed = setseed_value(rng);
        self.call(&format!("call keys_lookup({count}, {seed})"))
    }

    fn sizes(&mut self) -> Result<Sizes, CliError> {
        let output = self
            .cluster
            .query("select count(*), pg_relation_size('t'), pg_relation_size('t_pkey') from t")?;
        let n = numbers(&output, 3)?;
        Ok(Sizes {
            rows: n[0],
            table_bytes: n[1],
            index_bytes: n[2],
        })
    }

    fn finish(self: Box<Self>) -> Result<(), CliError> {
        Ok(self.cluster.stop()?)
    }
}
