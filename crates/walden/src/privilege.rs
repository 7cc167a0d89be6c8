//! Privileges as the engine keeps them: who owns each relation and schema, its access
//! control list (PostgreSQL's `aclitem[]`), and which roles are members of which. The
//! engine stores, logs and recovers them; what they allow is the SQL layer's to decide
//! (walden-sql's `privileges` module checks every statement against them), as the
//! engine gives roles' attributes no meaning of its own.
//!
//! Relations are named as the catalog names them (tables, views and sequences share a
//! namespace); an entry follows its relation when it is renamed and goes when it is
//! dropped (`Catalog`'s relation methods call `relation_renamed` and `relation_gone`).
//! A relation without an entry (one made before format 22) is owned by the bootstrap
//! superuser, with the default privileges. Roles are named too: a role's rename renames
//! it in every entry (`role_renamed`).
//!
//! Two records, each the whole new state of one entry, logged in the transaction that
//! makes the change and applied by redo at its commit, as role records are
//! (docs/recovery.md rule 36): `set_acl` (code 45) and `set_member` (code 46).

use std::collections::BTreeMap;

use crate::codec::{put_string, put_varint, Reader};
use crate::wal::payload::{count, finish, Payload};
use crate::wal::{LogRecord, RecordOwner, RecordType, RedoCtx};

/// Privilege bits, PostgreSQL's `ACL_*` (the letters of `aclitem`'s text).
pub mod bits {
    /// `a`
    pub const INSERT: u16 = 1 << 0;
    /// `r`
    pub const SELECT: u16 = 1 << 1;
    /// `w`
    pub const UPDATE: u16 = 1 << 2;
    /// `d`
    pub const DELETE: u16 = 1 << 3;
    /// `D`
    pub const TRUNCATE: u16 = 1 << 4;
    /// `x`
    pub const REFERENCES: u16 = 1 << 5;
    /// `t`
    pub const TRIGGER: u16 = 1 << 6;
    /// `U`
    pub const USAGE: u16 = 1 << 9;
    /// `C`
    pub const CREATE: u16 = 1 << 10;
    /// Every bit a stored item may carry.
    pub const ALL: u16 =
        INSERT | SELECT | UPDATE | DELETE | TRUNCATE | REFERENCES | TRIGGER | USAGE | CREATE;
}

/// The grantee that stands for every role (PostgreSQL's `PUBLIC`, shown as an empty
/// name in `aclitem`'s text).
pub const PUBLIC: &str = "";

/// One grant: `grantee` holds `privs` from `grantor`, and may grant on those of them in
/// `grantable` (WITH GRANT OPTION; a subset of `privs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclItem {
    pub grantee: String,
    pub grantor: String,
    pub privs: u16,
    pub grantable: u16,
}

/// What kind of object an entry is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKind {
    /// A table, view or sequence (indexes have their table's).
    Relation,
    Schema,
}

impl ObjectKind {
    fn code(self) -> u8 {
        match self {
            ObjectKind::Relation => 0,
            ObjectKind::Schema => 1,
        }
    }

    fn from_code(c: u8) -> Option<ObjectKind> {
        match c {
            0 => Some(ObjectKind::Relation),
            1 => Some(ObjectKind::Schema),
            _ => None,
        }
    }
}

/// An object's owner and its access control list: None is the default, the owner's
/// every privilege (PostgreSQL's NULL `relacl`, `acldefault`). A relation's columns may
/// have lists of their own (PostgreSQL's `attacl`; since format 23), keyed by the
/// column's stored position (a table's place among all its stored columns, dropped ones
/// included, which no ALTER TABLE changes; a view's output position), so that a rename
/// leaves them in place and a column added after a drop never inherits the dropped
/// one's grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectAcl {
    pub owner: String,
    pub acl: Option<Vec<AclItem>>,
    /// Column position → its grants (never an empty list).
    pub columns: BTreeMap<u32, Vec<AclItem>>,
}

impl ObjectAcl {
    /// Owned by `owner`, with the default privileges.
    pub fn owned_by(owner: &str) -> ObjectAcl {
        ObjectAcl {
            owner: owner.to_string(),
            acl: None,
            columns: BTreeMap::new(),
        }
    }

    /// Whether `role` is named in it (as owner, grantee or grantor, of the object or
    /// of a column).
    pub fn names(&self, role: &str) -> bool {
        self.owner == role
            || self
                .acl
                .iter()
                .flatten()
                .chain(self.columns.values().flatten())
                .any(|i| i.grantee == role || i.grantor == role)
    }

