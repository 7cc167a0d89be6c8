//! Sequences as SQL sees them: `nextval`, `currval`, `lastval` and `setval` with
//! PostgreSQL's session cache and errors, over the engine's shared counters. What a
//! session knows of them (the values it cached, `currval` of each sequence, the one
//! `lastval` names) is `SessionSequences`, lent to each statement in a
//! `StatementSequences` and taken back whatever becomes of the statement: sequence
//! functions are not transactional. The statements that make, change and drop
//! sequences are `ddl.rs`; their option lists (shared with identity columns)
//! `options.rs`.

pub mod options;
pub(crate) mod owned;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use walden::{Database, SequenceDef, Value};

use crate::catalog::relation_name_of_text;
use crate::error::{code, SqlError, SqlResult};
use crate::pg_catalog::FIRST_USER_OID;

/// Values a session took from a sequence and hands out itself (CACHE above 1).
#[derive(Debug, Clone)]
struct Cached {
    /// The value handed out last; the next is the one after it.
    last: i64,
    /// How many more the session may hand out.
    left: i64,
    def: SequenceDef,
}

/// What a session knows of one sequence.
#[derive(Debug, Clone)]
struct Seen {
    /// The value `nextval` (or `setval` with is_called) gave last: `currval`.
    current: Option<i64>,
    cached: Option<Cached>,
}

/// A session's sequence state (PostgreSQL's `SeqTable` and `last_used_seq`).
#[derive(Debug, Default)]
pub struct SessionSequences {
    seen: HashMap<u32, Seen>,
    /// The sequence `nextval` last gave a value of (`lastval`).
    last_used: Option<u32>,
}

/// A session's sequence state lent to one statement, and the WAL position the
/// statement's values need durable before anyone is told of them.
pub struct StatementSequences {
    db: Database,
    session: RefCell<SessionSequences>,
    durable_lsn: Cell<u64>,
    /// Who calls the functions (None: no checks, an embedded caller's own use).
    auth: Option<std::sync::Arc<crate::acl::Authority>>,
    /// The statement's transaction is READ ONLY: nextval and setval fail (25006).
    read_only: bool,
}

impl std::fmt::Debug for StatementSequences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatementSequences")
            .field("session", &self.session)
            .field("durable_lsn", &self.durable_lsn)
            .finish_non_exhaustive()
    }
}

/// The value after `v` by the definition's increment, cycling at a bound (only for
/// values inside a range the engine handed out, which never passes a bound without
/// cycling).
fn after(def: &SequenceDef, v: i64) -> i64 {
    match v.checked_add(def.increment) {
        Some(n) if (def.min_value..=def.max_value).contains(&n) => n,
        _ if def.increment > 0 => def.min_value,
        _ => def.max_value,
    }
}

/// A sequence a function names: its id and name.
pub(crate) struct Named {
    pub id: u32,
    pub name: String,
}

/// The error for a relation that is there but is not a sequence.
pub(crate) fn not_a_sequence(name: &str) -> SqlError {
    SqlError::new(
        code::WRONG_OBJECT_TYPE,
        format!("\"{name}\" is not a sequence"),
    )
}

/// The sequence a function's argument names: a `regclass` (an OID) or a text.
pub(crate) fn resolve(db: &Database, arg: &Value) -> SqlResult<Named> {
    match arg {
        Value::Text(text) => {
            let (schema, name) = relation_name_of_text(text)?;
            match schema.as_deref() {
                None | Some("public") => {}
                Some("pg_catalog") => {
                    return Err(SqlError::new(
                        code::UNDEFINED_TABLE,
                        format!("relation \"pg_catalog.{name}\" does not exist"),
                    ))
                }
                Some(s) => {
                    return Err(SqlError::new(
                        code::INVALID_SCHEMA_NAME,
                        format!("schema \"{s}\" does not exist"),
                    ))
                }
            }
            match db.sequence(&name) {
                Some(info) => Ok(Named {
                    id: info.def.id,
                    name,
                }),
                None if db.relation_exists(&name) => Err(not_a_sequence(&name)),
                None => Err(SqlError::new(
                    code::UNDEFINED_TABLE,
                    format!("relation \"{name}\" does not exist"),
                )),
            }
        }
        v => {
            let oid = crate::value::as_i64(v).unwrap_or(0);
            let id = u32::try_from(oid - FIRST_USER_OID).ok();
            match id.and_then(|id| db.sequence_by_id(id)) {
                Some(info) => Ok(Named {
                    id: info.def.id,
                    name: info.def.name,
                }),
                None => Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!("\"{oid}\" is not a sequence"),
                )),
            }
        }
    }
}

impl StatementSequences {
    pub fn new(
        db: &Database,
        session: SessionSequences,
        auth: Option<std::sync::Arc<crate::acl::Authority>>,
    ) -> StatementSequences {
        StatementSequences {
            db: db.clone(),
            session: RefCell::new(session),
            durable_lsn: Cell::new(0),
            auth,
            read_only: false,
        }
    }

    /// PostgreSQL's checks of the sequence functions: `nextval` needs USAGE or UPDATE,
    /// `currval` and `lastval` SELECT or USAGE, `setval` UPDATE (42501 "permission
    /// denied for sequence s"). An identity column's `nextval` is not checked.
    fn allowed(&self, name: &str, any_of: u16) -> SqlResult<()> {
        let Some(auth) = &self.auth else {
            return Ok(());
        };
        use crate::acl::RelKind;
        if auth.superuser || auth.relation_mask(name, RelKind::Sequence, any_of) != 0 {
            return Ok(());
        }
        Err(crate::acl::denied(RelKind::Sequence, name))
    }

