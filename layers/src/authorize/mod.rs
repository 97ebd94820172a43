//! Authorize or reject: a request passes to the service only when its [`Authorize`] says so
//! (having put what the service needs, such as the caller's identity, in the request's
//! extensions); otherwise the layer answers with the gRPC status it got, without calling the
//! service. SQE's worker token check ([`crate::auth::VerifyLayer`]) and the Flight SQL
//! endpoint's client authentication are both this layer with an `Authorize` of their own.
//!
//! ```
//! use http::Request;
//! use sqe_layers::authorize::{Authorize, AuthorizeLayer};
//! use tonic::Status;
//!
//! /// Lets through requests that name a tenant, and tells the service which.
//! #[derive(Clone)]
//! struct Tenant;
//!
//! #[derive(Clone)]
//! struct TenantId(String);
//!
//! impl<B> Authorize<B> for Tenant {
//!     fn authorize(&self, request: &mut Request<B>) -> Result<(), Status> {
//!         let tenant = request
//!             .headers()
//!             .get("x-tenant")
//!             .and_then(|v| v.to_str().ok())
//!             .ok_or_else(|| Status::unauthenticated("no tenant"))?
//!             .to_string();
//!         request.extensions_mut().insert(TenantId(tenant));
//!         Ok(())
//!     }
//! }
//!
//! let layer = AuthorizeLayer::new(Tenant);
//! ```

mod future;
mod service;

pub use future::AuthorizeFuture;
pub use service::{Authorize, AuthorizeLayer, AuthorizeService};

#[cfg(test)]
mod tests;
