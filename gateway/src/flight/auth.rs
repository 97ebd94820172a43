//! Client authentication on the Flight SQL endpoint: every call but `Handshake` must carry the
//! bearer token a handshake issued, when authentication is on.

use std::sync::Arc;

use base64::Engine as _;
use http::Request;
use sqe_layers::authorize::{Authorize, AuthorizeLayer};
use tonic::Status;

use crate::client_auth::{ClientAuth, Principal};

const HANDSHAKE_PATH: &str = "/arrow.flight.protocol.FlightService/Handshake";

/// Puts the caller's [`Principal`] into the request extensions, or answers `Unauthenticated`:
/// the generic authorize-or-reject layer with the client check.
pub(crate) type ClientAuthLayer = AuthorizeLayer<ClientCheck>;

/// Builds the layer for `auth`.
pub(crate) fn client_auth_layer(auth: Arc<ClientAuth>) -> ClientAuthLayer {
    AuthorizeLayer::new(ClientCheck { auth })
}

/// Who a Flight SQL call is: its bearer token's user, or (without client authentication) the
/// user it names.
#[derive(Debug, Clone)]
pub(crate) struct ClientCheck {
    auth: Arc<ClientAuth>,
}

/// Credentials a request carries.
pub(super) enum Credentials {
    Bearer(String),
    Basic { user: String, password: String },
}

/// Reads `authorization: Bearer ...` or `authorization: Basic ...`.
pub(super) fn credentials(headers: &http::HeaderMap) -> Result<Option<Credentials>, Status> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value
        .to_str()
        .map_err(|_| Status::unauthenticated("the authorization header is not text"))?;
    if let Some(token) = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
    {
        return Ok(Some(Credentials::Bearer(token.trim().to_string())));
    }
    if let Some(encoded) = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))
    {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| Status::unauthenticated("malformed Basic credentials"))?;
        let (user, password) = decoded
            .split_once(':')
            .ok_or_else(|| Status::unauthenticated("malformed Basic credentials"))?;
        return Ok(Some(Credentials::Basic {
            user: user.to_string(),
            password: password.to_string(),
        }));
    }
    Err(Status::unauthenticated(
        "unsupported authorization scheme (use Basic on Handshake, then Bearer)",
    ))
}

impl ClientCheck {
    fn principal(&self, headers: &http::HeaderMap) -> Result<Principal, Status> {
        match credentials(headers)? {
            Some(Credentials::Bearer(token)) => match self.auth.verify(&token) {
                Ok(principal) => Ok(principal),
                Err(e) if self.auth.required() => Err(Status::from(e)),
                Err(_) => Ok(Principal::anonymous()),
            },
            Some(Credentials::Basic { user, .. }) if !self.auth.required() => {
                Ok(Principal { user })
            }
            _ if self.auth.required() => Err(Status::unauthenticated(
                "authentication required: call Handshake with user and password, then send the bearer token",
            )),
            _ => Ok(Principal::anonymous()),
        }
    }
}

impl<B> Authorize<B> for ClientCheck {
    fn authorize(&self, request: &mut Request<B>) -> Result<(), Status> {
        // Workers' control-plane calls carry worker_secret tokens, verified by their own layer.
        let path = request.uri().path();
        if path == HANDSHAKE_PATH || sqe_proto::is_control_plane_path(path) {
            return Ok(());
        }
        let principal = self.principal(request.headers())?;
        request.extensions_mut().insert(principal);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    fn with_authorization(value: http::HeaderValue) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, value);
        headers
    }

    proptest::proptest! {
        /// Any `authorization` value is credentials or an `Unauthenticated` status.
        #[test]
        fn any_authorization_parses_or_is_refused(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            if let Ok(value) = http::HeaderValue::from_bytes(&bytes)
                && let Err(status) = credentials(&with_authorization(value))
            {
                proptest::prop_assert_eq!(status.code(), tonic::Code::Unauthenticated);
            }
        }

        #[test]
        fn basic_credentials_round_trip(user in "[^:\\\\x00-\\\\x1f]{1,16}", password in "\\\\PC{0,24}") {
            let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            let value = http::HeaderValue::from_str(&format!("Basic {encoded}"))?;
            match credentials(&with_authorization(value)) {
                Ok(Some(Credentials::Basic { user: u, password: p })) => {
                    proptest::prop_assert_eq!((u, p), (user, password));
                }
                _ => proptest::prop_assert!(false, "Basic credentials not read back"),
            }
        }

        #[test]
        fn bearer_tokens_are_taken_as_sent(token in "[A-Za-z0-9._-]{1,64}") {
            let value = http::HeaderValue::from_str(&format!("Bearer {token}"))?;
            match credentials(&with_authorization(value)) {
                Ok(Some(Credentials::Bearer(t))) => proptest::prop_assert_eq!(t, token),
                _ => proptest::prop_assert!(false, "the bearer token not read back"),
            }
        }
    }
}