    /// The session's state back, and the WAL position its values need durable (0:
    /// none).
    pub fn finish(self) -> (SessionSequences, u64) {
        (self.session.into_inner(), self.durable_lsn.get())
    }

    fn needs(&self, lsn: u64) {
        self.durable_lsn.set(self.durable_lsn.get().max(lsn));
    }

    /// `nextval(seq)`: from the session's cache, else from the shared counter.
    /// The statement's transaction is READ ONLY.
    pub fn with_read_only(mut self, read_only: bool) -> StatementSequences {
        self.read_only = read_only;
        self
    }

    pub fn nextval(&self, arg: &Value) -> SqlResult<i64> {
        use walden::privilege::bits;
        if self.read_only {
            return Err(crate::isolation::read_only_refusal("nextval()"));
        }
        let seq = resolve(&self.db, arg)?;
        self.allowed(&seq.name, bits::USAGE | bits::UPDATE)?;
        self.nextval_of(seq.id)
    }

    /// `nextval` of the sequence with this id (an identity column's).
    pub fn nextval_of(&self, id: u32) -> SqlResult<i64> {
        let mut session = self.session.borrow_mut();
        let seen = session.seen.entry(id).or_insert(Seen {
            current: None,
            cached: None,
        });
        let value = match seen.cached.as_mut().filter(|c| c.left > 0) {
            Some(c) => {
                c.last = after(&c.def, c.last);
                c.left -= 1;
                c.last
            }
            None => {
                let got = self.db.nextval(id)?;
                self.needs(got.durable_lsn);
                // Only a CACHE above 1 leaves values to step through here; its
                // definition is read then, not on every call.
                seen.cached = if got.count > 1 {
                    self.db.sequence_by_id(id).map(|s| Cached {
                        last: got.first,
                        left: got.count - 1,
                        def: s.def,
                    })
                } else {
                    None
                };
                got.first
            }
        };
        seen.current = Some(value);
        session.last_used = Some(id);
        Ok(value)
    }

    /// `currval(seq)`: what `nextval` gave this session last.
    pub fn currval(&self, arg: &Value) -> SqlResult<i64> {
        use walden::privilege::bits;
        let seq = resolve(&self.db, arg)?;
        self.allowed(&seq.name, bits::SELECT | bits::USAGE)?;
        let session = self.session.borrow();
        session
            .seen
            .get(&seq.id)
            .and_then(|s| s.current)
            .ok_or_else(|| {
                SqlError::new(
                    code::OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!(
                        "currval of sequence \"{}\" is not yet defined in this session",
                        seq.name
                    ),
                )
            })
    }

    /// `lastval()`: what `nextval` gave this session last, of any sequence still there.
    pub fn lastval(&self) -> SqlResult<i64> {
        let session = self.session.borrow();
        let undefined = || {
            SqlError::new(
                code::OBJECT_NOT_IN_PREREQUISITE_STATE,
                "lastval is not yet defined in this session",
            )
        };
        let id = session.last_used.ok_or_else(undefined)?;
        let Some(info) = self.db.sequence_by_id(id) else {
            return Err(undefined());
        };
        self.allowed(
            &info.def.name,
            walden::privilege::bits::SELECT | walden::privilege::bits::USAGE,
        )?;
        session
            .seen
            .get(&id)
            .and_then(|s| s.current)
            .ok_or_else(undefined)
    }

    /// `setval(seq, value [, is_called])`: sets the shared counter and drops the
    /// session's cache of it; with is_called, `currval` is the value.
    pub fn setval(&self, arg: &Value, value: i64, is_called: bool) -> SqlResult<i64> {
        if self.read_only {
            return Err(crate::isolation::read_only_refusal("setval()"));
        }
        let seq = resolve(&self.db, arg)?;
        self.allowed(&seq.name, walden::privilege::bits::UPDATE)?;
        let lsn = self.db.setval(seq.id, value, is_called)?;
        self.needs(lsn);
        let mut session = self.session.borrow_mut();
        let seen = session.seen.entry(seq.id).or_insert(Seen {
            current: None,
            cached: None,
        });
        seen.cached = None;
        if is_called {
            seen.current = Some(value);
            session.last_used = Some(seq.id);
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relation_names_read_as_postgres_reads_them() {
        let n = |s: &str| relation_name_of_text(s).map_err(|e| e.code);
        assert_eq!(n("Seq"), Ok((None, "seq".into())));
        assert_eq!(n(" \"Seq\" "), Ok((None, "Seq".into())));
        assert_eq!(n("public.s"), Ok((Some("public".into()), "s".into())));
        assert_eq!(
            n("\"a\"\"b\".\"c.d\""),
            Ok((Some("a\"b".into()), "c.d".into()))
        );
        assert_eq!(n("a.b.c"), Err("0A000"));
        assert_eq!(n(""), Err("42602"));
        assert_eq!(n("a b"), Err("42602"));
        assert_eq!(n("\"open"), Err("42602"));
        assert_eq!(n("a."), Err("42602"));
    }

    #[test]
    fn cached_values_cycle_at_a_bound() {
        let mut def = SequenceDef::new("s", walden::SeqType::Int2);
        def.max_value = 3;
        def.cycle = true;
        assert_eq!(after(&def, 2), 3);
        assert_eq!(after(&def, 3), 1);
        def.increment = -1;
        assert_eq!(after(&def, 1), 3);
    }
}
