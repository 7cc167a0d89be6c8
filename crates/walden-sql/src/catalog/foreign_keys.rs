//! Foreign keys' stored form: kept in the referencing table's schema as SQL text, the
//! text PostgreSQL's `pg_get_constraintdef` gives (`FOREIGN KEY (p_id) REFERENCES p(id)
//! ON DELETE CASCADE`), read back per catalog generation into a map of every table's
//! foreign keys, which the session keeps (`KeyCache`) and `pg_constraint` lists. What
//! statements do with them is `fkeys`'s.

use std::cell::RefCell;
use std::sync::Arc;

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use walden::Database;

use crate::catalog::ident_name;
use crate::error::{code, SqlError, SqlResult};
use crate::pg_catalog::quote_ident;

/// What happens to referencing rows when their referenced key is deleted or changed
/// (the variants are SQL's words, NO ACTION among them).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    NoAction,
    Restrict,
    Cascade,
    SetNull,
    SetDefault,
}

impl Action {
    fn of(a: Option<ast::ReferentialAction>) -> Action {
        match a {
            None | Some(ast::ReferentialAction::NoAction) => Action::NoAction,
            Some(ast::ReferentialAction::Restrict) => Action::Restrict,
            Some(ast::ReferentialAction::Cascade) => Action::Cascade,
            Some(ast::ReferentialAction::SetNull) => Action::SetNull,
            Some(ast::ReferentialAction::SetDefault) => Action::SetDefault,
        }
    }

    /// The words after ON DELETE / ON UPDATE.
    pub fn sql(self) -> &'static str {
        match self {
            Action::NoAction => "NO ACTION",
            Action::Restrict => "RESTRICT",
            Action::Cascade => "CASCADE",
            Action::SetNull => "SET NULL",
            Action::SetDefault => "SET DEFAULT",
        }
    }

    /// `pg_constraint.confupdtype` / `confdeltype`.
    pub fn code(self) -> &'static str {
        match self {
            Action::NoAction => "a",
            Action::Restrict => "r",
            Action::Cascade => "c",
            Action::SetNull => "n",
            Action::SetDefault => "d",
        }
    }
}

/// A foreign key of a table (the referencing, "child", table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ForeignKey {
    pub name: String,
    /// The referencing table and its columns.
    pub table: String,
    pub columns: Vec<String>,
    /// The referenced table and its columns (as many, in the same order).
    pub parent: String,
    pub parent_columns: Vec<String>,
    pub on_delete: Action,
    pub on_update: Action,
}

impl ForeignKey {
    /// The stored text, as PostgreSQL's `pg_get_constraintdef` gives it.
    pub fn definition(&self) -> String {
        let list = |cols: &[String]| {
            cols.iter()
                .map(|c| quote_ident(c))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut s = format!(
            "FOREIGN KEY ({}) REFERENCES {}({})",
            list(&self.columns),
            quote_ident(&self.parent),
            list(&self.parent_columns)
        );
        if self.on_update != Action::NoAction {
            s.push_str(" ON UPDATE ");
            s.push_str(self.on_update.sql());
        }
        if self.on_delete != Action::NoAction {
            s.push_str(" ON DELETE ");
            s.push_str(self.on_delete.sql());
        }
        s
    }

    /// A foreign key from its parsed form (referenced columns already filled in).
    pub fn from_ast(name: String, table: &str, fk: &ast::ForeignKeyConstraint) -> ForeignKey {
        ForeignKey {
            name,
            table: table.to_string(),
            columns: fk.columns.iter().map(ident_name).collect(),
            parent: fk
                .foreign_table
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(ident_name)
                .unwrap_or_default(),
            parent_columns: fk.referred_columns.iter().map(ident_name).collect(),
            on_delete: Action::of(fk.on_delete),
            on_update: Action::of(fk.on_update),
        }
    }

    /// A stored foreign key (None: the constraint is not one).
    pub fn parse(table: &str, c: &walden::Constraint) -> Option<SqlResult<ForeignKey>> {
        if !c.definition.starts_with("FOREIGN KEY ") {
            return None;
        }
        let corrupt = |why: String| {
            SqlError::new(
                code::DATA_CORRUPTED,
                format!(
                    "the stored foreign key constraint \"{}\" does not parse: {why}",
                    c.name
                ),
            )
        };
        let sql = format!("CREATE TABLE x ({})", c.definition);
        let parsed = Parser::parse_sql(&PostgreSqlDialect {}, &sql);
        Some(match parsed.as_deref() {
            Ok([ast::Statement::CreateTable(ct)]) => match ct.constraints.as_slice() {
                [ast::TableConstraint::ForeignKey(fk)]
                    if fk.columns.len() == fk.referred_columns.len() && !fk.columns.is_empty() =>
                {
                    Ok(ForeignKey::from_ast(c.name.clone(), table, fk))
                }
                _ => Err(corrupt("not one foreign key".into())),
            },
            Ok(_) => Err(corrupt("not one statement".into())),
            Err(e) => Err(corrupt(e.to_string())),
        })
    }
}

/// Every foreign key of the database, read once per catalog generation.
#[derive(Debug, Default)]
pub(crate) struct AllKeys {
    pub keys: Vec<ForeignKey>,
}

impl AllKeys {
    /// The foreign keys of `table` (it references).
    pub fn of_table<'a>(&'a self, table: &'a str) -> impl Iterator<Item = &'a ForeignKey> + 'a {
        self.keys.iter().filter(move |k| k.table == table)
    }

