//! Result tickets: a client's claim to one partition of a query's final stage, redeemed at the
//! worker that runs it (Flight SQL parallel endpoints).
//!
//! The coordinator signs each ticket with the cluster secret (HS256, audience
//! [`RESULT_AUDIENCE`], so no worker token is a ticket nor the other way round) and binds it
//! to the credential the client sent with GetFlightInfo: the ticket holds an HMAC of that
//! `authorization` header under the secret, and the worker recomputes it from the DoGet's own
//! header. A ticket is worth nothing to another user (nor to the same user with another
//! credential) and nothing after it expires; its partition is served once (the worker
//! remembers what it has served, see `sqe_worker::results`).

use std::time::Duration;

use hmac::{KeyInit, Mac};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::token::{AuthError, check_strength, now};

/// The audience of every result ticket.
pub const RESULT_AUDIENCE: &str = "sqe-results";

/// One partition of a query's final stage, and who may read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultTicket {
    /// The distributed plan's query id (datafusion-distributed's task keys carry it).
    pub query: Uuid,
    pub stage: u64,
    pub task: u64,
    pub partition: u64,
    /// The coordinator's handle of the statement (for CancelFlightInfo).
    pub statement: Uuid,
}

/// What a ticket says on the wire.
#[derive(Debug, Serialize, Deserialize)]
struct TicketClaims {
    aud: String,
    iat: u64,
    exp: u64,
    /// `ResultTicket::query`, `stage`, `task`, `partition`, `statement`.
    qid: String,
    stg: u64,
    tsk: u64,
    prt: u64,
    sid: String,
    /// HMAC of the client's `authorization` header (hex).
    own: String,
}

/// Why a ticket is not honoured. Messages never quote the ticket or the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TicketError {
    #[error("the result ticket is malformed")]
    Malformed,
    #[error("the result ticket's signature is invalid")]
    BadSignature,
    #[error("the result ticket has expired: run the query again")]
    Expired,
    #[error("the result ticket was issued to another client (a different authorization)")]
    NotOwner,
    #[error("cannot sign a result ticket: {0}")]
    Sign(String),
    #[error(transparent)]
    Secret(#[from] AuthError),
}

impl From<TicketError> for tonic::Status {
    fn from(error: TicketError) -> Self {
        match error {
            TicketError::Malformed => tonic::Status::invalid_argument(error.to_string()),
            TicketError::BadSignature | TicketError::Expired => {
                tonic::Status::unauthenticated(error.to_string())
            }
            TicketError::NotOwner => tonic::Status::permission_denied(error.to_string()),
            TicketError::Sign(_) | TicketError::Secret(_) => {
                tonic::Status::internal(error.to_string())
            }
        }
    }
}

/// The owner digest of `authorization` (absent: an anonymous client) under `secret`.
fn owner_digest(secret: &[u8], authorization: Option<&[u8]>) -> Result<String, TicketError> {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret)
        .map_err(|e| TicketError::Sign(e.to_string()))?;
    mac.update(b"sqe result ticket owner\0");
    mac.update(authorization.unwrap_or_default());
    let digest = mac.finalize().into_bytes();
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// Signs result tickets (the coordinator).
#[derive(Clone)]
pub struct ResultTicketSigner {
    secret: Vec<u8>,
    /// Reads back the tickets this signer issued (CancelFlightInfo sends them).
    verifier: ResultTicketVerifier,
    key: EncodingKey,
    ttl: Duration,
}

impl std::fmt::Debug for ResultTicketSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultTicketSigner")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl ResultTicketSigner {
    /// Tickets valid for `ttl`, signed with `secret` (the cluster's worker secret).
    pub fn new(secret: &[u8], ttl: Duration) -> Result<Self, TicketError> {
        check_strength(secret)?;
        Ok(Self {
            verifier: ResultTicketVerifier::new(&[secret])?,
            secret: secret.to_vec(),
            key: EncodingKey::from_secret(secret).map_err(|e| TicketError::Sign(e.to_string()))?,
            ttl,
        })
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// `ticket` for the client that sent `authorization`.
    pub fn sign(
        &self,
        ticket: &ResultTicket,
        authorization: Option<&[u8]>,
    ) -> Result<String, TicketError> {
        let iat = now();
        let claims = TicketClaims {
            aud: RESULT_AUDIENCE.to_string(),
            iat,
            exp: iat + self.ttl.as_secs().max(1),
            qid: ticket.query.to_string(),
            stg: ticket.stage,
            tsk: ticket.task,
            prt: ticket.partition,
            sid: ticket.statement.to_string(),
            own: owner_digest(&self.secret, authorization)?,
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.key)
            .map_err(|e| TicketError::Sign(e.to_string()))
    }

    /// The statement of a ticket this signer issued, whoever presents it (CancelFlightInfo
    /// sends the tickets back to the coordinator); `None` for anything else.
    pub fn statement_of(&self, ticket: &[u8]) -> Option<Uuid> {
        self.verifier
            .claims(ticket)
            .ok()
            .and_then(|(claims, _)| Uuid::parse_str(&claims.sid).ok())
    }
}

/// Checks result tickets (a worker): against the current secret and any previous one.
#[derive(Clone)]
pub struct ResultTicketVerifier {
    keys: Vec<(Vec<u8>, DecodingKey)>,
    validation: Validation,
}

impl std::fmt::Debug for ResultTicketVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultTicketVerifier")
            .field("secrets", &self.keys.len())
            .finish_non_exhaustive()
    }
}

