//! Settings: SET (and SET ROLE, SET SESSION AUTHORIZATION), RESET and SHOW, and the
//! API's settings.

use sqlparser::ast;
use walden::Value;

use super::Session;
use crate::catalog::ident_name;
use crate::error::{code, SqlError, SqlResult};
use crate::isolation::{self, IsolationLevel};
use crate::statement::Output;
use crate::types::SqlType;

impl Session {
    /// The settings clients set and read.
    pub fn client_settings(&self) -> &crate::settings::ClientSettings {
        &self.settings.now().client
    }

    /// Sets one of the session's settings as `SET name = value` would, and makes it
    /// the value RESET goes back to (a server applies a client's startup parameters
    /// through it).
    pub fn set_setting(&mut self, name: &str, value: &str) -> SqlResult<()> {
        if crate::settings::def_of(name).is_none_or(|d| {
            d.scope == crate::settings::Scope::Session
                && d.context == crate::settings::Context::User
        }) {
            return self.settings.set_default(name, value);
        }
        let sql = format!(
            "set {} = '{}'",
            crate::pg_catalog::quote_ident(name),
            value.replace('\'', "''")
        );
        self.execute_one(&sql).map(|_| ())
    }

    /// Every setting with its value, as SHOW ALL lists them.
    pub fn settings(&self) -> Vec<crate::settings::Shown> {
        crate::settings::all(
            self.settings.now(),
            self.settings.at_reset(),
            &self.settings_env(),
        )
    }

