//! `walden bench queries`: a small join workload of the kind an application runs, on
//! Walden, a throwaway PostgreSQL 15 cluster and SQLite (in process) in one run, with the
//! same data in each: `customers` (100k rows) and `orders` (1M rows, each naming a
//! customer), primary keys on both and an index on `orders.customer_id`. Five queries:
//! point joins by order id (many per run), a join with GROUP BY over 10% of the orders,
//! the top 10 orders by amount with their customers (ORDER BY … LIMIT 10 over the
//! whole join), two larger than `work_mem` (`--work-mem`, PostgreSQL's default 4MB,
//! set on Walden and PostgreSQL alike): a sort of every order (the last 10 rows of it),
//! and a GROUP BY with a group per four orders (the 10 largest); and five subqueries
//! (`timed_queries`): a scalar one per customer through an index, one per order with no
//! index, EXISTS, NOT EXISTS and IN. Each is timed over several runs (medians reported) inside each engine —
//! Walden through its SQL session in process, PostgreSQL inside PL/pgSQL functions timed
//! with clock_timestamp() (no client round trips), SQLite through rusqlite — and every
//! engine's results are checked against Walden's: a difference fails the benchmark.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use walden::{Database, Value};
use walden_sql::{value, Session, SqlError};

use crate::postgres::{find_bindir, Cluster};
use std::io::Write;

use crate::CliError;

#[derive(clap::Args)]
pub struct QueriesArgs {
    /// Rows of `orders`.
    #[arg(long, default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(10..=i32::MAX as u64))]
    orders: u64,
    /// Rows of `customers`.
    #[arg(long, default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    customers: u64,
    /// Point joins per run.
    #[arg(long, default_value_t = 10_000)]
    lookups: u64,
    /// Runs of each query (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// PostgreSQL: auto (use it if installed), off, or the server's bin directory.
    #[arg(long, default_value = "auto")]
    postgres: String,
    /// Leave SQLite out.
    #[arg(long)]
    no_sqlite: bool,
    /// `work_mem` on Walden and PostgreSQL: what each sort and grouping keeps in memory
    /// before it writes to temporary files.
    #[arg(long, default_value = "4MB")]
    work_mem: String,
}

/// The key of point lookup `i` (1-based): spread over all orders.
fn lookup_key(i: u64, orders: u64) -> u64 {
    (i * 104_729) % orders + 1
}

fn create_sql(customers: u64, orders: u64, series: &str) -> Vec<String> {
    vec![
        "create table customers (id int primary key, name text, region int)".into(),
        "create table orders (id int primary key, customer_id int, amount int, status int)"
            .into(),
        format!(
            "insert into customers select g, 'customer ' || g, g % 20 from {}",
            series.replace("{n}", &customers.to_string())
        ),
        format!(
            "insert into orders select g, (g * 37) % {customers} + 1, (g * 31) % 10007, g % 10 from {}",
            series.replace("{n}", &orders.to_string())
        ),
        "create index orders_customer on orders (customer_id)".into(),
    ]
}

const POINT_SQL: &str = "select o.id, o.amount, c.name from orders o join customers c on c.id = o.customer_id where o.id = $1";

fn group_sql(orders: u64) -> String {
    format!(
        "select c.region, count(*), sum(o.amount) from orders o join customers c on c.id = o.customer_id \
         where o.id <= {} group by c.region order by c.region",
        orders / 10
    )
}

const TOP_SQL: &str = "select o.id, o.amount, c.name from orders o join customers c on c.id = o.customer_id order by o.amount desc, o.id limit 10";

/// A sort of every order, of which the last 10 rows are returned.
fn sort_sql(orders: u64) -> String {
    format!(
        "select id, amount, status from orders order by amount desc, status, id limit 10 offset {}",
        orders.saturating_sub(10)
    )
}

