//! Token rewrites before sqlparser parses a statement, for PostgreSQL syntax it does
//! not take: `TABLE name` at the start of a statement, and `JOIN … USING (…) AS alias`.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use super::{is_trivia, keyword};

/// `TABLE name …` starts a query as `SELECT * FROM name …` (sqlparser takes TABLE only
/// inside a query, and not before a set operation): the words stand where TABLE stood,
/// so errors further on point where they did.
pub(super) fn table_as_select(toks: &mut Vec<TokenWithSpan>) {
    if let Some(i) = toks.iter().position(|t| !is_trivia(&t.token)) {
        let span = toks[i].span;
        let space = || TokenWithSpan::new(Token::Whitespace(Whitespace::Space), span);
        let select = [
            TokenWithSpan::new(Token::make_keyword("SELECT"), span),
            space(),
            TokenWithSpan::new(Token::Mul, span),
            space(),
            TokenWithSpan::new(Token::make_keyword("FROM"), span),
        ];
        toks.splice(i..=i, select);
    }
}

/// `JOIN … USING (a, b) AS j` (PostgreSQL 14's join_using_alias), which sqlparser does
/// not take: the alias goes inside the list as one more column, a quoted identifier
/// marked with `USING_ALIAS_MARK` (`USING (a, b, "\u{1}j")`), which the FROM planner
/// takes back out. Only a USING list of plain names followed by AS is one (a DELETE's
/// USING names relations: `USING (SELECT …) AS s` is left alone).
pub(super) fn join_using_aliases(toks: &mut Vec<TokenWithSpan>) {
    let mut i = 0;
    while i < toks.len() {
        if keyword(&toks[i].token) != Some(Keyword::USING) {
            i += 1;
            continue;
        }
        let next = |from: usize| (from..toks.len()).find(|&k| !is_trivia(&toks[k].token));
        let Some(open) = next(i + 1).filter(|&k| toks[k].token == Token::LParen) else {
            i += 1;
            continue;
        };
        // One name, then a comma and a name, and so on, up to the closing parenthesis
        // (`USING (TABLE u) AS x`, a DELETE's subquery, has two words in a row).
        let mut k = open + 1;
        let mut name_next = true;
        let close = loop {
            match next(k).map(|at| (at, &toks[at].token)) {
                Some((at, Token::Word(_))) if name_next => (k, name_next) = (at + 1, false),
                Some((at, Token::Comma)) if !name_next => (k, name_next) = (at + 1, true),
                Some((at, Token::RParen)) if !name_next => break Some(at),
                _ => break None,
            }
        };
        let Some(close) = close else {
            i += 1;
            continue;
        };
        let alias = next(close + 1)
            .filter(|&a| keyword(&toks[a].token) == Some(Keyword::AS))
            .and_then(|a| next(a + 1).map(|n| (a, n)));
        let Some((as_at, name_at)) = alias else {
            i = close + 1;
            continue;
        };
        let Token::Word(w) = &toks[name_at].token else {
            i = close + 1;
            continue;
        };
        let name = if w.quote_style.is_some() {
            w.value.clone()
        } else {
            w.value.to_lowercase()
        };
        let span = toks[name_at].span;
        let marked = Token::Word(sqlparser::tokenizer::Word {
            value: format!("{}{name}", crate::catalog::USING_ALIAS_MARK),
            quote_style: Some('"'),
            keyword: Keyword::NoKeyword,
        });
        // `AS name` out; `, "\u{1}name"` in before the closing parenthesis.
        toks.drain(as_at..=name_at);
        toks.splice(
            close..close,
            [
                TokenWithSpan::new(Token::Comma, span),
                TokenWithSpan::new(marked, span),
            ],
        );
        i = close + 3;
    }
}
