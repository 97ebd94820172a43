//! Signing and verifying tokens.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use serde::{Deserialize, Serialize};

use super::replay::{self, Refusal, SeenTokens};

/// How long a signed token is valid by default.
pub(super) const DEFAULT_TOKEN_TTL: Duration = Duration::from_secs(60);
/// Clock difference tolerated between signer and verifier by default.
pub(super) const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// The longest lifetime a verifier accepts by default, whatever the token says.
pub(super) const DEFAULT_MAX_LIFETIME: Duration = Duration::from_secs(600);

/// What a token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Who signed it (the calling node).
    pub iss: String,
    /// Who it is for.
    pub aud: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: u64,
    /// Expires at, seconds since the Unix epoch.
    pub exp: u64,
    /// Unique per token.
    pub jti: String,
    /// On whose behalf (a user, for tokens issued to clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
}

/// Why a token was not issued or not accepted. Verification failures name the cause but never
/// the token or the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("no bearer token in the authorization metadata")]
    MissingToken,
    #[error("the token is malformed")]
    Malformed,
    #[error("the token signature is invalid (different worker_secret?)")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is for '{got}', and this node answers to '{accepted}'")]
    WrongAudience { got: String, accepted: String },
    #[error("the token was used before (one token per request: a replay?)")]
    Replayed,
    #[error("too many live tokens to remember another; retry shortly")]
    Overloaded,
    #[error("the token is issued in the future or lives too long")]
    BadLifetime,
    #[error(
        "the secret is {0} bytes long; it must have at least {MIN_SECRET_BYTES} (e.g. `openssl rand -hex 32`)"
    )]
    WeakSecret(usize),
    #[error("cannot sign a token: {0}")]
    Sign(String),
}

/// The shortest secret tokens are signed with: 128 bits, if it is random.
pub const MIN_SECRET_BYTES: usize = 16;

/// A key that can be guessed offline from one sniffed token is refused.
pub(super) fn check_strength(secret: &[u8]) -> Result<(), AuthError> {
    if secret.len() < MIN_SECRET_BYTES {
        return Err(AuthError::WeakSecret(secret.len()));
    }
    Ok(())
}

impl From<AuthError> for tonic::Status {
    fn from(err: AuthError) -> Self {
        match err {
            AuthError::Sign(_) | AuthError::WeakSecret(_) => {
                tonic::Status::internal(err.to_string())
            }
            AuthError::Overloaded => tonic::Status::resource_exhausted(err.to_string()),
            _ => tonic::Status::unauthenticated(err.to_string()),
        }
    }
}

pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Signs tokens for one issuer: for its default audience, or for a named one (the peer a
/// request goes to).
#[derive(Clone)]
pub struct TokenSigner {
    key: EncodingKey,
    header: Header,
    issuer: String,
    audience: String,
    ttl: Duration,
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSigner")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl TokenSigner {
    pub fn new(
        secret: &[u8],
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, AuthError> {
        check_strength(secret)?;
        let key = EncodingKey::from_secret(secret).map_err(|e| AuthError::Sign(e.to_string()))?;
        Ok(Self {
            key,
            header: Header::new(Algorithm::HS256),
            issuer: issuer.into(),
            audience: audience.into(),
            ttl: DEFAULT_TOKEN_TTL,
        })
    }

    /// Tokens live this long (seconds granularity, at least one second).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_secs(1));
        self
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// A new token, valid from now for the signer's TTL.
    pub fn sign(&self) -> Result<String, AuthError> {
        self.sign_at(now())
    }

    /// A new token for `audience` instead of the signer's default.
    pub fn sign_to(&self, audience: &str) -> Result<String, AuthError> {
        self.sign_claims(now(), audience, None)
    }

    /// A new token on behalf of `subject` (a user the signer has authenticated).
    pub fn sign_for(&self, subject: &str) -> Result<String, AuthError> {
        self.sign_claims(now(), &self.audience, Some(subject.to_string()))
    }

    pub(crate) fn sign_at(&self, iat: u64) -> Result<String, AuthError> {
        self.sign_claims(iat, &self.audience, None)
    }

    fn sign_claims(&self, iat: u64, aud: &str, sub: Option<String>) -> Result<String, AuthError> {
        let claims = Claims {
            iss: self.issuer.clone(),
            aud: aud.to_string(),
            iat,
            exp: iat + self.ttl.as_secs(),
            jti: uuid::Uuid::new_v4().to_string(),
            sub,
        };
        encode(&self.header, &claims, &self.key).map_err(|e| AuthError::Sign(e.to_string()))
    }
}

/// Counts of what a verifier saw, for tests and metrics.
#[derive(Debug, Default)]
pub struct VerifierStats {
    verified: AtomicU64,
    rejected: AtomicU64,
    by_issuer: Mutex<HashMap<String, u64>>,
}

impl VerifierStats {
    pub fn verified(&self) -> u64 {
        self.verified.load(Ordering::Relaxed)
    }

    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    /// Tokens verified per issuer.
    pub fn verified_by_issuer(&self) -> HashMap<String, u64> {
        self.by_issuer.lock().clone()
    }
}

/// Verifies tokens for one audience against one or more secrets; with
/// [`TokenVerifier::single_use`], each token once.
pub struct TokenVerifier {
    keys: Vec<DecodingKey>,
    validation: Validation,
    audience: String,
    leeway: u64,
    max_lifetime: u64,
    stats: std::sync::Arc<VerifierStats>,
    seen: Option<Mutex<SeenTokens>>,
}

impl std::fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenVerifier")
            .field("secrets", &self.keys.len())
            .field("audience", &self.audience)
            .field("leeway", &self.leeway)
            .field("single_use", &self.seen.is_some())
            .finish_non_exhaustive()
    }
}

