//! Where spooled segments wait for their clients: held by the coordinator, or objects in a
//! spooling location that clients download by presigned URLs. A segment goes when its client
//! acknowledges it, when its query is stopped, or when its time is up.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use datafusion::error::DataFusionError;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use futures::TryStreamExt;
use object_store::aws::AmazonS3;
use object_store::path::Path as ObjectPath;
use object_store::signer::Signer as _;
use object_store::{ObjectStore as _, ObjectStoreExt as _, PutPayload};
use parking_lot::Mutex;
use uuid::Uuid;

/// The most spooled bytes one query may have the coordinator hold; beyond it its pages carry
/// their rows inline, so a client that never downloads cannot fill the memory pool alone.
const MAX_HELD_PER_QUERY: usize = 64 * 1024 * 1024;
/// The longest a presigned S3 URL may be valid.
pub(crate) const MAX_PRESIGNED_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// What a client needs to fetch a spooled segment.
#[derive(Clone, Debug)]
pub(crate) struct SpooledHandle {
    pub id: Uuid,
    pub key: Uuid,
    pub expires_at: SystemTime,
    /// A presigned URL of the object holding it; `None`: the coordinator serves it.
    pub direct: Option<String>,
}

/// Where a spooled segment's bytes are.
enum Body {
    /// In the coordinator, counted in its query's memory pool until it goes.
    Held {
        bytes: Bytes,
        _reservation: Option<MemoryReservation>,
    },
    /// An object in the spooling location.
    Object(ObjectPath),
}

struct Stored {
    key: Uuid,
    query: String,
    expires: Instant,
    body: Body,
}

impl Stored {
    fn held_bytes(&self) -> usize {
        match &self.body {
            Body::Held { bytes, .. } => bytes.len(),
            Body::Object(_) => 0,
        }
    }
}

/// Why a segment request gets no bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SegmentRefusal {
    /// Never spooled, acknowledged, expired, or asked for with another key: all alike, so an
    /// identifier alone tells a caller nothing.
    NotFound,
}