    fn rename_role(&mut self, old: &str, new: &str) {
        if self.owner == old {
            self.owner = new.to_string();
        }
        for item in self
            .acl
            .iter_mut()
            .flatten()
            .chain(self.columns.values_mut().flatten())
        {
            if item.grantee == old {
                item.grantee = new.to_string();
            }
            if item.grantor == old {
                item.grantor = new.to_string();
            }
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_string(out, &self.owner);
        match &self.acl {
            None => out.push(0),
            Some(items) => {
                out.push(1);
                put_items(out, items);
            }
        }
    }

    fn decode(r: &mut Reader) -> Result<ObjectAcl, String> {
        let owner = r.string()?;
        let acl = match r.u8()? {
            0 => None,
            1 => Some(get_items(r)?),
            other => return Err(format!("acl flag {other}")),
        };
        if owner.is_empty() {
            return Err("an object without an owner".to_string());
        }
        Ok(ObjectAcl {
            owner,
            acl,
            columns: BTreeMap::new(),
        })
    }

    /// The column lists (format 23): `count varint | count × (position varint |
    /// items)`.
    fn encode_columns(&self, out: &mut Vec<u8>) {
        put_varint(out, self.columns.len() as u64);
        for (at, items) in &self.columns {
            put_varint(out, *at as u64);
            put_items(out, items);
        }
    }

    fn decode_columns(&mut self, r: &mut Reader) -> Result<(), String> {
        let n = count(r, 2)?;
        for _ in 0..n {
            let at = r.varint32()?;
            let items = get_items(r)?;
            if items.is_empty() {
                return Err(format!("column {at}: an empty list"));
            }
            if self.columns.insert(at, items).is_some() {
                return Err(format!("column {at} appears twice"));
            }
        }
        Ok(())
    }

    /// Drops the lists of the columns `dropped` says are gone.
    pub fn prune_columns(&mut self, dropped: impl Fn(u32) -> bool) {
        self.columns.retain(|at, _| !dropped(*at));
    }

    fn describe(&self) -> String {
        let list = |items: &[AclItem]| {
            let each: Vec<String> = items
                .iter()
                .map(|i| {
                    format!(
                        "{:?}={:#x}/{:#x}/{:?}",
                        i.grantee, i.privs, i.grantable, i.grantor
                    )
                })
                .collect();
            each.join(" ")
        };
        let mut s = match &self.acl {
            None => format!("owner {:?} default", self.owner),
            Some(items) => format!("owner {:?} acl [{}]", self.owner, list(items)),
        };
        for (at, items) in &self.columns {
            s.push_str(&format!(" column {at} [{}]", list(items)));
        }
        s
    }
}

/// `member` is a member of `role` (PostgreSQL's `pg_auth_members`), granted by
/// `grantor`, and may grant it on when `admin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub grantor: String,
    pub admin: bool,
}

/// The key of a default access control list (PostgreSQL's `pg_default_acl`): the role
/// whose new objects it applies to, the schema (empty: every schema) and the kind of
/// object (`b'r'` tables and views, `b'S'` sequences).
pub type DefaultKey = (String, String, u8);

/// Every owner, access control list and membership.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Privileges {
    pub relations: BTreeMap<String, ObjectAcl>,
    pub schemas: BTreeMap<String, ObjectAcl>,
    /// (role, member) → how.
    pub members: BTreeMap<(String, String), Membership>,
    /// Default access control lists (ALTER DEFAULT PRIVILEGES): a schema-wide one
    /// (empty schema) is the whole list a new object gets (grantors the role), one of
    /// a schema what is added to it.
    pub defaults: BTreeMap<DefaultKey, Vec<AclItem>>,
}

impl Privileges {
    /// The entry of an object.
    pub fn get(&self, kind: ObjectKind, name: &str) -> Option<&ObjectAcl> {
        match kind {
            ObjectKind::Relation => self.relations.get(name),
            ObjectKind::Schema => self.schemas.get(name),
        }
    }

    /// Sets (or, None, removes) the entry of an object.
    pub fn set(&mut self, kind: ObjectKind, name: &str, acl: Option<ObjectAcl>) {
        let map = match kind {
            ObjectKind::Relation => &mut self.relations,
            ObjectKind::Schema => &mut self.schemas,
        };
        match acl {
            Some(acl) => {
                map.insert(name.to_string(), acl);
            }
            None => {
                map.remove(name);
            }
        }
    }

