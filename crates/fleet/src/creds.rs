//! The lab's credentials: one CA, a certificate for the workers and one for
//! the coordinator, signed by it (`sdnlab credentials DIR`). Each side
//! accepts only a peer whose certificate chains to the lab's CA and names
//! the other role, so neither a stranger nor a worker can drive a worker.
//!
//! A directory of credentials holds `ca.pem` (and `ca-key.pem`, kept to
//! sign more), `worker.pem`, `worker-key.pem`, `coordinator.pem` and
//! `coordinator-key.pem`; keys are readable by their owner only. Every
//! worker of a lab may share one certificate (a Kubernetes Secret mounted
//! on every node): what it proves is membership of the lab, not a name.

use crate::proto::{COORDINATOR_NAME, WORKER_NAME};
use crate::FleetError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The two roles on the channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Worker,
    Coordinator,
}

impl Role {
    fn file(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Coordinator => "coordinator",
        }
    }

    /// The name its certificate carries.
    pub fn name(self) -> &'static str {
        match self {
            Role::Worker => WORKER_NAME,
            Role::Coordinator => COORDINATOR_NAME,
        }
    }
}

/// One side's credentials: the lab's CA, its certificate and key.
#[derive(Clone, Debug)]
pub struct Credentials {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Credentials {
    /// `role`'s files in a credentials directory.
    pub fn in_dir(dir: &Path, role: Role) -> Credentials {
        Credentials {
            ca: dir.join("ca.pem"),
            cert: dir.join(format!("{}.pem", role.file())),
            key: dir.join(format!("{}-key.pem", role.file())),
        }
    }
}

fn bad(path: &Path, message: impl std::fmt::Display) -> FleetError {
    FleetError::Credentials {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

/// Writes a new lab CA and the two certificates into `dir` (which must not
/// already hold a CA: credentials are not overwritten by accident).
pub fn generate(dir: &Path) -> Result<(), FleetError> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca_file = dir.join("ca.pem");
    if ca_file.exists() {
        return Err(bad(
            &ca_file,
            "already there: remove the directory's credentials or choose another directory",
        ));
    }
    // A private directory of this user's (made 0700, or one that is
    // neither a symlink nor writable by others), and every file new: a key
    // is never written through a link another user planted.
    netlab::private::dir(dir).map_err(|e| bad(dir, e))?;
    let gen = |e: rcgen::Error| bad(dir, format!("cannot make a certificate: {e}"));
    let ca_key = KeyPair::generate().map_err(gen)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(gen)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "sdnlab lab CA");
    let ca = ca_params.self_signed(&ca_key).map_err(gen)?;
    let write = |name: &str, text: String, private: bool| -> Result<(), FleetError> {
        let path = dir.join(name);
        netlab::private::write_new(&path, text.as_bytes(), if private { 0o600 } else { 0o644 })
            .map_err(|e| bad(&path, e))
    };
    write("ca-key.pem", ca_key.serialize_pem(), true)?;
    for role in [Role::Worker, Role::Coordinator] {
        let key = KeyPair::generate().map_err(gen)?;
        let mut params = CertificateParams::new(vec![role.name().to_string()]).map_err(gen)?;
        params.distinguished_name.push(DnType::CommonName, role.name());
        let cert = params.signed_by(&key, &ca, &ca_key).map_err(gen)?;
        write(&format!("{}.pem", role.file()), cert.pem(), false)?;
        write(&format!("{}-key.pem", role.file()), key.serialize_pem(), true)?;
    }
    // The CA last: its presence says the set is complete.
    write("ca.pem", ca.pem(), false)
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, FleetError> {
    let out: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(path, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(path, e))?;
    if out.is_empty() {
        return Err(bad(path, "no PEM certificate in it"));
    }
    Ok(out)
}

fn roots(path: &Path) -> Result<Arc<RootCertStore>, FleetError> {
    let mut roots = RootCertStore::empty();
    for c in certs(path)? {
        roots.add(c).map_err(|e| bad(path, e))?;
    }
    Ok(Arc::new(roots))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The worker's TLS: its certificate, and a coordinator's required
/// (checked against the lab's CA here, its name by [`peer_is`]).
pub fn worker_config(c: &Credentials) -> Result<Arc<ServerConfig>, FleetError> {
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(roots(&c.ca)?, provider())
        .build()
        .map_err(|e| bad(&c.ca, e))?;
    let key = PrivateKeyDer::from_pem_file(&c.key).map_err(|e| bad(&c.key, e))?;
    let cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&c.cert, e))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs(&c.cert)?, key)
        .map_err(|e| bad(&c.key, format!("the certificate and key do not go together: {e}")))?;
    Ok(Arc::new(cfg))
}

/// The coordinator's TLS: its certificate, and the workers' checked
/// against the lab's CA and for the workers' name.
pub fn coordinator_config(c: &Credentials) -> Result<Arc<ClientConfig>, FleetError> {
    let key = PrivateKeyDer::from_pem_file(&c.key).map_err(|e| bad(&c.key, e))?;
    let cfg = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&c.cert, e))?
        .with_root_certificates(roots(&c.ca)?)
        .with_client_auth_cert(certs(&c.cert)?, key)
        .map_err(|e| bad(&c.key, format!("the certificate and key do not go together: {e}")))?;
    Ok(Arc::new(cfg))
}

/// Whether the end-entity certificate `der` (already verified against the
/// CA by the handshake) names `role`.
pub fn peer_is(der: &CertificateDer<'_>, role: Role) -> bool {
    let Ok(cert) = webpki::EndEntityCert::try_from(der) else {
        return false;
    };
    let Ok(name) = ServerName::try_from(role.name()) else {
        return false;
    };
    cert.verify_is_valid_for_subject_name(&name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_credentials_load_and_name_their_roles() {
        let dir = std::env::temp_dir().join(format!("fleet-creds-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        generate(&dir).unwrap();
        worker_config(&Credentials::in_dir(&dir, Role::Worker)).unwrap();
        coordinator_config(&Credentials::in_dir(&dir, Role::Coordinator)).unwrap();
        let w = certs(&dir.join("worker.pem")).unwrap();
        assert!(peer_is(&w[0], Role::Worker));
        assert!(!peer_is(&w[0], Role::Coordinator));
        let c = certs(&dir.join("coordinator.pem")).unwrap();
        assert!(peer_is(&c[0], Role::Coordinator));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("worker-key.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "a key readable by others: {mode:o}");
        // A second run does not overwrite the lab's CA.
        let e = generate(&dir).unwrap_err().to_string();
        assert!(e.contains("already there"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