/// Why a segment could not be spooled (its page then carries it inline).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpoolError {
    #[error("the spooling location refused the segment: {0}")]
    Store(#[from] object_store::Error),
    #[error("the query's memory cannot hold the segment: {0}")]
    Memory(#[from] DataFusionError),
    #[error("the query holds {held} spooled bytes, the most one query may")]
    QueryFull { held: usize },
}

/// Why a spooling location is refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct LocationError(String);

/// An object store segments are written to and read from by presigned URLs (Trino's
/// `STORAGE` retrieval): result bytes then go from the store to the client directly.
pub(crate) struct SpoolObjects {
    store: Arc<AmazonS3>,
    prefix: ObjectPath,
}

impl SpoolObjects {
    /// Segments under `prefix` of `store`. The prefix must not be empty: the sweep deletes
    /// what lies under it, and a bucket's root holds tables.
    pub(crate) fn new(store: Arc<AmazonS3>, prefix: ObjectPath) -> Result<Self, LocationError> {
        if prefix.as_ref().is_empty() {
            return Err(LocationError(
                "needs a prefix of its own (s3://bucket/prefix): the bucket's root is not \
                 for spooled segments"
                    .into(),
            ));
        }
        Ok(Self { store, prefix })
    }

    /// The object of segment `id` of query `query`: `<prefix>/<query>/<id>`.
    fn path_of(&self, query: &str, id: Uuid) -> ObjectPath {
        self.prefix
            .clone()
            .join(query)
            .join(id.simple().to_string().as_str())
    }

    /// Whether `path` is one this store writes (so the sweep touches nothing else).
    fn is_segment(&self, path: &ObjectPath) -> bool {
        let Some(rest) = path.prefix_match(&self.prefix) else {
            return false;
        };
        let parts: Vec<_> = rest.collect();
        matches!(parts.as_slice(), [_, id] if id.as_ref().len() == 32 && Uuid::try_parse(id.as_ref()).is_ok())
    }

    /// Deletes `paths` in the background; one the store refuses is logged and left to the
    /// next sweep.
    fn delete_later(&self, paths: Vec<ObjectPath>) {
        if paths.is_empty() {
            return;
        }
        let store = Arc::clone(&self.store);
        sqe_layers::task::spawn(async move {
            for path in paths {
                if let Err(e) = store.delete(&path).await {
                    tracing::warn!(%path, error = %e, "a spooled segment could not be deleted");
                }
            }
        });
    }

    /// Deletes the segments under the prefix older than `ttl` (expired, whichever run of the
    /// coordinator wrote them); returns how many went.
    async fn remove_older_than(&self, ttl: Duration) -> Result<usize, object_store::Error> {
        let Ok(age) = chrono::Duration::from_std(ttl) else {
            return Ok(0);
        };
        let cutoff = chrono::Utc::now() - age;
        let old: Vec<ObjectPath> = self
            .store
            .list(Some(&self.prefix))
            .try_filter_map(|meta| async move {
                Ok((meta.last_modified < cutoff).then_some(meta.location))
            })
            .try_collect()
            .await?;
        let mut removed = 0;
        for path in old.iter().filter(|p| self.is_segment(p)) {
            match self.store.delete(path).await {
                Ok(()) => removed += 1,
                Err(e) => {
                    tracing::warn!(%path, error = %e, "an expired segment could not be deleted")
                }
            }
        }
        Ok(removed)
    }
}

/// Spooled segments waiting for their clients: held by the coordinator, or objects in a
/// spooling location.
pub(crate) struct SegmentStore {
    segments: Mutex<HashMap<Uuid, Stored>>,
    /// How long a segment waits to be downloaded and acknowledged.
    ttl: Duration,
    objects: Option<SpoolObjects>,
}

impl SegmentStore {
    /// Segments held by the coordinator and downloaded from it.
    pub(crate) fn new(ttl: Duration) -> Arc<Self> {
        Arc::new(Self {
            segments: Mutex::new(HashMap::new()),
            ttl,
            objects: None,
        })
    }

    /// Segments written to `objects` and downloaded from there; expired objects (also those an
    /// earlier run left, or whose deletion failed) are swept in the background, at start and
    /// then once per `ttl`.
    pub(crate) fn in_objects(ttl: Duration, objects: SpoolObjects) -> Arc<Self> {
        let ttl = ttl.min(MAX_PRESIGNED_TTL);
        let store = Arc::new(Self {
            segments: Mutex::new(HashMap::new()),
            ttl,
            objects: Some(objects),
        });
        sqe_layers::task::spawn(sweep_objects(Arc::downgrade(&store), ttl));
        store
    }

    /// Spools `bytes` for query `query`: written to the spooling location, or held here and
    /// counted in `memory`.
    pub(crate) async fn put(
        &self,
        query: &str,
        bytes: Bytes,
        memory: Option<&Arc<dyn MemoryPool>>,
    ) -> Result<SpooledHandle, SpoolError> {
        let id = Uuid::new_v4();
        let (body, direct) = match &self.objects {
            Some(objects) => {
                let path = objects.path_of(query, id);
                // Signed before the object exists, so no object is left that nobody tracks.
                let url = objects
                    .store
                    .signed_url(http::Method::GET, &path, self.ttl)
                    .await?;
                objects
                    .store
                    .put(&path, PutPayload::from_bytes(bytes))
                    .await?;
                (Body::Object(path), Some(url.to_string()))
            }
            None => {
                let held: usize = self
                    .segments
                    .lock()
                    .values()
                    .filter(|s| s.query == query)
                    .map(Stored::held_bytes)
                    .sum();
                if held + bytes.len() > MAX_HELD_PER_QUERY {
                    return Err(SpoolError::QueryFull { held });
                }
                let reservation = match memory {
                    Some(pool) => {
                        let reservation =
                            MemoryConsumer::new("Trino spooled segments").register(pool);
                        reservation.try_grow(bytes.len())?;
                        Some(reservation)
                    }
                    None => None,
                };
                let body = Body::Held {
                    bytes,
                    _reservation: reservation,
                };
                (body, None)
            }
        };
        let handle = SpooledHandle {
            id,
            key: Uuid::new_v4(),
            expires_at: SystemTime::now()
                .checked_add(self.ttl)
                .unwrap_or(SystemTime::UNIX_EPOCH),
            direct,
        };
        let now = Instant::now();
        self.segments.lock().insert(
            handle.id,
            Stored {
                key: handle.key,
                query: query.to_string(),
                expires: now.checked_add(self.ttl).unwrap_or(now),
                body,
            },
        );
        Ok(handle)
    }

    fn check<'a>(
        segments: &'a HashMap<Uuid, Stored>,
        id: &str,
        key: Option<&str>,
    ) -> Result<(Uuid, &'a Stored), SegmentRefusal> {
        let id = Uuid::try_parse(id).map_err(|_| SegmentRefusal::NotFound)?;
        let key = key
            .and_then(|k| Uuid::try_parse(k).ok())
            .ok_or(SegmentRefusal::NotFound)?;
        match segments.get(&id) {
            Some(stored) if same_key(&stored.key, &key) && stored.expires > Instant::now() => {
                Ok((id, stored))
            }
            _ => Err(SegmentRefusal::NotFound),
        }
    }

    /// The bytes of segment `id` held here, for a request carrying `key`.
    pub(crate) fn download(&self, id: &str, key: Option<&str>) -> Result<Bytes, SegmentRefusal> {
        let segments = self.segments.lock();
        match &Self::check(&segments, id, key)?.1.body {
            Body::Held { bytes, .. } => Ok(bytes.clone()),
            // Its client has its presigned URL.
            Body::Object(_) => Err(SegmentRefusal::NotFound),
        }
    }

    /// Deletes segment `id`: its client has read it.
    pub(crate) fn acknowledge(&self, id: &str, key: Option<&str>) -> Result<(), SegmentRefusal> {
        let removed = {
            let mut segments = self.segments.lock();
            let (id, _) = Self::check(&segments, id, key)?;
            segments.remove(&id)
        };
        self.dispose(removed.into_iter().collect());
        Ok(())
    }

    /// Deletes the segments of query `query` (stopped or abandoned); returns how many.
    pub(crate) fn forget_query(&self, query: &str) -> usize {
        let gone = self.remove_where(|s| s.query == query);
        let count = gone.len();
        self.dispose(gone);
        count
    }

    /// Lets the segments of query `query` (killed or timed out) live at most `within` longer:
    /// its client may still be reading them, but nothing else will.
    pub(crate) fn expire_within(&self, query: &str, within: Duration) {
        let now = Instant::now();
        let deadline = now.checked_add(within).unwrap_or(now);
        for stored in self.segments.lock().values_mut() {
            if stored.query == query {
                stored.expires = stored.expires.min(deadline);
            }
        }
    }

    /// Deletes segments whose time is up; returns how many.
    pub(crate) fn sweep(&self) -> usize {
        let now = Instant::now();
        let gone = self.remove_where(|s| s.expires <= now);
        let count = gone.len();
        self.dispose(gone);
        count
    }

    fn remove_where(&self, doomed: impl Fn(&Stored) -> bool) -> Vec<Stored> {
        self.segments
            .lock()
            .extract_if(|_, s| doomed(s))
            .map(|(_, s)| s)
            .collect()
    }

    /// Lets removed segments go: held bytes are dropped, objects deleted.
    fn dispose(&self, gone: Vec<Stored>) {
        let paths = gone
            .into_iter()
            .filter_map(|s| match s.body {
                Body::Object(path) => Some(path),
                Body::Held { .. } => None,
            })
            .collect();
        if let Some(objects) = &self.objects {
            objects.delete_later(paths);
        }
    }

    /// Segments waiting for their clients, and the bytes of those the coordinator holds.
    pub(crate) fn held(&self) -> (usize, usize) {
        let segments = self.segments.lock();
        (
            segments.len(),
            segments.values().map(Stored::held_bytes).sum(),
        )
    }
}

