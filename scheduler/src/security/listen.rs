//! The exposure rule: loopback may be plain and open; any other address needs TLS and a
//! way to authenticate clients: bearer tokens, client certificates (mutual TLS), or both.

use std::net::SocketAddr;

/// Why the service refuses to listen on an address.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ListenError {
    /// A non-loopback address without a TLS certificate and key.
    #[error("refusing to listen on {0}: it is not a loopback address, so TLS is required (give --tls-cert and --tls-key)")]
    NoTls(SocketAddr),
    /// A non-loopback address with neither a tokens file nor a client CA.
    #[error("refusing to listen on {0}: it is not a loopback address, so bearer tokens or client certificates are required (give --tokens FILE, --client-ca PEM, or both)")]
    NoTokens(SocketAddr),
}

/// Checks that serving on `addr` is allowed: a loopback address (127.0.0.0/8, ::1) always
/// is; any other (including the unspecified 0.0.0.0 / ::) only with `tls` and client
/// authentication (`auth`: a tokens file, a client CA, or both).
///
/// # Errors
/// [`ListenError::NoTls`] first, then [`ListenError::NoTokens`].
pub fn check_listen(addr: SocketAddr, tls: bool, auth: bool) -> Result<(), ListenError> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    if !tls {
        return Err(ListenError::NoTls(addr));
    }
    if !auth {
        return Err(ListenError::NoTokens(addr));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_open_anything_else_needs_tls_and_tokens() {
        let lo: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let lo6: SocketAddr = "[::1]:7000".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:7000".parse().unwrap();
        let lan: SocketAddr = "10.1.2.3:7000".parse().unwrap();
        assert_eq!(check_listen(lo, false, false), Ok(()));
        assert_eq!(check_listen(lo6, false, false), Ok(()));
        assert_eq!(check_listen(any, false, true), Err(ListenError::NoTls(any)));
        assert_eq!(
            check_listen(lan, true, false),
            Err(ListenError::NoTokens(lan))
        );
        assert_eq!(check_listen(lan, true, true), Ok(()));
    }
}
