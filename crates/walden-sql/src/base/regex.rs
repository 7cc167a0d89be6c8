//! A small regular-expression matcher for the `~` and `!~` operators: enough for the
//! patterns psql sends (`^(t.*)$`, `^pg_toast`, alternatives, `[...]` classes,
//! backslash escapes). It backtracks, so it is meant for short names, not for
//! searching long texts: texts past `MAX_TEXT_CHARS` are refused, and a match that
//! takes more than `MAX_STEPS` steps (`(a|a)*b` over a long run of `a`s) is an error
//! rather than a statement that never ends. Not supported (an
//! error, never a wrong answer): `{m,n}` counts, back-references, `\d`-style class
//! escapes, lookaround, flags.

use crate::error::{SqlError, SqlResult};

const MAX_TEXT_CHARS: usize = 100_000;
const MAX_PATTERN_CHARS: usize = 1_000;
const MAX_STEPS: u64 = 10_000_000;

/// The text being matched and the steps taken so far.
struct Subject {
    text: Vec<char>,
    steps: std::cell::Cell<u64>,
}

#[derive(Debug, Clone)]
enum Node {
    Char(char),
    Any,
    /// Ranges, and whether the class is negated.
    Class(Vec<(char, char)>, bool),
    Start,
    End,
    /// Alternatives, each a sequence.
    Group(Vec<Vec<Node>>),
    Repeat(Box<Node>, usize, Option<usize>),
}

fn unsupported(pattern: &str, what: &str) -> SqlError {
    SqlError::unsupported(format!(
        "{what} in the regular expression \"{}\"",
        crate::error::clip(pattern)
    ))
}

struct Parser<'a> {
    chars: Vec<char>,
    at: usize,
    pattern: &'a str,
}

impl Parser<'_> {
    fn alternatives(&mut self, depth: usize) -> SqlResult<Vec<Vec<Node>>> {
        if depth > 50 {
            return Err(unsupported(self.pattern, "nesting this deep"));
        }
        let mut alts = vec![Vec::new()];
        while let Some(&c) = self.chars.get(self.at) {
            self.at += 1;
            let node = match c {
                '|' => {
                    alts.push(Vec::new());
                    continue;
                }
                ')' if depth > 0 => return Ok(alts),
                '(' => Node::Group(self.alternatives(depth + 1)?),
                '.' => Node::Any,
                '^' => Node::Start,
                '$' => Node::End,
                '[' => self.class()?,
                '\\' => match self.chars.get(self.at) {
                    Some(&e) if !e.is_ascii_alphanumeric() => {
                        self.at += 1;
                        Node::Char(e)
                    }
                    _ => return Err(unsupported(self.pattern, "this escape")),
                },
                '*' | '+' | '?' => {
                    let (min, max) = match c {
                        '*' => (0, None),
                        '+' => (1, None),
                        _ => (0, Some(1)),
                    };
                    let seq = alts.last_mut().expect("alts is never empty");
                    match seq.pop() {
                        Some(n) if !matches!(n, Node::Repeat(..) | Node::Start | Node::End) => {
                            seq.push(Node::Repeat(Box::new(n), min, max));
                            continue;
                        }
                        _ => return Err(unsupported(self.pattern, "this quantifier")),
                    }
                }
                '{' => return Err(unsupported(self.pattern, "a {m,n} count")),
                c => Node::Char(c),
            };
            alts.last_mut().expect("alts is never empty").push(node);
        }
        if depth > 0 {
            return Err(SqlError::new(
                crate::error::code::INVALID_REGULAR_EXPRESSION,
                "invalid regular expression: parentheses () not balanced",
            ));
        }
        Ok(alts)
    }

    fn class(&mut self) -> SqlResult<Node> {
        let negated = self.chars.get(self.at) == Some(&'^');
        if negated {
            self.at += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let Some(&c) = self.chars.get(self.at) else {
                return Err(SqlError::new(
                    crate::error::code::INVALID_REGULAR_EXPRESSION,
                    "invalid regular expression: brackets [] not balanced",
                ));
            };
            self.at += 1;
            if c == ']' && !first {
                return Ok(Node::Class(ranges, negated));
            }
            first = false;
            if self.chars.get(self.at) == Some(&'-')
                && self.chars.get(self.at + 1).is_some_and(|&e| e != ']')
            {
                ranges.push((c, self.chars[self.at + 1]));
                self.at += 2;
            } else {
                ranges.push((c, c));
            }
        }
    }
}

