//! The authorization rule: which principal may make which request.
//!
//! The service's router knows which tenant a request touches (a submit's `tenant` field, the
//! owner of the job a `GET` or a cancel names); it tells the security layer through an
//! [`AccessResolver`], called with the request's method, path and (size-checked) body. The
//! rule is then:
//!
//! * [`Access::Open`]: anyone authenticated (e.g. the OpenAPI description);
//! * [`Access::Tenant`]: an admin, or a principal whose `tenants` holds that tenant;
//! * [`Access::Admin`]: admins only — cluster-wide calls (node events, decision stream,
//!   listing every job), and the default for anything the resolver does not recognise.
//!
//! Otherwise `403 Forbidden`. A tenant thus cannot submit as, read, or cancel the jobs of a
//! tenant it is not listed for.

use std::sync::Arc;

use axum::http::Method;

use super::tokens::Principal;

/// What a request needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Any authenticated principal.
    Open,
    /// A principal allowed to act for this tenant.
    Tenant(String),
    /// Admins only.
    Admin,
}

/// Tells the security layer what a request needs, from its method, path and body bytes. A
/// resolver that cannot tell (e.g. a body that does not parse) should return
/// [`Access::Admin`] — the handler will reject the request for an admin anyway.
pub type AccessResolver = Arc<dyn Fn(&Method, &str, &[u8]) -> Access + Send + Sync>;

/// A resolver that asks for admin on every request (safe default).
pub fn admin_only() -> AccessResolver {
    Arc::new(|_, _, _| Access::Admin)
}

/// Applies the rule.
///
/// # Errors
/// A message for the `403` body naming the principal and what it lacked.
pub fn authorize(p: &Principal, access: &Access) -> Result<(), String> {
    match access {
        Access::Open => Ok(()),
        Access::Tenant(t) if p.may_act_for(t) => Ok(()),
        Access::Tenant(t) => Err(format!(
            "principal `{}` may not act for tenant `{t}`",
            p.name
        )),
        Access::Admin if p.admin => Ok(()),
        Access::Admin => Err(format!(
            "principal `{}` is not an admin; this call is cluster-wide",
            p.name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn tenant_principals_act_for_their_tenants_only() {
        let a = Principal {
            name: "a".into(),
            tenants: BTreeSet::from(["team-a".to_string()]),
            admin: false,
            runtime_estimates: false,
            ..Principal::local()
        };
        assert_eq!(authorize(&a, &Access::Open), Ok(()));
        assert_eq!(authorize(&a, &Access::Tenant("team-a".into())), Ok(()));
        assert_eq!(
            authorize(&a, &Access::Tenant("team-b".into())).unwrap_err(),
            "principal `a` may not act for tenant `team-b`"
        );
        assert!(authorize(&a, &Access::Admin).is_err());
        let root = Principal::local();
        assert_eq!(authorize(&root, &Access::Tenant("team-b".into())), Ok(()));
        assert_eq!(authorize(&root, &Access::Admin), Ok(()));
    }
}
