//! Who a client is: none (anyone, named by the client), or users with passwords, who get a
//! signed bearer token to present on later calls.
//!
//! Passwords are stored as bcrypt hashes (`sqe hash-password` makes one; Trino's password file
//! format `user:hash` works too). Checking a password is deliberately slow, so it happens once
//! per login (Flight SQL handshake) and the bearer token carries the identity afterwards.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqe_layers::auth::{TokenSigner, TokenVerifier};

use crate::config::{ClientAuthConfig, ClientAuthType, secret};
use crate::error::{ConfigError, GatewayError, Result};

/// The audience of tokens SQE issues to clients.
const CLIENT_AUDIENCE: &str = "sqe-client";
const ISSUER: &str = "sqe";

/// An authenticated (or, without authentication, self-declared) user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user: String,
}

impl Principal {
    pub fn anonymous() -> Self {
        Self {
            user: "anonymous".into(),
        }
    }
}

/// Client authentication as configured in `[client_auth]`.
pub struct ClientAuth {
    users: Option<HashMap<String, String>>,
    signer: TokenSigner,
    verifier: TokenVerifier,
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientAuth")
            .field("users", &self.users.as_ref().map(HashMap::len))
            .finish_non_exhaustive()
    }
}

impl ClientAuth {
    pub fn from_config(config: &ClientAuthConfig) -> Result<Arc<Self>> {
        let users = match config.kind {
            ClientAuthType::None => None,
            ClientAuthType::Password => {
                let mut users = config.users.clone();
                if let Some(path) = &config.password_file {
                    users.extend(read_password_file(path)?);
                }
                if users.is_empty() {
                    return Err(ConfigError::Invalid(
                        "[client_auth] type = \"password\" needs users or a password_file".into(),
                    )
                    .into());
                }
                Some(users)
            }
        };
        let key = secret(&config.token_secret, &config.token_secret_file)?.unwrap_or_else(|| {
            format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            )
        });
        let ttl = Duration::from_secs(config.token_ttl_secs.max(60));
        let auth_error =
            |e: sqe_layers::auth::AuthError| GatewayError::Internal(format!("client tokens: {e}"));
        let signer = TokenSigner::new(key.as_bytes(), ISSUER, CLIENT_AUDIENCE)
            .map_err(auth_error)?
            .with_ttl(ttl);
        let verifier = TokenVerifier::new(&[key.as_bytes()], CLIENT_AUDIENCE)
            .map_err(auth_error)?
            .with_max_lifetime(ttl);
        Ok(Arc::new(Self {
            users,
            signer,
            verifier,
        }))
    }

    /// No authentication: every client is who it says it is. Tokens are still issued on
    /// handshake (with a made-up key), for clients that insist on one.
    pub fn disabled() -> Result<Arc<Self>> {
        Self::from_config(&ClientAuthConfig::default())
    }

    /// Whether requests must prove who they are.
    pub fn required(&self) -> bool {
        self.users.is_some()
    }

    /// Checks a user's password (slow by design: call it once per login).
    pub async fn login(self: &Arc<Self>, user: &str, password: &str) -> Result<Principal> {
        let Some(users) = &self.users else {
            return Ok(Principal {
                user: user.to_string(),
            });
        };
        let Some(hash) = users.get(user).cloned() else {
            // Same work and same answer as a wrong password: no telling which users exist.
            let _ = tokio::task::spawn_blocking(|| bcrypt::verify("x", DUMMY_HASH)).await;
            return Err(invalid_login());
        };
        let password = password.to_string();
        let ok =
            tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false))
                .await
                .unwrap_or(false);
        if ok {
            Ok(Principal {
                user: user.to_string(),
            })
        } else {
            Err(invalid_login())
        }
    }

    /// A bearer token for `principal`.
    pub fn issue(&self, principal: &Principal) -> Result<String> {
        self.signer
            .sign_for(&principal.user)
            .map_err(|e| GatewayError::Internal(format!("cannot issue a token: {e}")))
    }

    /// The principal a bearer token was issued to.
    pub fn verify(&self, token: &str) -> Result<Principal> {
        let claims = self
            .verifier
            .verify(token)
            .map_err(|e| GatewayError::Unauthenticated(format!("invalid bearer token: {e}")))?;
        let user = claims.sub.ok_or_else(|| {
            GatewayError::Unauthenticated("the bearer token names no user".into())
        })?;
        Ok(Principal { user })
    }
}

/// A bcrypt hash of a random password, to spend equal time on unknown users.
const DUMMY_HASH: &str = "$2b$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z3Q4e7ozwQwq9yjkWl1fXuYe";

fn invalid_login() -> GatewayError {
    GatewayError::Unauthenticated("invalid user or password".into())
}

/// `user:hash` per line; blank lines and `#` comments are skipped.
fn read_password_file(path: &Path) -> Result<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError::Invalid(format!("cannot read password_file {}: {e}", path.display()))
    })?;
    let mut users = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (user, hash) = line.split_once(':').ok_or_else(|| {
            ConfigError::Invalid(format!(
                "{}:{}: expected user:bcrypt-hash",
                path.display(),
                n + 1
            ))
        })?;
        users.insert(user.to_string(), hash.to_string());
    }
    Ok(users)
}

/// A bcrypt hash for a password file or `[client_auth] users`.
pub fn hash_password(password: &str) -> Result<String> {
    bcrypt::hash(password, bcrypt::DEFAULT_COST)
        .map_err(|e| GatewayError::Internal(format!("cannot hash: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn password_auth() -> Result<Arc<ClientAuth>> {
        let hash = bcrypt::hash("s3cret", 4).map_err(|e| GatewayError::Internal(e.to_string()))?;
        ClientAuth::from_config(&ClientAuthConfig {
            kind: ClientAuthType::Password,
            users: HashMap::from([("alice".to_string(), hash)]),
            ..Default::default()
        })
    }

    #[tokio::test]
    async fn login_then_bearer() -> Result<()> {
        let auth = password_auth()?;
        assert!(auth.required());
        let alice = auth.login("alice", "s3cret").await?;
        let token = auth.issue(&alice)?;
        assert_eq!(auth.verify(&token)?, alice);
        for (user, password) in [("alice", "wrong"), ("mallory", "s3cret")] {
            let err = auth
                .login(user, password)
                .await
                .err()
                .map(|e| e.to_string());
            assert_eq!(
                err.as_deref(),
                Some("authentication failed: invalid user or password")
            );
        }
        assert!(auth.verify("forged.token.here").is_err());
        Ok(())
    }

    #[tokio::test]
    async fn disabled_trusts_the_name() -> Result<()> {
        let auth = ClientAuth::disabled()?;
        assert!(!auth.required());
        assert_eq!(auth.login("bob", "").await?.user, "bob");
        Ok(())
    }

    #[test]
    fn password_files_in_trino_format() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| GatewayError::Internal(e.to_string()))?;
        let path = dir.path().join("password.db");
        std::fs::write(&path, "# users\nalice:$2y$10$abc\n\nbob:$2b$10$def\n")
            .map_err(|e| GatewayError::Internal(e.to_string()))?;
        let users = read_password_file(&path)?;
        assert_eq!(users.len(), 2);
        std::fs::write(&path, "no-colon-here\n")
            .map_err(|e| GatewayError::Internal(e.to_string()))?;
        assert!(read_password_file(&path).is_err());
        Ok(())
    }
}
