//! Certificates for TLS tests, made on the spot.

use std::path::{Path, PathBuf};

/// A CA and a certificate it signed for `localhost`, as PEM files in `dir`:
/// `(ca.pem, server.pem, server.key)`.
pub fn tls_files(
    dir: &Path,
) -> Result<(PathBuf, PathBuf, PathBuf), Box<dyn std::error::Error + Send + Sync>> {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa,
        KeyPair,
    };
    // Distinct names: OpenSSL (Python's ssl) takes a leaf whose issuer equals its subject for
    // self-signed.
    let name = |cn: &str| {
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        dn
    };
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name = name("SQE test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
    let key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()])?;
    leaf.distinguished_name = name("localhost");
    let cert = leaf.signed_by(&key, &ca)?;
    let (ca_file, cert_file, key_file) = (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    );
    std::fs::write(&ca_file, ca.pem())?;
    std::fs::write(&cert_file, cert.pem())?;
    std::fs::write(&key_file, key.serialize_pem())?;
    Ok((ca_file, cert_file, key_file))
}
