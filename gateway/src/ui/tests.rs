//! The UI's routes against a stand-in `Queries`, through the router without a socket: assets,
//! login and its cookie, who sees which query, and the kill button's rules.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use http::{Method, Request, StatusCode, header};
use serde_json::Value;
use sqe_engine::engine::EngineSettings;
use sqe_engine::history::{QueryStart, QueryState, QueryTracker};
use sqe_engine::queries::Queries;
use tower::ServiceExt;

use super::{Ui, ui_router};
use crate::client_auth::{ClientAuth, alice_and_bob};
use crate::config::{ClientAuthConfig, ClientAuthType};

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Fixture {
    router: Router,
    queries: Arc<Queries>,
    _warehouse: tempfile::TempDir,
}

async fn fixture(admin_users: &[&str]) -> Result<Fixture, Box<dyn std::error::Error>> {
    fixture_with(admin_users, alice_and_bob()?).await
}

async fn fixture_with(
    admin_users: &[&str],
    auth: Arc<ClientAuth>,
) -> Result<Fixture, Box<dyn std::error::Error>> {
    let warehouse = tempfile::tempdir()?;
    let settings = EngineSettings {
        admin_users: admin_users.iter().map(|u| u.to_string()).collect(),
        ..EngineSettings::default()
    };
    let queries = sqe_engine::stand_in::queries_in(warehouse.path(), settings).await?;
    let ui = Ui::new(
        Arc::clone(&queries),
        auth,
        false,
        Some("http://grafana/trace/{trace_id}".into()),
    );
    Ok(Fixture {
        router: ui_router(ui),
        queries,
        _warehouse: warehouse,
    })
}

impl Fixture {
    async fn send(
        &self,
        method: Method,
        path: &str,
        cookie: Option<&str>,
        body: Option<Value>,
    ) -> Result<(StatusCode, http::HeaderMap, Vec<u8>), Box<dyn std::error::Error>> {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        let request = match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))?,
            None => request.body(Body::empty())?,
        };
        let response = self.router.clone().oneshot(request).await?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await?;
        Ok((status, headers, body.to_vec()))
    }

    async fn json(
        &self,
        path: &str,
        cookie: &str,
    ) -> Result<(StatusCode, Value), Box<dyn std::error::Error>> {
        let (status, _, body) = self.send(Method::GET, path, Some(cookie), None).await?;
        Ok((status, serde_json::from_slice(&body)?))
    }

    /// Logs `user` in (their password is their name) and returns the cookie to send.
    async fn login(&self, user: &str) -> Result<String, Box<dyn std::error::Error>> {
        self.login_with(serde_json::json!({"user": user, "password": user}))
            .await
    }

    /// Logs in with `form` and returns the cookie to send.
    async fn login_with(&self, form: Value) -> Result<String, Box<dyn std::error::Error>> {
        let (status, headers, _) = self
            .send(Method::POST, "/ui/api/login", None, Some(form))
            .await?;
        assert_eq!(status, StatusCode::OK);
        let cookie = headers
            .get(header::SET_COOKIE)
            .ok_or("no session cookie")?
            .to_str()?
            .to_string();
        assert!(cookie.contains("HttpOnly"), "{cookie}");
        assert!(cookie.contains("SameSite=Strict"), "{cookie}");
        Ok(cookie.split(';').next().ok_or("empty cookie")?.to_string())
    }

    /// A query of `user` that has not ended.
    fn running_query(&self, user: &str) -> QueryTracker {
        self.queries.engine().history().begin(QueryStart {
            endpoint: "trino",
            user: user.into(),
            sql: "SELECT 42".into(),
            ..QueryStart::default()
        })
    }
}

#[tokio::test]
async fn pages_are_served_from_the_binary() -> TestResult {
    let ui = fixture(&[]).await?;
    let (status, headers, body) = ui.send(Method::GET, "/ui", None, None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers[header::CONTENT_TYPE]
            .to_str()?
            .starts_with("text/html")
    );
    assert!(String::from_utf8(body)?.contains("/ui/app.js"));
    let (status, headers, body) = ui.send(Method::GET, "/ui/app.js", None, None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers[header::CONTENT_TYPE]
            .to_str()?
            .starts_with("text/javascript")
    );
    assert!(String::from_utf8(body)?.contains("/ui/api/"));
    Ok(())
}

