//! How deeply a statement may nest, and the stack it is parsed, run and dropped on.
//!
//! Parsing, binding, evaluating and dropping an expression all recurse once per level of
//! its tree, and a flat `1+1+…+1` is a left-deep tree as deep as it is long (sqlparser
//! builds such chains in a loop, so its own recursion limit never sees them). Rather than
//! trusting the caller's stack (a test thread has 2 MiB), every statement is bounded
//! before it is parsed: its tokens give an upper bound on how deep any tree built from
//! them can be. A statement over [`MAX_NESTING`] is refused as too complex (SQLSTATE
//! 54001, as PostgreSQL's "stack depth limit exceeded"); any other runs with at least
//! [`stack_bytes`] of stack, on a fresh stack segment if the caller's has less left:
//! enough for the walks the compiler writes (drop, clone, compare) over any of its trees.
//! Walden's own recursions (binding, evaluating) have big frames, in debug builds
//! especially, so each level goes through [`recurse`], which moves on to a new segment
//! whenever less than that much is left.

use std::cell::Cell;

use sqlparser::tokenizer::Token;

use crate::error::{code, SqlError};

/// The deepest nesting a statement may have, counted as by [`nesting_bound`]: 10,000
/// terms of `1+1+…` count 20,000, a thousand nested parentheses 2,000.
pub const MAX_NESTING: usize = 50_000;

/// Stack every statement gets, whatever its nesting.
const BASE_STACK_BYTES: usize = 1 << 20;

/// Stack per token of nesting for the compiler's walks over a tree. Measured: a level of
/// a sqlparser expression takes about 600 bytes to find its span and 60 to drop (its
/// derived clone takes 4 KiB: statements are not cloned).
const STACK_BYTES_PER_LEVEL: usize = 1 << 10;

/// What a new stack segment holds beyond the reserve: the levels of a recursion run on it
/// until the reserve is reached again.
const SEGMENT_BYTES: usize = 32 << 20;

thread_local! {
    /// The stack the running statement keeps in reserve (see [`recurse`]).
    static RESERVE_BYTES: Cell<usize> = const { Cell::new(BASE_STACK_BYTES) };
}

/// The error for a statement nested deeper than [`MAX_NESTING`].
pub fn too_complex() -> SqlError {
    SqlError::new(code::STATEMENT_TOO_COMPLEX, "statement is too complex")
        .with_hint(format!(
            "Walden accepts expressions nested up to {MAX_NESTING} tokens deep; split long chains of operators or nested parentheses."
        ))
}

/// An upper bound on the depth of any syntax tree built from `tokens`. Between two
/// commas of one bracket level, every token may open a level (a left-deep `a+b+c` opens
/// one per operator), and a bracketed group nests inside the stretch around it; so the
/// bound is, along the deepest chain of groups, the sum of the stretches' lengths.
/// Commas separate siblings (list items, arguments, rows), which do not nest.
pub fn nesting_bound<'a>(tokens: impl IntoIterator<Item = &'a Token>) -> usize {
    /// One open bracket level.
    #[derive(Default)]
    struct Level {
        /// Tokens since the last comma (or the bracket) at this level.
        stretch: usize,
        /// The deepest group opened inside the current stretch.
        deepest_group: usize,
        /// The deepest of this level's finished stretches.
        deepest: usize,
    }
    impl Level {
        fn close_stretch(&mut self) {
            self.deepest = self.deepest.max(self.stretch + self.deepest_group);
            self.stretch = 0;
            self.deepest_group = 0;
        }
    }
    let mut levels = vec![Level::default()];
    let close_group = |levels: &mut Vec<Level>| {
        if let Some(mut group) = levels.pop() {
            group.close_stretch();
            if let Some(outer) = levels.last_mut() {
                outer.deepest_group = outer.deepest_group.max(group.deepest);
            }
        }
    };
    for token in tokens {
        match token {
            Token::Whitespace(_) => {}
            Token::LParen | Token::LBracket => {
                if let Some(l) = levels.last_mut() {
                    l.stretch += 1;
                }
                levels.push(Level::default());
            }
            Token::RParen | Token::RBracket if levels.len() > 1 => {
                close_group(&mut levels);
                if let Some(l) = levels.last_mut() {
                    l.stretch += 1;
                }
            }
            Token::Comma => {
                if let Some(l) = levels.last_mut() {
                    l.close_stretch();
                }
            }
            _ => {
                if let Some(l) = levels.last_mut() {
                    l.stretch += 1;
                }
            }
        }
    }
    // Brackets left open (a syntax error the parser will report) still nest.
    while levels.len() > 1 {
        close_group(&mut levels);
    }
    levels.pop().map_or(0, |mut l| {
        l.close_stretch();
        l.deepest
    })
}