    /// Sets (or, None, removes) a membership.
    pub fn set_member(&mut self, role: &str, member: &str, how: Option<Membership>) {
        let key = (role.to_string(), member.to_string());
        match how {
            Some(m) => {
                self.members.insert(key, m);
            }
            None => {
                self.members.remove(&key);
            }
        }
    }

    pub fn relation_renamed(&mut self, old: &str, new: &str) {
        if old != new {
            if let Some(acl) = self.relations.remove(old) {
                self.relations.insert(new.to_string(), acl);
            }
        }
    }

    pub fn relation_gone(&mut self, name: &str) {
        self.relations.remove(name);
    }

    /// Sets (or, None, removes) a default access control list.
    pub fn set_default(&mut self, key: DefaultKey, items: Option<Vec<AclItem>>) {
        match items {
            Some(items) => {
                self.defaults.insert(key, items);
            }
            None => {
                self.defaults.remove(&key);
            }
        }
    }

    /// A role was renamed: every entry and membership follows it.
    pub fn role_renamed(&mut self, old: &str, new: &str) {
        if old == new {
            return;
        }
        for acl in self.relations.values_mut().chain(self.schemas.values_mut()) {
            acl.rename_role(old, new);
        }
        let defaults = std::mem::take(&mut self.defaults);
        for ((role, schema, kind), items) in defaults {
            let mut acl = ObjectAcl {
                owner: role,
                acl: Some(items),
                columns: BTreeMap::new(),
            };
            acl.rename_role(old, new);
            self.defaults
                .insert((acl.owner, schema, kind), acl.acl.unwrap_or_default());
        }
        let members = std::mem::take(&mut self.members);
        for ((role, member), mut m) in members {
            let swap = |s: String| if s == old { new.to_string() } else { s };
            m.grantor = swap(m.grantor);
            self.members.insert((swap(role), swap(member)), m);
        }
    }

    /// A role was dropped: its memberships go (both ways), as PostgreSQL's do; the
    /// layer above refuses the drop while it owns or holds privileges on objects.
    pub fn role_gone(&mut self, name: &str) {
        self.members
            .retain(|(role, member), _| role != name && member != name);
    }

    /// For a checkpoint (format 22).
    pub fn encode(&self, out: &mut Vec<u8>) {
        for map in [&self.relations, &self.schemas] {
            put_varint(out, map.len() as u64);
            for (name, acl) in map {
                put_string(out, name);
                acl.encode(out);
            }
        }
        put_varint(out, self.members.len() as u64);
        for ((role, member), m) in &self.members {
            put_string(out, role);
            put_string(out, member);
            put_string(out, &m.grantor);
            out.push(m.admin as u8);
        }
        put_varint(out, self.defaults.len() as u64);
        for ((role, schema, kind), items) in &self.defaults {
            put_default(out, role, schema, *kind, items);
        }
        // Column lists (format 23), of the relations that have any.
        let with_columns: Vec<_> = self
            .relations
            .iter()
            .filter(|(_, a)| !a.columns.is_empty())
            .collect();
        put_varint(out, with_columns.len() as u64);
        for (name, acl) in with_columns {
            put_string(out, name);
            acl.encode_columns(out);
        }
    }

    pub fn decode(r: &mut Reader) -> Result<Privileges, String> {
        let mut p = Privileges::default();
        for kind in [ObjectKind::Relation, ObjectKind::Schema] {
            let n = count(r, 3)?;
            for _ in 0..n {
                let name = r.string()?;
                let acl = ObjectAcl::decode(r)?;
                if p.get(kind, &name).is_some() {
                    return Err(format!("privileges of {name:?} appear twice"));
                }
                p.set(kind, &name, Some(acl));
            }
        }
        let n = count(r, 4)?;
        for _ in 0..n {
            let (role, member, grantor) = (r.string()?, r.string()?, r.string()?);
            let admin = flag(r.u8()?)?;
            if p.members.contains_key(&(role.clone(), member.clone())) {
                return Err(format!(
                    "membership of {member:?} in {role:?} appears twice"
                ));
            }
            p.set_member(&role, &member, Some(Membership { grantor, admin }));
        }
        let n = count(r, 5)?;
        for _ in 0..n {
            let (key, items) = get_default(r)?;
            if p.defaults.contains_key(&key) {
                return Err(format!("default privileges of {:?} appear twice", key.0));
            }
            p.defaults.insert(key, items);
        }
        // Column lists follow since format 23; an older section ends here.
        if r.remaining() > 0 {
            let n = count(r, 3)?;
            for _ in 0..n {
                let name = r.string()?;
                let acl = p
                    .relations
                    .get_mut(&name)
                    .ok_or_else(|| format!("column privileges of {name:?}, which has no entry"))?;
                if !acl.columns.is_empty() {
                    return Err(format!("column privileges of {name:?} appear twice"));
                }
                acl.decode_columns(r)?;
                if acl.columns.is_empty() {
                    return Err(format!("column privileges of {name:?}: none listed"));
                }
            }
        }
        Ok(p)
    }
}