/// Keys compared in time independent of where they differ.
fn same_key(a: &Uuid, b: &Uuid) -> bool {
    a.as_bytes()
        .iter()
        .zip(b.as_bytes())
        .fold(0u8, |differ, (x, y)| differ | (x ^ y))
        == 0
}

/// Sweeps expired objects of `store`'s location once per `ttl`, while the store lives.
async fn sweep_objects(store: Weak<SegmentStore>, ttl: Duration) {
    loop {
        {
            let Some(store) = store.upgrade() else { return };
            if let Some(objects) = &store.objects {
                match objects.remove_older_than(ttl).await {
                    Ok(0) => {}
                    Ok(removed) => tracing::info!(removed, "deleted expired spooled segments"),
                    Err(e) => tracing::warn!(error = %e, "could not sweep the spooling location"),
                }
            }
        }
        tokio::time::sleep(ttl.max(Duration::from_secs(1))).await;
    }
}

#[cfg(test)]
mod tests {
    use datafusion::execution::memory_pool::GreedyMemoryPool;

    use super::*;

    fn store_in(location_prefix: &str) -> Result<SpoolObjects, LocationError> {
        let store = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name("bucket")
            .with_region("us-east-1")
            .with_access_key_id("key")
            .with_secret_access_key("secret")
            .build()
            .map_err(|e| LocationError(e.to_string()))?;
        SpoolObjects::new(Arc::new(store), ObjectPath::from(location_prefix))
    }

