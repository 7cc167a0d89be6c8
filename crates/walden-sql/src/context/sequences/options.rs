//! A sequence's option list, as CREATE SEQUENCE, ALTER SEQUENCE and identity columns
//! write it (in any order, each once), and PostgreSQL's `init_params`: the defaults an
//! option left out takes, and the checks with PostgreSQL's words.

use sqlparser::ast::{self, SequenceOptions};
use sqlparser::tokenizer::{Token, TokenWithSpan};
use walden::{SeqState, SeqType, SequenceDef};

use crate::error::{code, SqlError, SqlResult};
use crate::words::Words;

/// The options written, each None where it was not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeqOptions {
    pub as_type: Option<SeqType>,
    pub increment: Option<i64>,
    /// `MINVALUE n` (Some(Some)) or `NO MINVALUE` (Some(None)).
    pub min: Option<Option<i64>>,
    pub max: Option<Option<i64>>,
    pub start: Option<i64>,
    /// ALTER's `RESTART` (Some(None): at START) or `RESTART WITH n`.
    pub restart: Option<Option<i64>>,
    pub cache: Option<i64>,
    pub cycle: Option<bool>,
    /// `OWNED BY table.column` (Some(Some)) or `OWNED BY NONE` (Some(None)).
    pub owned_by: Option<Option<(String, String)>>,
    /// An identity column's `SEQUENCE NAME name`.
    pub sequence_name: Option<String>,
}

fn redundant() -> SqlError {
    SqlError::new(code::SYNTAX_ERROR, "conflicting or redundant options")
}

fn set<T>(slot: &mut Option<T>, v: T) -> SqlResult<()> {
    if slot.is_some() {
        return Err(redundant());
    }
    *slot = Some(v);
    Ok(())
}

fn invalid(message: String) -> SqlError {
    SqlError::new(code::INVALID_PARAMETER, message)
}

/// A sequence type by name (`AS type`): smallint, integer or bigint.
pub(crate) fn seq_type(name: &str) -> SqlResult<SeqType> {
    match name {
        "smallint" | "int2" => Ok(SeqType::Int2),
        "integer" | "int" | "int4" => Ok(SeqType::Int4),
        "bigint" | "int8" => Ok(SeqType::Int8),
        _ => Err(invalid(
            "sequence type must be smallint, integer, or bigint".into(),
        )),
    }
}

/// A signed integer literal.
fn number(w: &mut Words) -> SqlResult<i64> {
    let negative = if w.token(&Token::Minus) {
        true
    } else {
        w.token(&Token::Plus);
        false
    };
    let at = w.location();
    match w.peek() {
        Some(Token::Number(n, _)) => {
            let n = n.clone();
            w.next();
            let text = if negative { format!("-{n}") } else { n };
            text.parse::<i64>().map_err(|_| {
                SqlError::new(
                    code::NUMERIC_OUT_OF_RANGE,
                    format!("value \"{text}\" is out of range for type bigint"),
                )
                .at(at)
            })
        }
        _ => Err(w.error()),
    }
}

impl SeqOptions {
    /// Reads options up to the end of the statement or a `)`. `alter` allows RESTART;
    /// `identity` allows SEQUENCE NAME.
    pub(crate) fn parse(w: &mut Words, alter: bool, identity: bool) -> SqlResult<SeqOptions> {
        let mut o = SeqOptions::default();
        while !w.at_end() && w.peek() != Some(&Token::RParen) {
            if w.keyword("AS") {
                let (name, _) = w.name()?;
                set(&mut o.as_type, seq_type(&name)?)?;
            } else if w.keyword("INCREMENT") {
                w.keyword("BY");
                set(&mut o.increment, number(w)?)?;
            } else if w.keyword("MINVALUE") {
                set(&mut o.min, Some(number(w)?))?;
            } else if w.keyword("MAXVALUE") {
                set(&mut o.max, Some(number(w)?))?;
            } else if w.keyword("START") {
                w.keyword("WITH");
                set(&mut o.start, number(w)?)?;
            } else if alter && w.keyword("RESTART") {
                let value = if w.keyword("WITH")
                    || matches!(
                        w.peek(),
                        Some(Token::Number(..) | Token::Minus | Token::Plus)
                    ) {
                    Some(number(w)?)
                } else {
                    None
                };
                set(&mut o.restart, value)?;
            } else if w.keyword("CACHE") {
                set(&mut o.cache, number(w)?)?;
            } else if w.keyword("CYCLE") {
                set(&mut o.cycle, true)?;
            } else if w.keyword("NO") {
                if w.keyword("MINVALUE") {
                    set(&mut o.min, None)?;
                } else if w.keyword("MAXVALUE") {
                    set(&mut o.max, None)?;
                } else if w.keyword("CYCLE") {
                    set(&mut o.cycle, false)?;
                } else {
                    return Err(w.error());
                }
            } else if w.keyword("OWNED") {
                if !w.keyword("BY") {
                    return Err(w.error());
                }
                let owner = if w.keyword("NONE") {
                    None
                } else {
                    Some(owned_by_name(w)?)
                };
                set(&mut o.owned_by, owner)?;
            } else if identity && w.keyword("SEQUENCE") {
                if !w.keyword("NAME") {
                    return Err(w.error());
                }
                let (name, _) = w.relation_name()?;
                set(&mut o.sequence_name, name)?;
            } else {
                return Err(w.error());
            }
        }
        Ok(o)
    }