/// Where the port takes only an identity provider's JWTs, the browser logs in with one: the
/// cookie carries it, so the token's own expiry ends the session; a forged one is refused.
#[tokio::test]
async fn with_only_external_jwts_the_browser_logs_in_with_a_token() -> TestResult {
    let auth = ClientAuth::from_config(&ClientAuthConfig {
        kind: ClientAuthType::Jwt,
        jwt_secret: Some("idp-secret".into()),
        ..Default::default()
    })?;
    let ui = fixture_with(&[], auth).await?;
    let password = serde_json::json!({"user": "carol", "password": "x"});
    let (status, _, _) = ui
        .send(Method::POST, "/ui/api/login", None, Some(password))
        .await?;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "no passwords here");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let token = |secret: &[u8], exp: u64| -> Result<String, Box<dyn std::error::Error>> {
        let key = jsonwebtoken::EncodingKey::from_secret(secret)?;
        let claims = serde_json::json!({"sub": "carol", "exp": exp});
        Ok(jsonwebtoken::encode(
            &jsonwebtoken::Header::default(),
            &claims,
            &key,
        )?)
    };
    let forged = serde_json::json!({"token": token(b"guess", now.as_secs() + 3600)?});
    let (status, headers, _) = ui
        .send(Method::POST, "/ui/api/login", None, Some(forged))
        .await?;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers.get(header::SET_COOKIE).is_none());

    let lasting = token(b"idp-secret", now.as_secs() + 3600)?;
    let cookie = ui.login_with(serde_json::json!({"token": lasting})).await?;
    let (status, cluster) = ui.json("/ui/api/cluster", &cookie).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cluster["user"], "carol");

    let expired = token(b"idp-secret", now.as_secs() - 3600)?;
    let (status, _, _) = ui
        .send(
            Method::GET,
            "/ui/api/cluster",
            Some(&format!("sqe_ui_session={expired}")),
            None,
        )
        .await?;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "an expired token's session ends"
    );
    Ok(())
}

#[tokio::test]
async fn the_api_needs_a_login_with_the_ports_authentication() -> TestResult {
    let ui = fixture(&[]).await?;
    let (status, _, _) = ui.send(Method::GET, "/ui/api/cluster", None, None).await?;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = ui
        .send(
            Method::GET,
            "/ui/api/queries",
            Some("sqe_ui_session=forged"),
            None,
        )
        .await?;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let wrong = serde_json::json!({"user": "alice", "password": "bob"});
    let (status, headers, _) = ui
        .send(Method::POST, "/ui/api/login", None, Some(wrong))
        .await?;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers.get(header::SET_COOKIE).is_none());

    let alice = ui.login("alice").await?;
    let (status, cluster) = ui.json("/ui/api/cluster", &alice).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cluster["user"], "alice");
    assert_eq!(cluster["admin"], false);
    assert_eq!(cluster["workers"], serde_json::json!([]));
    Ok(())
}

#[tokio::test]
async fn a_user_sees_and_kills_only_their_own_queries() -> TestResult {
    let ui = fixture(&[]).await?;
    let (alice, bob) = (ui.login("alice").await?, ui.login("bob").await?);
    let query = ui.running_query("alice");
    let id = query.id().to_string();

    let (_, listed) = ui.json("/ui/api/queries", &alice).await?;
    assert_eq!(listed[0]["queryId"], id.as_str());
    assert_eq!(listed[0]["query"], "SELECT 42");
    let (_, listed) = ui.json("/ui/api/queries", &bob).await?;
    assert_eq!(listed, serde_json::json!([]));
    let (status, _) = ui.json(&format!("/ui/api/queries/{id}"), &bob).await?;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let kill = format!("/ui/api/queries/{id}/kill");
    let (status, _, _) = ui.send(Method::POST, &kill, Some(&bob), None).await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!query.record().state().is_final(), "bob's kill did nothing");

    let (status, page) = ui.json(&format!("/ui/api/queries/{id}"), &alice).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["mayKill"], true);
    let (status, _, _) = ui.send(Method::POST, &kill, Some(&alice), None).await?;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let snapshot = query.record().snapshot();
    assert_eq!(snapshot.state, QueryState::Canceled);
    assert_eq!(snapshot.error_code, Some("ADMINISTRATIVELY_KILLED"));
    assert!(
        snapshot
            .error_message
            .is_some_and(|m| m.contains("killed from the web UI by alice"))
    );
    let (status, _, _) = ui.send(Method::POST, &kill, Some(&alice), None).await?;
    assert_eq!(status, StatusCode::CONFLICT);
    let (_, page) = ui.json(&format!("/ui/api/queries/{id}"), &alice).await?;
    assert_eq!(page["mayKill"], false);
    assert_eq!(page["state"], "CANCELED");
    Ok(())
}

#[tokio::test]
async fn an_administrator_sees_and_kills_every_query() -> TestResult {
    let ui = fixture(&["bob"]).await?;
    let bob = ui.login("bob").await?;
    let query = ui.running_query("alice");
    let (_, cluster) = ui.json("/ui/api/cluster", &bob).await?;
    assert_eq!(cluster["admin"], true);
    let (_, listed) = ui.json("/ui/api/queries", &bob).await?;
    assert_eq!(listed[0]["queryId"], query.id());
    let kill = format!("/ui/api/queries/{}/kill", query.id());
    let (status, _, _) = ui.send(Method::POST, &kill, Some(&bob), None).await?;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(query.record().state(), QueryState::Canceled);
    Ok(())
}
