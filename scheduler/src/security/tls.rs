//! TLS server configuration from PEM files (rustls, ring provider, TLS 1.2 and 1.3,
//! ALPN `http/1.1`), optionally requiring client certificates (mutual TLS) signed by a given
//! certificate authority.

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
/// With `client_ca` (PEM, one or more CA certificates), every connection must present a
/// client certificate that chains to one of them (mutual TLS); without it, none is asked for.
///
/// # Errors
/// As above, and for `client_ca`: unreadable, no certificate, or a certificate rustls does
/// not accept as a trust anchor.
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let cert_pem =
        std::fs::read(cert).map_err(|e| format!("TLS certificate {}: {e}", cert.display()))?;
    let key_pem = std::fs::read(key).map_err(|e| format!("TLS key {}: {e}", key.display()))?;
    let ca_pem = client_ca
        .map(|ca| std::fs::read(ca).map_err(|e| format!("client CA {}: {e}", ca.display())))
        .transpose()?;
    if let (Some(ca), Some(pem)) = (client_ca, &ca_pem) {
        client_verifier(pem).map_err(|e| format!("client CA {}: {e}", ca.display()))?;
    }
    server_config_from_pem(&cert_pem, &key_pem, ca_pem.as_deref())
        .map_err(|e| format!("TLS {} / {}: {e}", cert.display(), key.display()))
}

fn client_verifier(
    ca_pem: &[u8],
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, String> {
    let cas: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(ca_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("reading the CA PEM: {e}"))?;
    if cas.is_empty() {
        return Err("no CERTIFICATE block in the CA PEM".into());
    }
    let mut roots = rustls::RootCertStore::empty();
    for c in cas {
        roots
            .add(c)
            .map_err(|e| format!("a CA certificate is not a usable trust anchor: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| format!("client certificate verifier: {e}"))
}

/// [`server_config`] from PEM bytes.
///
/// # Errors
/// As [`server_config`], without the file names.
pub fn server_config_from_pem(
    cert_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
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
    let builder = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match client_ca_pem {
        Some(pem) => builder.with_client_cert_verifier(client_verifier(pem)?),
        None => builder.with_no_client_auth(),
    };
    let mut cfg = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("certificate and key: {e}"))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