    fn settings_env(&self) -> crate::settings::Env<'_> {
        crate::settings::Env {
            db: &self.db,
            isolation: self.isolation_now(),
            read_only: self.read_only_now(),
        }
    }

    pub(super) fn set(&mut self, set: &ast::Set) -> SqlResult<Output> {
        let (name, values, local) = match set {
            ast::Set::SingleAssignment {
                variable,
                values,
                scope,
                ..
            } => (
                setting_name(variable)?,
                values.as_slice(),
                matches!(scope, Some(ast::ContextModifier::Local)),
            ),
            ast::Set::SetRole {
                context_modifier,
                role_name,
            } => {
                let local = matches!(context_modifier, Some(ast::ContextModifier::Local));
                let role = role_name.as_ref().map(ident_name);
                return self.set_role(role.as_deref(), local);
            }
            ast::Set::SetSessionAuthorization(param) => {
                let local = matches!(param.scope, ast::ContextModifier::Local);
                let user = match &param.kind {
                    ast::SetSessionAuthorizationParamKind::Default => None,
                    ast::SetSessionAuthorizationParamKind::User(u) => Some(ident_name(u)),
                };
                return self.set_session_authorization(user.as_deref(), local);
            }
            ast::Set::SetTimeZone { value, local } => {
                ("timezone".to_string(), std::slice::from_ref(value), *local)
            }
            ast::Set::SetTransaction {
                modes,
                snapshot,
                session,
            } => {
                if snapshot.is_some() {
                    return Err(SqlError::unsupported("SET TRANSACTION SNAPSHOT"));
                }
                let (level, read_only) = isolation::modes_of(modes)?;
                if *session {
                    // SET SESSION CHARACTERISTICS AS TRANSACTION …
                    if let Some(level) = level {
                        self.set_in_session(
                            "default_transaction_isolation",
                            Some(level.name()),
                            false,
                        )?;
                    }
                    if let Some(ro) = read_only {
                        let v = if ro { "on" } else { "off" };
                        self.set_in_session("default_transaction_read_only", Some(v), false)?;
                    }
                    return Ok(Output::tag("SET"));
                }
                let mut out = Output::tag("SET");
                if !self.in_transaction_block() {
                    out.notices.push(
                        "WARNING:  SET TRANSACTION can only be used in transaction blocks".into(),
                    );
                }
                if let Some(level) = level {
                    self.set_block_isolation(level)?;
                }
                if let Some(ro) = read_only {
                    self.set_block_read_only(ro)?;
                }
                return Ok(out);
            }
            _ => {
                return Err(SqlError::unsupported(format!(
                    "{}",
                    crate::error::clip(&set.to_string())
                )))
            }
        };
        let raw = set_value(&name, values)?;
        self.set_named(&name, raw.as_deref(), local)
    }

    /// `SET [LOCAL] name = raw` (`raw` None: `= DEFAULT`, RESET).
    fn set_named(&mut self, name: &str, raw: Option<&str>, local: bool) -> SqlResult<Output> {
        // `SET role = …` and `SET session_authorization = …` are SET ROLE's and SET
        // SESSION AUTHORIZATION's other spellings.
        if name.eq_ignore_ascii_case("role") {
            return self.set_role(raw, local);
        }
        if name.eq_ignore_ascii_case("session_authorization") {
            return self.set_session_authorization(raw, local);
        }
        let def = crate::settings::def_of(name);
        let mut out = Output::tag("SET");
        match def {
            Some(d) if d.context != crate::settings::Context::User => {
                return Err(crate::settings::read_only(d))
            }
            Some(d) if d.scope == crate::settings::Scope::Database => {
                let (Some(raw), false) = (raw, local) else {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        format!(
                            "{} is a database-wide setting: only SET (not SET LOCAL or RESET) changes it",
                            d.name
                        ),
                    ));
                };
                crate::settings::set_database(&self.db, d, raw)?;
            }
            Some(d) if d.name == "transaction_read_only" => {
                let ro = match raw {
                    Some(raw) => crate::settings::parse_bool(d.name, raw)?,
                    None => self.settings.now().default_read_only,
                };
                self.set_block_read_only(ro)?;
            }
            Some(d) if d.scope == crate::settings::Scope::Transaction => {
                // Outside a block it would set the level of the SET's own transaction.
                let level = match raw {
                    Some(raw) => IsolationLevel::parse_setting(d.name, raw)?,
                    None => self.settings.now().default_isolation,
                };
                self.set_block_isolation(level)?;
            }
            _ => {
                if local && !self.in_transaction_block() {
                    out.notices
                        .push("WARNING:  SET LOCAL can only be used in transaction blocks".into());
                }
                let name = def.map_or(name, |d| d.name);
                self.set_in_session(name, raw, local)?;
            }
        }
        Ok(out)
    }

    /// SET [LOCAL] ROLE name | NONE (`role` None), PostgreSQL's: the session user must
    /// be a member of the role (a superuser may take any), checked against the role that
    /// logged in… as the session user is now (SET SESSION AUTHORIZATION changes it).
    fn set_role(&mut self, role: Option<&str>, local: bool) -> SqlResult<Output> {
        let mut out = Output::tag("SET");
        let session_user = self.user();
        let role = match role {
            None | Some("none") => None,
            Some(name) => {
                let Some(def) = crate::roles::find(&self.db, name) else {
                    return Err(SqlError::new(
                        code::UNDEFINED_OBJECT,
                        format!("role \"{name}\" does not exist"),
                    ));
                };
                let me = crate::privileges::Authority::of(&self.db, &session_user);
                if !me.is_member(name) {
                    return Err(SqlError::new(
                        code::INSUFFICIENT_PRIVILEGE,
                        format!("permission denied to set role \"{name}\""),
                    ));
                }
                Some((name.to_string(), def.superuser))
            }
        };
        if local && !self.in_transaction_block() {
            out.notices
                .push("WARNING:  SET LOCAL can only be used in transaction blocks".into());
        }
        let in_block = self.in_transaction_block();
        if !in_block {
            self.settings.begin();
        }
        self.settings.set_identity(local, |s| {
            s.role = role.as_ref().map(|(n, _)| n.clone());
            s.role_is_superuser = role.as_ref().is_some_and(|(_, su)| *su);
        });
        if !in_block {
            self.settings.commit();
        }
        Ok(out)
    }

    /// SET [LOCAL] SESSION AUTHORIZATION name | DEFAULT (`user` None): only a role that
    /// logged in as a superuser may (PostgreSQL's rule); SET ROLE is reset.
    fn set_session_authorization(&mut self, user: Option<&str>, local: bool) -> SqlResult<Output> {
        let out = Output::tag("SET");
        let (login, login_super) = {
            let now = self.settings.now();
            (now.login_user.clone(), now.login_is_superuser)
        };
        let target = user.unwrap_or(&login).to_string();
        let Some(def) = crate::roles::find(&self.db, &target) else {
            return Err(SqlError::new(
                code::UNDEFINED_OBJECT,
                format!("role \"{target}\" does not exist"),
            ));
        };
        if target != login && !login_super {
            return Err(SqlError::new(
                code::INSUFFICIENT_PRIVILEGE,
                "permission denied to set session authorization",
            ));
        }
        let in_block = self.in_transaction_block();
        if !in_block {
            self.settings.begin();
        }
        self.settings.set_identity(local, |s| {
            s.session_user = target.clone();
            s.user_is_superuser = def.superuser;
            s.role = None;
            s.role_is_superuser = false;
        });
        if !in_block {
            self.settings.commit();
        }
        Ok(out)
    }

    /// SET or SET LOCAL (`raw` None: RESET) of a session-scoped or custom setting: in
    /// the block running, or outside one as a transaction of its own.
    fn set_in_session(&mut self, name: &str, raw: Option<&str>, local: bool) -> SqlResult<()> {
        if self.in_transaction_block() {
            return self.settings.set(name, raw, local);
        }
        self.settings.begin();
        let r = self.settings.set(name, raw, local);
        self.settings.commit();
        r
    }

    /// RESET name, RESET ALL.
    pub(super) fn reset(&mut self, r: &ast::ResetStatement) -> SqlResult<Output> {
        match &r.reset {
            ast::Reset::ALL => {
                let in_block = self.in_transaction_block();
                if !in_block {
                    self.settings.begin();
                }
                self.settings.reset_all();
                if !in_block {
                    self.settings.commit();
                }
                Ok(Output::tag("RESET"))
            }
            ast::Reset::ConfigurationParameter(name) => {
                let name = setting_name(name)?;
                let mut out = self.set_named(&name, None, false)?;
                out.tag = "RESET".into();
                Ok(out)
            }
            ast::Reset::SessionAuthorization => {
                let mut out = self.set_session_authorization(None, false)?;
                out.tag = "RESET".into();
                Ok(out)
            }
        }
    }

    pub(super) fn show(&mut self, variable: &[ast::Ident]) -> SqlResult<Output> {
        let mut out = Output::tag("SHOW");
        out.columns = self.show_columns(variable)?;
        let name = show_name(variable);
        if name == "all" {
            for s in self.settings() {
                out.rows.push(vec![
                    Value::Text(s.name),
                    Value::Text(s.value),
                    Value::Text(s.def.description.into()),
                ]);
            }
        } else {
            let value = crate::settings::value_of(&name, self.settings.now(), &self.settings_env());
            out.rows.push(vec![Value::Text(value.unwrap_or_default())]);
        }
        Ok(out)
    }

    /// SHOW's columns: the setting's one, named for it, or SHOW ALL's three.
    pub(super) fn show_columns(
        &self,
        variable: &[ast::Ident],
    ) -> SqlResult<Vec<(String, SqlType)>> {
        let name = show_name(variable);
        if name == "all" {
            return Ok(vec![
                ("name".into(), SqlType::Text),
                ("setting".into(), SqlType::Text),
                ("description".into(), SqlType::Text),
            ]);
        }
        if crate::settings::value_of(&name, self.settings.now(), &self.settings_env()).is_none() {
            return Err(crate::settings::unknown(&name));
        }
        let column = crate::settings::def_of(&name).map_or(name.clone(), |d| d.name.to_string());
        Ok(vec![(column, SqlType::Text)])
    }
}