fn put_items(out: &mut Vec<u8>, items: &[AclItem]) {
    put_varint(out, items.len() as u64);
    for i in items {
        put_string(out, &i.grantee);
        put_string(out, &i.grantor);
        put_varint(out, i.privs as u64);
        put_varint(out, i.grantable as u64);
    }
}

fn get_items(r: &mut Reader) -> Result<Vec<AclItem>, String> {
    let n = count(r, 4)?;
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        let grantee = r.string()?;
        let grantor = r.string()?;
        let privs = r.varint16()?;
        let grantable = r.varint16()?;
        if privs & !bits::ALL != 0 || grantable & !privs != 0 {
            return Err(format!(
                "acl item of {grantee:?}: privileges {privs:#x}, grantable {grantable:#x}"
            ));
        }
        items.push(AclItem {
            grantee,
            grantor,
            privs,
            grantable,
        });
    }
    Ok(items)
}

fn put_default(out: &mut Vec<u8>, role: &str, schema: &str, kind: u8, items: &[AclItem]) {
    put_string(out, role);
    put_string(out, schema);
    out.push(kind);
    put_items(out, items);
}

fn get_default(r: &mut Reader) -> Result<(DefaultKey, Vec<AclItem>), String> {
    let role = r.string()?;
    let schema = r.string()?;
    let kind = r.u8()?;
    if kind != b'r' && kind != b'S' {
        return Err(format!("default privileges of object kind {kind}"));
    }
    Ok(((role, schema, kind), get_items(r)?))
}

fn flag(b: u8) -> Result<bool, String> {
    match b {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(format!("flag {other}")),
    }
}

// ---------------------------------------------------------------------------------------
// WAL records.

/// An object's owner and access control list were set (or, absent, removed): `kind u8 |
/// name | present u8 | owner | has acl u8 | count varint | count × (grantee | grantor |
/// privileges varint | grantable varint)`.
pub const SET_ACL: RecordType = RecordType::new(45, "set_acl", 0);
/// A membership was granted (or, absent, revoked): `role | member | present u8 |
/// grantor | admin u8`.
pub const SET_MEMBER: RecordType = RecordType::new(46, "set_member", 0);
/// A default access control list was set (or, absent, removed): `role | schema |
/// kind u8 | present u8 | count varint | items`.
pub const SET_DEFAULT_ACL: RecordType = RecordType::new(47, "set_default_acl", 0);

/// A privilege record: the whole new state of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrivilegeRecord {
    SetAcl {
        kind: ObjectKind,
        name: String,
        acl: Option<ObjectAcl>,
    },
    SetMember {
        role: String,
        member: String,
        how: Option<Membership>,
    },
    SetDefault {
        key: DefaultKey,
        items: Option<Vec<AclItem>>,
    },
}

impl Payload for PrivilegeRecord {
    fn record_type(&self) -> RecordType {
        match self {
            PrivilegeRecord::SetAcl { .. } => SET_ACL,
            PrivilegeRecord::SetMember { .. } => SET_MEMBER,
            PrivilegeRecord::SetDefault { .. } => SET_DEFAULT_ACL,
        }
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            PrivilegeRecord::SetAcl { kind, name, acl } => {
                out.push(kind.code());
                put_string(out, name);
                match acl {
                    None => out.push(0),
                    Some(acl) => {
                        out.push(1);
                        acl.encode(out);
                        // Column lists, only when there are some (format 23).
                        if !acl.columns.is_empty() {
                            acl.encode_columns(out);
                        }
                    }
                }
            }
            PrivilegeRecord::SetMember { role, member, how } => {
                put_string(out, role);
                put_string(out, member);
                match how {
                    None => out.push(0),
                    Some(m) => {
                        out.push(1);
                        put_string(out, &m.grantor);
                        out.push(m.admin as u8);
                    }
                }
            }
            PrivilegeRecord::SetDefault { key, items } => {
                put_string(out, &key.0);
                put_string(out, &key.1);
                out.push(key.2);
                match items {
                    None => out.push(0),
                    Some(items) => {
                        out.push(1);
                        put_items(out, items);
                    }
                }
            }
        }
    }
}

