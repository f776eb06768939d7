//! OpenFlow over TLS (what OVS calls `ssl:`): rustls as a byte-in, byte-out
//! layer between the socket and the session, so the runtime's read loop
//! stays the same (bytes read in batches from the socket, decrypted, handed
//! to the session; its replies encrypted and written at once). With a CA
//! file, switches must present a certificate it signed (mutual TLS, as OVS
//! deployments do); without, any switch may connect.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

/// Why TLS could not be set up, or a TLS session failed.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate, key or CA file (`what`) that cannot be read or used.
    #[error("TLS {what} {}: {source}", path.display())]
    File {
        what: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("TLS certificate {}: no PEM certificate in it", .0.display())]
    NoCertificate(std::path::PathBuf),
    #[error("TLS certificate and key do not go together: {0}")]
    Mismatch(rustls::Error),
    #[error("TLS: {0}")]
    Protocol(#[from] rustls::Error),
    #[error("TLS: {0}")]
    Io(#[from] std::io::Error),
}

fn file_error<'a, E: std::error::Error + Send + Sync + 'static>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(E) -> TlsError + 'a {
    move |e| TlsError::File {
        what,
        path: path.to_path_buf(),
        source: Box::new(e),
    }
}

/// Loads the controller's certificate chain and key (PEM), and the CA that
/// switch certificates must chain to, if any.
pub fn server_config(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<Arc<ServerConfig>, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(file_error("certificate", cert))?
        .collect::<Result<_, _>>()
        .map_err(file_error("certificate", cert))?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(cert.to_path_buf()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(file_error("key", key))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for c in CertificateDer::pem_file_iter(ca).map_err(file_error("CA", ca))? {
                let c = c.map_err(file_error("CA", ca))?;
                roots.add(c).map_err(file_error("CA", ca))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(file_error("CA", ca))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let cfg = builder.with_single_cert(certs, key).map_err(TlsError::Mismatch)?;
    Ok(Arc::new(cfg))
}

/// One connection's TLS state.
pub struct TlsStream {
    conn: ServerConnection,
    ciphertext: Vec<u8>,
}

impl TlsStream {
    pub fn new(cfg: Arc<ServerConfig>) -> Result<TlsStream, TlsError> {
        Ok(TlsStream {
            conn: ServerConnection::new(cfg)?,
            ciphertext: Vec::new(),
        })
    }

    /// Feeds bytes read from the socket; hands each piece of plaintext to
    /// `on_plain` (using `scratch` to hold it). Ok(true): the peer closed
    /// the TLS session.
    pub fn decrypt(
        &mut self,
        mut raw: &[u8],
        scratch: &mut [u8],
        mut on_plain: impl FnMut(&[u8]),
    ) -> Result<bool, TlsError> {
        while !raw.is_empty() {
            self.conn.read_tls(&mut raw)?;
            let state = self.conn.process_new_packets()?;
            let mut left = state.plaintext_bytes_to_read();
            while left > 0 {
                match self.conn.reader().read(scratch) {
                    Ok(0) => return Ok(true),
                    Ok(n) => {
                        on_plain(&scratch[..n]);
                        left = left.saturating_sub(n);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e.into()),
                }
            }
            if state.peer_has_closed() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Encrypts `plain` (held until the handshake is done).
    pub fn encrypt(&mut self, plain: &[u8]) -> Result<(), TlsError> {
        if plain.is_empty() {
            return Ok(());
        }
        Ok(self.conn.writer().write_all(plain)?)
    }

    /// Whether there are TLS records to send (handshake or data).
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// The TLS records to write to the socket now.
    pub fn ciphertext(&mut self) -> &[u8] {
        self.ciphertext.clear();
        while self.conn.wants_write() {
            if self.conn.write_tls(&mut self.ciphertext).is_err() {
                break;
            }
        }
        &self.ciphertext
    }
}
