//! Privileges, PostgreSQL's model, as the catalog and every layer above read them:
//! every table, view and sequence has an owner and an access control list
//! (`aclitem[]`), the schema `public` has one too, and roles are members of roles. The
//! engine stores them (`walden::privilege`); this module says what they allow:
//!
//! - [`Authority`]: the role a statement runs as (`current_user`), whether it is a
//!   superuser, and the roles whose privileges it has (itself, and through INHERIT the
//!   roles it is a member of, PostgreSQL's `roles_is_member_of`).
//! - [`Authority::mask`]: the privileges it holds on an object (PostgreSQL's
//!   `aclmask`), the owner's defaults (`acldefault`) where no list is stored; ACLs as
//!   text (`relacl`).
//!
//! The statements' checks, GRANT and REVOKE are `privileges/`'s; the inquiry functions
//! (`has_table_privilege`, …) are the virtual catalog's
//! (`pg_catalog/privilege_functions.rs`). A superuser passes every check without any
//! lookup: an embedded session, which runs as the bootstrap superuser, pays nothing for
//! privileges.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use walden::privilege::bits;
use walden::{AclItem, Database, ObjectAcl, ObjectKind, Privileges, RoleDef};

use crate::catalog::BOOTSTRAP;
use crate::error::{code, SqlError, SqlResult};

/// The schema every relation is in.
pub const PUBLIC_SCHEMA: &str = "public";

/// What kind of relation an ACL is of: it decides the owner's default privileges and
/// the words of errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelKind {
    Table,
    View,
    Sequence,
}

impl RelKind {
    /// The word errors name it with ("permission denied for table t").
    pub fn word(self) -> &'static str {
        match self {
            RelKind::Table => "table",
            RelKind::View => "view",
            RelKind::Sequence => "sequence",
        }
    }

    /// The privileges an owner holds by default (PostgreSQL's `acldefault`).
    pub fn owner_default(self) -> u16 {
        match self {
            RelKind::Table | RelKind::View => {
                bits::INSERT
                    | bits::SELECT
                    | bits::UPDATE
                    | bits::DELETE
                    | bits::TRUNCATE
                    | bits::REFERENCES
                    | bits::TRIGGER
            }
            RelKind::Sequence => bits::SELECT | bits::UPDATE | bits::USAGE,
        }
    }
}

/// The privileges a column may be granted (PostgreSQL's `ACL_ALL_RIGHTS_COLUMN`).
pub const COLUMN_PRIVS: u16 = bits::SELECT | bits::INSERT | bits::UPDATE | bits::REFERENCES;

/// A relation's columns by name, each with the stored position its privileges are
/// keyed by (a table's place among all its stored columns, a view's output position);
/// None for a sequence or no relation.
pub fn column_positions(db: &Database, name: &str) -> Option<Vec<(String, u32)>> {
    if let (Ok(schema), Ok(at)) = (db.schema(name), db.stored_positions(name)) {
        return Some(schema.columns.into_iter().map(|c| c.name).zip(at).collect());
    }
    let view = db.view(name)?;
    Some(view.columns.into_iter().zip(0u32..).collect())
}

/// The kind of the relation of that name, if there is one.
pub fn rel_kind(db: &Database, name: &str) -> Option<RelKind> {
    match db.relation_kind(name)? {
        walden::RelationKind::Table => Some(RelKind::Table),
        walden::RelationKind::View => Some(RelKind::View),
        walden::RelationKind::Sequence => Some(RelKind::Sequence),
        walden::RelationKind::Index => None,
    }
}

/// The letters of `aclitem`'s text, in PostgreSQL's order (`ACL_ALL_RIGHTS_STR`).
pub(crate) const LETTERS: &[(char, u16)] = &[
    ('a', bits::INSERT),
    ('r', bits::SELECT),
    ('w', bits::UPDATE),
    ('d', bits::DELETE),
    ('D', bits::TRUNCATE),
    ('x', bits::REFERENCES),
    ('t', bits::TRIGGER),
    ('U', bits::USAGE),
    ('C', bits::CREATE),
];

/// A role name as `aclitem`'s text writes it (PostgreSQL's `putid`: quoted unless
/// letters, digits and underscores).
pub(crate) fn put_id(out: &mut String, name: &str) {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii());
    if plain {
        out.push_str(name);
    } else {
        out.push('"');
        for c in name.chars() {
            if c == '"' {
                out.push('"');
            }
            out.push(c);
        }
        out.push('"');
    }
}

/// One item as text: `grantee=privileges/grantor`, a `*` after each grantable one.
pub fn item_text(item: &AclItem) -> String {
    let mut s = String::new();
    put_id(&mut s, &item.grantee);
    s.push('=');
    for (letter, bit) in LETTERS {
        if item.privs & bit != 0 {
            s.push(*letter);
            if item.grantable & bit != 0 {
                s.push('*');
            }
        }
    }
    s.push('/');
    put_id(&mut s, &item.grantor);
    s
}

