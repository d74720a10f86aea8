//! The tokens file: bearer token → principal → tenants (or admin).
//!
//! ```toml
//! [[token]]
//! token = "0123456789abcdef0123"   # at least 16 characters of A-Z a-z 0-9 . _ ~ -
//! principal = "team-a-ci"
//! tenants = ["team-a"]
//! queues = ["research-a"]           # the spec's queues its jobs may join (`serve` needs them)
//! priority_classes = ["batch"]      # optional: the priorities its jobs may take (else 0 only)
//! runtime_estimates = false         # optional: may its jobs carry `runtime_estimate_ms`?
//! rate_per_second = 50              # optional; else the service's default
//! burst = 100                       # optional
//!
//! [[token]]
//! token = "fedcba9876543210fedc"
//! principal = "cluster-operator"
//! admin = true
//!
//! # Tenant names → the tenant numbers events carry (`JobSpec.tenant`); `serve` needs an
//! # entry for every tenant a token lists.
//! [tenants]
//! team-a = 0
//! team-b = 1
//!
//! # Priority class name → the `priority` a job of that class carries.
//! [priority_classes]
//! batch = 0
//! production = 100
//! ```
//!
//! Unknown keys are refused. Tokens are compared in constant time against every entry.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use axum::http::{header, HeaderMap};
use serde::Deserialize;

/// Who a request acts as.
#[derive(Clone, Debug, PartialEq)]
pub struct Principal {
    /// Name from the tokens file (for logs and rate-limit keys).
    pub name: String,
    /// Tenants whose jobs it may submit, read and cancel.
    pub tenants: BTreeSet<String>,
    /// Admin: any tenant, and cluster-wide calls (nodes, decision stream).
    pub admin: bool,
    /// Queues (the spec's names) a tenant principal's jobs may join.
    pub queues: BTreeSet<String>,
    /// Priority classes a tenant principal's jobs may take (their values in the file's
    /// `[priority_classes]`); none: priority 0 only.
    pub priority_classes: BTreeSet<String>,
    /// Whether a tenant principal's jobs may carry a runtime estimate: only when the
    /// cluster agent stops its jobs at their estimate (a time limit, as Slurm enforces it),
    /// since backfill and shortest-first orders trust it.
    pub runtime_estimates: bool,
    /// Requests per second allowed (token bucket refill), `None` = the service default.
    pub rate_per_second: Option<f64>,
    /// Bucket size, `None` = the service default.
    pub burst: Option<u32>,
}

impl Principal {
    /// The principal of every request when the service runs without tokens (loopback only):
    /// an admin named `local`.
    pub fn local() -> Principal {
        Principal {
            name: "local".into(),
            tenants: BTreeSet::new(),
            admin: true,
            queues: BTreeSet::new(),
            priority_classes: BTreeSet::new(),
            runtime_estimates: true,
            rate_per_second: None,
            burst: None,
        }
    }

    /// Whether it may read or change jobs of `tenant`.
    pub fn may_act_for(&self, tenant: &str) -> bool {
        self.admin || self.tenants.contains(tenant)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    token: Vec<Entry>,
    #[serde(default)]
    tenants: BTreeMap<String, u32>,
    #[serde(default)]
    priority_classes: BTreeMap<String, i32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    token: String,
    principal: String,
    #[serde(default)]
    tenants: Vec<String>,
    #[serde(default)]
    admin: bool,
    #[serde(default)]
    queues: Vec<String>,
    #[serde(default)]
    priority_classes: Vec<String>,
    #[serde(default)]
    runtime_estimates: bool,
    rate_per_second: Option<f64>,
    burst: Option<u32>,
}

/// The loaded tokens file.
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    entries: Vec<(String, Principal)>,
    tenant_ids: BTreeMap<String, u32>,
    priority_classes: BTreeMap<String, i32>,
}

