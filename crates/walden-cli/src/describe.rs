//! The shell's `\d`, `\dt`, `\di`, `\dv` and `\d NAME`: the queries psql 15 sends for
//! them (its texts, in `describe/*.sql`, and its way of adding a name pattern), run
//! through the SQL session against the virtual catalog (`walden_sql::pg_catalog`), and
//! their rows printed as psql prints them (describe.c in PostgreSQL's psql).

use walden::Value;
use walden_sql::{Session, SqlError};

use crate::sql_shell::{rows_footer, write_table};

/// What a command printed, or why it did not.
pub enum Described {
    /// psql's output, for standard output.
    Text(String),
    /// A message for standard error (the command failed).
    NotFound(String),
}

/// The listing commands and the `relkind`s each lists (psql's `listTables`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// `\d` without a pattern.
    All,
    Tables,
    Indexes,
    Views,
    Sequences,
}

impl Listing {
    fn kinds(self, pattern: bool) -> &'static str {
        match (self, pattern) {
            (Listing::All, _) => "'r','p','v','m','S','f',''",
            (Listing::Tables, false) => "'r','p',''",
            (Listing::Tables, true) => "'r','p','t','s',''",
            (Listing::Indexes, false) => "'i','I',''",
            (Listing::Indexes, true) => "'i','I','s',''",
            (Listing::Views, false) => "'v',''",
            (Listing::Views, true) => "'v','s',''",
            (Listing::Sequences, false) => "'S',''",
            (Listing::Sequences, true) => "'S','s',''",
        }
    }
}

/// A name pattern as psql turns it into regular expressions (`patternToSQLRegex`):
/// unquoted letters fold to lower case, `*` is `.*`, `?` is `.`, an unquoted `.`
/// separates a schema pattern from the name pattern; `$` and, inside double quotes,
/// every regular-expression character are escaped.
fn pattern_regexes(pattern: &str) -> (Option<String>, String) {
    let mut parts = vec![String::new()];
    let mut quoted = false;
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        let cur = parts.last_mut().expect("parts is never empty");
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(String::new()),
            '*' if !quoted => cur.push_str(".*"),
            '?' if !quoted => cur.push('.'),
            '$' => cur.push_str("\\$"),
            c if quoted && "|*+?()[]{}.^\\".contains(c) => {
                cur.push('\\');
                cur.push(c);
            }
            c if !quoted => cur.extend(c.to_lowercase()),
            c => cur.push(c),
        }
    }
    let wrap = |s: &str| format!("^({s})$");
    let name = wrap(parts.last().map_or("", String::as_str));
    let schema = (parts.len() > 1).then(|| wrap(&parts[parts.len() - 2]));
    (schema, name)
}

fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The WHERE lines psql's `processSQLNamePattern` writes for a pattern over
/// `c.relname` and `n.nspname`; without a schema, visibility takes its place.
fn pattern_clauses(pattern: Option<&str>, mut first: bool) -> String {
    let mut out = String::new();
    let mut clause = |text: String| {
        out.push_str(if first { "WHERE " } else { "  AND " });
        out.push_str(&text);
        out.push('\n');
        first = false;
    };
    let regex = |r: &str| format!("{} COLLATE pg_catalog.default", literal(r));
    match pattern.map(pattern_regexes) {
        None => clause("pg_catalog.pg_table_is_visible(c.oid)".into()),
        Some((schema, name)) => {
            if name != "^(.*)$" {
                clause(format!("c.relname OPERATOR(pg_catalog.~) {}", regex(&name)));
            }
            match schema {
                Some(s) if s != "^(.*)$" => {
                    clause(format!("n.nspname OPERATOR(pg_catalog.~) {}", regex(&s)))
                }
                Some(_) => {}
                None => clause("pg_catalog.pg_table_is_visible(c.oid)".into()),
            }
        }
    }
    out
}