    #[test]
    fn a_location_without_a_prefix_is_refused_and_only_segments_are_swept()
    -> Result<(), LocationError> {
        assert!(store_in("").is_err(), "the bucket's root");
        let objects = store_in("spool")?;
        let id = Uuid::new_v4();
        assert!(objects.is_segment(&objects.path_of("20261206_1_q", id)));
        for other in [
            "spool/20261206_1_q",
            "spool/q/not-a-segment",
            "spool/q/sub/0123456789abcdef0123456789abcdef",
            "table/q/0123456789abcdef0123456789abcdef",
            "spooled/q/0123456789abcdef0123456789abcdef",
        ] {
            assert!(!objects.is_segment(&ObjectPath::from(other)), "{other}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn segments_are_held_in_the_querys_pool_and_go_when_expired_or_forgotten()
    -> Result<(), SpoolError> {
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1 << 20));
        let store = SegmentStore::new(Duration::from_secs(60));
        let bytes = Bytes::from(vec![b'x'; 1000]);
        store.put("q1", bytes.clone(), Some(&pool)).await?;
        store.put("q2", bytes.clone(), Some(&pool)).await?;
        assert_eq!(pool.reserved(), 2000);
        assert_eq!(store.held(), (2, 2000));
        assert_eq!(store.forget_query("q1"), 1);
        assert_eq!(pool.reserved(), 1000);
        assert_eq!(store.sweep(), 0);
        // A stopped query's segments are given a last while, here none.
        store.expire_within("q2", Duration::ZERO);
        assert_eq!(store.sweep(), 1);
        assert_eq!(pool.reserved(), 0);
        store.put("q2", bytes.clone(), Some(&pool)).await?;

        // The pool refuses.
        let tiny: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(16));
        let refused = store.put("q3", bytes.clone(), Some(&tiny)).await;
        assert!(matches!(refused, Err(SpoolError::Memory(_))), "{refused:?}");

        // One query may hold only so much.
        let large = Bytes::from(vec![b'x'; MAX_HELD_PER_QUERY / 2 + 1]);
        store.put("q4", large.clone(), None).await?;
        let refused = store.put("q4", large.clone(), None).await;
        assert!(
            matches!(refused, Err(SpoolError::QueryFull { .. })),
            "{refused:?}"
        );
        store.put("q5", large, None).await?;

        let expiring = SegmentStore::new(Duration::ZERO);
        expiring.put("q6", bytes, Some(&pool)).await?;
        assert_eq!(expiring.sweep(), 1);
        assert_eq!(expiring.held(), (0, 0));
        assert_eq!(pool.reserved(), 1000);
        Ok(())
    }

    #[tokio::test]
    async fn a_segment_needs_its_key_and_is_gone_once_acknowledged() -> Result<(), SpoolError> {
        let store = SegmentStore::new(Duration::from_secs(60));
        let handle = store.put("q", Bytes::from_static(b"[[1]]"), None).await?;
        let id = handle.id.simple().to_string();
        let key = handle.key.simple().to_string();
        let other = Uuid::new_v4().simple().to_string();
        assert_eq!(store.download(&id, None), Err(SegmentRefusal::NotFound));
        assert_eq!(
            store.download(&id, Some(&other)),
            Err(SegmentRefusal::NotFound)
        );
        assert_eq!(
            store.download("not-an-id", Some(&key)),
            Err(SegmentRefusal::NotFound)
        );
        assert_eq!(
            store.acknowledge(&id, Some(&other)),
            Err(SegmentRefusal::NotFound)
        );
        assert_eq!(
            store.download(&id, Some(&key)),
            Ok(Bytes::from_static(b"[[1]]"))
        );
        assert_eq!(store.acknowledge(&id, Some(&key)), Ok(()));
        assert_eq!(
            store.download(&id, Some(&key)),
            Err(SegmentRefusal::NotFound)
        );
        assert_eq!(store.held(), (0, 0));
        Ok(())
    }
}