/// A relation's entry, or the default one: the bootstrap superuser's.
pub fn relation_acl(p: &Privileges, name: &str) -> ObjectAcl {
    p.relations
        .get(name)
        .cloned()
        .unwrap_or_else(|| ObjectAcl::owned_by(BOOTSTRAP))
}

/// A schema's entry, or its default: `public` is the bootstrap superuser's, USAGE for
/// everyone and CREATE for its owner only (PostgreSQL 15's, where it is the database
/// owner's).
pub fn schema_acl(p: &Privileges, name: &str) -> ObjectAcl {
    p.schemas.get(name).cloned().unwrap_or_else(|| ObjectAcl {
        owner: BOOTSTRAP.to_string(),
        acl: Some(schema_default_items(BOOTSTRAP)),
        columns: Default::default(),
    })
}

pub(crate) fn schema_default_items(owner: &str) -> Vec<AclItem> {
    vec![
        AclItem {
            grantee: owner.to_string(),
            grantor: owner.to_string(),
            privs: bits::USAGE | bits::CREATE,
            grantable: 0,
        },
        AclItem {
            grantee: walden::privilege::PUBLIC.to_string(),
            grantor: owner.to_string(),
            privs: bits::USAGE,
            grantable: 0,
        },
    ]
}

/// The items of an entry, its defaults where none are stored.
pub fn items_of(acl: &ObjectAcl, default_privs: u16) -> Vec<AclItem> {
    match &acl.acl {
        Some(items) => items.clone(),
        None => vec![AclItem {
            grantee: acl.owner.clone(),
            grantor: acl.owner.clone(),
            privs: default_privs,
            grantable: 0,
        }],
    }
}

/// `relacl` as PostgreSQL shows it: NULL while the defaults hold, else
/// `{item,item}` (each item quoted when it has a character an array needs quoted).
pub fn acl_text(acl: &ObjectAcl) -> Option<String> {
    Some(items_text(acl.acl.as_ref()?))
}

/// A list of items as `aclitem[]`'s text.
pub fn items_text(items: &[AclItem]) -> String {
    let each: Vec<String> = items
        .iter()
        .map(|i| {
            let t = item_text(i);
            if t.contains([',', '"', '\\', ' ', '{', '}']) {
                format!("\"{}\"", t.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                t
            }
        })
        .collect();
    format!("{{{}}}", each.join(","))
}

/// A role's definition as SQL sees it (the bootstrap superuser's while unstored).
pub(crate) fn role_def(roles: &BTreeMap<String, RoleDef>, name: &str) -> Option<RoleDef> {
    roles
        .get(name)
        .cloned()
        .or_else(|| (name == BOOTSTRAP).then(crate::catalog::bootstrap_role))
}

/// The roles `user` is a member of, directly or through others, itself first;
/// `privs` follows a role's memberships only when it INHERITs (PostgreSQL's
/// `roles_is_member_of` with ROLERECURSE_PRIVS).
pub(crate) fn member_closure(
    p: &Privileges,
    roles: &BTreeMap<String, RoleDef>,
    user: &str,
    privs: bool,
) -> HashSet<String> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut todo = vec![user.to_string()];
    seen.insert(user.to_string());
    while let Some(r) = todo.pop() {
        if privs && !role_def(roles, &r).is_none_or(|d| d.inherit) {
            continue;
        }
        for (role, member) in p.members.keys() {
            if *member == r && seen.insert(role.clone()) {
                todo.push(role.clone());
            }
        }
    }
    seen
}

/// Whether `member` is a member of `role`, directly or not (for cycles: PostgreSQL
/// refuses a grant that would make a role a member of itself).
pub fn is_member_of(p: &Privileges, member: &str, role: &str) -> bool {
    member_closure(p, &BTreeMap::new(), member, false).contains(role)
}

/// Who a statement runs as, and what it may do: made from the roles and privileges of
/// one moment (`Database::auth_state`), cached by the session while they hold.
#[derive(Debug, Clone)]
pub struct Authority {
    pub user: String,
    pub superuser: bool,
    /// Roles whose privileges the user has (itself included).
    privs_of: HashSet<String>,
    /// Roles the user is a member of (itself included): the roles SET ROLE may take.
    member_of: HashSet<String>,
    pub privileges: Arc<Privileges>,
    pub roles: Arc<BTreeMap<String, RoleDef>>,
    /// The generation of roles and privileges it was made of.
    pub generation: u64,
}

