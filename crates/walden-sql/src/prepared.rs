//! Prepared statements: a statement with parameters `$1`, `$2`, ... kept once, then run
//! with values (`Session::prepare` / `Session::execute_prepared`, and SQL's `PREPARE`,
//! `EXECUTE`, `DEALLOCATE`).
//!
//! What is kept is the statement split at its parameters; running it writes each value
//! in as a literal (typed with a cast where the value's type needs one, or where
//! `PREPARE name (types)` gave one) and parses, binds and plans the result. Plans are
//! not cached: that is for the wire-protocol server to add. Values never pass through
//! SQL text unquoted, so a parameter cannot change the statement's shape.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};
use walden::Value;

use crate::error::{code, SqlError, SqlResult};
use crate::script::LineIndex;
use crate::types::DeclaredType;
use crate::value;

/// A statement ready to run with parameter values.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The text around the parameters: `pieces[i]`, parameter `slots[i]`, ..., last piece.
    pieces: Vec<String>,
    /// The parameter (0-based) each gap takes.
    slots: Vec<usize>,
    /// Declared types, one per parameter (None: the value's own type).
    types: Vec<Option<DeclaredType>>,
}

impl Prepared {
    /// Splits one statement at its parameters. `types` are declared parameter types
    /// (there may be more parameters than types).
    pub fn new(sql: &str, types: Vec<Option<DeclaredType>>) -> SqlResult<Prepared> {
        if sql.contains('\0') {
            return Err(crate::error::nul_in_text());
        }
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
            .tokenize_with_location()
            .map_err(|e| SqlError::syntax(e.message.clone()).at(e.location))?;
        let index = LineIndex::new(sql);
        let chars: Vec<char> = sql.chars().collect();
        let mut pieces = Vec::new();
        let mut slots = Vec::new();
        let mut from = 0usize;
        let mut statements = 0;
        let mut seen_word = false;
        for t in &tokens {
            match &t.token {
                Token::Placeholder(p) => {
                    let n: usize = p
                        .strip_prefix('$')
                        .and_then(|d| d.parse().ok())
                        .filter(|&n| (1..=65_535).contains(&n))
                        .ok_or_else(|| {
                            SqlError::syntax(format!("syntax error at or near \"{p}\""))
                                .at(t.span.start)
                        })?;
                    let start = index.offset(t.span.start);
                    let end = index.offset(t.span.end);
                    pieces.push(chars[from..start].iter().collect());
                    slots.push(n - 1);
                    from = end;
                }
                Token::SemiColon => {
                    if seen_word {
                        statements += 1;
                        seen_word = false;
                    }
                }
                Token::Whitespace(_) => {}
                _ => seen_word = true,
            }
        }
        if seen_word {
            statements += 1;
        }
        if statements != 1 {
            return Err(SqlError::syntax(
                "a prepared statement holds exactly one statement",
            ));
        }
        pieces.push(chars[from..].iter().collect());
        let params = slots.iter().map(|s| s + 1).max().unwrap_or(0);
        let mut types = types;
        if types.len() < params {
            types.resize(params, None);
        }
        Ok(Prepared {
            pieces,
            slots,
            types,
        })
    }

    /// The number of parameters (the highest `$n`, or as many as types were declared).
    pub fn params(&self) -> usize {
        self.types.len()
    }

    /// The statement with these values in place of its parameters.
    pub fn text(&self, values: &[Value]) -> SqlResult<String> {
        if values.len() != self.params() {
            return Err(SqlError::new(
                code::PROTOCOL_VIOLATION,
                format!(
                    "wrong number of parameters for prepared statement: expected {}, got {}",
                    self.params(),
                    values.len()
                ),
            ));
        }
        let mut out =
            String::with_capacity(self.pieces.iter().map(|p| p.len()).sum::<usize>() + 16);
        for (i, piece) in self.pieces.iter().enumerate() {
            out.push_str(piece);
            if let Some(&slot) = self.slots.get(i) {
                write_value(&mut out, &values[slot], self.types[slot].as_ref());
            }
        }
        Ok(out)
    }
}

/// A value as a SQL literal of its type (under a cast to `ty` when given).
fn write_value(out: &mut String, v: &Value, ty: Option<&DeclaredType>) {
    if let Some(t) = ty {
        out.push_str("CAST(");
        write_value(out, v, None);
        out.push_str(" AS ");
        out.push_str(&t.display_name());
        out.push(')');
        return;
    }
    let quoted = |out: &mut String, s: &str| {
        out.push('\'');
        out.push_str(&s.replace('\'', "''"));
        out.push('\'');
    };
    match v {
        Value::Null => out.push_str("NULL"),
        // In parentheses: a minus sign after another would start a comment.
        Value::Int2(x) => out.push_str(&format!("({x})::int2")),
        Value::Int4(x) => out.push_str(&format!("({x})::int4")),
        Value::Int8(x) => out.push_str(&format!("({x})::int8")),
        Value::Float8(x) => {
            quoted(out, &value::float_text(*x));
            out.push_str("::float8");
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Text(s) => quoted(out, s),
        Value::Uuid(_) => {
            quoted(out, &v.to_string());
            out.push_str("::uuid");
        }
    }
}
