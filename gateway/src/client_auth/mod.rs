//! Who a client is: none (anyone, named by the client), or users with passwords, who get a
//! signed bearer token to present on later calls.
//!
//! Passwords are stored as bcrypt hashes (`sqe hash-password` makes one; Trino's password file
//! format `user:hash` works too). Checking a password is deliberately slow, so it happens once
//! per login (Flight SQL handshake) and the bearer token carries the identity afterwards.

mod throttle;

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use self::throttle::{HOLD_OFF, LoginThrottle};

use sqe_layers::auth::{TokenSigner, TokenVerifier};

use crate::config::{ClientAuthConfig, ClientAuthType, secret};
use sqe_engine::error::{Error, Result};

use crate::error::ConfigError;

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
    /// A hash of the users' usual bcrypt cost, checked for unknown users (made on first use).
    dummy_hash: OnceLock<String>,
    throttle: LoginThrottle,
    signer: TokenSigner,
    verifier: TokenVerifier,
    external: Option<ExternalJwt>,
}

/// How JWTs from an identity provider are checked.
struct ExternalJwt {
    key: jsonwebtoken::DecodingKey,
    validation: jsonwebtoken::Validation,
    user_claim: String,
}

impl ExternalJwt {
    fn from_config(config: &ClientAuthConfig) -> Result<Option<Self>, ConfigError> {
        use jsonwebtoken::{Algorithm, DecodingKey, Validation};
        let invalid = ConfigError::Invalid;
        let secret = secret(&config.jwt_secret, &config.jwt_secret_file)?;
        let (key, algorithm) = match (secret, &config.jwt_public_key_file) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "[client_auth] give jwt_secret (HS256) or jwt_public_key_file (RS256), not both"
                        .into(),
                ));
            }
            (Some(secret), None) => {
                let key = DecodingKey::from_secret(secret.as_bytes())
                    .map_err(|e| invalid(format!("jwt_secret: {e}")))?;
                (key, Algorithm::HS256)
            }
            (None, Some(path)) => {
                let pem = std::fs::read(path).map_err(|e| {
                    invalid(format!(
                        "cannot read jwt_public_key_file {}: {e}",
                        path.display()
                    ))
                })?;
                let key = DecodingKey::from_rsa_pem(&pem)
                    .map_err(|e| invalid(format!("jwt_public_key_file {}: {e}", path.display())))?;
                (key, Algorithm::RS256)
            }
            (None, None) => {
                if config.kind == ClientAuthType::Jwt {
                    return Err(invalid(
                        "[client_auth] type = \"jwt\" needs jwt_secret, jwt_secret_file or jwt_public_key_file"
                            .into(),
                    ));
                }
                return Ok(None);
            }
        };
        if config.kind == ClientAuthType::None {
            return Err(invalid(
                "[client_auth] JWT settings need type = \"jwt\" or \"password\"".into(),
            ));
        }
        let mut validation = Validation::new(algorithm);
        validation.set_required_spec_claims(&["exp"]);
        match &config.jwt_audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        if let Some(issuer) = &config.jwt_issuer {
            validation.set_issuer(&[issuer]);
        }
        Ok(Some(Self {
            key,
            validation,
            user_claim: config.jwt_user_claim.clone(),
        }))
    }

    fn verify(&self, token: &str) -> Result<Principal> {
        let claims = jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
            token,
            &self.key,
            &self.validation,
        )
        .map_err(|e| Error::Unauthenticated(format!("invalid bearer token: {e}")))?
        .claims;
        let user = claims
            .get(&self.user_claim)
            .and_then(|v| v.as_str())
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                Error::Unauthenticated(format!(
                    "the bearer token has no '{}' claim naming the user",
                    self.user_claim
                ))
            })?;
        Ok(Principal {
            user: user.to_string(),
        })
    }
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientAuth")
            .field("users", &self.users.as_ref().map(HashMap::len))
            .finish_non_exhaustive()
    }
}

