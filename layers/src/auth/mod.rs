//! Authentication between processes that share a secret: short-lived HS256 JWTs.
//!
//! The client side ([`AuthLayer`]) signs a token for every request (unique `jti`, `exp` a
//! minute ahead, `aud` = the peer's URL). The server side ([`VerifyLayer`]) checks signature,
//! audience and expiry with a bounded clock skew and answers `Unauthenticated` otherwise; a
//! [`TokenVerifier::single_use`] verifier also remembers each `jti` until its token expires and
//! refuses it a second time, so a token sniffed or copied is good neither at another node nor
//! again. The verifier accepts several secrets, so a secret is rotated by deploying
//! `[new, old]` to verifiers first, then the new secret to signers.
//!
//! ```
//! use sqe_layers::auth::{TokenSigner, TokenVerifier};
//!
//! let signer = TokenSigner::new(b"a-long-random-cluster-secret", "coordinator", "sqe-worker")?;
//! let verifier = TokenVerifier::new(&[b"a-long-random-cluster-secret".as_slice()], "sqe-worker")?;
//! let claims = verifier.verify(&signer.sign()?)?;
//! assert_eq!(claims.iss, "coordinator");
//! # Ok::<(), sqe_layers::auth::AuthError>(())
//! ```

mod client;
mod replay;
mod result_ticket;
mod server;
mod token;

pub use client::{Auth, AuthFuture, AuthLayer, audience_of};
pub use result_ticket::{
    RESULT_AUDIENCE, ResultTicket, ResultTicketSigner, ResultTicketVerifier, TicketError,
};
pub use server::{Verify, VerifyFuture, VerifyLayer, VerifyToken};
pub use token::{AuthError, Claims, MIN_SECRET_BYTES, TokenSigner, TokenVerifier, VerifierStats};