impl TokenVerifier {
    /// Accepts tokens for `audience` signed with any of `secrets` (current first, then previous).
    pub fn new(secrets: &[&[u8]], audience: impl Into<String>) -> Result<Self, AuthError> {
        if secrets.is_empty() {
            return Err(AuthError::WeakSecret(0));
        }
        for secret in secrets {
            check_strength(secret)?;
        }
        let keys = secrets
            .iter()
            .map(|s| DecodingKey::from_secret(s).map_err(|e| AuthError::Sign(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let mut validation = Validation::new(Algorithm::HS256);
        // Checked here instead, so a refusal can say whom the token was for.
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "iat", "aud", "iss"]);
        validation.leeway = DEFAULT_LEEWAY.as_secs();
        Ok(Self {
            keys,
            leeway: DEFAULT_LEEWAY.as_secs(),
            max_lifetime: DEFAULT_MAX_LIFETIME.as_secs(),
            validation,
            audience: audience.into(),
            stats: Default::default(),
            seen: None,
        })
    }

    /// Accepts each token once: its `jti` is remembered until the token expires, and a second
    /// request with it is refused as a replay. For peers that sign a token per request.
    pub fn single_use(self) -> Self {
        self.single_use_up_to(replay::DEFAULT_CAPACITY)
    }

    fn single_use_up_to(mut self, capacity: usize) -> Self {
        self.seen = Some(Mutex::new(SeenTokens::new(capacity)));
        self
    }

    /// Tolerates this much clock difference on `exp` and `iat`.
    pub fn with_leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway.as_secs();
        self.validation.leeway = self.leeway;
        self
    }

    /// Refuses tokens whose `exp - iat` is longer than `max` (default ten minutes).
    pub fn with_max_lifetime(mut self, max: Duration) -> Self {
        self.max_lifetime = max.as_secs();
        self
    }

    pub fn stats(&self) -> std::sync::Arc<VerifierStats> {
        std::sync::Arc::clone(&self.stats)
    }

    /// Checks a token and returns its claims.
    pub fn verify(&self, token: &str) -> Result<Claims, AuthError> {
        let result = self.verify_at(token, now());
        match &result {
            Ok(claims) => {
                self.stats.verified.fetch_add(1, Ordering::Relaxed);
                {
                    let mut by_issuer = self.stats.by_issuer.lock();
                    *by_issuer.entry(claims.iss.clone()).or_default() += 1;
                }
            }
            Err(_) => {
                self.stats.rejected.fetch_add(1, Ordering::Relaxed);
            }
        }
        result
    }