impl Tokens {
    /// Reads and checks a tokens file (see the module docs for its shape).
    ///
    /// # Errors
    /// A message naming the file and the entry: unreadable file, TOML error or unknown key
    /// (with toml's line and column), no `[[token]]`, a token shorter than 16 characters or
    /// with other characters than `A-Z a-z 0-9 . _ ~ -`, a token or principal used twice, an
    /// entry with neither tenants nor `admin = true`, a rate that is not positive; with a
    /// `[tenants]` table, a tenant number given to two names or a token's tenant missing
    /// from it.
    pub fn from_file(path: &Path) -> Result<Tokens, String> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .map_err(|e| format!("tokens file {}: {e}", path.display()))?
                .permissions()
                .mode();
            if mode & 0o022 != 0 {
                return Err(format!(
                    "tokens file {}: writable by {} (mode {:o}): whoever can write it can make themselves an admin; `chmod go-w` it (600 or 640)",
                    path.display(),
                    if mode & 0o002 != 0 { "anyone" } else { "its group" },
                    mode & 0o777
                ));
            }
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("tokens file {}: {e}", path.display()))?;
        Tokens::parse(&text).map_err(|e| format!("tokens file {}: {e}", path.display()))
    }

    /// Parses the text of a tokens file; errors as [`Tokens::from_file`] without the path.
    ///
    /// # Errors
    /// See [`Tokens::from_file`].
    pub fn parse(text: &str) -> Result<Tokens, String> {
        let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        if file.token.is_empty() {
            return Err("no [[token]] entry".into());
        }
        let mut entries: Vec<(String, Principal)> = Vec::new();
        for (i, e) in file.token.into_iter().enumerate() {
            let at = format!("[[token]] #{} (principal `{}`)", i + 1, e.principal);
            let safe = |c: char| c.is_ascii_alphanumeric() || "._~-".contains(c);
            if e.token.len() < 16 || !e.token.chars().all(safe) {
                return Err(format!(
                    "{at}: field `token` must be at least 16 characters of A-Z a-z 0-9 . _ ~ - (e.g. `openssl rand -hex 32`)"
                ));
            }
            if let Some(why) = weak(&e.token) {
                return Err(format!(
                    "{at}: field `token` is weak: {why}; make one with `openssl rand -hex 32`"
                ));
            }
            if e.principal.is_empty() {
                return Err(format!("{at}: field `principal` is empty"));
            }
            if entries.iter().any(|(t, _)| *t == e.token) {
                return Err(format!(
                    "{at}: field `token` repeats an earlier entry's token"
                ));
            }
            if entries.iter().any(|(_, p)| p.name == e.principal) {
                return Err(format!("{at}: field `principal` is used twice"));
            }
            if e.tenants.is_empty() && !e.admin {
                return Err(format!(
                    "{at}: give field `tenants` (the tenants it may act for) or `admin = true`"
                ));
            }
            if let Some(c) = e
                .priority_classes
                .iter()
                .find(|c| !file.priority_classes.contains_key(*c))
            {
                return Err(format!(
                    "{at}: field `priority_classes`: `{c}` is not in the [priority_classes] table"
                ));
            }
            if e.admin && (!e.queues.is_empty() || !e.priority_classes.is_empty()) {
                return Err(format!(
                    "{at}: an admin may use every queue and priority: drop `queues` and `priority_classes`, or `admin = true`"
                ));
            }
            if let Some(r) = e.rate_per_second {
                if !(r.is_finite() && r > 0.0) {
                    return Err(format!("{at}: field `rate_per_second` must be > 0"));
                }
            }
            if e.burst == Some(0) {
                return Err(format!("{at}: field `burst` must be ≥ 1"));
            }
            entries.push((
                e.token,
                Principal {
                    name: e.principal,
                    tenants: e.tenants.into_iter().collect(),
                    admin: e.admin,
                    queues: e.queues.into_iter().collect(),
                    priority_classes: e.priority_classes.into_iter().collect(),
                    runtime_estimates: e.admin || e.runtime_estimates,
                    rate_per_second: e.rate_per_second,
                    burst: e.burst,
                },
            ));
        }
        let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
        for (name, id) in &file.tenants {
            if let Some(other) = seen.insert(*id, name) {
                return Err(format!(
                    "[tenants]: tenant number {id} is given to both `{other}` and `{name}`"
                ));
            }
        }
        if !file.tenants.is_empty() {
            for (i, (_, p)) in entries.iter().enumerate() {
                if let Some(t) = p.tenants.iter().find(|t| !file.tenants.contains_key(*t)) {
                    return Err(format!(
                        "[[token]] #{} (principal `{}`): field `tenants`: `{t}` is not in the [tenants] table",
                        i + 1,
                        p.name
                    ));
                }
            }
        }
        Ok(Tokens {
            entries,
            tenant_ids: file.tenants,
            priority_classes: file.priority_classes,
        })
    }

    /// The `[priority_classes]` table: class name → the `priority` its jobs carry.
    pub fn priority_classes(&self) -> &BTreeMap<String, i32> {
        &self.priority_classes
    }

    /// Every principal, in file order.
    pub fn principals(&self) -> impl Iterator<Item = &Principal> {
        self.entries.iter().map(|(_, p)| p)
    }

    /// The `[tenants]` table: tenant name → the tenant number events carry
    /// (`JobSpec.tenant`); empty when the file has none.
    pub fn tenant_ids(&self) -> &BTreeMap<String, u32> {
        &self.tenant_ids
    }

    /// The first principal (in file order) that lists tenants, if any: `serve` needs the
    /// `[tenants]` table then.
    pub fn first_tenant_principal(&self) -> Option<&Principal> {
        self.entries
            .iter()
            .map(|(_, p)| p)
            .find(|p| !p.admin && !p.tenants.is_empty())
    }

    /// The principal whose token the `Authorization: Bearer` header carries, if any. Every
    /// entry is compared, each in constant time, so the time taken tells nothing about which
    /// prefix matched.
    pub fn authenticate(&self, headers: &HeaderMap) -> Option<&Principal> {
        let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
        let (scheme, cred) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let cred = cred.trim().as_bytes();
        let mut found = None;
        for (t, p) in &self.entries {
            if constant_time_eq(t.as_bytes(), cred) && found.is_none() {
                found = Some(p);
            }
        }
        found
    }
}