/// A group per four orders, the 10 largest returned.
fn many_groups_sql(orders: u64) -> String {
    format!(
        "select id % {} as k, count(*), sum(amount) from orders group by 1 order by 3 desc, 1 limit 10",
        (orders / 4).max(1)
    )
}

/// The timed queries after the point joins: each one's label and text.
fn timed_queries(args: &QueriesArgs) -> Vec<(&'static str, String)> {
    let (orders, customers) = (args.orders, args.customers);
    vec![
        ("join + GROUP BY over 10%", group_sql(orders)),
        ("join, top 10 by amount", TOP_SQL.to_string()),
        ("sort of every order (last 10)", sort_sql(orders)),
        ("GROUP BY, a group per 4 orders", many_groups_sql(orders)),
        // Subqueries: correlated through an index, correlated with none, EXISTS, NOT
        // EXISTS and IN.
        (
            "scalar subquery per customer (10%), indexed",
            format!(
                "select count(*), sum(n) from (select c.id, (select count(*) from orders o \
                 where o.customer_id = c.id) as n from customers c where c.id <= {}) s",
                (customers / 10).max(1)
            ),
        ),
        (
            "scalar subquery per order (1,000), no index",
            "select sum(n) from (select (select count(*) from customers c \
             where c.region = o.status) as n from orders o where o.id <= 1000) s"
                .to_string(),
        ),
        (
            "EXISTS per customer",
            "select count(*) from customers c where exists (select 1 from orders o \
             where o.customer_id = c.id and o.status = 3)"
                .to_string(),
        ),
        (
            "NOT EXISTS per order, no index",
            "select count(*) from orders o where not exists (select 1 from customers c \
             where c.region = o.status and c.id < 15)"
                .to_string(),
        ),
        (
            "IN (subquery) per order",
            "select count(*) from orders where customer_id in \
             (select id from customers where region = 3)"
                .to_string(),
        ),
    ]
}

/// One engine's medians (seconds) and results.
struct Outcome {
    engine: &'static str,
    load_secs: f64,
    point_secs: f64,
    /// Point joins: rows found and the sum of their amounts.
    point_check: (u64, i64),
    /// Each timed query's label, median seconds and rows (the last run's).
    queries: Vec<(&'static str, f64, String)>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn fail(engine: &str, what: &str, detail: impl std::fmt::Display) -> CliError {
    CliError::io(
        "bench queries",
        std::io::Error::other(format!("{engine}: {what}: {detail}")),
    )
}

fn sql_err(what: &str) -> impl Fn(SqlError) -> CliError + '_ {
    move |e| fail("walden", what, e.message.clone())
}