    /// The foreign keys that reference `table`.
    pub fn referencing<'a>(&'a self, table: &'a str) -> impl Iterator<Item = &'a ForeignKey> + 'a {
        self.keys.iter().filter(move |k| k.parent == table)
    }

    /// Whether `table` takes part in a foreign key, either end.
    pub fn involves(&self, table: &str) -> bool {
        self.keys
            .iter()
            .any(|k| k.table == table || k.parent == table)
    }
}

/// The foreign keys as of one catalog generation: kept by the session
/// (`Session::fkeys`) and lent to each of its statements (`Ctx::fkeys`), so that they
/// are read once per change of the catalog, not per statement.
#[derive(Debug, Default)]
pub(crate) struct KeyCache(RefCell<Option<(u64, Arc<AllKeys>)>>);

impl KeyCache {
    /// Every foreign key in the database (read again when the catalog has changed).
    pub(crate) fn all(&self, db: &Database) -> SqlResult<Arc<AllKeys>> {
        let generation = db.catalog_generation();
        let hit = self
            .0
            .borrow()
            .as_ref()
            .filter(|(g, _)| *g == generation)
            .map(|(_, k)| k.clone());
        if let Some(hit) = hit {
            return Ok(hit);
        }
        let made = Arc::new(read_all(db)?);
        *self.0.borrow_mut() = Some((generation, made.clone()));
        Ok(made)
    }
}

/// Every foreign key in the database, read from the tables' schemas.
pub(crate) fn read_all(db: &Database) -> SqlResult<AllKeys> {
    let mut keys = Vec::new();
    for table in db.table_names() {
        let Ok(schema) = db.schema(&table) else {
            continue;
        };
        for c in &schema.constraints {
            if let Some(fk) = ForeignKey::parse(&table, c) {
                keys.push(fk?);
            }
        }
    }
    keys.sort_by(|a, b| (&a.table, &a.name).cmp(&(&b.table, &b.name)));
    Ok(AllKeys { keys })
}

/// Positions of named columns in a schema (every name is there: checked when the key
/// was made, and renames and drops of them are refused or drop the key).
pub(crate) fn positions(schema: &walden::Schema, names: &[String]) -> SqlResult<Vec<usize>> {
    names
        .iter()
        .map(|n| {
            schema
                .columns
                .iter()
                .position(|c| c.name == *n)
                .ok_or_else(|| {
                    SqlError::new(
                        code::UNDEFINED_COLUMN,
                        format!(
                            "column \"{n}\" referenced in foreign key constraint does not exist"
                        ),
                    )
                })
        })
        .collect()
}

/// The name PostgreSQL gives a foreign key: `table_col1_col2_fkey`, with a number added
/// until no constraint or relation of the table has it.
pub(crate) fn name_for(table: &str, columns: &[String], taken: &[String]) -> String {
    let base = format!("{table}_{}_fkey", columns.join("_"));
    let base: String = base.chars().take(63).collect();
    if !taken.contains(&base) {
        return base;
    }
    (1..)
        .map(|i| format!("{base}{i}"))
        .find(|n| !taken.contains(n))
        .unwrap_or(base)
}

/// The values of columns of a row, as `(a, b)=(1, x)` reads them.
pub(crate) fn key_text(columns: &[String], values: &[walden::Value]) -> String {
    let cols = columns.join(", ");
    let vals = values
        .iter()
        .map(|v| match v {
            walden::Value::Null => "null".to_string(),
            other => crate::value::display(other),
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!("({cols})=({vals})")
}