/// Why `token` is too easy to guess, if it is: fewer than 8 distinct characters, or one
/// piece repeated (`abcdefgh` twice).
fn weak(token: &str) -> Option<String> {
    let b = token.as_bytes();
    let distinct = b.iter().collect::<BTreeSet<_>>().len();
    if distinct < 8 {
        return Some(format!(
            "it has {distinct} distinct characters (at least 8)"
        ));
    }
    let n = b.len();
    (1..=n / 2)
        .find(|&p| n.is_multiple_of(p) && b.chunks(p).all(|c| c == &b[..p]))
        .map(|p| format!("it repeats `{}` {} times", &token[..p], n / p))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const FILE: &str = r#"
[[token]]
token = "a0b1c2d3e4f5a6b7c8"
principal = "a"
tenants = ["team-a", "team-c"]

[[token]]
token = "f9e8d7c6b5a4f3e2d1"
principal = "ops"
admin = true
rate_per_second = 2.5
burst = 3
"#;

    fn bearer(t: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {t}")).unwrap(),
        );
        h
    }

    #[test]
    fn maps_tokens_to_principals_and_tenants() {
        let t = Tokens::parse(FILE).unwrap();
        let a = t.authenticate(&bearer("a0b1c2d3e4f5a6b7c8")).unwrap();
        assert_eq!(a.name, "a");
        assert!(a.may_act_for("team-a") && a.may_act_for("team-c") && !a.may_act_for("team-b"));
        let ops = t.authenticate(&bearer("f9e8d7c6b5a4f3e2d1")).unwrap();
        assert!(ops.admin && ops.may_act_for("anyone"));
        assert_eq!((ops.rate_per_second, ops.burst), (Some(2.5), Some(3)));
        assert!(t.authenticate(&bearer("a0b1c2d3e4f5a6b7c")).is_none());
        assert!(t.authenticate(&HeaderMap::new()).is_none());
    }

    #[test]
    fn bad_files_name_the_entry_and_field() {
        let e = Tokens::parse("[[token]]\ntoken = \"short\"\nprincipal = \"x\"\ntenants=[\"t\"]\n")
            .unwrap_err();
        assert!(e.contains("#1 (principal `x`): field `token`"), "{e}");
        let e = Tokens::parse("[[token]]\ntoken = \"a0b1c2d3e4f5a6b7c8\"\nprincipal = \"x\"\n")
            .unwrap_err();
        assert!(e.contains("`tenants`"), "{e}");
        let e = Tokens::parse(
            "[[token]]\ntoken = \"a0b1c2d3e4f5a6b7c8\"\nprincipal = \"x\"\nadmin = true\nrole = 1\n",
        )
        .unwrap_err();
        assert!(e.contains("unknown field `role`"), "{e}");
        assert_eq!(Tokens::parse("").unwrap_err(), "no [[token]] entry");
        let with = |table: &str| Tokens::parse(&format!("{FILE}\n[tenants]\n{table}"));
        assert_eq!(
            with("team-a = 0\nteam-c = 0\n").unwrap_err(),
            "[tenants]: tenant number 0 is given to both `team-a` and `team-c`"
        );
        assert_eq!(
            with("team-a = 0\n").unwrap_err(),
            "[[token]] #1 (principal `a`): field `tenants`: `team-c` is not in the [tenants] table"
        );
        let t = with("team-a = 0\nteam-c = 2\n").unwrap();
        assert_eq!(
            t.tenant_ids(),
            &BTreeMap::from([("team-a".to_string(), 0), ("team-c".to_string(), 2)])
        );
        assert_eq!(t.first_tenant_principal().unwrap().name, "a");
        assert!(Tokens::parse(FILE).unwrap().tenant_ids().is_empty());
    }

    /// Attack 8 (the threat model): a world-writable tokens file and a 16-character repeated
    /// token were accepted silently.
    #[test]
    fn a_world_writable_tokens_file_and_weak_tokens_are_accepted() {
        use std::os::unix::fs::PermissionsExt;
        let one = |token: &str| {
            Tokens::parse(&format!(
                "[[token]]\ntoken = \"{token}\"\nprincipal = \"x\"\nadmin = true\n"
            ))
        };
        assert_eq!(
            one("aaaaaaaaaaaaaaaa").unwrap_err(),
            "[[token]] #1 (principal `x`): field `token` is weak: it has 1 distinct characters (at least 8); make one with `openssl rand -hex 32`"
        );
        assert!(one("0123456701234567")
            .unwrap_err()
            .contains("it repeats `01234567` 2 times"));
        assert!(one("0f9c2d5e7a1b4c3d8e6f").is_ok());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        std::fs::write(&path, FILE).unwrap();
        for (mode, who) in [(0o666, "anyone"), (0o620, "its group")] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = Tokens::from_file(&path).unwrap_err();
            assert!(
                e.contains(&format!("writable by {who} (mode {mode:o})")),
                "{e}"
            );
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Tokens::from_file(&path).is_ok());
    }
}