/// psql's `listTables` query.
pub fn list_query(listing: Listing, pattern: Option<&str>) -> String {
    let indexes = listing == Listing::Indexes;
    let mut q = String::from(
        "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  \
         CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' \
         WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' \
         WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as \"Type\",\n  \
         pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\"",
    );
    if indexes {
        q.push_str(",\n  c2.relname as \"Table\"");
    }
    q.push_str(
        "\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n",
    );
    if !matches!(listing, Listing::Views | Listing::Sequences) {
        q.push_str("     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam\n");
    }
    if indexes {
        q.push_str(
            "     LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid\n     \
             LEFT JOIN pg_catalog.pg_class c2 ON i.indrelid = c2.oid\n",
        );
    }
    q.push_str(&format!(
        "WHERE c.relkind IN ({})\n",
        listing.kinds(pattern.is_some())
    ));
    if pattern.is_none() {
        q.push_str(
            "      AND n.nspname <> 'pg_catalog'\n      AND n.nspname !~ '^pg_toast'\n      \
             AND n.nspname <> 'information_schema'\n",
        );
    }
    q.push_str(&pattern_clauses(pattern, false));
    q.push_str("ORDER BY 1,2;");
    q
}

/// The queries of `\d NAME`, psql's texts with `{oid}` (and `{where}`) to fill in.
pub mod queries {
    pub const LOOKUP: &str = include_str!("describe/lookup.sql");
    pub const RELATION: &str = include_str!("describe/relation.sql");
    pub const TABLE_COLUMNS: &str = include_str!("describe/table_columns.sql");
    pub const TABLE_INDEXES: &str = include_str!("describe/table_indexes.sql");
    pub const POLICIES: &str = include_str!("describe/policies.sql");
    pub const STATISTICS: &str = include_str!("describe/statistics.sql");
    pub const PUBLICATIONS: &str = include_str!("describe/publications.sql");
    pub const INHERITED_FROM: &str = include_str!("describe/inherited_from.sql");
    pub const INHERITED_BY: &str = include_str!("describe/inherited_by.sql");
    pub const FOREIGN_KEYS: &str = include_str!("describe/foreign_keys.sql");
    pub const REFERENCED_BY: &str = include_str!("describe/referenced_by.sql");
    pub const INDEX_COLUMNS: &str = include_str!("describe/index_columns.sql");
    pub const INDEX_INFO: &str = include_str!("describe/index_info.sql");
    pub const SEQUENCE: &str = include_str!("describe/sequence.sql");
    pub const SEQUENCE_OWNER: &str = include_str!("describe/sequence_owner.sql");
}

/// psql's lookup query for `\d pattern`.
pub fn lookup_query(pattern: &str) -> String {
    queries::LOOKUP
        .replace("{where}", &pattern_clauses(Some(pattern), true))
        .trim_end()
        .to_string()
}

/// A describe query for one relation.
pub fn for_oid(query: &str, oid: &str) -> String {
    query.replace("{oid}", oid).trim_end().to_string()
}

type Rows = Vec<Vec<String>>;

/// Runs a query, its values as psql shows them (NULL as an empty string).
fn run(session: &mut Session, sql: &str) -> Result<Rows, SqlError> {
    let r = session.execute_one(sql)?;
    Ok(r.rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| match v {
                    Value::Null => String::new(),
                    v => walden_sql::value::display(v),
                })
                .collect()
        })
        .collect())
}