fn rows_text(rows: &[Vec<Value>]) -> String {
    rows.iter()
        .map(|r| r.iter().map(value::display).collect::<Vec<_>>().join("|"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the driver asks of an engine, once its tables are loaded.
trait Engine {
    /// One run of the point joins: seconds, and (rows found, sum of their amounts).
    fn points(&mut self, lookups: u64, orders: u64) -> Result<(f64, (u64, i64)), CliError>;
    /// One timed run of a query: seconds, and its rows as text (`|` between values).
    fn query(&mut self, sql: &str) -> Result<(f64, String), CliError>;
}

/// Runs every query `args.runs` times on a loaded engine: the medians, and the last
/// run's results.
fn measure(
    engine: &mut dyn Engine,
    name: &'static str,
    load_secs: f64,
    args: &QueriesArgs,
) -> Result<Outcome, CliError> {
    let queries = timed_queries(args);
    let mut points = Vec::new();
    let mut point_check = (0, 0);
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); queries.len()];
    let mut rows: Vec<String> = vec![String::new(); queries.len()];
    for _ in 0..args.runs {
        let (secs, check) = engine.points(args.lookups, args.orders)?;
        points.push(secs);
        point_check = check;
        for (i, (_, sql)) in queries.iter().enumerate() {
            let (secs, r) = engine.query(sql)?;
            times[i].push(secs);
            rows[i] = r;
        }
    }
    Ok(Outcome {
        engine: name,
        load_secs,
        point_secs: median(points),
        point_check,
        queries: queries
            .iter()
            .zip(times.into_iter().zip(rows))
            .map(|((label, _), (t, r))| (*label, median(t), r))
            .collect(),
    })
}

/// Walden in process: its SQL session, the point join prepared.
struct OnWalden {
    session: Session,
    point: walden_sql::Prepared,
}

impl Engine for OnWalden {
    fn points(&mut self, lookups: u64, orders: u64) -> Result<(f64, (u64, i64)), CliError> {
        let t0 = Instant::now();
        let (mut found, mut sum) = (0u64, 0i64);
        for i in 1..=lookups {
            let k = Value::Int4(lookup_key(i, orders) as i32);
            let r = self
                .session
                .execute_prepared(&self.point, &[k])
                .map_err(sql_err("point join"))?;
            for row in &r.rows {
                found += 1;
                sum += value::as_i64(&row[1]).unwrap_or(0);
            }
        }
        Ok((t0.elapsed().as_secs_f64(), (found, sum)))
    }

    fn query(&mut self, sql: &str) -> Result<(f64, String), CliError> {
        let t0 = Instant::now();
        let r = self.session.execute_one(sql).map_err(sql_err("query"))?;
        Ok((t0.elapsed().as_secs_f64(), rows_text(&r.rows)))
    }
}

fn run_walden(args: &QueriesArgs, dir: &std::path::Path) -> Result<Outcome, CliError> {
    let db = Database::create(dir, walden::Options::default())?;
    let mut session = Session::with_seed(&db, 1);
    let t0 = Instant::now();
    for sql in create_sql(args.customers, args.orders, "generate_series(1, {n}) g") {
        session.execute(&sql).map_err(sql_err("load"))?;
    }
    session
        .execute("analyze; checkpoint")
        .map_err(sql_err("load"))?;
    session
        .execute(&format!(
            "set work_mem = '{}'",
            args.work_mem.replace('\'', "''")
        ))
        .map_err(sql_err("work_mem"))?;
    let load_secs = t0.elapsed().as_secs_f64();
    let point = session.prepare(POINT_SQL).map_err(sql_err("prepare"))?;
    let mut engine = OnWalden { session, point };
    let outcome = measure(&mut engine, "walden", load_secs, args)?;
    drop(engine);
    db.close()?;
    Ok(outcome)
}

/// PostgreSQL: each run timed inside the server, in PL/pgSQL functions (no client
/// round trips); a query's rows are read afterwards, outside the timing.
struct OnPostgres {
    cluster: Cluster,
}

fn pg_number(text: &str, what: &str) -> Result<f64, CliError> {
    text.trim()
        .parse()
        .map_err(|_| fail("postgres", what, format!("{text:?}")))
}

impl Engine for OnPostgres {
    fn points(&mut self, lookups: u64, orders: u64) -> Result<(f64, (u64, i64)), CliError> {
        let out = self
            .cluster
            .query(&format!("select * from bench_point({lookups}, {orders})"))?;
        let parts: Vec<&str> = out.trim().split('|').collect();
        let [secs, found, sum] = parts.as_slice() else {
            return Err(fail("postgres", "point join", format!("{out:?}")));
        };
        Ok((
            pg_number(secs, "point join")?,
            (
                pg_number(found, "point join")? as u64,
                pg_number(sum, "point join")? as i64,
            ),
        ))
    }

    fn query(&mut self, sql: &str) -> Result<(f64, String), CliError> {
        let timed = format!("select bench_time('{}')", sql.replace('\'', "''"));
        let secs = pg_number(&self.cluster.query(&timed)?, "query")?;
        Ok((secs, self.cluster.query(sql)?.trim_end().to_string()))
    }
}

fn run_postgres(args: &QueriesArgs, bindir: &std::path::Path) -> Result<Outcome, CliError> {
    let cluster = Cluster::start(bindir, &[("work_mem", args.work_mem.as_str())])?;
    let t0 = Instant::now();
    let mut load = create_sql(args.customers, args.orders, "generate_series(1, {n}) g");
    load.push("vacuum analyze".into());
    for sql in &load {
        cluster.query(sql)?;
    }
    let load_secs = t0.elapsed().as_secs_f64();
    cluster.query(
        "create function bench_point(n int, m bigint) returns table(seconds float8, found bigint, total bigint)
         language plpgsql as $$
         declare t0 timestamptz := clock_timestamp(); f bigint := 0; s bigint := 0;
                 oid int; amt int; cname text;
         begin
           for i in 1 .. n loop
             select o.id, o.amount, c.name into oid, amt, cname
               from orders o join customers c on c.id = o.customer_id
              where o.id = (i::bigint * 104729 % m + 1)::int;
             if found then f := f + 1; s := s + amt; end if;
           end loop;
           return query select extract(epoch from clock_timestamp() - t0)::float8, f, s;
         end $$;
         create function bench_time(q text) returns float8 language plpgsql as $$
         declare t0 timestamptz := clock_timestamp();
         begin execute q; return extract(epoch from clock_timestamp() - t0)::float8; end $$",
    )?;
    let mut engine = OnPostgres { cluster };
    let outcome = measure(&mut engine, "postgres", load_secs, args)?;
    engine.cluster.stop()?;
    Ok(outcome)
}

/// SQLite in process through rusqlite, its statements prepared once (cached).
struct OnSqlite {
    conn: rusqlite::Connection,
}

fn sqlite_err(what: &'static str) -> impl Fn(rusqlite::Error) -> CliError {
    move |e| fail("sqlite", what, e)
}

impl Engine for OnSqlite {
    fn points(&mut self, lookups: u64, orders: u64) -> Result<(f64, (u64, i64)), CliError> {
        let err = sqlite_err("point join");
        let mut point = self
            .conn
            .prepare_cached(&POINT_SQL.replace("$1", "?1"))
            .map_err(&err)?;
        let t0 = Instant::now();
        let (mut found, mut sum) = (0u64, 0i64);
        for i in 1..=lookups {
            let mut rows = point.query([lookup_key(i, orders) as i64]).map_err(&err)?;
            while let Some(r) = rows.next().map_err(&err)? {
                found += 1;
                sum += r.get::<_, i64>(1).map_err(&err)?;
            }
        }
        Ok((t0.elapsed().as_secs_f64(), (found, sum)))
    }

    fn query(&mut self, sql: &str) -> Result<(f64, String), CliError> {
        let err = sqlite_err("query");
        let t0 = Instant::now();
        let mut st = self.conn.prepare_cached(sql).map_err(&err)?;
        let n = st.column_count();
        let mut rows = st.query([]).map_err(&err)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(&err)? {
            let mut cells = Vec::with_capacity(n);
            for i in 0..n {
                cells.push(match r.get_ref(i).map_err(&err)? {
                    rusqlite::types::ValueRef::Null => String::new(),
                    rusqlite::types::ValueRef::Integer(x) => x.to_string(),
                    rusqlite::types::ValueRef::Real(x) => x.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Blob(_) => "<blob>".into(),
                });
            }
            out.push(cells.join("|"));
        }
        Ok((t0.elapsed().as_secs_f64(), out.join("\n")))
    }
}

fn run_sqlite(args: &QueriesArgs, dir: &std::path::Path) -> Result<Outcome, CliError> {
    let conn =
        rusqlite::Connection::open(dir.join("queries.sqlite")).map_err(sqlite_err("open"))?;
    conn.execute_batch("pragma journal_mode = wal; pragma synchronous = normal")
        .map_err(sqlite_err("open"))?;
    let t0 = Instant::now();
    let series = "(with recursive s(g) as (select 1 union all select g + 1 from s where g < {n}) select g from s)";
    for sql in create_sql(args.customers, args.orders, series) {
        conn.execute_batch(&sql).map_err(sqlite_err("load"))?;
    }
    conn.execute_batch("analyze").map_err(sqlite_err("load"))?;
    let load_secs = t0.elapsed().as_secs_f64();
    measure(&mut OnSqlite { conn }, "sqlite", load_secs, args)
}

/// Every engine's results must be Walden's.
fn check(walden: &Outcome, other: &Outcome) -> Result<(), CliError> {
    for ((what, _, a), (_, _, b)) in walden.queries.iter().zip(&other.queries) {
        if a != b {
            return Err(fail(
                other.engine,
                &format!("{what} rows differ from Walden's"),
                format!("walden:\n{a}\n{}:\n{b}", other.engine),
            ));
        }
    }
    if walden.point_check != other.point_check {
        return Err(fail(
            other.engine,
            "point joins differ from Walden's (rows, sum of amounts)",
            format!("{:?} against {:?}", walden.point_check, other.point_check),
        ));
    }
    Ok(())
}

pub fn run(args: &QueriesArgs) -> Result<ExitCode, CliError> {
    let bindir = match args.postgres.as_str() {
        "off" => None,
        "auto" => find_bindir(None),
        dir => Some(
            find_bindir(Some(std::path::Path::new(dir)))
                .ok_or_else(|| fail("postgres", "no PostgreSQL server in", dir))?,
        ),
    };
    let scratch: PathBuf =
        std::env::temp_dir().join(format!("walden-bench-queries-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| CliError::io("creating a scratch directory", e))?;
    let result = (|| {
        let mut outcomes = vec![run_walden(args, &scratch.join("walden"))?];
        match &bindir {
            Some(b) => outcomes.push(run_postgres(args, b)?),
            None => eprintln!("PostgreSQL not found (or --postgres off): it is left out"),
        }
        if !args.no_sqlite {
            outcomes.push(run_sqlite(args, &scratch)?);
        }
        for o in &outcomes[1..] {
            check(&outcomes[0], o)?;
        }
        Ok::<_, CliError>(outcomes)
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    let outcomes = result?;
    report(args, &outcomes)?;
    Ok(ExitCode::SUCCESS)
}

fn report(args: &QueriesArgs, outcomes: &[Outcome]) -> Result<(), CliError> {
    let mut stdout = std::io::stdout();
    outln!(
        stdout,
        "bench queries: {} orders, {} customers; medians of {} runs; {} point joins per run; work_mem {}; results checked against Walden's",
        args.orders,
        args.customers,
        args.runs,
        args.lookups,
        args.work_mem
    )?;
    let mut table = comfy_table::Table::new();
    let mut header = vec!["query".to_string()];
    header.extend(outcomes.iter().map(|o| format!("{} (s)", o.engine)));
    if outcomes.iter().any(|o| o.engine == "postgres") {
        header.push("walden / postgres".into());
    }
    table.set_header(header);
    let pg = outcomes.iter().find(|o| o.engine == "postgres");
    let mut lines: Vec<(&str, Vec<f64>)> = vec![
        (
            "load (not a target)",
            outcomes.iter().map(|o| o.load_secs).collect(),
        ),
        (
            "point joins",
            outcomes.iter().map(|o| o.point_secs).collect(),
        ),
    ];
    for (i, (label, _, _)) in outcomes[0].queries.iter().enumerate() {
        lines.push((label, outcomes.iter().map(|o| o.queries[i].1).collect()));
    }
    let pg_at = pg.and_then(|p| outcomes.iter().position(|o| std::ptr::eq(o, p)));
    for (name, secs) in lines {
        let mut row = vec![name.to_string()];
        row.extend(secs.iter().map(|s| format!("{s:.4}")));
        if let Some(p) = pg_at {
            row.push(format!("{:.2}", secs[0] / secs[p]));
        }
        table.add_row(row);
    }
    outln!(stdout, "{table}")
}
