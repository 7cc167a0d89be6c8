//! COPY FROM's input split into records as it arrives, in chunks that may end anywhere:
//! PostgreSQL 15's `CopyReadLineText`. A record ends at a newline, a carriage return
//! or both (the first record's ending sets the style every later one must keep); in
//! text format a backslash takes the next byte with it (an escaped newline is data) and
//! `\.` ends the data wherever it stands on a line; in CSV format newlines inside
//! quotes are data and `\.` ends it only alone at the start of a record. Line numbers
//! count as PostgreSQL's do: one per record, plus one per newline inside a quoted CSV
//! field.
//!
//! Bytes are kept only until the records holding them are taken (`consume`): the
//! buffer holds the records of one batch and the record being read.

use crate::error::{code, SqlError, SqlResult};

/// How lines end, fixed by the first one (PostgreSQL's `EolType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    Unknown,
    Nl,
    Cr,
    CrNl,
}

/// One complete record: its bytes in the buffer (without the line ending) and its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record {
    pub start: usize,
    pub end: usize,
    pub line: u64,
}

/// The longest record COPY FROM keeps while reading it. A row Walden stores is at most
/// a page (32 kB at the largest page size), so no record this long could be stored; the
/// bound keeps a stream without line endings from filling memory.
pub(crate) const MAX_RECORD_BYTES: usize = 16 << 20;

/// The splitter's state across chunks.
pub(crate) struct Splitter {
    csv: bool,
    quote: u8,
    /// CSV's escape character, None when it is the quote (PostgreSQL then takes the
    /// quote for a plain toggle).
    escape: Option<u8>,
    buf: Vec<u8>,
    /// Where scanning goes on, and where the record being read starts.
    scan: usize,
    record_start: usize,
    /// Whether the record at `record_start` has been counted (its line number taken).
    record_open: bool,
    /// Nothing read yet of the record (a CSV `\.` counts only there).
    first_char: bool,
    in_quote: bool,
    last_was_esc: bool,
    eol: Eol,
    /// PostgreSQL's `cur_lineno`: the line of the record being read or last read.
    line: u64,
    /// Complete records not yet taken, in order.
    records: std::collections::VecDeque<Record>,
    /// The end of the data was reached: `\.`, or the end of input. Later bytes are
    /// ignored, as PostgreSQL ignores what follows `\.`.
    done: bool,
}

impl Splitter {
    pub fn new(csv: bool, quote: u8, escape: u8) -> Splitter {
        Splitter {
            csv,
            quote,
            escape: (escape != quote).then_some(escape),
            buf: Vec::new(),
            scan: 0,
            record_start: 0,
            record_open: false,
            first_char: true,
            in_quote: false,
            last_was_esc: false,
            eol: Eol::Unknown,
            line: 0,
            records: std::collections::VecDeque::new(),
            done: false,
        }
    }

    /// The line of the record being read (or the last one found): where an error in
    /// reading is.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// True once `\.` or the end of input was met.
    #[cfg(test)]
    pub fn done(&self) -> bool {
        self.done
    }

    /// The buffer the records' offsets are into.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The bytes of complete records not yet taken.
    pub fn complete_bytes(&self) -> usize {
        self.records.back().map_or(0, |r| r.end)
    }

    /// The next complete record, if one is.
    pub fn take(&mut self) -> Option<Record> {
        self.records.pop_front()
    }

    /// Drops the bytes before every record not yet taken (and the one being read):
    /// offsets of records taken before are no longer valid.
    pub fn consume(&mut self) {
        let keep_from = self
            .records
            .front()
            .map_or(self.record_start, |r| r.start)
            .min(self.record_start);
        if keep_from == 0 {
            return;
        }
        self.buf.drain(..keep_from);
        self.scan -= keep_from;
        self.record_start -= keep_from;
        for r in &mut self.records {
            r.start -= keep_from;
            r.end -= keep_from;
        }
    }

    /// Adds input and finds the records it completes.
    pub fn push(&mut self, bytes: &[u8]) -> SqlResult<()> {
        if self.done {
            return Ok(());
        }
        self.buf.extend_from_slice(bytes);
        self.scan(false)?;
        if self.buf.len() - self.record_start > MAX_RECORD_BYTES {
            return Err(SqlError::new(
                code::PROGRAM_LIMIT,
                format!("COPY line is longer than {} MB", MAX_RECORD_BYTES >> 20),
            )
            .with_hint("A row Walden stores holds at most a page of data."));
        }
        Ok(())
    }