impl PrivilegeRecord {
    pub fn decode(t: RecordType, payload: &[u8]) -> Result<PrivilegeRecord, String> {
        let mut r = Reader::new(payload, 0);
        let rec = if t == SET_ACL {
            let code = r.u8()?;
            let kind =
                ObjectKind::from_code(code).ok_or_else(|| format!("unknown object kind {code}"))?;
            let name = r.string()?;
            let acl = if flag(r.u8()?)? {
                let mut acl = ObjectAcl::decode(&mut r)?;
                if r.remaining() > 0 {
                    acl.decode_columns(&mut r)?;
                    if acl.columns.is_empty() {
                        return Err("column privileges: none listed".to_string());
                    }
                    if kind != ObjectKind::Relation {
                        return Err("column privileges of a schema".to_string());
                    }
                }
                Some(acl)
            } else {
                None
            };
            PrivilegeRecord::SetAcl { kind, name, acl }
        } else if t == SET_MEMBER {
            let role = r.string()?;
            let member = r.string()?;
            let how = if flag(r.u8()?)? {
                Some(Membership {
                    grantor: r.string()?,
                    admin: flag(r.u8()?)?,
                })
            } else {
                None
            };
            PrivilegeRecord::SetMember { role, member, how }
        } else if t == SET_DEFAULT_ACL {
            let role = r.string()?;
            let schema = r.string()?;
            let kind = r.u8()?;
            if kind != b'r' && kind != b'S' {
                return Err(format!("default privileges of object kind {kind}"));
            }
            let items = if flag(r.u8()?)? {
                Some(get_items(&mut r)?)
            } else {
                None
            };
            PrivilegeRecord::SetDefault {
                key: (role, schema, kind),
                items,
            }
        } else {
            return Err(format!("record code {} is not a privilege record", t.code));
        };
        finish(&r, t)?;
        Ok(rec)
    }

    /// Applies the change (redo, at its transaction's commit): an access control list
    /// of a relation that is no longer there is passed over.
    pub fn apply(self, cat: &mut crate::catalog::Catalog) {
        match self {
            PrivilegeRecord::SetAcl {
                kind,
                name,
                mut acl,
            } => {
                if kind == ObjectKind::Relation && acl.is_some() && !cat.name_taken(&name) {
                    return;
                }
                // A column dropped since (a checkpoint's catalog may be later than the
                // record) has no grants.
                if let (Some(a), Some(dropped)) = (&mut acl, cat.dropped_columns(&name)) {
                    a.prune_columns(|at| dropped.contains(&at));
                }
                cat.privileges_mut().set(kind, &name, acl);
            }
            PrivilegeRecord::SetMember { role, member, how } => {
                cat.privileges_mut().set_member(&role, &member, how);
            }
            PrivilegeRecord::SetDefault { key, items } => {
                cat.privileges_mut().set_default(key, items);
            }
        }
    }
}

/// The owner of the privilege records.
pub struct PrivilegeOwner;