    pub(crate) fn verify_at(&self, token: &str, now: u64) -> Result<Claims, AuthError> {
        let claims = self.decode(token, now)?;
        if claims.aud != self.audience {
            return Err(AuthError::WrongAudience {
                got: claims.aud,
                accepted: self.audience.clone(),
            });
        }
        if let Some(seen) = &self.seen {
            let id = uuid::Uuid::parse_str(&claims.jti)
                .map_err(|_| AuthError::Malformed)?
                .as_u128();
            let accepted = seen.lock().accept(id, claims.exp + self.leeway, now);
            match accepted {
                Ok(()) => {}
                Err(Refusal::Replayed) => return Err(AuthError::Replayed),
                Err(Refusal::Full) => return Err(AuthError::Overloaded),
            }
        }
        Ok(claims)
    }

    /// Signature, expiry and lifetime.
    fn decode(&self, token: &str, now: u64) -> Result<Claims, AuthError> {
        let mut last = AuthError::Malformed;
        for key in &self.keys {
            match decode::<Claims>(token, key, &self.validation) {
                Ok(data) => {
                    let claims = data.claims;
                    // jsonwebtoken checks `exp` against the real clock; `now` lets tests move it.
                    if claims.exp + self.leeway < now {
                        return Err(AuthError::Expired);
                    }
                    if claims.iat > now + self.leeway
                        || claims.exp.saturating_sub(claims.iat) > self.max_lifetime
                    {
                        return Err(AuthError::BadLifetime);
                    }
                    return Ok(claims);
                }
                Err(e) => {
                    last = match e.kind() {
                        ErrorKind::InvalidSignature => AuthError::BadSignature,
                        ErrorKind::ExpiredSignature => return Err(AuthError::Expired),
                        _ => AuthError::Malformed,
                    };
                    if last != AuthError::BadSignature {
                        return Err(last);
                    }
                }
            }
        }
        Err(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier(secrets: &[&[u8]]) -> TokenVerifier {
        TokenVerifier::new(secrets, "sqe-worker").expect("verifier")
    }

    #[test]
    fn short_secrets_are_refused() {
        let weak = TokenSigner::new(b"s3cr3t", "c", "sqe-worker").err();
        assert_eq!(weak, Some(AuthError::WeakSecret(6)));
        let weak =
            TokenVerifier::new(&[b"the-cluster-secret".as_slice(), b"old"], "sqe-worker").err();
        assert_eq!(weak, Some(AuthError::WeakSecret(3)));
        assert!(TokenSigner::new(&[7u8; MIN_SECRET_BYTES], "c", "sqe-worker").is_ok());
    }

    #[test]
    fn round_trip_and_unique_ids() -> Result<(), AuthError> {
        let signer = TokenSigner::new(b"the-cluster-secret", "coordinator", "sqe-worker")?;
        let v = verifier(&[b"the-cluster-secret"]);
        let a = v.verify(&signer.sign()?)?;
        let b = v.verify(&signer.sign()?)?;
        assert_eq!(a.iss, "coordinator");
        assert_eq!(a.aud, "sqe-worker");
        assert_eq!(a.exp - a.iat, 60);
        assert_ne!(a.jti, b.jti);
        assert_eq!(v.stats().verified(), 2);
        assert_eq!(v.stats().verified_by_issuer().get("coordinator"), Some(&2));
        Ok(())
    }

    #[test]
    fn rejects_wrong_secret_audience_and_garbage() -> Result<(), AuthError> {
        let v = verifier(&[b"the-cluster-secret"]);
        let other = TokenSigner::new(b"another-cluster-secret", "coordinator", "sqe-worker")?;
        assert_eq!(v.verify(&other.sign()?), Err(AuthError::BadSignature));
        let elsewhere = TokenSigner::new(b"the-cluster-secret", "coordinator", "someone-else")?;
        assert_eq!(
            v.verify(&elsewhere.sign()?),
            Err(AuthError::WrongAudience {
                got: "someone-else".into(),
                accepted: "sqe-worker".into()
            })
        );
        assert_eq!(v.verify("not.a.token"), Err(AuthError::Malformed));
        assert_eq!(v.stats().rejected(), 3);
        Ok(())
    }

    #[test]
    fn expiry_with_bounded_skew() -> Result<(), AuthError> {
        let signer = TokenSigner::new(b"the-cluster-secret", "c", "sqe-worker")?
            .with_ttl(Duration::from_secs(10));
        let v = verifier(&[b"the-cluster-secret"]).with_leeway(Duration::from_secs(5));
        let t0 = now();
        let token = signer.sign_at(t0)?;
        assert!(v.verify_at(&token, t0 + 14).is_ok(), "within exp + leeway");
        assert_eq!(v.verify_at(&token, t0 + 16), Err(AuthError::Expired));
        // Signed by a clock 4 s ahead: accepted; 60 s ahead: refused.
        assert!(v.verify_at(&signer.sign_at(t0 + 4)?, t0).is_ok());
        assert_eq!(
            v.verify_at(&signer.sign_at(t0 + 60)?, t0),
            Err(AuthError::BadLifetime)
        );
        // A long-lived token is refused whatever its signature.
        let long = TokenSigner::new(b"the-cluster-secret", "c", "sqe-worker")?
            .with_ttl(Duration::from_secs(3600));
        assert_eq!(
            v.verify_at(&long.sign_at(t0)?, t0),
            Err(AuthError::BadLifetime)
        );
        Ok(())
    }

    #[test]
    fn a_token_is_for_one_node_and_one_request() -> Result<(), AuthError> {
        let signer = TokenSigner::new(b"the-cluster-secret", "coordinator", "unused")?;
        let w1 = TokenVerifier::new(&[b"the-cluster-secret"], "http://w1:50052")?.single_use();
        let w2 = TokenVerifier::new(&[b"the-cluster-secret"], "http://w2:50052")?.single_use();
        let token = signer.sign_to("http://w1:50052")?;
        assert_eq!(w1.verify(&token)?.aud, "http://w1:50052");
        assert_eq!(
            w1.verify(&token),
            Err(AuthError::Replayed),
            "the same token twice"
        );
        assert!(matches!(
            w2.verify(&signer.sign_to("http://w1:50052")?),
            Err(AuthError::WrongAudience { .. })
        ));
        assert!(
            w1.verify(&signer.sign_to("http://w1:50052")?).is_ok(),
            "a fresh token"
        );
        // A verifier that is not single-use (client bearer tokens) accepts a token again.
        let reusable = TokenVerifier::new(&[b"the-cluster-secret"], "http://w1:50052")?;
        let token = signer.sign_to("http://w1:50052")?;
        assert!(reusable.verify(&token).is_ok() && reusable.verify(&token).is_ok());
        Ok(())
    }

    #[test]
    fn a_full_replay_memory_refuses_instead_of_forgetting() -> Result<(), AuthError> {
        let signer = TokenSigner::new(b"the-cluster-secret", "c", "sqe-worker")?;
        let v = verifier(&[b"the-cluster-secret"]).single_use_up_to(1);
        let first = signer.sign()?;
        assert!(v.verify(&first).is_ok());
        assert_eq!(v.verify(&signer.sign()?), Err(AuthError::Overloaded));
        assert_eq!(v.verify(&first), Err(AuthError::Replayed));
        assert_eq!(
            tonic::Status::from(AuthError::Overloaded).code(),
            tonic::Code::ResourceExhausted
        );
        Ok(())
    }

    #[test]
    fn rotation_accepts_current_and_previous() -> Result<(), AuthError> {
        let v = verifier(&[b"the-new-cluster-secret", b"the-old-cluster-secret"]);
        let old = TokenSigner::new(b"the-old-cluster-secret", "w", "sqe-worker")?;
        let new = TokenSigner::new(b"the-new-cluster-secret", "w", "sqe-worker")?;
        assert!(v.verify(&old.sign()?).is_ok());
        assert!(v.verify(&new.sign()?).is_ok());
        let retired = TokenSigner::new(b"an-older-cluster-secret", "w", "sqe-worker")?;
        assert_eq!(v.verify(&retired.sign()?), Err(AuthError::BadSignature));
        Ok(())
    }

    #[test]
    fn empty_secrets_are_refused() {
        assert!(TokenSigner::new(b"", "a", "b").is_err());
        assert!(TokenVerifier::new(&[], "b").is_err());
        assert!(TokenVerifier::new(&[b"".as_slice()], "b").is_err());
    }
}
