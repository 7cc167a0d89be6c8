//! The values of a generate_series source (`SeriesIter`).

use walden::Value;

use crate::from::Source;
use crate::types::SqlType;
use crate::value;

/// The values of a generate_series source.
pub struct SeriesIter {
    next: i64,
    stop: i64,
    step: i64,
    ty: SqlType,
    /// A series of timestamps: the interval added to each to make the next.
    interval: Option<walden::Interval>,
    done: bool,
}

impl SeriesIter {
    pub fn new(source: &Source) -> SeriesIter {
        match source {
            Source::Series {
                start,
                stop,
                step,
                ty,
                interval,
            } => SeriesIter {
                next: *start,
                stop: *stop,
                step: *step,
                ty: *ty,
                interval: *interval,
                done: false,
            },
            _ => SeriesIter {
                next: 0,
                stop: 0,
                step: 1,
                ty: SqlType::Int4,
                interval: None,
                done: true,
            },
        }
    }
}

impl Iterator for SeriesIter {
    type Item = Value;
    fn next(&mut self) -> Option<Value> {
        if self.done
            || (self.step > 0 && self.next > self.stop)
            || (self.step < 0 && self.next < self.stop)
        {
            return None;
        }
        let v = self.next;
        if let Some(iv) = self.interval {
            // Past the end of the timestamp range the series ends.
            match crate::datetime::timestamp_add(v, iv) {
                Ok(n) if n != v => self.next = n,
                _ => self.done = true,
            }
            return Some(if self.ty == SqlType::Timestamp {
                Value::Timestamp(v)
            } else {
                Value::Timestamptz(v)
            });
        }
        match v.checked_add(self.step) {
            Some(n) => self.next = n,
            None => self.done = true,
        }
        value::int_value(v, self.ty).ok()
    }
}
