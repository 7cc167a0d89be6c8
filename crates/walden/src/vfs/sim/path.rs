//! Paths as the simulator's keys: normalized names and their directories.

use std::path::{Component, Path};

/// A path as the simulator's key: its components joined by `/`, with `.` dropped and a
/// leading `/` kept for absolute paths. `..` is kept as a name, not resolved.
pub(super) fn normalize(path: &Path) -> String {
    let mut absolute = false;
    let mut parts: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::RootDir => absolute = true,
            Component::CurDir => {}
            Component::ParentDir => parts.push("..".to_string()),
            Component::Prefix(prefix) => {
                parts.push(prefix.as_os_str().to_string_lossy().into_owned())
            }
            Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// Splits a normalized name into its directory and its last component.
pub(super) fn split_parent(name: &str) -> (&str, &str) {
    match name.rfind('/') {
        Some(0) => ("/", &name[1..]),
        Some(at) => (&name[..at], &name[at + 1..]),
        None => ("", name),
    }
}

pub(super) fn parent_of(name: &str) -> &str {
    split_parent(name).0
}

/// True when `name` is `prefix` or lies below it (whole components, not characters).
pub(super) fn is_under(name: &str, prefix: &str) -> bool {
    if prefix.is_empty() {
        return true;
    }
    if prefix.ends_with('/') {
        return name.starts_with(prefix);
    }
    name == prefix || (name.starts_with(prefix) && name.as_bytes().get(prefix.len()) == Some(&b'/'))
}