fn render(
    title: &str,
    columns: &[(&str, bool)],
    rows: &Rows,
    footers: &[String],
) -> std::io::Result<String> {
    let mut out = Vec::new();
    write_table(&mut out, Some(title), columns, rows)?;
    for f in footers {
        out.extend_from_slice(f.as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn io(e: std::io::Error) -> SqlError {
    SqlError::new(walden_sql::code::INTERNAL, e.to_string())
}

/// `\d`, `\dt`, `\di`, `\dv` with or without a pattern.
pub fn list(
    session: &mut Session,
    listing: Listing,
    pattern: Option<&str>,
) -> Result<Described, SqlError> {
    let rows = run(session, &list_query(listing, pattern))?;
    if rows.is_empty() {
        return Ok(Described::NotFound(match pattern {
            Some(p) => format!("Did not find any relation named \"{p}\"."),
            None => "Did not find any relations.".into(),
        }));
    }
    let mut columns = vec![
        ("Schema", false),
        ("Name", false),
        ("Type", false),
        ("Owner", false),
    ];
    if listing == Listing::Indexes {
        columns.push(("Table", false));
    }
    let footer = [rows_footer(rows.len())];
    render("List of relations", &columns, &rows, &footer)
        .map(Described::Text)
        .map_err(io)
}

/// `\d pattern`: each relation the pattern matches, described.
pub fn describe(session: &mut Session, pattern: &str) -> Result<Described, SqlError> {
    let found = run(session, &lookup_query(pattern))?;
    if found.is_empty() {
        return Ok(Described::NotFound(format!(
            "Did not find any relation named \"{pattern}\"."
        )));
    }
    let mut out = String::new();
    for rel in &found {
        let [oid, schema, name] = rel.as_slice() else {
            continue;
        };
        let info = run(session, &for_oid(queries::RELATION, oid))?;
        let Some(info) = info.first() else { continue };
        let kind = info.get(1).map_or("", String::as_str);
        let title_name = format!("\"{schema}.{name}\"");
        out.push_str(&match kind {
            "r" | "p" => describe_table(session, oid, &title_name, info)?,
            "i" | "I" => describe_index(session, oid, schema, &title_name)?,
            "S" => describe_sequence(session, oid, &title_name)?,
            "v" => describe_view(session, oid, &title_name)?,
            other => {
                return Err(SqlError::unsupported(format!(
                    "\\d of a relation of kind '{other}' (\"{name}\")"
                )))
            }
        });
    }
    Ok(Described::Text(out))
}

/// The columns part of `\d` of a table or a view: psql's query, its table's rows.
fn column_rows(session: &mut Session, oid: &str) -> Result<Rows, SqlError> {
    let columns = run(session, &for_oid(queries::TABLE_COLUMNS, oid))?;
    Ok(columns
        .iter()
        .map(|c| {
            let default = match (c[5].as_str(), c[6].as_str()) {
                ("a", _) => "generated always as identity".to_string(),
                ("d", _) => "generated by default as identity".to_string(),
                (_, "s") => format!("generated always as ({}) stored", c[2]),
                _ => c[2].clone(),
            };
            let nullable = if c[3] == "t" { "not null" } else { "" };
            vec![
                c[0].clone(),
                c[1].clone(),
                c[4].clone(),
                nullable.to_string(),
                default,
            ]
        })
        .collect())
}

const COLUMN_HEADINGS: [(&str, bool); 5] = [
    ("Column", false),
    ("Type", false),
    ("Collation", false),
    ("Nullable", false),
    ("Default", false),
];

/// `\d VIEW`: its columns (psql prints the definition only with `\d+`).
fn describe_view(session: &mut Session, oid: &str, title_name: &str) -> Result<String, SqlError> {
    let rows = column_rows(session, oid)?;
    render(&format!("View {title_name}"), &COLUMN_HEADINGS, &rows, &[]).map_err(io)
}

fn describe_table(
    session: &mut Session,
    oid: &str,
    title_name: &str,
    info: &[String],
) -> Result<String, SqlError> {
    let rows = column_rows(session, oid)?;
    let mut footers = Vec::new();
    if info.get(2).is_some_and(|h| h == "t") {
        let indexes = run(session, &for_oid(queries::TABLE_INDEXES, oid))?;
        if !indexes.is_empty() {
            footers.push("Indexes:".to_string());
            footers.extend(indexes.iter().map(|i| index_line(i)));
        }
    }
    let keys = run(session, &for_oid(queries::FOREIGN_KEYS, oid))?;
    if !keys.is_empty() {
        footers.push("Foreign-key constraints:".to_string());
        footers.extend(keys.iter().map(|k| match k[0].as_str() {
            "t" => format!("    \"{}\" {}", k[1], k[2]),
            _ => format!("    TABLE \"{}\" CONSTRAINT \"{}\" {}", k[3], k[1], k[2]),
        }));
    }
    let referencing = run(session, &for_oid(queries::REFERENCED_BY, oid))?;
    if !referencing.is_empty() {
        footers.push("Referenced by:".to_string());
        footers.extend(
            referencing
                .iter()
                .map(|k| format!("    TABLE \"{}\" CONSTRAINT \"{}\" {}", k[1], k[0], k[2])),
        );
    }
    // Walden has no policies, extended statistics, publications or inheritance: psql's
    // queries for them are run, as psql runs them, and find nothing. Should one find
    // something, its footer is not written yet, which is said rather than left out.
    for (query, what) in [
        (queries::POLICIES, "policies"),
        (queries::STATISTICS, "statistics objects"),
        (queries::PUBLICATIONS, "publications"),
        (queries::INHERITED_FROM, "inheritance"),
        (queries::INHERITED_BY, "inheritance"),
    ] {
        let rows = run(session, &for_oid(query, oid))?;
        if !rows.is_empty() {
            return Err(SqlError::unsupported(format!("\\d of a table with {what}")));
        }
    }
    let title = match info.get(12).map(String::as_str) {
        Some("u") => format!("Unlogged table {title_name}"),
        _ => format!("Table {title_name}"),
    };
    render(&title, &COLUMN_HEADINGS, &rows, &footers).map_err(io)
}

/// One line of a table's "Indexes:" footer (psql's describeOneTableDetails).
fn index_line(i: &[String]) -> String {
    let t = |k: usize| i.get(k).is_some_and(|v| v == "t");
    let mut line = format!("    \"{}\"", i[0]);
    if i[7] == "x" {
        line.push(' ');
        line.push_str(&i[6]);
    } else {
        if t(1) {
            line.push_str(" PRIMARY KEY,");
        } else if t(2) {
            line.push_str(if i[7] == "u" {
                " UNIQUE CONSTRAINT,"
            } else {
                " UNIQUE,"
            });
        }
        let def = i[5].as_str();
        let def = def.find(" USING ").map_or(def, |at| &def[at + 7..]);
        line.push(' ');
        line.push_str(def);
        if t(8) {
            line.push_str(" DEFERRABLE");
        }
        if t(9) {
            line.push_str(" INITIALLY DEFERRED");
        }
    }
    if t(3) {
        line.push_str(" CLUSTER");
    }
    if !t(4) {
        line.push_str(" INVALID");
    }
    if t(10) {
        line.push_str(" REPLICA IDENTITY");
    }
    line
}

fn describe_index(
    session: &mut Session,
    oid: &str,
    schema: &str,
    title_name: &str,
) -> Result<String, SqlError> {
    let columns = run(session, &for_oid(queries::INDEX_COLUMNS, oid))?;
    let info = run(session, &for_oid(queries::INDEX_INFO, oid))?;
    let mut footers = Vec::new();
    if let Some(i) = info.first() {
        let t = |k: usize| i.get(k).is_some_and(|v| v == "t");
        let mut f = String::new();
        if t(1) {
            f.push_str("primary key, ");
        } else if t(0) {
            f.push_str("unique");
            if t(7) {
                f.push_str(" nulls not distinct");
            }
            f.push_str(", ");
        }
        f.push_str(&format!("{}, for table \"{schema}.{}\"", i[8], i[9]));
        if !i[10].is_empty() {
            f.push_str(&format!(", predicate ({})", i[10]));
        }
        for (k, on, text) in [
            (2, true, ", clustered"),
            (3, false, ", invalid"),
            (4, true, ", deferrable"),
            (5, true, ", initially deferred"),
            (6, true, ", replica identity"),
        ] {
            if t(k) == on {
                f.push_str(text);
            }
        }
        footers.push(f);
    }
    let cols = [
        ("Column", false),
        ("Type", false),
        ("Key?", false),
        ("Definition", false),
    ];
    render(&format!("Index {title_name}"), &cols, &columns, &footers).map_err(io)
}

fn describe_sequence(
    session: &mut Session,
    oid: &str,
    title_name: &str,
) -> Result<String, SqlError> {
    let rows = run(session, &for_oid(queries::SEQUENCE, oid))?;
    let owners = run(session, &for_oid(queries::SEQUENCE_OWNER, oid))?;
    let footers: Vec<String> = owners
        .iter()
        .filter_map(|o| match o.get(1).map(String::as_str) {
            Some("a") => Some(format!("Owned by: {}", o[0])),
            Some("i") => Some(format!("Sequence for identity column: {}", o[0])),
            _ => None,
        })
        .collect();
    let cols = [
        ("Type", false),
        ("Start", true),
        ("Minimum", true),
        ("Maximum", true),
        ("Increment", true),
        ("Cycles?", false),
        ("Cache", true),
    ];
    render(&format!("Sequence {title_name}"), &cols, &rows, &footers).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queries of a `psql -E` capture in `tests/fixtures/psql15`, in order.
    fn captured(name: &str) -> Vec<String> {
        let path = format!(
            "{}/tests/fixtures/psql15/{name}.txt",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).unwrap();
        let mut out = Vec::new();
        let mut cur: Option<String> = None;
        for line in text.lines() {
            match (line, &mut cur) {
                ("********* QUERY **********", _) => cur = Some(String::new()),
                ("**************************", Some(q)) => {
                    out.push(q.trim_end().to_string());
                    cur = None;
                }
                (l, Some(q)) => {
                    q.push_str(l);
                    q.push('\n');
                }
                _ => {}
            }
        }
        out
    }

    #[test]
    fn queries_are_the_ones_psql_15_sends() {
        assert_eq!(captured("d"), [list_query(Listing::All, None)]);
        assert_eq!(captured("dt"), [list_query(Listing::Tables, None)]);
        assert_eq!(captured("di"), [list_query(Listing::Indexes, None)]);
        assert_eq!(captured("dv"), [list_query(Listing::Views, None)]);
        assert_eq!(captured("ds"), [list_query(Listing::Sequences, None)]);
        assert_eq!(captured("dt_tS"), [list_query(Listing::Tables, Some("t*"))]);
        assert_eq!(
            captured("di_tS"),
            [list_query(Listing::Indexes, Some("t*"))]
        );
        let t = "16385";
        let table: Vec<String> = [
            queries::RELATION,
            queries::TABLE_COLUMNS,
            queries::TABLE_INDEXES,
            queries::POLICIES,
            queries::STATISTICS,
            queries::PUBLICATIONS,
            queries::INHERITED_FROM,
            queries::INHERITED_BY,
        ]
        .iter()
        .map(|q| for_oid(q, t))
        .collect();
        let mut expected = vec![lookup_query("t")];
        expected.extend(table);
        assert_eq!(captured("d_t"), expected);
        let ix = "16393";
        let index = vec![
            lookup_query("t_pkey"),
            for_oid(queries::RELATION, ix),
            for_oid(queries::INDEX_COLUMNS, ix),
            for_oid(queries::INDEX_INFO, ix),
        ];
        assert_eq!(captured("d_t_pkey"), index);
        let seq = "16384";
        let sequence = vec![
            lookup_query("t_a_seq"),
            for_oid(queries::RELATION, seq),
            for_oid(queries::SEQUENCE, seq),
            for_oid(queries::SEQUENCE_OWNER, seq),
        ];
        assert_eq!(captured("d_t_a_seq"), sequence);
    }

    #[test]
    fn patterns_become_psqls_regexes() {
        assert_eq!(pattern_regexes("t"), (None, "^(t)$".into()));
        assert_eq!(pattern_regexes("T*"), (None, "^(t.*)$".into()));
        assert_eq!(
            pattern_regexes("public.t?"),
            (Some("^(public)$".into()), "^(t.)$".into())
        );
        assert_eq!(pattern_regexes("\"A.b\""), (None, "^(A\\.b)$".into()));
    }
}