    /// An identity column's options as sqlparser reads them in CREATE TABLE.
    pub fn from_parsed(list: &[SequenceOptions]) -> SqlResult<SeqOptions> {
        let n = |e: &ast::Expr| -> SqlResult<i64> {
            let (negative, inner) = match e {
                ast::Expr::UnaryOp {
                    op: ast::UnaryOperator::Minus,
                    expr,
                } => (true, expr.as_ref()),
                other => (false, other),
            };
            let text = match inner {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => n.clone(),
                    _ => return Err(SqlError::syntax(format!("syntax error at or near \"{e}\""))),
                },
                _ => return Err(SqlError::syntax(format!("syntax error at or near \"{e}\""))),
            };
            let text = if negative { format!("-{text}") } else { text };
            text.parse::<i64>().map_err(|_| {
                SqlError::new(
                    code::NUMERIC_OUT_OF_RANGE,
                    format!("value \"{text}\" is out of range for type bigint"),
                )
            })
        };
        let mut o = SeqOptions::default();
        for opt in list {
            match opt {
                SequenceOptions::IncrementBy(e, _) => set(&mut o.increment, n(e)?)?,
                SequenceOptions::MinValue(e) => set(&mut o.min, e.as_ref().map(&n).transpose()?)?,
                SequenceOptions::MaxValue(e) => set(&mut o.max, e.as_ref().map(&n).transpose()?)?,
                SequenceOptions::StartWith(e, _) => set(&mut o.start, n(e)?)?,
                SequenceOptions::Cache(e) => set(&mut o.cache, n(e)?)?,
                // sqlparser's flag is "NO": true for NO CYCLE.
                SequenceOptions::Cycle(no) => set(&mut o.cycle, !no)?,
            }
        }
        Ok(o)
    }

    /// PostgreSQL's `init_params`: `def` as it is (for CREATE: `SequenceDef::new`'s
    /// with the type chosen) changed by these options, and the counter RESTART sets.
    /// `current` is the counter of a sequence being altered; bounds that leave it
    /// outside are refused, as PostgreSQL refuses them.
    pub fn apply(
        &self,
        def: &SequenceDef,
        creating: bool,
        current: Option<SeqState>,
    ) -> SqlResult<(SequenceDef, Option<SeqState>)> {
        let mut d = def.clone();
        let old_range = def.ty.range();
        if let Some(ty) = self.as_type {
            d.ty = ty;
        }
        let (lo, hi) = d.ty.range();
        if let Some(inc) = self.increment {
            if inc == 0 {
                return Err(invalid("INCREMENT must not be zero".into()));
            }
            d.increment = inc;
        }
        let ascending = d.increment > 0;
        // A bound left at its type's limit follows a new type (PostgreSQL resets it).
        let type_changed = self.as_type.is_some_and(|t| t != def.ty);
        match self.max {
            Some(Some(v)) => d.max_value = v,
            Some(None) => d.max_value = if ascending { hi } else { -1 },
            None if creating => d.max_value = if ascending { hi } else { -1 },
            None if type_changed && (def.max_value == old_range.1 || def.max_value > hi) => {
                d.max_value = hi
            }
            None => {}
        }
        match self.min {
            Some(Some(v)) => d.min_value = v,
            Some(None) => d.min_value = if ascending { 1 } else { lo },
            None if creating => d.min_value = if ascending { 1 } else { lo },
            None if type_changed && (def.min_value == old_range.0 || def.min_value < lo) => {
                d.min_value = lo
            }
            None => {}
        }
        check_bounds(&d, lo, hi)?;
        match self.start {
            Some(v) => d.start = v,
            None if creating => d.start = if ascending { d.min_value } else { d.max_value },
            None => {}
        }
        if d.start < d.min_value {
            return Err(invalid(format!(
                "START value ({}) cannot be less than MINVALUE ({})",
                d.start, d.min_value
            )));
        }
        if d.start > d.max_value {
            return Err(invalid(format!(
                "START value ({}) cannot be greater than MAXVALUE ({})",
                d.start, d.max_value
            )));
        }
        let restart = self.restart.map(|v| SeqState::at(v.unwrap_or(d.start)));
        if let Some(counter) = restart.or(current) {
            if counter.last_value < d.min_value {
                return Err(invalid(format!(
                    "RESTART value ({}) cannot be less than MINVALUE ({})",
                    counter.last_value, d.min_value
                )));
            }
            if counter.last_value > d.max_value {
                return Err(invalid(format!(
                    "RESTART value ({}) cannot be greater than MAXVALUE ({})",
                    counter.last_value, d.max_value
                )));
            }
        }
        if let Some(cache) = self.cache {
            if cache <= 0 {
                return Err(invalid(format!(
                    "CACHE ({cache}) must be greater than zero"
                )));
            }
            d.cache = cache;
        }
        if let Some(cycle) = self.cycle {
            d.cycle = cycle;
        }
        Ok((d, restart))
    }
}

