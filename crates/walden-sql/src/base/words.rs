//! A cursor over one statement's tokens, for the commands Walden parses itself rather
//! than through sqlparser (VACUUM and ANALYZE with several tables, COPY with
//! PostgreSQL's option syntax): keywords, names, string literals, and PostgreSQL-style
//! syntax errors pointing at the token where parsing stopped.

use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use crate::error::{clip, SqlError, SqlResult};

/// The statement's tokens without white space and comments, and where parsing is.
pub(crate) struct Words<'a> {
    tokens: Vec<&'a TokenWithSpan>,
    at: usize,
    /// Just after the last token: where an error at the end of input points.
    end: Location,
}

impl<'a> Words<'a> {
    pub fn new(tokens: &'a [TokenWithSpan]) -> Words<'a> {
        let tokens: Vec<&TokenWithSpan> = tokens
            .iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .collect();
        let end = tokens
            .last()
            .map_or(Location { line: 1, column: 1 }, |t| t.span.end);
        Words { tokens, at: 0, end }
    }

    pub fn peek(&self) -> Option<&'a Token> {
        self.tokens.get(self.at).map(|t| &t.token)
    }

    pub fn next(&mut self) -> Option<&'a Token> {
        let t = self.peek();
        if t.is_some() {
            self.at += 1;
        }
        t
    }

    /// Where the next token starts (the end of input when there is none).
    pub fn location(&self) -> Location {
        self.tokens.get(self.at).map_or(self.end, |t| t.span.start)
    }

    /// The position of the next token, for slicing out a part of the statement.
    pub fn position(&self) -> usize {
        self.at
    }

    /// The tokens from `from` (a `position`) up to the next one.
    pub fn since(&self, from: usize) -> Vec<TokenWithSpan> {
        self.tokens[from..self.at]
            .iter()
            .map(|t| (*t).clone())
            .collect()
    }

    /// The tokens not read yet.
    pub fn rest(&self) -> Vec<TokenWithSpan> {
        self.tokens[self.at..]
            .iter()
            .map(|t| (*t).clone())
            .collect()
    }

    pub fn at_end(&self) -> bool {
        self.at >= self.tokens.len()
    }

    /// True if the next token is the unquoted word `word` (any case).
    pub fn is_keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w))
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
    }

    /// Takes the next token if it is the unquoted word `word`.
    pub fn keyword(&mut self, word: &str) -> bool {
        let found = self.is_keyword(word);
        if found {
            self.at += 1;
        }
        found
    }

    /// Takes the next token if it is `token`.
    pub fn token(&mut self, token: &Token) -> bool {
        let found = self.peek() == Some(token);
        if found {
            self.at += 1;
        }
        found
    }

    pub fn expect(&mut self, token: &Token) -> SqlResult<()> {
        if self.token(token) {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    /// A name: a quoted identifier as written, an unquoted word in lower case.
    pub fn name(&mut self) -> SqlResult<(String, Location)> {
        let at = self.location();
        match self.peek() {
            Some(Token::Word(w)) => {
                self.at += 1;
                let name = if w.quote_style.is_some() {
                    w.value.clone()
                } else {
                    w.value.to_lowercase()
                };
                Ok((name, at))
            }
            _ => Err(self.error()),
        }
    }

    /// A possibly schema-qualified name (`public.t`, `pg_catalog.t`): the last part.
    /// Walden has one schema, so any other is an unknown relation.
    pub fn relation_name(&mut self) -> SqlResult<(String, Location)> {
        let (first, at) = self.name()?;
        if !self.token(&Token::Period) {
            return Ok((first, at));
        }
        let (name, _) = self.name()?;
        if first != "public" {
            return Err(SqlError::new(
                crate::error::code::UNDEFINED_TABLE,
                format!("relation \"{first}.{name}\" does not exist"),
            )
            .at(at));
        }
        Ok((name, at))
    }

    /// `( name [, ...] )`.
    pub fn name_list(&mut self) -> SqlResult<Vec<(String, Location)>> {
        self.expect(&Token::LParen)?;
        let mut names = vec![self.name()?];
        while self.token(&Token::Comma) {
            names.push(self.name()?);
        }
        self.expect(&Token::RParen)?;
        Ok(names)
    }

    /// A string literal: `'...'` or `E'...'` (escapes already applied by the tokenizer).
    pub fn string(&mut self) -> SqlResult<String> {
        match self.peek() {
            Some(Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s)) => {
                self.at += 1;
                Ok(s.clone())
            }
            _ => Err(self.error()),
        }
    }

    /// The syntax error at the next token, as PostgreSQL words it.
    pub fn error(&self) -> SqlError {
        match self.peek() {
            Some(t) => SqlError::syntax(format!(
                "syntax error at or near \"{}\"",
                clip(&t.to_string())
            ))
            .at(self.location()),
            None => SqlError::syntax("syntax error at end of input").at(self.end),
        }
    }
}