    /// The end of input: what is left is the last record (unless it is empty).
    pub fn finish(&mut self) -> SqlResult<()> {
        if !self.done {
            self.scan(true)?;
        }
        Ok(())
    }

    /// Ends the current record at `end` (exclusive) and goes on at `next`.
    fn end_record(&mut self, end: usize, next: usize) {
        self.records.push_back(Record {
            start: self.record_start,
            end,
            line: self.line,
        });
        self.scan = next;
        self.record_start = next;
        self.record_open = false;
    }

    /// The end of the data at `end`: what came before it on its line is the last
    /// record, if anything did.
    fn end_data(&mut self, end: usize) {
        if end > self.record_start {
            self.end_record(end, end);
        }
        self.done = true;
    }

    fn scan(&mut self, eof: bool) -> SqlResult<()> {
        while !self.done {
            if !self.record_open {
                self.line += 1;
                self.record_open = true;
                self.first_char = true;
            }
            let i = self.scan;
            if !self.csv {
                // In text format only a line ending or a backslash needs looking at: a
                // run of other bytes is passed at once.
                let run = self.buf[i.min(self.buf.len())..]
                    .iter()
                    .position(|&b| b == b'\n' || b == b'\r' || b == b'\\')
                    .unwrap_or(self.buf.len().saturating_sub(i));
                if run > 0 {
                    self.scan = i + run;
                    self.first_char = false;
                    continue;
                }
            }
            let Some(&c) = self.buf.get(i) else {
                if eof {
                    self.end_data(i);
                }
                return Ok(());
            };
            let outside_quotes = !self.csv || !self.in_quote;
            let marker_here = c == b'\\' && (!self.csv || self.first_char);
            // What this byte needs to see after it before it can be judged.
            let needs = if marker_here {
                self.marker_bytes(i)
            } else if c == b'\r' && outside_quotes && matches!(self.eol, Eol::Unknown | Eol::CrNl) {
                2
            } else {
                1
            };
            if i + needs > self.buf.len() && !eof {
                return Ok(());
            }
            if self.csv {
                self.track_quotes(c);
            }
            let at = |k: usize| self.buf.get(i + k).copied().unwrap_or(0);
            let outside_quotes = !self.csv || !self.in_quote;
            if c == b'\r' && outside_quotes {
                match self.eol {
                    Eol::Unknown | Eol::CrNl if at(1) == b'\n' => {
                        self.eol = Eol::CrNl;
                        self.end_record(i, i + 2);
                    }
                    Eol::CrNl | Eol::Nl => return Err(self.stray(b'\r')),
                    Eol::Unknown | Eol::Cr => {
                        self.eol = Eol::Cr;
                        self.end_record(i, i + 1);
                    }
                }
                continue;
            }
            if c == b'\n' && outside_quotes {
                if matches!(self.eol, Eol::Cr | Eol::CrNl) {
                    return Err(self.stray(b'\n'));
                }
                self.eol = Eol::Nl;
                self.end_record(i, i + 1);
                continue;
            }
            if marker_here {
                if i + 1 >= self.buf.len() && !self.csv {
                    // A backslash at the very end: the record ends with it.
                    self.end_data(i + 1);
                    return Ok(());
                }
                if at(1) == b'.' {
                    if self.end_marker(i)? {
                        return Ok(());
                    }
                } else if !self.csv {
                    // The escaped byte goes with the backslash, whatever it is.
                    self.scan = i + 2;
                    self.first_char = false;
                    continue;
                }
            }
            self.scan = i + 1;
            self.first_char = false;
        }
        Ok(())
    }

    /// CSV: whether byte `c` opens or closes a quoted field (an escape before a quote
    /// keeps it inside), and the line count of line endings inside quotes.
    fn track_quotes(&mut self, c: u8) {
        let is_escape = self.escape == Some(c);
        if self.in_quote && is_escape {
            self.last_was_esc = !self.last_was_esc;
        }
        if c == self.quote && !self.last_was_esc {
            self.in_quote = !self.in_quote;
        }
        if !is_escape {
            self.last_was_esc = false;
        }
        let embedded = if self.eol == Eol::Nl { b'\n' } else { b'\r' };
        if self.in_quote && c == embedded {
            self.line += 1;
        }
    }