impl ResultTicketVerifier {
    pub fn new(secrets: &[&[u8]]) -> Result<Self, TicketError> {
        if secrets.is_empty() {
            return Err(AuthError::WeakSecret(0).into());
        }
        let mut keys = Vec::with_capacity(secrets.len());
        for secret in secrets {
            check_strength(secret)?;
            let key =
                DecodingKey::from_secret(secret).map_err(|e| TicketError::Sign(e.to_string()))?;
            keys.push((secret.to_vec(), key));
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_audience(&[RESULT_AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "aud"]);
        validation.leeway = super::token::DEFAULT_LEEWAY.as_secs();
        Ok(Self { keys, validation })
    }

    /// The ticket, if it is signed, unexpired and was issued to the client sending
    /// `authorization`.
    pub fn verify(
        &self,
        ticket: &[u8],
        authorization: Option<&[u8]>,
    ) -> Result<ResultTicket, TicketError> {
        let (claims, secret) = self.claims(ticket)?;
        let expected = owner_digest(secret, authorization)?;
        if !constant_time_eq(expected.as_bytes(), claims.own.as_bytes()) {
            return Err(TicketError::NotOwner);
        }
        let uuid = |text: &str| Uuid::parse_str(text).map_err(|_| TicketError::Malformed);
        Ok(ResultTicket {
            query: uuid(&claims.qid)?,
            stage: claims.stg,
            task: claims.tsk,
            partition: claims.prt,
            statement: uuid(&claims.sid)?,
        })
    }

    /// The ticket's claims and the secret that signed it.
    fn claims(&self, ticket: &[u8]) -> Result<(TicketClaims, &[u8]), TicketError> {
        let text = std::str::from_utf8(ticket).map_err(|_| TicketError::Malformed)?;
        let mut last = TicketError::Malformed;
        for (secret, key) in &self.keys {
            match decode::<TicketClaims>(text, key, &self.validation) {
                Ok(data) => return Ok((data.claims, secret)),
                Err(e) => {
                    last = match e.kind() {
                        ErrorKind::ExpiredSignature => return Err(TicketError::Expired),
                        ErrorKind::InvalidSignature => TicketError::BadSignature,
                        _ => TicketError::Malformed,
                    }
                }
            }
        }
        Err(last)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"the-cluster-secret-of-this-test";

    fn ticket() -> ResultTicket {
        ResultTicket {
            query: Uuid::new_v4(),
            stage: 1,
            task: 2,
            partition: 3,
            statement: Uuid::new_v4(),
        }
    }

    #[test]
    fn a_ticket_is_redeemed_only_with_the_credential_it_was_issued_for() -> Result<(), TicketError>
    {
        let signer = ResultTicketSigner::new(SECRET, Duration::from_secs(60))?;
        let verifier = ResultTicketVerifier::new(&[SECRET])?;
        let issued = ticket();
        let alice = Some(b"Bearer alice-token".as_slice());
        let signed = signer.sign(&issued, alice)?;
        assert_eq!(verifier.verify(signed.as_bytes(), alice)?, issued);
        for other in [Some(b"Bearer bob-token".as_slice()), None] {
            assert_eq!(
                verifier.verify(signed.as_bytes(), other),
                Err(TicketError::NotOwner)
            );
        }
        // Anonymous clients (no authorization) redeem their own anonymous tickets.
        let anonymous = signer.sign(&issued, None)?;
        assert_eq!(verifier.verify(anonymous.as_bytes(), None)?, issued);
        assert_eq!(
            signer.statement_of(signed.as_bytes()),
            Some(issued.statement)
        );
        Ok(())
    }

    #[test]
    fn forged_foreign_and_expired_tickets_are_refused() -> Result<(), TicketError> {
        let verifier = ResultTicketVerifier::new(&[SECRET])?;
        let other =
            ResultTicketSigner::new(b"another-cluster-secret-entirely", Duration::from_secs(60))?;
        let foreign = other.sign(&ticket(), None)?;
        assert_eq!(
            verifier.verify(foreign.as_bytes(), None),
            Err(TicketError::BadSignature)
        );
        assert_eq!(
            verifier.verify(b"not a ticket", None),
            Err(TicketError::Malformed)
        );
        // A worker token (another audience) is no ticket.
        let token = super::super::TokenSigner::new(SECRET, "coordinator", "sqe-worker")
            .map_err(TicketError::from)?
            .sign()
            .map_err(TicketError::from)?;
        assert_eq!(
            verifier.verify(token.as_bytes(), None),
            Err(TicketError::Malformed)
        );
        // Expired past the leeway.
        let key = EncodingKey::from_secret(SECRET).map_err(|e| TicketError::Sign(e.to_string()))?;
        let past = now() - 3600;
        let claims = TicketClaims {
            aud: RESULT_AUDIENCE.into(),
            iat: past - 60,
            exp: past,
            qid: Uuid::new_v4().to_string(),
            stg: 0,
            tsk: 0,
            prt: 0,
            sid: Uuid::new_v4().to_string(),
            own: owner_digest(SECRET, None)?,
        };
        let expired = encode(&Header::new(Algorithm::HS256), &claims, &key)
            .map_err(|e| TicketError::Sign(e.to_string()))?;
        assert_eq!(
            verifier.verify(expired.as_bytes(), None),
            Err(TicketError::Expired)
        );
        Ok(())
    }

    #[test]
    fn a_rotated_secret_still_redeems_tickets_signed_before() -> Result<(), TicketError> {
        let old = ResultTicketSigner::new(SECRET, Duration::from_secs(60))?;
        let signed = old.sign(&ticket(), None)?;
        let new_secret = b"the-next-cluster-secret-of-this-test".as_slice();
        let rotated = ResultTicketVerifier::new(&[new_secret, SECRET])?;
        assert!(rotated.verify(signed.as_bytes(), None).is_ok());
        Ok(())
    }
}
