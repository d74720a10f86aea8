//! TLS server configuration from PEM files (rustls, ring provider, TLS 1.2 and 1.3,
//! ALPN `http/1.1`).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Builds a server configuration from a certificate chain and a private key, both PEM
/// (the chain leaf first; the key PKCS#8, PKCS#1 or SEC1).
///
/// # Errors
/// A message naming the file: unreadable, no certificate, no key, or a key that does not
/// match the certificate.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    let cert_pem =
        std::fs::read(cert).map_err(|e| format!("TLS certificate {}: {e}", cert.display()))?;
    let key_pem = std::fs::read(key).map_err(|e| format!("TLS key {}: {e}", key.display()))?;
    server_config_from_pem(&cert_pem, &key_pem)
        .map_err(|e| format!("TLS {} / {}: {e}", cert.display(), key.display()))
}

/// [`server_config`] from PEM bytes.
///
/// # Errors
/// As [`server_config`], without the file names.
pub fn server_config_from_pem(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<rustls::ServerConfig>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("reading the certificate PEM: {e}"))?;
    if certs.is_empty() {
        return Err("no CERTIFICATE block in the certificate PEM".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| format!("reading the private key PEM: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("certificate and key: {e}"))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
