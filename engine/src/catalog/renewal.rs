//! A REST catalog reached with OAuth2 client credentials whose token the catalog refuses (`401`:
//! revoked, or expired before the scheduled renewal) gets a new token at once, and the refused
//! call is made again with it.
//!
//! `create_table` and `update_table` consume their arguments, so they are not made again here: a
//! refused commit is handed back as retryable (iceberg's transaction then reloads the table and
//! commits again, with the new token), a refused CREATE TABLE fails saying to run it again.

use std::future::Future;
use std::sync::Arc;

use iceberg::table::Table;
use iceberg::{Error, ErrorKind, NamespaceIdent, Result, TableCommit, TableCreation, TableIdent};
use iceberg_catalog_rest::RestCatalog;

/// `inner`, renewing its token when the catalog answers `401`.
#[derive(Debug)]
pub(super) struct RenewOnUnauthorized {
    inner: Arc<RestCatalog>,
}

impl RenewOnUnauthorized {
    pub(super) fn new(inner: Arc<RestCatalog>) -> Self {
        Self { inner }
    }

    /// Makes `call`; if the catalog refused the token, renews it and makes `call` once more.
    async fn renewing<T, F, Fut>(&self, call: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        match call().await {
            Err(e) if is_unauthorized(&e) => {
                self.renew(e).await?;
                call().await
            }
            other => other,
        }
    }

    /// Renews the token after `refused`; the result is `refused` itself when renewing worked.
    async fn renew(&self, refused: Error) -> Result<Error> {
        tracing::info!("the catalog refused its token; fetching a new one");
        match self.inner.regenerate_token().await {
            Ok(()) => Ok(refused),
            Err(e) => Err(Error::new(
                ErrorKind::Unexpected,
                format!("the catalog refused its token and a new one could not be had: {e}"),
            )
            .with_source(refused)),
        }
    }

    /// For calls that cannot be made twice: renews the token so the next call works, and says
    /// so in the error.
    async fn renewing_once<T>(&self, result: Result<T>, retryable: bool) -> Result<T> {
        match result {
            Err(e) if is_unauthorized(&e) => {
                let refused = self.renew(e).await?;
                Err(Error::new(
                    ErrorKind::Unexpected,
                    "the catalog refused its token (401), so nothing was done; a new token has \
                     been fetched: run the statement again",
                )
                .with_retryable(retryable)
                .with_source(refused))
            }
            other => other,
        }
    }
}

/// iceberg-catalog-rest reports a status it has no error kind for as this message, with the
/// status first in its context.
fn is_unauthorized(e: &Error) -> bool {
    e.kind() == ErrorKind::Unexpected
        && e.message() == "Received response with unexpected status code"
        && e.to_string().contains("context: { status: 401 ")
}