/// Whether `text` matches `pattern` anywhere (anchors pin it), as PostgreSQL's `~`.
pub fn matches(text: &str, pattern: &str) -> SqlResult<bool> {
    if pattern.chars().count() > MAX_PATTERN_CHARS {
        return Err(unsupported(pattern, "a pattern this long"));
    }
    let text: Vec<char> = text.chars().collect();
    if text.len() > MAX_TEXT_CHARS {
        return Err(unsupported(pattern, "a text this long"));
    }
    let mut p = Parser {
        chars: pattern.chars().collect(),
        at: 0,
        pattern,
    };
    let alts = p.alternatives(0)?;
    let seq = vec![Node::Group(alts)];
    let subject = Subject {
        text,
        steps: std::cell::Cell::new(0),
    };
    let found = (0..=subject.text.len()).any(|start| walk(&seq, start, &subject, &mut |_| true));
    if subject.steps.get() > MAX_STEPS {
        return Err(SqlError::new(
            crate::error::code::PROGRAM_LIMIT,
            format!(
                "regular expression \"{}\" takes too many steps to match",
                crate::error::clip(pattern)
            ),
        ));
    }
    Ok(found)
}

fn one(n: &Node, c: char) -> bool {
    match n {
        Node::Char(x) => *x == c,
        Node::Any => true,
        Node::Class(ranges, negated) => {
            ranges.iter().any(|(a, b)| (*a..=*b).contains(&c)) != *negated
        }
        _ => false,
    }
}

/// Matches `seq` at `i`, then calls `k` with where it ended; true when `k` accepts.
/// Past `MAX_STEPS` every path fails at once (the caller reports it).
fn walk(seq: &[Node], i: usize, s: &Subject, k: &mut dyn FnMut(usize) -> bool) -> bool {
    let steps = s.steps.get() + 1;
    s.steps.set(steps);
    if steps > MAX_STEPS {
        return false;
    }
    let text = &s.text;
    let Some((n, rest)) = seq.split_first() else {
        return k(i);
    };
    match n {
        Node::Start => i == 0 && walk(rest, i, s, k),
        Node::End => i == text.len() && walk(rest, i, s, k),
        Node::Group(alts) => alts
            .iter()
            .any(|alt| walk(alt, i, s, &mut |j| walk(rest, j, s, k))),
        Node::Repeat(node, min, max) => repeat(node, *min, *max, 0, rest, i, s, k),
        single => text.get(i).is_some_and(|&c| one(single, c)) && walk(rest, i + 1, s, k),
    }
}

/// Greedy repetition: as many matches of `node` as allowed, then fewer.
#[allow(clippy::too_many_arguments)]
fn repeat(
    node: &Node,
    min: usize,
    max: Option<usize>,
    count: usize,
    rest: &[Node],
    i: usize,
    s: &Subject,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    if max.is_none_or(|m| count < m)
        && walk(std::slice::from_ref(node), i, s, &mut |j| {
            j != i && repeat(node, min, max, count + 1, rest, j, s, k)
        })
    {
        return true;
    }
    count >= min && walk(rest, i, s, k)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn psql_patterns_match_as_in_postgres() {
        assert!(matches("t", "^(t)$").unwrap());
        assert!(!matches("t1", "^(t)$").unwrap());
        assert!(matches("t_pkey", "^(t.*)$").unwrap());
        assert!(!matches("u", "^(t.*)$").unwrap());
        assert!(matches("pg_toast_1", "^pg_toast").unwrap());
        assert!(!matches("public", "^pg_toast").unwrap());
        assert!(matches("xaby", "ab").unwrap());
        assert!(matches("b", "^(a|b)$").unwrap());
        assert!(matches("t9", "^(t[0-9]+)$").unwrap());
        assert!(!matches("tx", "^(t[0-9]+)$").unwrap());
        assert!(matches("a$b", "^a\\$b$").unwrap());
        assert!(matches("colour", "^colou?r$").unwrap());
        assert!(matches("", "^(.*)$").unwrap());
    }

    #[test]
    fn a_runaway_match_is_an_error() {
        let text = "a".repeat(40);
        let err = matches(&text, "^(a|a)*b$").unwrap_err();
        assert_eq!(err.code, "54000");
    }

    #[test]
    fn unsupported_syntax_is_an_error_not_a_guess() {
        assert!(matches("aa", "a{2}").is_err());
        assert!(matches("1", "\\d").is_err());
        assert!(matches("a", "(a").is_err());
    }
}