    /// How many bytes from `i` (a backslash) judging it needs: the backslash and the
    /// next byte; for `\.`, the line ending after it too.
    fn marker_bytes(&self, i: usize) -> usize {
        match self.buf.get(i + 1) {
            Some(b'.') if self.eol == Eol::CrNl => 4,
            Some(b'.') => 3,
            _ => 2,
        }
    }

    /// `\.` at `i`: the end of the data if a line ending follows it (true); in CSV, data
    /// otherwise (false); in text format, an error otherwise.
    fn end_marker(&mut self, i: usize) -> SqlResult<bool> {
        let at = |k: usize| self.buf.get(i + k).copied().unwrap_or(0);
        let mut k = 2;
        if self.eol == Eol::CrNl {
            match at(k) {
                b'\r' => k += 1,
                b'\n' if !self.csv => return Err(marker_style()),
                _ if !self.csv => return Err(marker_corrupt()),
                _ => return Ok(false),
            }
        }
        let ending = at(k);
        if ending != b'\r' && ending != b'\n' {
            if self.csv {
                return Ok(false);
            }
            return Err(marker_corrupt());
        }
        let matches_style = match self.eol {
            Eol::Unknown => true,
            Eol::Nl | Eol::CrNl => ending == b'\n',
            Eol::Cr => ending == b'\r',
        };
        if !matches_style {
            return Err(marker_style());
        }
        self.end_data(i);
        Ok(true)
    }

    /// A line-ending byte that does not follow the style of the first line.
    fn stray(&self, byte: u8) -> SqlError {
        let (message, hint) = match (byte, self.csv) {
            (b'\r', false) => (
                "literal carriage return found in data",
                "Use \"\\r\" to represent carriage return.",
            ),
            (b'\r', true) => (
                "unquoted carriage return found in data",
                "Use quoted CSV field to represent carriage return.",
            ),
            (_, false) => (
                "literal newline found in data",
                "Use \"\\n\" to represent newline.",
            ),
            (_, true) => (
                "unquoted newline found in data",
                "Use quoted CSV field to represent newline.",
            ),
        };
        SqlError::new(code::BAD_COPY_FILE_FORMAT, message).with_hint(hint)
    }
}

fn marker_corrupt() -> SqlError {
    SqlError::new(code::BAD_COPY_FILE_FORMAT, "end-of-copy marker corrupt")
}

