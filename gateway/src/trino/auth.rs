//! Who sends a Trino-protocol request: HTTP Basic against the configured users, or a bearer
//! token (issued by SQE, or a JWT from the configured identity provider). Without
//! `[client_auth]` the `X-Trino-User` header names the user, as on an unsecured Trino.
//!
//! Clients send their password with every request (each page of a query), and bcrypt is slow
//! by design, so a verified password is remembered for a few minutes by a SHA-256 digest of
//! the credentials, never the password itself.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};

use crate::client_auth::{ClientAuth, Principal};
use sqe_engine::error::Error;
use sqe_engine::expiring::{Expire, ExpiringMap};

/// How long a verified password is trusted without checking its hash again.
const VERIFIED_TTL: Duration = Duration::from_secs(300);
/// Most credentials remembered at once.
const VERIFIED_MAX: u64 = 10_000;

/// Why a request is refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub status: StatusCode,
    pub message: String,
    /// `WWW-Authenticate` challenges for a 401.
    pub challenges: Vec<&'static str>,
}

pub(crate) struct TrinoAuth {
    auth: Arc<ClientAuth>,
    /// The user of each credential digest verified lately.
    verified: ExpiringMap<[u8; 32], String>,
}

impl TrinoAuth {
    pub(crate) fn new(auth: Arc<ClientAuth>) -> Self {
        Self {
            auth,
            verified: ExpiringMap::new(VERIFIED_MAX, Expire::AfterWrite(VERIFIED_TTL)),
        }
    }

    pub(crate) fn required(&self) -> bool {
        self.auth.required()
    }

    fn challenges(&self) -> Vec<&'static str> {
        let mut challenges = Vec::new();
        if self.auth.accepts_passwords() {
            challenges.push("Basic realm=\"SQE\"");
        }
        challenges.push("Bearer realm=\"SQE\"");
        challenges
    }

    fn unauthorized(&self, message: impl Into<String>) -> Refused {
        Refused {
            status: StatusCode::UNAUTHORIZED,
            message: message.into(),
            challenges: self.challenges(),
        }
    }

    /// The authenticated principal, `None` when authentication is off.
    /// `source` is the caller's address, when the transport knows it.
    pub(crate) async fn authenticate(
        &self,
        headers: &HeaderMap,
        source: Option<IpAddr>,
    ) -> Result<Option<Principal>, Refused> {
        if !self.required() {
            return Ok(None);
        }
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(self.unauthorized("authentication required"));
        };
        let value = value
            .to_str()
            .map_err(|_| self.unauthorized("malformed Authorization header"))?;
        let (scheme, credentials) = value.split_once(' ').unwrap_or((value, ""));
        let credentials = credentials.trim();
        let result = if scheme.eq_ignore_ascii_case("basic") {
            self.basic(credentials, source).await
        } else if scheme.eq_ignore_ascii_case("bearer") {
            self.auth.verify(credentials)
        } else {
            return Err(self.unauthorized(format!("unsupported authentication scheme {scheme}")));
        };
        result.map(Some).map_err(|e| match e {
            Error::LimitReached(message) => Refused {
                status: StatusCode::TOO_MANY_REQUESTS,
                message,
                challenges: Vec::new(),
            },
            other => self.unauthorized(other.to_string()),
        })
    }

    async fn basic(&self, credentials: &str, source: Option<IpAddr>) -> Result<Principal, Error> {
        if !self.auth.accepts_passwords() {
            return Err(Error::Unauthenticated(
                "password login is not enabled: present a bearer token".into(),
            ));
        }
        let malformed = || Error::Unauthenticated("malformed Basic credentials".into());
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(credentials)
            .map_err(|_| malformed())?;
        let text = String::from_utf8(decoded).map_err(|_| malformed())?;
        let (user, password) = text.split_once(':').ok_or_else(malformed)?;
        let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        if self
            .verified
            .get(&digest)
            .is_some_and(|known| known == user)
        {
            return Ok(Principal {
                user: user.to_string(),
            });
        }
        let principal = self.auth.login(user, password, source).await?;
        self.verified.insert(digest, principal.user.clone());
        Ok(principal)
    }
}

impl Refused {
    pub(crate) fn headers(&self) -> Vec<(header::HeaderName, HeaderValue)> {
        self.challenges
            .iter()
            .map(|c| (header::WWW_AUTHENTICATE, HeaderValue::from_static(c)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::config::{ClientAuthConfig, ClientAuthType};

    fn basic(user: &str, password: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        if let Ok(value) = HeaderValue::from_str(&format!("Basic {encoded}")) {
            headers.insert(header::AUTHORIZATION, value);
        }
        headers
    }

    #[tokio::test]
    async fn basic_credentials_are_checked_and_remembered() -> Result<(), Box<dyn std::error::Error>>
    {
        let hash = bcrypt::hash("s3cret", 4)?;
        let auth = TrinoAuth::new(ClientAuth::from_config(&ClientAuthConfig {
            kind: ClientAuthType::Password,
            users: HashMap::from([("alice".to_string(), hash)]),
            ..Default::default()
        })?);
        let alice = auth.authenticate(&basic("alice", "s3cret"), None).await;
        assert_eq!(
            alice.ok().flatten().map(|p| p.user).as_deref(),
            Some("alice")
        );
        assert_eq!(auth.verified.len(), 1);
        // Remembered: a second request does not check the hash again, and still gets alice.
        let again = auth.authenticate(&basic("alice", "s3cret"), None).await;
        assert_eq!(
            again.ok().flatten().map(|p| p.user).as_deref(),
            Some("alice")
        );
        let wrong = auth.authenticate(&basic("alice", "nope"), None).await;
        let refused = wrong.err().ok_or("accepted")?;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
        assert!(refused.challenges.iter().any(|c| c.starts_with("Basic")));
        let missing = auth.authenticate(&HeaderMap::new(), None).await;
        assert_eq!(
            missing.err().map(|r| r.status),
            Some(StatusCode::UNAUTHORIZED)
        );
        Ok(())
    }

    #[tokio::test]
    async fn without_auth_nobody_is_asked() -> Result<(), Box<dyn std::error::Error>> {
        let auth = TrinoAuth::new(ClientAuth::disabled()?);
        assert_eq!(auth.authenticate(&HeaderMap::new(), None).await, Ok(None));
        Ok(())
    }
}