sqe_iceberg::catalog_view!(impl Catalog for RenewOnUnauthorized, inner = self.inner, around = self.renewing; {
    async fn load_table(&self, table: &TableIdent) -> Result<Table> {
        self.renewing(|| self.inner.load_table(table)).await
    }

    async fn register_table(&self, table: &TableIdent, metadata_location: String) -> Result<Table> {
        self.renewing(|| self.inner.register_table(table, metadata_location.clone()))
            .await
    }

    async fn create_table(
        &self,
        namespace: &NamespaceIdent,
        creation: TableCreation,
    ) -> Result<Table> {
        let result = self.inner.create_table(namespace, creation).await;
        self.renewing_once(result, false).await
    }

    async fn update_table(&self, commit: TableCommit) -> Result<Table> {
        let result = self.inner.update_table(commit).await;
        self.renewing_once(result, true).await
    }
});

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Json;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::{get, post};
    use iceberg::{Catalog, CatalogBuilder};
    use iceberg_catalog_rest::RestCatalogBuilder;
    use serde_json::json;

    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    /// Tokens handed out; the catalog takes only tokens newer than `refused_up_to`.
    #[derive(Default)]
    struct Idp {
        issued: AtomicUsize,
        refused_up_to: AtomicUsize,
    }

    fn accepted(idp: &Idp, headers: &HeaderMap) -> bool {
        let token = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer token-"))
            .and_then(|n| n.parse::<usize>().ok());
        token.is_some_and(|n| n > idp.refused_up_to.load(Ordering::SeqCst))
    }

    async fn catalog() -> std::io::Result<(String, Arc<Idp>)> {
        let idp = Arc::new(Idp::default());
        let app = axum::Router::new()
            .route(
                "/v1/oauth/tokens",
                post(|State(idp): State<Arc<Idp>>| async move {
                    let n = idp.issued.fetch_add(1, Ordering::SeqCst) + 1;
                    Json(json!({"access_token": format!("token-{n}"), "token_type": "bearer", "expires_in": 3600}))
                }),
            )
            .route(
                "/v1/config",
                get(|| async { Json(json!({"defaults": {}, "overrides": {}})) }),
            )
            .route(
                "/v1/namespaces",
                get(|State(idp): State<Arc<Idp>>, headers: HeaderMap| async move {
                    if accepted(&idp, &headers) {
                        (StatusCode::OK, Json(json!({"namespaces": [["a"]]})))
                    } else {
                        (
                            StatusCode::UNAUTHORIZED,
                            Json(json!({"error": {"message": "token expired", "type": "NotAuthorizedException", "code": 401}})),
                        )
                    }
                }),
            )
            .with_state(Arc::clone(&idp));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        sqe_layers::task::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok((format!("http://{addr}"), idp))
    }

    async fn rest_catalog(url: &str) -> iceberg::Result<Arc<RestCatalog>> {
        let props = HashMap::from([
            (
                iceberg_catalog_rest::REST_CATALOG_PROP_URI.to_string(),
                url.to_string(),
            ),
            ("credential".to_string(), "sqe:secret".to_string()),
        ]);
        Ok(Arc::new(
            RestCatalogBuilder::default().load("test", props).await?,
        ))
    }

    #[tokio::test]
    async fn a_refused_token_is_renewed_and_the_call_made_again() -> TestResult {
        let (url, idp) = catalog().await?;
        let rest = rest_catalog(&url).await?;
        let catalog = RenewOnUnauthorized::new(Arc::clone(&rest));
        assert_eq!(catalog.list_namespaces(None).await?.len(), 1);
        let issued = idp.issued.load(Ordering::SeqCst);

        // The identity provider revokes every token issued so far.
        idp.refused_up_to.store(issued, Ordering::SeqCst);
        assert!(
            rest.list_namespaces(None).await.is_err(),
            "the catalog client alone fails with the revoked token"
        );
        assert_eq!(catalog.list_namespaces(None).await?.len(), 1);
        assert_eq!(
            idp.issued.load(Ordering::SeqCst),
            issued + 1,
            "one new token"
        );
        Ok(())
    }

    #[tokio::test]
    async fn other_errors_are_not_taken_for_a_refused_token() {
        let other = Error::new(ErrorKind::Unexpected, "connection refused");
        assert!(!is_unauthorized(&other));
        let conflict = Error::new(ErrorKind::CatalogCommitConflicts, "401 Unauthorized");
        assert!(!is_unauthorized(&conflict));
        let unexpected = "Received response with unexpected status code";
        let refused = Error::new(ErrorKind::Unexpected, unexpected)
            .with_context("status", "401 Unauthorized")
            .with_context("json", "{}");
        assert!(is_unauthorized(&refused));
        // A failure whose body mentions a 401 elsewhere (the catalog's own token exchange).
        let upstream = Error::new(ErrorKind::Unexpected, unexpected)
            .with_context("status", "503 Service Unavailable")
            .with_context("json", "STS answered 401 Unauthorized");
        assert!(!is_unauthorized(&upstream));
    }
}