impl ClientAuth {
    pub fn from_config(config: &ClientAuthConfig) -> Result<Arc<Self>, ConfigError> {
        let users = match config.kind {
            ClientAuthType::None | ClientAuthType::Jwt => None,
            ClientAuthType::Password => {
                let mut users = config.users.clone();
                if let Some(path) = &config.password_file {
                    users.extend(read_password_file(path)?);
                }
                if users.is_empty() {
                    return Err(ConfigError::Invalid(
                        "[client_auth] type = \"password\" needs users or a password_file".into(),
                    ));
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
            |e: sqe_layers::auth::AuthError| ConfigError::Invalid(format!("client tokens: {e}"));
        let signer = TokenSigner::new(key.as_bytes(), ISSUER, CLIENT_AUDIENCE)
            .map_err(auth_error)?
            .with_ttl(ttl);
        let verifier = TokenVerifier::new(&[key.as_bytes()], CLIENT_AUDIENCE)
            .map_err(auth_error)?
            .with_max_lifetime(ttl);
        Ok(Arc::new(Self {
            users,
            dummy_hash: OnceLock::new(),
            throttle: LoginThrottle::new(HOLD_OFF),
            signer,
            verifier,
            external: ExternalJwt::from_config(config)?,
        }))
    }

    /// No authentication: every client is who it says it is. Tokens are still issued on
    /// handshake (with a made-up key), for clients that insist on one.
    pub fn disabled() -> Result<Arc<Self>, ConfigError> {
        Self::from_config(&ClientAuthConfig::default())
    }

    /// Whether requests must prove who they are.
    pub fn required(&self) -> bool {
        self.users.is_some() || self.external.is_some()
    }

    /// Whether users log in with passwords.
    pub fn accepts_passwords(&self) -> bool {
        self.users.is_some()
    }

    /// Whether JWTs from an identity provider are accepted.
    pub fn accepts_external_jwt(&self) -> bool {
        self.external.is_some()
    }

    /// Checks a user's password (slow by design: call it once per login). `source` is the
    /// caller's address: repeated failures of one address and user hold that pair off.
    pub async fn login(
        self: &Arc<Self>,
        user: &str,
        password: &str,
        source: Option<IpAddr>,
    ) -> Result<Principal> {
        let Some(users) = &self.users else {
            if self.external.is_some() {
                return Err(Error::Unauthenticated(
                    "password login is not enabled: present a bearer token".into(),
                ));
            }
            return Ok(Principal {
                user: user.to_string(),
            });
        };
        if !self.throttle.may_try(source, user) {
            return Err(Error::LimitReached(format!(
                "too many failed logins for this user from this address; wait {} seconds",
                HOLD_OFF.as_secs()
            )));
        }
        // An unknown user costs the same work as a wrong password: no telling which exist.
        let (hash, known) = match users.get(user) {
            Some(hash) => (hash.clone(), true),
            None => (self.dummy_hash().await, false),
        };
        let password = password.to_string();
        let ok =
            tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false))
                .await
                .unwrap_or(false);
        if ok && known {
            self.throttle.succeeded(source, user);
            Ok(Principal {
                user: user.to_string(),
            })
        } else {
            self.throttle.failed(source, user);
            Err(invalid_login())
        }
    }

    /// A hash of a random password at the cost most configured users' hashes have.
    async fn dummy_hash(&self) -> String {
        if let Some(hash) = self.dummy_hash.get() {
            return hash.clone();
        }
        let cost = self
            .users
            .as_ref()
            .map_or(bcrypt::DEFAULT_COST, |users| usual_cost(users.values()));
        let made = tokio::task::spawn_blocking(move || {
            bcrypt::hash(uuid::Uuid::new_v4().to_string(), cost).unwrap_or_default()
        })
        .await
        .unwrap_or_default();
        self.dummy_hash.get_or_init(|| made).clone()
    }

    /// A bearer token for `principal`.
    pub fn issue(&self, principal: &Principal) -> Result<String> {
        self.signer
            .sign_for(&principal.user)
            .map_err(|e| Error::Internal(format!("cannot issue a token: {e}")))
    }

    /// The principal a bearer token was issued to: by SQE at login, or by the configured
    /// identity provider.
    pub fn verify(&self, token: &str) -> Result<Principal> {
        let claims = match self.verifier.verify(token) {
            Ok(claims) => claims,
            Err(e) => {
                return match &self.external {
                    Some(external) => external.verify(token),
                    None => Err(Error::Unauthenticated(format!("invalid bearer token: {e}"))),
                };
            }
        };
        let user = claims
            .sub
            .ok_or_else(|| Error::Unauthenticated("the bearer token names no user".into()))?;
        Ok(Principal { user })
    }
}

/// The bcrypt cost most of `hashes` have (`$2b$<cost>$...`), the highest on a tie.
fn usual_cost<'a>(hashes: impl Iterator<Item = &'a String>) -> u32 {
    let mut counts: HashMap<u32, usize> = HashMap::new();
    for hash in hashes {
        if let Some(cost) = hash.split('$').nth(2).and_then(|c| c.parse().ok()) {
            *counts.entry(cost).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .max_by_key(|&(cost, n)| (n, cost))
        .map_or(bcrypt::DEFAULT_COST, |(cost, _)| cost)
}

fn invalid_login() -> Error {
    Error::Unauthenticated("invalid user or password".into())
}

/// `user:hash` per line; blank lines and `#` comments are skipped.
fn read_password_file(path: &Path) -> Result<HashMap<String, String>, ConfigError> {
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

/// Password authentication of users `alice` and `bob`, whose passwords are their names: the
/// endpoints' tests sign in with them.
#[cfg(test)]
pub(crate) fn alice_and_bob() -> Result<Arc<ClientAuth>, Box<dyn std::error::Error>> {
    let mut users = HashMap::new();
    for user in ["alice", "bob"] {
        users.insert(user.to_string(), bcrypt::hash(user, 4)?);
    }
    Ok(ClientAuth::from_config(&ClientAuthConfig {
        kind: ClientAuthType::Password,
        users,
        token_secret: Some("a test secret that is long enough".into()),
        ..ClientAuthConfig::default()
    })?)
}

/// A bcrypt hash for a password file or `[client_auth] users`.
pub fn hash_password(password: &str) -> Result<String, bcrypt::BcryptError> {
    bcrypt::hash(password, bcrypt::DEFAULT_COST)
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

    fn password_auth() -> TestResult<Arc<ClientAuth>> {
        let hash = bcrypt::hash("s3cret", 4)?;
        Ok(ClientAuth::from_config(&ClientAuthConfig {
            kind: ClientAuthType::Password,
            users: HashMap::from([("alice".to_string(), hash)]),
            ..Default::default()
        })?)
    }

    #[tokio::test]
    async fn login_then_bearer() -> TestResult {
        let auth = password_auth()?;
        assert!(auth.required());
        let alice = auth.login("alice", "s3cret", None).await?;
        let token = auth.issue(&alice)?;
        assert_eq!(auth.verify(&token)?, alice);
        for (user, password) in [("alice", "wrong"), ("mallory", "s3cret")] {
            let err = auth
                .login(user, password, None)
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
    async fn unknown_users_cost_what_known_users_cost() -> TestResult {
        let auth = password_auth()?;
        assert!(auth.login("mallory", "x", None).await.is_err());
        let dummy = auth.dummy_hash().await;
        // password_auth's users are hashed at cost 4.
        assert!(dummy.starts_with("$2b$04$"), "{dummy}");
        let hashes = ["$2b$12$a".to_string(), "$2y$12$b".into(), "$2b$10$c".into()];
        assert_eq!(usual_cost(hashes.iter()), 12);
        assert_eq!(usual_cost(std::iter::empty()), bcrypt::DEFAULT_COST);
        Ok(())
    }

    #[tokio::test]
    async fn repeated_failures_hold_off_that_address_and_user() -> TestResult {
        let auth = password_auth()?;
        let attacker = Some(IpAddr::from([192, 0, 2, 7]));
        for _ in 0..throttle::MAX_FAILURES {
            let refused = auth.login("alice", "guess", attacker).await.err();
            assert!(
                matches!(refused, Some(Error::Unauthenticated(_))),
                "{refused:?}"
            );
        }
        // Now even the right password is not checked from there.
        let held = auth.login("alice", "s3cret", attacker).await.err();
        assert!(matches!(held, Some(Error::LimitReached(_))), "{held:?}");
        assert!(
            auth.login("alice", "s3cret", Some(IpAddr::from([192, 0, 2, 8])))
                .await
                .is_ok()
        );
        Ok(())
    }

    fn external_token(
        key: &jsonwebtoken::EncodingKey,
        algorithm: jsonwebtoken::Algorithm,
        claims: serde_json::Value,
    ) -> String {
        jsonwebtoken::encode(&jsonwebtoken::Header::new(algorithm), &claims, key)
            .unwrap_or_default()
    }

    fn jwt_error(e: jsonwebtoken::errors::Error) -> Error {
        Error::Internal(e.to_string())
    }

    fn in_an_hour() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() + 3600)
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn identity_provider_jwts_hs256() -> TestResult {
        use jsonwebtoken::{Algorithm, EncodingKey};
        let auth = ClientAuth::from_config(&ClientAuthConfig {
            kind: ClientAuthType::Jwt,
            jwt_secret: Some("idp-secret".into()),
            jwt_issuer: Some("https://idp.example".into()),
            jwt_audience: Some("sqe".into()),
            ..Default::default()
        })?;
        assert!(auth.required());
        assert!(!auth.accepts_passwords());
        let key = EncodingKey::from_secret(b"idp-secret").map_err(jwt_error)?;
        let good = serde_json::json!({"sub": "carol", "iss": "https://idp.example", "aud": "sqe", "exp": in_an_hour()});
        assert_eq!(
            auth.verify(&external_token(&key, Algorithm::HS256, good.clone()))?
                .user,
            "carol"
        );
        let mut wrong_issuer = good.clone();
        wrong_issuer["iss"] = "https://evil.example".into();
        assert!(
            auth.verify(&external_token(&key, Algorithm::HS256, wrong_issuer))
                .is_err()
        );
        let mut expired = good.clone();
        expired["exp"] = 1_000.into();
        assert!(
            auth.verify(&external_token(&key, Algorithm::HS256, expired))
                .is_err()
        );
        let other_key = EncodingKey::from_secret(b"guessed").map_err(jwt_error)?;
        assert!(
            auth.verify(&external_token(&other_key, Algorithm::HS256, good))
                .is_err()
        );
        // No passwords with JWT-only authentication.
        assert!(auth.login("carol", "anything", None).await.is_err());
        Ok(())
    }

    #[tokio::test]
    async fn identity_provider_jwts_rs256() -> TestResult {
        use jsonwebtoken::{Algorithm, EncodingKey};
        let dir = tempfile::tempdir()?;
        let public = dir.path().join("public.pem");
        std::fs::write(
            &public,
            include_bytes!("../../testdata/jwt-test-public.pem"),
        )?;
        let auth = ClientAuth::from_config(&ClientAuthConfig {
            kind: ClientAuthType::Jwt,
            jwt_public_key_file: Some(public),
            jwt_user_claim: "preferred_username".into(),
            ..Default::default()
        })?;
        let key = EncodingKey::from_rsa_pem(include_bytes!("../../testdata/jwt-test-private.pem"))
            .map_err(jwt_error)?;
        let claims = serde_json::json!({"preferred_username": "dave", "exp": in_an_hour()});
        assert_eq!(
            auth.verify(&external_token(&key, Algorithm::RS256, claims))?
                .user,
            "dave"
        );
        let unnamed = serde_json::json!({"sub": "dave", "exp": in_an_hour()});
        assert!(
            auth.verify(&external_token(&key, Algorithm::RS256, unnamed))
                .is_err()
        );
        // An HS256 token "signed" with the public key must not pass (algorithm confusion).
        let confused =
            EncodingKey::from_secret(include_bytes!("../../testdata/jwt-test-public.pem"))
                .map_err(jwt_error)?;
        let claims = serde_json::json!({"preferred_username": "dave", "exp": in_an_hour()});
        assert!(
            auth.verify(&external_token(&confused, Algorithm::HS256, claims))
                .is_err()
        );
        Ok(())
    }

    #[test]
    fn jwt_settings_are_checked() {
        let jwt_without_key = ClientAuthConfig {
            kind: ClientAuthType::Jwt,
            ..Default::default()
        };
        assert!(ClientAuth::from_config(&jwt_without_key).is_err());
        let key_without_type = ClientAuthConfig {
            jwt_secret: Some("x".into()),
            ..Default::default()
        };
        assert!(ClientAuth::from_config(&key_without_type).is_err());
    }

    #[tokio::test]
    async fn disabled_trusts_the_name() -> TestResult {
        let auth = ClientAuth::disabled()?;
        assert!(!auth.required());
        assert_eq!(auth.login("bob", "", None).await?.user, "bob");
        Ok(())
    }

    #[test]
    fn password_files_in_trino_format() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("password.db");
        std::fs::write(&path, "# users\nalice:$2y$10$abc\n\nbob:$2b$10$def\n")?;
        let users = read_password_file(&path)?;
        assert_eq!(users.len(), 2);
        std::fs::write(&path, "no-colon-here\n")?;
        assert!(read_password_file(&path).is_err());
        Ok(())
    }
}
