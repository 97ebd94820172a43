//! Authentication between processes that share a secret: short-lived HS256 JWTs.
//!
//! The client side ([`AuthLayer`]) sends `authorization: Bearer <token>` on every request; a
//! token (unique `jti`, `exp` a minute ahead) is signed anew every few seconds. The server side
//! ([`VerifyLayer`]) checks signature, audience and expiry with a bounded clock skew and answers
//! `Unauthenticated` otherwise; a token it verified is remembered until it expires, so the
//! HMAC and JSON work happen once per token, not once per request. The verifier accepts several secrets, so a secret is rotated by
//! deploying `[new, old]` to verifiers first, then the new secret to signers.
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
mod server;
mod token;

pub use client::{Auth, AuthFuture, AuthLayer, DEFAULT_TOKEN_REUSE};
pub use server::{Verify, VerifyFuture, VerifyLayer, VerifyToken};
pub use token::{AuthError, Claims, MIN_SECRET_BYTES, TokenSigner, TokenVerifier, VerifierStats};
