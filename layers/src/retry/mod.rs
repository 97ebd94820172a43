//! Retries of requests that certainly reached no server.
//!
//! A request is retried only when its attempt failed before a response (a transport error such
//! as a refused connection, or an `Unavailable` status made without a server) **and** not one
//! byte of its body was handed to the connection. The second condition makes retries safe for
//! anything, including a plan a server would start executing on receipt: what was never sent
//! cannot have been accepted. Because nothing is sent before a retry decision, nothing needs to
//! be buffered: the body is held until the connection first asks for it.
//!
//! Retries wait an exponentially growing, jittered backoff, and draw from a shared
//! [`TpsBudget`] so that a failing peer cannot multiply the load on the rest.
//!
//! ```
//! use std::time::Duration;
//! use sqe_layers::retry::{RetryLayer, RetryPolicy};
//!
//! let layer = RetryLayer::new(RetryPolicy::default(), 20.0);
//! let stats = layer.stats(); // retries taken, retries refused by the budget
//! ```

mod body;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use rand::Rng;
use tonic::Code;
use tonic::body::Body;
use tower::retry::budget::{Budget, TpsBudget};
use tower::{Layer, Service, ServiceExt};

use self::body::BodySlot;
use crate::status::grpc_status_of;

/// How many attempts, and how long to wait between them.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Backoff before the first retry; doubles for each further one.
    pub base_backoff: Duration,
    /// Upper bound of one backoff.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(1),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1`: half to all of `base * 2^(attempt-1)`, capped.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = self
            .base_backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(self.max_backoff);
        let ms = exp.as_millis() as u64;
        if ms < 2 {
            return exp;
        }
        Duration::from_millis(rand::rng().random_range(ms / 2..=ms))
    }
}

/// Which attempt of its call a request is (1 for the first), set on each attempt's request
/// extensions for the layers below (the RPC counts by attempt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt(pub u32);

/// What retrying did, shared by every service of a layer.
#[derive(Debug, Default)]
pub struct RetryStats {
    retries: AtomicU64,
    budget_exhausted: AtomicU64,
}

impl RetryStats {
    /// Retries performed.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Retries the budget did not allow.
    pub fn budget_exhausted(&self) -> u64 {
        self.budget_exhausted.load(Ordering::Relaxed)
    }
}

/// See the [module documentation](self).
#[derive(Clone)]
pub struct RetryLayer {
    policy: RetryPolicy,
    budget: Arc<TpsBudget>,
    stats: Arc<RetryStats>,
}

impl std::fmt::Debug for RetryLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryLayer")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl RetryLayer {
    /// Retries up to `policy.max_attempts`, with a budget allowing retries of `budget_percent`
    /// of requests (plus a floor of 10 per second) over a 10 s window.
    pub fn new(policy: RetryPolicy, budget_percent: f32) -> Self {
        let budget = TpsBudget::new(
            Duration::from_secs(10),
            10,
            (budget_percent / 100.0).clamp(0.0, 10.0),
        );
        Self::with_budget(policy, Arc::new(budget))
    }

    /// Shares `budget` with other layers (one budget per process, say).
    pub fn with_budget(policy: RetryPolicy, budget: Arc<TpsBudget>) -> Self {
        Self {
            policy,
            budget,
            stats: Arc::default(),
        }
    }

    pub fn stats(&self) -> Arc<RetryStats> {
        Arc::clone(&self.stats)
    }
}

impl<S> Layer<S> for RetryLayer {
    type Service = Retry<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry {
            inner,
            policy: self.policy,
            budget: Arc::clone(&self.budget),
            stats: Arc::clone(&self.stats),
        }
    }
}

/// See [`RetryLayer`].
#[derive(Clone)]
pub struct Retry<S> {
    inner: S,
    policy: RetryPolicy,
    budget: Arc<TpsBudget>,
    stats: Arc<RetryStats>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for Retry<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retry")
            .field("inner", &self.inner)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// Response future of [`Retry`].
pub struct ResponseFuture<E> {
    inner: Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send>>,
}

impl<E> Future for ResponseFuture<E> {
    type Output = Result<Response<Body>, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

/// Did the attempt fail before any server answered?
fn failed_before_response<E>(result: &Result<Response<Body>, E>) -> bool {
    match result {
        Err(_) => true,
        Ok(response) => {
            grpc_status_of(response.headers()).is_some_and(|s| s.code() == Code::Unavailable)
        }
    }
}

impl<S> Service<Request<Body>> for Retry<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The readied service takes the first attempt; a clone serves later ones.
        let template = self.inner.clone();
        let mut first = std::mem::replace(&mut self.inner, template.clone());
        let (policy, budget, stats) = (
            self.policy,
            Arc::clone(&self.budget),
            Arc::clone(&self.stats),
        );
        let (mut parts, body) = request.into_parts();
        let slot = BodySlot::new(body);
        let inner = async move {
            budget.deposit();
            let mut attempt = 1u32;
            parts.extensions.insert(Attempt(attempt));
            let mut result = first
                .call(Request::from_parts(parts.clone(), slot.body()))
                .await;
            loop {
                if !failed_before_response(&result)
                    || !slot.unsent()
                    || attempt >= policy.max_attempts
                {
                    if attempt > 1 {
                        tracing::Span::current().record("rpc.attempts", attempt);
                    }
                    return result;
                }
                if !budget.withdraw() {
                    stats.budget_exhausted.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(attempt, "retry budget exhausted; not retrying");
                    return result;
                }
                stats.retries.fetch_add(1, Ordering::Relaxed);
                let wait = policy.backoff(attempt);
                tracing::debug!(
                    attempt,
                    ?wait,
                    "request failed before it was sent; retrying"
                );
                tokio::time::sleep(wait).await;
                attempt += 1;
                parts.extensions.insert(Attempt(attempt));
                let mut service = template.clone();
                result = match service.ready().await {
                    Ok(service) => {
                        service
                            .call(Request::from_parts(parts.clone(), slot.body()))
                            .await
                    }
                    Err(e) => Err(e),
                };
            }
        };
        ResponseFuture {
            inner: Box::pin(inner),
        }
    }
}

#[cfg(test)]
mod tests;
