//! Certificates for TLS tests, made on the spot.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa, KeyPair,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn common_name(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn
}

/// A certificate authority that issues PEM certificates into a directory.
pub struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Authority {
    /// A self-signed CA named `name`.
    pub fn new(name: &str) -> Result<Self, Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name = common_name(name);
        Ok(Self {
            issuer: CertifiedIssuer::self_signed(params, KeyPair::generate()?)?,
        })
    }

    /// Writes the CA's certificate to `path`.
    pub fn write_ca(&self, path: &Path) -> Result<PathBuf, Error> {
        std::fs::write(path, self.issuer.pem())?;
        Ok(path.to_path_buf())
    }

    /// A certificate for `names` (DNS names or IP addresses), as `(<stem>.pem, <stem>.key)` in
    /// `dir`. Its subject is its first name (distinct from the CA's: OpenSSL, as Python's ssl
    /// uses it, takes a leaf whose issuer equals its subject for self-signed).
    pub fn issue(
        &self,
        dir: &Path,
        stem: &str,
        names: &[&str],
    ) -> Result<(PathBuf, PathBuf), Error> {
        let key = KeyPair::generate()?;
        let mut leaf =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
        leaf.distinguished_name = common_name(names.first().copied().unwrap_or(stem));
        let cert = leaf.signed_by(&key, &self.issuer)?;
        let (cert_file, key_file) = (
            dir.join(format!("{stem}.pem")),
            dir.join(format!("{stem}.key")),
        );
        std::fs::write(&cert_file, cert.pem())?;
        std::fs::write(&key_file, key.serialize_pem())?;
        Ok((cert_file, key_file))
    }
}

/// A CA and a certificate it signed for `localhost`, as PEM files in `dir`:
/// `(ca.pem, server.pem, server.key)`.
pub fn tls_files(dir: &Path) -> Result<(PathBuf, PathBuf, PathBuf), Error> {
    let ca = Authority::new("SQE test CA")?;
    let (cert, key) = ca.issue(dir, "server", &["localhost"])?;
    Ok((ca.write_ca(&dir.join("ca.pem"))?, cert, key))
}
