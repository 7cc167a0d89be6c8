//! What a statement's text may cost to parse, bounded before any of it is tokenized.
//! sqlparser makes a token (about 90 bytes) of every word, number, operator and even
//! every white-space character, and the parse then a tree of them: unbounded, 100 MB
//! of spaces would cost 18 GB. So each statement of a script is counted first, by a
//! scan that allocates nothing, and one of more than `MAX_STATEMENT_TOKENS` is refused
//! with 54001. String literals, quoted names and comments count as one token each
//! whatever their length (a 1 GB literal is one token and costs its bytes), as does
//! COPY data in a script (never tokenized).

use crate::error::{code, SqlError, SqlResult};

/// The most tokens (words, numbers, operators, white-space characters, literals) one
/// statement may have: about 600 bytes each to tokenize, parse and plan, so at most
/// about 600 MB for the largest statement taken.
pub const MAX_STATEMENT_TOKENS: usize = 1_000_000;

fn too_long() -> SqlError {
    SqlError::new(
        code::STATEMENT_TOO_COMPLEX,
        format!("statement too long to parse: more than {MAX_STATEMENT_TOKENS} tokens"),
    )
    .with_hint(
        "Walden refuses a statement of more than a million words, numbers, operators and white-space characters before parsing it; load many rows with COPY, or in several statements.",
    )
}

/// The end of a `'…'` string starting at `at` (its quote): past the closing quote.
fn quoted(b: &[u8], at: usize, quote: u8, backslash: bool) -> usize {
    let mut i = at + 1;
    while i < b.len() {
        if backslash && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == quote {
            if b.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// The end of a dollar-quoted string starting at `at`, if one starts there (`$$…$$`,
/// `$tag$…$tag$`).
fn dollar_quoted(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < b.len()
        && (b[i].is_ascii_alphabetic() || b[i] == b'_' || (i > at + 1 && b[i].is_ascii_digit()))
    {
        i += 1;
    }
    if b.get(i) != Some(&b'$') {
        return None;
    }
    let tag = &b[at..=i];
    let body = i + 1;
    let end = b[body..]
        .windows(tag.len())
        .position(|w| w == tag)
        .map_or(b.len(), |p| body + p + tag.len());
    Some(end)
}

/// Counts the tokens of each statement of `text` (statements end at `;` outside
/// literals and comments), and refuses the text when one has too many. With
/// `inline_copy`, a `COPY … FROM STDIN` statement's end ends the scan: what follows is
/// its data.
pub fn check(text: &str, inline_copy: bool) -> SqlResult<()> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut tokens = 0usize;
    // Of the statement so far: its first word is COPY, and a word STDIN came.
    let (mut words, mut copy, mut stdin) = (0usize, false, false);
    while i < b.len() {
        let c = b[i];
        i = match c {
            b'\'' => quoted(b, i, b'\'', i > 0 && matches!(b[i - 1], b'e' | b'E')),
            b'"' => quoted(b, i, b'"', false),
            b'$' => dollar_quoted(b, i).unwrap_or(i + 1),
            b'-' if b.get(i + 1) == Some(&b'-') => b[i..]
                .iter()
                .position(|&x| x == b'\n')
                .map_or(b.len(), |p| i + p),
            b'/' if b.get(i + 1) == Some(&b'*') => b[i + 2..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(b.len(), |p| i + 2 + p + 2),
            b';' => {
                if inline_copy && copy && stdin {
                    return Ok(());
                }
                (words, copy, stdin, tokens) = (0, false, false, 0);
                i + 1
            }
            c if is_word(c) => {
                let end = b[i..]
                    .iter()
                    .position(|&x| !is_word(x))
                    .map_or(b.len(), |p| i + p);
                let word = &b[i..end];
                if words == 0 {
                    copy = word.eq_ignore_ascii_case(b"copy");
                }
                stdin |= word.eq_ignore_ascii_case(b"stdin");
                words += 1;
                end
            }
            _ => i + 1,
        };
        tokens += 1;
        if tokens > MAX_STATEMENT_TOKENS {
            return Err(too_long());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_comments_are_one_token_each() {
        let long = format!("insert into t values ('{}');", "x".repeat(5_000_000));
        assert!(check(&long, false).is_ok());
        let spaces = format!("select 1{};", " ".repeat(MAX_STATEMENT_TOKENS));
        assert_eq!(check(&spaces, false).unwrap_err().code, "54001");
        // Many short statements are fine: the count is per statement.
        let many = "select 1;".repeat(400_000);
        assert!(check(&many, false).is_ok());
        let comment = format!(
            "select 1 /* {} */; -- {}\n",
            "a ".repeat(800_000),
            "b ".repeat(800_000)
        );
        assert!(check(&comment, false).is_ok());
        let dollar = format!("select $x${}$x$;", "; ".repeat(800_000));
        assert!(check(&dollar, false).is_ok());
        let escaped = format!("select E'\\'{}';", " ".repeat(2_000_000));
        assert!(check(&escaped, false).is_ok());
    }

    #[test]
    fn copy_data_in_a_script_is_not_counted() {
        let data = "1\t2\n".repeat(1_000_000);
        let script = format!("copy t from stdin;\n{data}\\.\n");
        assert!(check(&script, true).is_ok());
        assert_eq!(check(&script, false).unwrap_err().code, "54001");
    }
}
