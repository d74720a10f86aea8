//! The service's security layer.
//!
//! * **Exposure** ([`listen::check_listen`]): a loopback address may be served as plain HTTP
//!   without tokens; any other address must have TLS ([`tls`]) *and* client authentication
//!   — a tokens file, a client CA (mutual TLS: every connection presents a certificate the CA
//!   signed), or both — else the service refuses to start with a message saying what is
//!   missing. Without a tokens file every request is an admin: per-tenant authorization
//!   needs tokens (which may be combined with mutual TLS).
//! * **Authentication** ([`tokens`]): `Authorization: Bearer <token>`; the tokens file (TOML)
//!   maps each token to a principal, the tenants it may act for, or the admin role.
//! * **Limits** ([`layer`]): a request body larger than [`SecurityConfig::max_body_bytes`]
//!   gets `413`; a token that exceeds its rate ([`rate`], a token bucket per principal) gets
//!   `429` with `Retry-After`.
//! * **Authorization** ([`authz`]): a tenant principal reads or changes only its own tenants'
//!   jobs (`403` otherwise); cluster-wide calls (node events, the decision stream) are for
//!   admins only.
//!
//! [`serve::serve`] runs a router behind all of this, over TLS (tokio-rustls) or, on
//! loopback, plain TCP.

pub mod authz;
pub mod layer;
pub mod listen;
pub mod rate;
pub mod serve;
pub mod tls;
pub mod tokens;

pub use authz::{Access, AccessResolver};
pub use layer::{secure, SecurityConfig};
pub use listen::{check_listen, ListenError};
pub use tokens::{Principal, Tokens};