/// The stack a statement of this nesting needs.
pub fn stack_bytes(nesting: usize) -> usize {
    BASE_STACK_BYTES + nesting.min(MAX_NESTING) * STACK_BYTES_PER_LEVEL
}

/// Runs `f` with at least `bytes` of stack left (on the caller's stack if it has that
/// much, else on a new segment), and keeps that much in reserve at each level of
/// [`recurse`] inside it.
pub fn with_stack<R>(bytes: usize, f: impl FnOnce() -> R) -> R {
    /// Puts the caller's reserve back, also when `f` panics.
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            RESERVE_BYTES.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(RESERVE_BYTES.with(|r| r.replace(bytes)));
    stacker::maybe_grow(bytes, bytes + SEGMENT_BYTES, f)
}

/// Runs one level of a recursion over a tree: on a new stack segment if less than the
/// statement's reserve is left, so that neither this recursion nor a walk the compiler
/// wrote, started from any depth of it, can run out of stack.
pub fn recurse<R>(f: impl FnOnce() -> R) -> R {
    let reserve = RESERVE_BYTES.with(Cell::get);
    stacker::maybe_grow(reserve, reserve + SEGMENT_BYTES, f)
}

/// A value whose drop may recurse as deep as a statement nests (a syntax tree): it is
/// dropped with the stack that nesting needs.
#[derive(Debug)]
pub struct Deep<T> {
    /// None only once dropped.
    value: Option<Box<T>>,
    stack_bytes: usize,
}

impl<T> Deep<T> {
    pub fn new(value: T, nesting: usize) -> Deep<T> {
        Deep {
            value: Some(Box::new(value)),
            stack_bytes: stack_bytes(nesting),
        }
    }

    /// The stack code walking the value needs.
    pub fn stack_bytes(&self) -> usize {
        self.stack_bytes
    }

    /// Another value as deep as this one (a copy of it, changed in its leaves).
    pub fn alike<U>(&self, value: U) -> Deep<U> {
        Deep {
            value: Some(Box::new(value)),
            stack_bytes: self.stack_bytes,
        }
    }
}

impl<T> std::ops::Deref for Deep<T> {
    type Target = T;
    fn deref(&self) -> &T {
        match &self.value {
            Some(v) => v,
            None => unreachable!("a Deep value is taken only when dropped"),
        }
    }
}

impl<T> Drop for Deep<T> {
    fn drop(&mut self) {
        let value = self.value.take();
        with_stack(self.stack_bytes, move || drop(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn bound(sql: &str) -> usize {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
            .tokenize()
            .unwrap_or_default();
        nesting_bound(&tokens)
    }

    #[test]
    fn chains_count_each_token_and_lists_count_their_longest_item() {
        assert_eq!(bound("select 1+1+1"), 6);
        // The deepest argument, plus the tokens around the call.
        assert_eq!(bound("select f(1, 2+2+2, 3)"), 4 + 5);
        assert_eq!(bound("select ((1))"), 6);
        // Rows of VALUES are siblings.
        assert_eq!(bound("insert into t values (1, 2), (3, 4), (5, 6)"), 6 + 1);
        assert_eq!(bound("select (((1"), 5);
        assert_eq!(bound("select 1))"), 4);
        assert_eq!(bound(""), 0);
    }
}