/// The setting SHOW names: one name, PostgreSQL's `TRANSACTION ISOLATION LEVEL` or
/// `TIME ZONE`, or a custom setting's `a.b`.
fn show_name(variable: &[ast::Ident]) -> String {
    let words: Vec<String> = variable.iter().map(ident_name).collect();
    match words.join(" ").as_str() {
        "transaction isolation level" => "transaction_isolation".into(),
        "time zone" => "timezone".into(),
        one if words.len() == 1 => one.to_string(),
        _ => words.join("."),
    }
}

/// The setting SET or RESET names: one name, or a custom setting's `a.b`.
fn setting_name(name: &ast::ObjectName) -> SqlResult<String> {
    let parts: Option<Vec<String>> = name
        .0
        .iter()
        .map(|p| p.as_ident().map(ident_name))
        .collect();
    parts
        .map(|p| p.join("."))
        .ok_or_else(|| SqlError::syntax(format!("syntax error at or near \"{name}\"")))
}

/// The value SET gives, as written (sizes' units are case-sensitive); None for
/// DEFAULT.
fn set_value(name: &str, values: &[ast::Expr]) -> SqlResult<Option<String>> {
    let one = |e: &ast::Expr| match e {
        ast::Expr::Identifier(id) => Some(ident_name(id)),
        ast::Expr::Value(v) => Some(match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            ast::Value::Boolean(b) => b.to_string(),
            ast::Value::Number(n, _) => n.clone(),
            other => other.to_string(),
        }),
        // `SET extra_float_digits = -3`
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => Some(format!("-{n}")),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    };
    if let [ast::Expr::Identifier(id)] = values {
        if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default") {
            return Ok(None);
        }
    }
    let raw = match values {
        [v] => one(v),
        // A list (`SET search_path = "$user", public`): its items as written.
        many if many.len() > 1 && name.eq_ignore_ascii_case("search_path") => many
            .iter()
            .map(|v| match v {
                ast::Expr::Identifier(id) if id.quote_style.is_some() => {
                    Some(format!("\"{}\"", id.value))
                }
                v => one(v),
            })
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(", ")),
        _ => None,
    };
    match raw {
        Some(raw) => Ok(Some(raw)),
        None => Err(SqlError::syntax(format!("SET {name} takes one value"))),
    }
}