/// Rewrites each identity column's option list (`AS IDENTITY ( … )`) in the one order
/// sqlparser reads (INCREMENT, MINVALUE, MAXVALUE, START, CACHE, CYCLE), checked as
/// PostgreSQL checks it: PostgreSQL takes them in any order.
pub(crate) fn canonical_identity_options(toks: &mut Vec<TokenWithSpan>) -> SqlResult<()> {
    let mut i = 0;
    while i < toks.len() {
        let is_identity = matches!(&toks[i].token, Token::Word(w)
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("identity"));
        let open = (i + 1..toks.len()).find(|&j| !matches!(toks[j].token, Token::Whitespace(_)));
        let Some(open) = open.filter(|&j| is_identity && toks[j].token == Token::LParen) else {
            i += 1;
            continue;
        };
        let mut depth = 0;
        let close = (open..toks.len()).find(|&j| {
            match toks[j].token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        let Some(close) = close else {
            return Ok(());
        };
        let inner = &toks[open + 1..close];
        let mut w = Words::new(inner);
        let options = SeqOptions::parse(&mut w, false, true)?;
        if !w.at_end() {
            return Err(w.error());
        }
        if options.sequence_name.is_some() {
            return Err(SqlError::unsupported(
                "SEQUENCE NAME in an identity column's options (its sequence is named as PostgreSQL names it by default)",
            ));
        }
        let text = options.canonical_text();
        let at = toks[open].span.start;
        let mut made =
            sqlparser::tokenizer::Tokenizer::new(&sqlparser::dialect::PostgreSqlDialect {}, &text)
                .tokenize_with_location()
                .map_err(|e| SqlError::syntax(e.to_string()))?;
        for t in &mut made {
            t.span = sqlparser::tokenizer::Span::new(at, at);
        }
        let n = made.len();
        toks.splice(open + 1..close, made);
        i = open + n + 2;
    }
    Ok(())
}

impl SeqOptions {
    /// The options an identity column takes, in sqlparser's order.
    fn canonical_text(&self) -> String {
        let mut out = Vec::new();
        if let Some(v) = self.increment {
            out.push(format!("INCREMENT BY {v}"));
        }
        match self.min {
            Some(Some(v)) => out.push(format!("MINVALUE {v}")),
            Some(None) => out.push("NO MINVALUE".into()),
            None => {}
        }
        match self.max {
            Some(Some(v)) => out.push(format!("MAXVALUE {v}")),
            Some(None) => out.push("NO MAXVALUE".into()),
            None => {}
        }
        if let Some(v) = self.start {
            out.push(format!("START WITH {v}"));
        }
        if let Some(v) = self.cache {
            out.push(format!("CACHE {v}"));
        }
        match self.cycle {
            Some(true) => out.push("CYCLE".into()),
            Some(false) => out.push("NO CYCLE".into()),
            None => {}
        }
        out.join(" ")
    }
}

/// `table.column` or `schema.table.column` after OWNED BY.
fn owned_by_name(w: &mut Words) -> SqlResult<(String, String)> {
    let at = w.location();
    let mut parts = vec![w.name()?.0];
    while w.token(&Token::Period) {
        parts.push(w.name()?.0);
    }
    match parts.len() {
        2 => Ok((parts.remove(0), parts.remove(0))),
        3 if parts[0] == "public" => Ok((parts.remove(1), parts.remove(1))),
        3 => Err(SqlError::new(
            code::UNDEFINED_TABLE,
            format!("relation \"{}.{}\" does not exist", parts[0], parts[1]),
        )
        .at(at)),
        _ => Err(SqlError::syntax("invalid OWNED BY option")
            .with_hint("Specify OWNED BY table.column or OWNED BY NONE.")
            .at(at)),
    }
}

/// MINVALUE and MAXVALUE within the sequence's type, MINVALUE below MAXVALUE.
fn check_bounds(d: &SequenceDef, lo: i64, hi: i64) -> SqlResult<()> {
    let type_name = d.ty.name();
    if d.max_value < lo || d.max_value > hi {
        return Err(invalid(format!(
            "MAXVALUE ({}) is out of range for sequence data type {type_name}",
            d.max_value
        )));
    }
    if d.min_value < lo || d.min_value > hi {
        return Err(invalid(format!(
            "MINVALUE ({}) is out of range for sequence data type {type_name}",
            d.min_value
        )));
    }
    if d.min_value >= d.max_value {
        return Err(invalid(format!(
            "MINVALUE ({}) must be less than MAXVALUE ({})",
            d.min_value, d.max_value
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, alter: bool) -> SqlResult<SeqOptions> {
        let toks =
            sqlparser::tokenizer::Tokenizer::new(&sqlparser::dialect::PostgreSqlDialect {}, text)
                .tokenize_with_location()
                .unwrap();
        let mut w = Words::new(&toks);
        SeqOptions::parse(&mut w, alter, false)
    }

    fn created(text: &str) -> SqlResult<SequenceDef> {
        let o = parse(text, false)?;
        let base = SequenceDef::new("s", o.as_type.unwrap_or(SeqType::Int8));
        o.apply(&base, true, None).map(|(d, _)| d)
    }

    /// pg_dump's order (START before INCREMENT) and PostgreSQL's defaults for a
    /// descending sequence.
    #[test]
    fn options_in_any_order_with_postgres_defaults() {
        let d = created("AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1")
            .unwrap();
        assert_eq!(
            (d.ty, d.min_value, d.max_value, d.start),
            (SeqType::Int4, 1, i32::MAX as i64, 1)
        );
        let d = created("increment -1").unwrap();
        assert_eq!((d.min_value, d.max_value, d.start), (i64::MIN, -1, -1));
        let d = created("as smallint cycle cache 20 minvalue -5 start 0").unwrap();
        assert_eq!(
            (d.min_value, d.max_value, d.start, d.cache, d.cycle),
            (-5, 32767, 0, 20, true)
        );
    }

    #[test]
    fn bad_options_give_postgres_errors() {
        let e = |text: &str| created(text).unwrap_err();
        assert_eq!(e("increment 0").message, "INCREMENT must not be zero");
        assert_eq!(
            e("as smallint maxvalue 40000").message,
            "MAXVALUE (40000) is out of range for sequence data type smallint"
        );
        assert_eq!(
            e("minvalue 5 maxvalue 5").message,
            "MINVALUE (5) must be less than MAXVALUE (5)"
        );
        assert_eq!(
            e("start 0").message,
            "START value (0) cannot be less than MINVALUE (1)"
        );
        assert_eq!(e("cache 0").message, "CACHE (0) must be greater than zero");
        assert_eq!(
            e("cache 1 cache 2").message,
            "conflicting or redundant options"
        );
        assert_eq!(e("as text").code, "22023");
        assert_eq!(e("restart").code, "42601");
        assert_eq!(e("start 99999999999999999999").code, "22003");
    }

    #[test]
    fn alter_keeps_what_it_does_not_name_and_checks_the_counter() {
        let base = created("as smallint").unwrap();
        let o = parse("as integer", true).unwrap();
        let (d, restart) = o.apply(&base, false, Some(SeqState::at(7))).unwrap();
        assert_eq!((d.max_value, restart), (i32::MAX as i64, None));
        let o = parse("restart with 9 increment 2", true).unwrap();
        let (d, restart) = o.apply(&base, false, Some(SeqState::at(7))).unwrap();
        assert_eq!((d.increment, restart), (2, Some(SeqState::at(9))));
        let o = parse("maxvalue 5", true).unwrap();
        let e = o.apply(&base, false, Some(SeqState::at(7))).unwrap_err();
        assert_eq!(
            e.message,
            "RESTART value (7) cannot be greater than MAXVALUE (5)"
        );
        let o = parse("restart", true).unwrap();
        let (_, restart) = o.apply(&base, false, Some(SeqState::at(7))).unwrap();
        assert_eq!(restart, Some(SeqState::at(1)));
    }
}