impl Authority {
    /// The authority of `user` as the database is now.
    pub fn of(db: &Database, user: &str) -> Authority {
        let (generation, privileges, roles) = db.auth_state();
        Authority::from_state(generation, privileges, Arc::new(roles), user)
    }

    pub fn from_state(
        generation: u64,
        privileges: Arc<Privileges>,
        roles: Arc<BTreeMap<String, RoleDef>>,
        user: &str,
    ) -> Authority {
        let def = role_def(&roles, user);
        let superuser = def.as_ref().is_some_and(|d| d.superuser);
        let (privs_of, member_of) = if superuser {
            (HashSet::new(), HashSet::new())
        } else {
            (
                member_closure(&privileges, &roles, user, true),
                member_closure(&privileges, &roles, user, false),
            )
        };
        Authority {
            user: user.to_string(),
            superuser,
            privs_of,
            member_of,
            privileges,
            roles,
            generation,
        }
    }

    /// The same moment's authority of another role (a view's owner).
    pub fn as_role(&self, user: &str) -> Authority {
        Authority::from_state(
            self.generation,
            self.privileges.clone(),
            self.roles.clone(),
            user,
        )
    }

    /// Whether the user has the privileges of `role` (PostgreSQL's `has_privs_of_role`):
    /// what owning an object through a role needs.
    pub fn has_privs_of(&self, role: &str) -> bool {
        self.superuser || self.privs_of.contains(role)
    }

    /// Whether the user is a member of `role` (SET ROLE's test).
    pub fn is_member(&self, role: &str) -> bool {
        self.superuser || self.member_of.contains(role)
    }

    /// The privileges of `mask` the user holds in `items` (PostgreSQL's `aclmask`):
    /// those granted to PUBLIC and to any role whose privileges it has.
    fn items_mask(&self, items: &[AclItem], mask: u16) -> u16 {
        let mut got = 0;
        for i in items {
            if i.grantee.is_empty() || self.privs_of.contains(&i.grantee) {
                got |= i.privs & mask;
            }
        }
        got
    }

    /// The privileges of `mask` the user holds on a relation.
    pub fn relation_mask(&self, name: &str, kind: RelKind, mask: u16) -> u16 {
        if self.superuser {
            return mask;
        }
        // Read in place (every statement of an ordinary role asks, for each relation).
        let (owner, items) = match self.privileges.relations.get(name) {
            Some(acl) => (acl.owner.as_str(), acl.acl.as_deref()),
            None => (BOOTSTRAP, None),
        };
        match items {
            Some(items) => self.items_mask(items, mask),
            // The defaults: the owner's every privilege.
            None if self.privs_of.contains(owner) => kind.owner_default() & mask,
            None => 0,
        }
    }

    /// The privileges of `mask` the user holds on a column through its own list (the
    /// table's are `relation_mask`'s).
    pub fn column_mask(&self, name: &str, position: u32, mask: u16) -> u16 {
        if self.superuser {
            return mask;
        }
        match self.privileges.relations.get(name) {
            Some(acl) => acl
                .columns
                .get(&position)
                .map_or(0, |items| self.items_mask(items, mask)),
            None => 0,
        }
    }

    /// The privileges of `mask` the user holds on some column of a relation through
    /// the columns' lists.
    pub fn any_column_mask(&self, name: &str, mask: u16) -> u16 {
        if self.superuser {
            return mask;
        }
        self.privileges.relations.get(name).map_or(0, |acl| {
            acl.columns
                .values()
                .fold(0, |got, items| got | self.items_mask(items, mask))
        })
    }

    /// Whether any column of the relation has a list of its own.
    pub fn has_column_grants(&self, name: &str) -> bool {
        self.privileges
            .relations
            .get(name)
            .is_some_and(|a| !a.columns.is_empty())
    }

    /// Those the user may grant on (WITH GRANT OPTION, or as the owner).
    pub fn relation_grantable(&self, name: &str, kind: RelKind) -> u16 {
        let acl = relation_acl(&self.privileges, name);
        if self.superuser || self.has_privs_of(&acl.owner) {
            return bits::ALL;
        }
        let mut got = 0;
        for i in items_of(&acl, kind.owner_default()) {
            if i.grantee.is_empty() || self.privs_of.contains(&i.grantee) {
                got |= i.grantable;
            }
        }
        got
    }

    /// Whether the user owns a relation (through a role whose privileges it has).
    pub fn owns_relation(&self, name: &str) -> bool {
        self.superuser
            || self
                .privs_of
                .contains(&relation_acl(&self.privileges, name).owner)
    }

    /// The privileges of `mask` the user holds on a schema.
    pub fn schema_mask(&self, name: &str, mask: u16) -> u16 {
        if self.superuser {
            return mask;
        }
        let acl = schema_acl(&self.privileges, name);
        self.items_mask(&items_of(&acl, bits::USAGE | bits::CREATE), mask)
    }