fn marker_style() -> SqlError {
    SqlError::new(
        code::BAD_COPY_FILE_FORMAT,
        "end-of-copy marker does not match previous newline style",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records as (text, line), and whether the end marker was met; or an error's
    /// message and line.
    type Split = Result<(Vec<(String, u64)>, bool), (String, u64)>;

    /// The records of `input` fed in chunks of `chunk` bytes.
    fn split(input: &[u8], csv: bool, chunk: usize) -> Split {
        let mut s = Splitter::new(csv, b'"', b'"');
        let mut out = Vec::new();
        let take = |s: &mut Splitter, out: &mut Vec<(String, u64)>| {
            while let Some(r) = s.take() {
                let text = String::from_utf8_lossy(&s.bytes()[r.start..r.end]).into_owned();
                out.push((text, r.line));
            }
            s.consume();
        };
        for piece in input.chunks(chunk.max(1)) {
            s.push(piece).map_err(|e| (e.message.clone(), s.line()))?;
            take(&mut s, &mut out);
        }
        let done_early = s.done();
        s.finish().map_err(|e| (e.message.clone(), s.line()))?;
        take(&mut s, &mut out);
        Ok((out, done_early))
    }

    fn lines(v: &[(&str, u64)]) -> Vec<(String, u64)> {
        v.iter().map(|(t, l)| (t.to_string(), *l)).collect()
    }

    /// Every chunking of the input gives the same records.
    fn same_in_every_chunking(input: &[u8], csv: bool) -> Split {
        let whole = split(input, csv, input.len());
        for chunk in 1..input.len().max(1) {
            assert_eq!(split(input, csv, chunk), whole, "chunks of {chunk}");
        }
        whole
    }

    #[test]
    fn text_lines_end_at_newlines_and_the_end_marker() {
        let (r, done) = same_in_every_chunking(b"1\ta\n2\tb\n\\.\nignored\n", false).unwrap();
        assert_eq!(r, lines(&[("1\ta", 1), ("2\tb", 2)]));
        assert!(done);
        let (r, done) = same_in_every_chunking(b"1\r\n2\r\n", false).unwrap();
        assert_eq!(r, lines(&[("1", 1), ("2", 2)]));
        assert!(!done);
        let (r, _) = same_in_every_chunking(b"1\r2\r3", false).unwrap();
        assert_eq!(r, lines(&[("1", 1), ("2", 2), ("3", 3)]));
        // An escaped newline is data; so is an escaped backslash before a period.
        let (r, _) = same_in_every_chunking(b"a\\\nb\nc\\\\.d\n", false).unwrap();
        assert_eq!(r, lines(&[("a\\\nb", 1), ("c\\\\.d", 2)]));
        // `\.` after data on a line ends the data there (PostgreSQL 15).
        let (r, done) = same_in_every_chunking(b"x\nabc\\.\nmore\n", false).unwrap();
        assert_eq!(r, lines(&[("x", 1), ("abc", 2)]));
        assert!(done);
        let (r, _) = same_in_every_chunking(b"", false).unwrap();
        assert!(r.is_empty());
        let (r, _) = same_in_every_chunking(b"\n\n", false).unwrap();
        assert_eq!(r, lines(&[("", 1), ("", 2)]));
        let (r, _) = same_in_every_chunking(b"tail\\", false).unwrap();
        assert_eq!(r, lines(&[("tail\\", 1)]));
    }

    #[test]
    fn text_errors_name_their_line() {
        let cases: [(&[u8], &str, u64); 6] = [
            (b"1\n2\r\n", "literal carriage return found in data", 2),
            (b"1\r\n2\n", "literal newline found in data", 2),
            (b"1\r2\n", "literal newline found in data", 2),
            (b"a\\.b\n", "end-of-copy marker corrupt", 1),
            (
                b"1\r\n\\.\n",
                "end-of-copy marker does not match previous newline style",
                2,
            ),
            (
                b"1\n\\.\r",
                "end-of-copy marker does not match previous newline style",
                2,
            ),
        ];
        for (input, message, line) in cases {
            for chunk in 1..=input.len() {
                assert_eq!(
                    split(input, false, chunk),
                    Err((message.to_string(), line)),
                    "{:?} in chunks of {chunk}",
                    String::from_utf8_lossy(input)
                );
            }
        }
        assert_eq!(
            split(b"x\\.", false, 3),
            Err(("end-of-copy marker corrupt".to_string(), 1))
        );
    }

    #[test]
    fn csv_quotes_hold_newlines_and_count_lines() {
        let (r, done) = same_in_every_chunking(b"1,\"a\nb\"\n2,\"\"\"\"\n\\.\n", true).unwrap();
        // The quoted newline counts a line once the first line's ending is known.
        assert_eq!(r, lines(&[("1,\"a\nb\"", 1), ("2,\"\"\"\"", 2)]));
        assert!(done);
        let (r, _) = same_in_every_chunking(b"0\n1,\"a\nb\"\n2\n", true).unwrap();
        assert_eq!(r, lines(&[("0", 1), ("1,\"a\nb\"", 3), ("2", 4)]));
        // `\.` with more after it, or inside a record, is data.
        let (r, done) = same_in_every_chunking(b"\\.x\na,\\.\n", true).unwrap();
        assert_eq!(r, lines(&[("\\.x", 1), ("a,\\.", 2)]));
        assert!(!done);
        // An unterminated quote runs to the end.
        let (r, _) = same_in_every_chunking(b"1,\"x\n\\.\n", true).unwrap();
        assert_eq!(r, lines(&[("1,\"x\n\\.\n", 1)]));
        assert_eq!(
            split(b"1\n2\r\n", true, 1),
            Err(("unquoted carriage return found in data".to_string(), 2))
        );
    }

    #[test]
    fn a_line_without_end_is_bounded() {
        let mut s = Splitter::new(false, b'"', b'"');
        let chunk = vec![b'x'; 1 << 20];
        let mut result = Ok(());
        for _ in 0..=(MAX_RECORD_BYTES >> 20) {
            result = s.push(&chunk);
            if result.is_err() {
                break;
            }
        }
        let e = result.unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("54000", "COPY line is longer than 16 MB")
        );
    }
}