impl RecordOwner for PrivilegeOwner {
    fn name(&self) -> &'static str {
        "privilege"
    }

    fn types(&self) -> &'static [RecordType] {
        &[SET_ACL, SET_MEMBER, SET_DEFAULT_ACL]
    }

    fn check(&self, rec: &LogRecord) -> Result<(), String> {
        PrivilegeRecord::decode(rec.rtype, &rec.payload).map(|_| ())
    }

    fn describe(&self, rec: &LogRecord) -> Result<String, String> {
        Ok(match PrivilegeRecord::decode(rec.rtype, &rec.payload)? {
            PrivilegeRecord::SetAcl { kind, name, acl } => format!(
                "{} {name:?} {}",
                match kind {
                    ObjectKind::Relation => "relation",
                    ObjectKind::Schema => "schema",
                },
                acl.map_or("removed".to_string(), |a| a.describe())
            ),
            PrivilegeRecord::SetMember { role, member, how } => match how {
                None => format!("role {role:?} member {member:?} revoked"),
                Some(m) => format!(
                    "role {role:?} member {member:?} grantor {:?}{}",
                    m.grantor,
                    if m.admin { " admin" } else { "" }
                ),
            },
            PrivilegeRecord::SetDefault { key, items } => format!(
                "defaults of {:?} schema {:?} kind {} {}",
                key.0,
                key.1,
                key.2 as char,
                match items {
                    None => "removed".to_string(),
                    Some(items) => ObjectAcl {
                        owner: key.0.clone(),
                        acl: Some(items),
                        columns: BTreeMap::new(),
                    }
                    .describe(),
                }
            ),
        })
    }

    /// A privilege change waits for its transaction's commit, as a role change does
    /// (rule 36): each record holds a whole entry, so applying them in commit order
    /// from a checkpoint's catalog, however late, ends at the same state.
    fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> crate::error::Result<()> {
        let decoded =
            PrivilegeRecord::decode(rec.rtype, &rec.payload).map_err(|r| ctx.corrupt(rec, r))?;
        ctx.catalog
            .pend(rec.xid, crate::catalog::Pending::Privilege(decoded));
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wal::payload::check_codec;

    /// A record of each type (also the registry's fuzz samples).
    pub(crate) fn samples() -> Vec<PrivilegeRecord> {
        vec![
            PrivilegeRecord::SetAcl {
                kind: ObjectKind::Relation,
                name: "t".into(),
                acl: Some(ObjectAcl {
                    owner: "alice".into(),
                    acl: Some(vec![
                        AclItem {
                            grantee: "alice".into(),
                            grantor: "alice".into(),
                            privs: bits::SELECT | bits::INSERT,
                            grantable: 0,
                        },
                        AclItem {
                            grantee: PUBLIC.into(),
                            grantor: "alice".into(),
                            privs: bits::SELECT,
                            grantable: bits::SELECT,
                        },
                    ]),
                    columns: BTreeMap::new(),
                }),
            },
            PrivilegeRecord::SetAcl {
                kind: ObjectKind::Relation,
                name: "u".into(),
                acl: Some(ObjectAcl {
                    owner: "alice".into(),
                    acl: None,
                    columns: BTreeMap::from([
                        (
                            0,
                            vec![AclItem {
                                grantee: "bob".into(),
                                grantor: "alice".into(),
                                privs: bits::SELECT | bits::UPDATE,
                                grantable: bits::UPDATE,
                            }],
                        ),
                        (
                            3,
                            vec![AclItem {
                                grantee: PUBLIC.into(),
                                grantor: "alice".into(),
                                privs: bits::INSERT,
                                grantable: 0,
                            }],
                        ),
                    ]),
                }),
            },
            PrivilegeRecord::SetAcl {
                kind: ObjectKind::Schema,
                name: "public".into(),
                acl: None,
            },
            PrivilegeRecord::SetMember {
                role: "staff".into(),
                member: "bob".into(),
                how: Some(Membership {
                    grantor: "postgres".into(),
                    admin: true,
                }),
            },
            PrivilegeRecord::SetMember {
                role: "staff".into(),
                member: "bob".into(),
                how: None,
            },
            PrivilegeRecord::SetDefault {
                key: ("alice".into(), String::new(), b'r'),
                items: Some(vec![AclItem {
                    grantee: "bob".into(),
                    grantor: "alice".into(),
                    privs: bits::SELECT,
                    grantable: 0,
                }]),
            },
            PrivilegeRecord::SetDefault {
                key: ("alice".into(), "public".into(), b'S'),
                items: None,
            },
        ]
    }

    #[test]
    fn records_round_trip_and_reject_damage() {
        check_codec(&samples(), PrivilegeRecord::decode);
    }

    /// A privilege change takes effect at its transaction's commit at redo, never
    /// before, and not at all when the transaction aborted or never ended; one of a
    /// relation that is gone is passed over.
    #[test]
    fn a_change_waits_for_its_commit_at_redo() {
        use crate::catalog::{Catalog, Pending, Table, TableKind};
        use crate::schema::{Column, ColumnType, Schema};
        let mut cat = Catalog::default();
        cat.insert(Table::new(
            4,
            "t",
            Schema::new(vec![Column::new("a", ColumnType::Int4)]),
            TableKind::Heap,
            Vec::new(),
        ));
        let set = |name: &str, owner: &str| {
            Pending::Privilege(PrivilegeRecord::SetAcl {
                kind: ObjectKind::Relation,
                name: name.into(),
                acl: Some(ObjectAcl::owned_by(owner)),
            })
        };
        let owner = |cat: &Catalog| cat.privileges().relations.get("t").map(|a| a.owner.clone());
        cat.pend(5, set("t", "alice"));
        assert_eq!(owner(&cat), None);
        cat.settle_roles(5, false);
        assert_eq!(owner(&cat), None);
        cat.pend(6, set("t", "bob"));
        cat.drop_unsettled_roles();
        cat.settle_roles(6, true);
        assert_eq!(owner(&cat), None);
        cat.pend(7, set("t", "carol"));
        cat.pend(7, set("nosuch", "carol"));
        cat.settle_roles(7, true);
        assert_eq!(owner(&cat).as_deref(), Some("carol"));
        assert!(!cat.privileges().relations.contains_key("nosuch"));
        // A column list of a column dropped since is passed over.
        let mut dropped = Schema::new(vec![
            Column::new("a", ColumnType::Int4),
            Column::new("b", ColumnType::Int4),
        ]);
        dropped.columns[1].dropped = true;
        cat.redefine(4, "t", dropped).unwrap();
        let mut acl = ObjectAcl::owned_by("carol");
        for at in [0, 1] {
            acl.columns.insert(
                at,
                vec![AclItem {
                    grantee: "bob".into(),
                    grantor: "carol".into(),
                    privs: bits::SELECT,
                    grantable: 0,
                }],
            );
        }
        cat.pend(
            8,
            Pending::Privilege(PrivilegeRecord::SetAcl {
                kind: ObjectKind::Relation,
                name: "t".into(),
                acl: Some(acl),
            }),
        );
        cat.settle_roles(8, true);
        let kept: Vec<u32> = cat.privileges().relations["t"]
            .columns
            .keys()
            .copied()
            .collect();
        assert_eq!(kept, vec![0]);
        // The table's drop takes its entry.
        cat.remove(4);
        assert_eq!(owner(&cat), None);
    }

    #[test]
    fn checkpoint_section_round_trips_and_follows_renames() {
        let mut p = Privileges::default();
        for rec in samples() {
            match rec {
                PrivilegeRecord::SetAcl { kind, name, acl } => {
                    p.set(kind, &name, acl.or(Some(ObjectAcl::owned_by("postgres"))))
                }
                PrivilegeRecord::SetMember { role, member, how } => {
                    if how.is_some() {
                        p.set_member(&role, &member, how)
                    }
                }
                PrivilegeRecord::SetDefault { key, items } => {
                    if items.is_some() {
                        p.set_default(key, items)
                    }
                }
            }
        }
        let mut out = Vec::new();
        p.encode(&mut out);
        let back = Privileges::decode(&mut Reader::new(&out, 0)).unwrap();
        assert_eq!(back, p);
        // Cut anywhere, it fails, but where a format 22 section ended (before the
        // column lists): that decodes as the same without them.
        let mut older = p.clone();
        for acl in older.relations.values_mut() {
            acl.columns.clear();
        }
        let mut old_out = Vec::new();
        older.encode(&mut old_out);
        let format22 = old_out.len() - 1;
        for cut in 0..out.len() {
            let r = Privileges::decode(&mut Reader::new(&out[..cut], 0));
            if cut == format22 {
                assert_eq!(r.unwrap(), older);
                continue;
            }
            assert!(
                r.is_err(),
                "a section cut at {cut} of {} decoded",
                out.len()
            );
        }
        assert_eq!(p.relations["u"].columns.len(), 2);
        p.role_renamed("bob", "bert");
        assert_eq!(p.relations["u"].columns[&0][0].grantee, "bert");
        assert!(p.relations["u"].names("bert") && !p.relations["u"].names("bob"));
        p.role_renamed("bert", "bob");
        p.role_renamed("alice", "carol");
        assert_eq!(p.relations["t"].owner, "carol");
        assert!(!p.relations["t"].names("alice"));
        p.role_renamed("bob", "dave");
        assert!(p.members.contains_key(&("staff".into(), "dave".into())));
        p.relation_renamed("t", "u");
        assert!(p.relations.contains_key("u") && !p.relations.contains_key("t"));
        p.role_gone("staff");
        assert!(p.members.is_empty());
    }
}