    /// 42501 "permission denied for table t" unless the user holds every privilege of
    /// `need` on the relation.
    pub fn require(&self, name: &str, kind: RelKind, need: u16) -> SqlResult<()> {
        if self.relation_mask(name, kind, need) == need {
            Ok(())
        } else {
            Err(denied(kind, name))
        }
    }

    /// 42501 "must be owner of table t" unless the user owns it.
    pub fn require_owner(&self, name: &str, kind: RelKind) -> SqlResult<()> {
        if self.owns_relation(name) {
            Ok(())
        } else {
            Err(not_owner(kind.word(), name))
        }
    }

    /// 42501 "permission denied for schema public" unless the user may make relations
    /// in it.
    pub fn require_create(&self) -> SqlResult<()> {
        if self.schema_mask(PUBLIC_SCHEMA, bits::CREATE) != 0 {
            Ok(())
        } else {
            Err(SqlError::new(
                code::INSUFFICIENT_PRIVILEGE,
                format!("permission denied for schema {PUBLIC_SCHEMA}"),
            ))
        }
    }

    /// What a relation of `kind` the user makes starts as: owned by it, with the
    /// default privileges ALTER DEFAULT PRIVILEGES set for it (PostgreSQL's
    /// `get_user_default_acl`: the role's list for every schema, or the built-in
    /// defaults, with its list for `public` added), or the built-in defaults.
    pub fn new_acl(&self, kind: RelKind) -> ObjectAcl {
        let objtype = if kind == RelKind::Sequence {
            b'S'
        } else {
            b'r'
        };
        let key = |schema: &str| (self.user.clone(), schema.to_string(), objtype);
        let every = self.privileges.defaults.get(&key(""));
        let here = self.privileges.defaults.get(&key(PUBLIC_SCHEMA));
        if every.is_none() && here.is_none() {
            return ObjectAcl::owned_by(&self.user);
        }
        let mut items = every
            .cloned()
            .unwrap_or_else(|| items_of(&ObjectAcl::owned_by(&self.user), kind.owner_default()));
        for i in here.into_iter().flatten() {
            match items
                .iter_mut()
                .find(|x| x.grantee == i.grantee && x.grantor == i.grantor)
            {
                Some(x) => {
                    x.privs |= i.privs;
                    x.grantable |= i.grantable;
                }
                None => items.push(i.clone()),
            }
        }
        // An empty list (the owner's own defaults revoked, nothing granted) leaves the
        // built-in defaults, as PostgreSQL 15 does.
        ObjectAcl {
            owner: self.user.clone(),
            acl: (!items.is_empty()).then_some(items),
            columns: Default::default(),
        }
    }
}

/// 42501 "permission denied for table t".
pub fn denied(kind: RelKind, name: &str) -> SqlError {
    SqlError::new(
        code::INSUFFICIENT_PRIVILEGE,
        format!("permission denied for {} {name}", kind.word()),
    )
}

/// 42501 "must be owner of table t".
pub fn not_owner(word: &str, name: &str) -> SqlError {
    SqlError::new(
        code::INSUFFICIENT_PRIVILEGE,
        format!("must be owner of {word} {name}"),
    )
}

/// What a role owns or holds privileges on, as DROP ROLE lists it (PostgreSQL's
/// 2BP01 detail lines), relations by name.
pub fn dependents(p: &Privileges, role: &str, kinds: &dyn Fn(&str) -> &'static str) -> Vec<String> {
    let mut out = Vec::new();
    for (name, acl) in &p.relations {
        if acl.owner == role {
            out.push(format!("owner of {} {name}", kinds(name)));
        } else if acl.names(role) {
            out.push(format!("privileges for {} {name}", kinds(name)));
        }
    }
    for (name, acl) in &p.schemas {
        if acl.owner == role {
            out.push(format!("owner of schema {name}"));
        } else if acl.names(role) {
            out.push(format!("privileges for schema {name}"));
        }
    }
    for ((owner, schema, kind), items) in &p.defaults {
        let what = format!(
            "default privileges on new {} belonging to role {owner}{}",
            if *kind == b'S' {
                "sequences"
            } else {
                "relations"
            },
            if schema.is_empty() {
                String::new()
            } else {
                format!(" in schema {schema}")
            }
        );
        if owner == role {
            out.push(format!("owner of {what}"));
        } else if items.iter().any(|i| i.grantee == role || i.grantor == role) {
            out.push(format!("privileges for {what}"));
        }
    }
    out
}

/// The kinds ObjectKind names, for the engine's calls.
pub const RELATION: ObjectKind = ObjectKind::Relation;
pub const SCHEMA: ObjectKind = ObjectKind::Schema;
