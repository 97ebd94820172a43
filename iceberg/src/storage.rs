//! Iceberg [`Storage`] on the `object_store` crate: local files and S3-compatible stores.
//!
//! SQE implements Iceberg's storage trait itself instead of pulling in OpenDAL, so that the
//! engine has one object-store client (the one DataFusion already uses). The storage is built
//! from Iceberg's standard properties (`s3.endpoint`, `s3.access-key-id`, ...), which is also
//! the shape in which REST catalogs vend credentials.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::io::{
    FileIO, FileIOBuilder, FileMetadata, FileRead, FileWrite, InputFile, OutputFile,
    S3_ACCESS_KEY_ID, S3_ENDPOINT, S3_PATH_STYLE_ACCESS, S3_REGION, S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN, Storage, StorageConfig, StorageFactory,
};
use iceberg::{Error, ErrorKind};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::buffered::BufWriter;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, RetryConfig};
use object_store::{ObjectStore, ObjectStoreExt};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

/// The properties that carry a credential. Credentials vended for a table replace all of these
/// (a vended key must not be paired with a configured session token).
pub const CREDENTIAL_KEYS: [&str; 3] = [S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN];

/// The directory every local (`file://`) location must lie in; empty: no local files at all.
/// Absent (SQE's own test catalogs), local files are not confined.
pub const LOCAL_ROOT_PROP: &str = "sqe.local-root";

/// `props` with `table_props` laid over them; when `table_props` carry a credential, none of the
/// credentials of `props` remain.
pub fn overlay_table_props(
    mut props: HashMap<String, String>,
    table_props: &HashMap<String, String>,
) -> HashMap<String, String> {
    if CREDENTIAL_KEYS.iter().any(|k| table_props.contains_key(*k)) {
        props.retain(|k, _| !CREDENTIAL_KEYS.contains(&k.as_str()));
    }
    props.extend(table_props.iter().map(|(k, v)| (k.clone(), v.clone())));
    props
}

/// Builds [`ObjectStoreStorage`] for a FileIO; registered with every catalog SQE opens.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ObjectStoreStorageFactory;

#[typetag::serde(name = "sqe_object_store")]
impl StorageFactory for ObjectStoreStorageFactory {
    fn build(&self, config: &StorageConfig) -> iceberg::Result<Arc<dyn Storage>> {
        Ok(Arc::new(ObjectStoreStorage::new(config.props().clone())))
    }
}

/// Builds a FileIO over SQE's object-store storage with the given Iceberg properties.
pub fn file_io_with_props(props: HashMap<String, String>) -> FileIO {
    FileIOBuilder::new(Arc::new(ObjectStoreStorageFactory))
        .with_props(props)
        .build()
}

/// A file found by [`list_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedFile {
    /// Its location, spelled from the listed directory's location on.
    pub location: String,
    /// Its key in its store: what [`object_key`] gives for any spelling of its location.
    pub key: String,
    pub last_modified_ms: i64,
}

/// Every file under the directory `location` (none when it does not exist), reached with
/// storage properties `props`.
pub async fn list_files(
    props: &HashMap<String, String>,
    location: &str,
) -> iceberg::Result<Vec<ListedFile>> {
    let (store, prefix) = ObjectStoreStorage::new(props.clone()).resolve(location)?;
    let listed: Vec<object_store::ObjectMeta> = match store.list(Some(&prefix)).try_collect().await
    {
        Ok(listed) => listed,
        Err(object_store::Error::NotFound { .. }) => Vec::new(),
        Err(e) => return Err(storage_error(format!("cannot list '{location}': {e}"))),
    };
    let base = location.trim_end_matches('/');
    Ok(listed
        .into_iter()
        .map(|meta| {
            let key = meta.location.to_string();
            let relative = key
                .strip_prefix(prefix.as_ref())
                .unwrap_or(&key)
                .trim_start_matches('/');
            ListedFile {
                location: format!("{base}/{relative}"),
                last_modified_ms: meta.last_modified.timestamp_millis(),
                key,
            }
        })
        .collect())
}

/// The key of `location` in its store (its bucket's, for S3): `file:///a/b` and `/a/b` are one
/// key.
pub fn object_key(props: &HashMap<String, String>, location: &str) -> iceberg::Result<String> {
    let (_, path) = ObjectStoreStorage::new(props.clone()).resolve(location)?;
    Ok(path.to_string())
}

/// An in-memory Iceberg catalog named `name` whose table files live under `warehouse`, for
/// tests and stand-ins that need tables without a catalog service.
pub async fn memory_catalog(
    name: &str,
    warehouse: &std::path::Path,
) -> iceberg::Result<iceberg::memory::MemoryCatalog> {
    use iceberg::CatalogBuilder;
    iceberg::memory::MemoryCatalogBuilder::default()
        .with_storage_factory(Arc::new(ObjectStoreStorageFactory))
        .load(
            name,
            HashMap::from([(
                iceberg::memory::MEMORY_CATALOG_WAREHOUSE.to_string(),
                format!("file://{}", warehouse.display()),
            )]),
        )
        .await
}

/// An S3 client for `bucket` from Iceberg's `s3.*` properties.
fn s3_client(props: &HashMap<String, String>, bucket: &str) -> iceberg::Result<AmazonS3> {
    // A store that is down fails the query within seconds, not after object_store's
    // default 10 retries over 3 minutes; slow reads of large objects still may take long.
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_retry(RetryConfig {
            max_retries: 3,
            retry_timeout: Duration::from_secs(15),
            ..RetryConfig::default()
        })
        .with_client_options(ClientOptions::new().with_connect_timeout(Duration::from_secs(5)));
    if let Some(endpoint) = props.get(S3_ENDPOINT) {
        builder = builder
            .with_endpoint(endpoint)
            .with_allow_http(endpoint.starts_with("http://"));
    }
    if let Some(v) = props.get(S3_ACCESS_KEY_ID) {
        builder = builder.with_access_key_id(v);
    }
    if let Some(v) = props.get(S3_SECRET_ACCESS_KEY) {
        builder = builder.with_secret_access_key(v);
    }
    if let Some(v) = props.get(S3_SESSION_TOKEN) {
        builder = builder.with_token(v);
    }
    if let Some(v) = props.get(S3_REGION).or_else(|| props.get("client.region")) {
        builder = builder.with_region(v);
    }
    if let Some(v) = props.get(S3_PATH_STYLE_ACCESS) {
        builder = builder.with_virtual_hosted_style_request(!is_truthy(v));
    }
    builder
        .build()
        .map_err(|e| storage_error(format!("cannot configure S3 for bucket '{bucket}': {e}")))
}

/// An S3 client able to sign URLs, and the key prefix, for an `s3://bucket/prefix` location.
pub fn s3_signing_store(
    props: &HashMap<String, String>,
    location: &str,
) -> iceberg::Result<(Arc<AmazonS3>, ObjectPath)> {
    let (bucket, key) = s3_bucket_and_key(location)?
        .ok_or_else(|| storage_error(format!("'{location}' is not an s3:// location")))?;
    let prefix = object_path(location, key.trim_end_matches('/'))?;
    Ok((Arc::new(s3_client(props, bucket)?), prefix))
}

/// The bucket and the key (without its leading `/`) of an `s3://` or `s3a://` location;
/// `None` for any other scheme.
fn s3_bucket_and_key(location: &str) -> iceberg::Result<Option<(&str, &str)>> {
    let Some(rest) = location
        .strip_prefix("s3://")
        .or_else(|| location.strip_prefix("s3a://"))
    else {
        return Ok(None);
    };
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(storage_error(format!("no bucket in location '{location}'")));
    }
    Ok(Some((bucket, key.trim_start_matches('/'))))
}

/// `key` of `location` as an object path.
fn object_path(location: &str, key: &str) -> iceberg::Result<ObjectPath> {
    ObjectPath::parse(key)
        .map_err(|e| storage_error(format!("invalid object key in '{location}': {e}")))
}

/// Iceberg storage that dispatches `file://` (and absolute paths) to the local file system and
/// `s3://`/`s3a://` to one S3 client per bucket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectStoreStorage {
    props: HashMap<String, String>,
    /// Clients shared by every clone (and so by every input/output file of this storage).
    #[serde(skip)]
    stores: Arc<Mutex<HashMap<String, Arc<dyn ObjectStore>>>>,
}

impl ObjectStoreStorage {
    pub fn new(props: HashMap<String, String>) -> Self {
        Self {
            props,
            stores: Arc::default(),
        }
    }

    fn resolve(&self, location: &str) -> iceberg::Result<(Arc<dyn ObjectStore>, ObjectPath)> {
        if let Some((bucket, key)) = s3_bucket_and_key(location)? {
            return Ok((self.s3_store(bucket)?, object_path(location, key)?));
        }
        let fs_path = if location.starts_with("file:") {
            let url = url::Url::parse(location)
                .map_err(|e| storage_error(format!("invalid file URL '{location}': {e}")))?;
            url.to_file_path()
                .map_err(|_| storage_error(format!("'{location}' is not a local file URL")))?
        } else if location.starts_with('/') {
            std::path::PathBuf::from(location)
        } else {
            return Err(Error::new(
                ErrorKind::FeatureUnsupported,
                format!(
                    "unsupported storage location '{location}': SQE reads file:// and s3:// locations"
                ),
            ));
        };
        if let Some(root) = self.props.get(LOCAL_ROOT_PROP) {
            confine(&fs_path, root).map_err(|reason| {
                Error::new(
                    ErrorKind::FeatureUnsupported,
                    format!("local location '{location}' refused: {reason}"),
                )
            })?;
        }
        let path = ObjectPath::from_absolute_path(&fs_path)
            .map_err(|e| storage_error(format!("invalid local path '{location}': {e}")))?;
        Ok((
            self.cached_store("file", || Ok(Arc::new(LocalFileSystem::new())))?,
            path,
        ))
    }

    fn s3_store(&self, bucket: &str) -> iceberg::Result<Arc<dyn ObjectStore>> {
        self.cached_store(&format!("s3://{bucket}"), || {
            Ok(Arc::new(s3_client(&self.props, bucket)?))
        })
    }

    fn cached_store(
        &self,
        key: &str,
        build: impl FnOnce() -> iceberg::Result<Arc<dyn ObjectStore>>,
    ) -> iceberg::Result<Arc<dyn ObjectStore>> {
        let mut stores = self.stores.lock();
        if let Some(store) = stores.get(key) {
            return Ok(Arc::clone(store));
        }
        let store = build()?;
        stores.insert(key.to_string(), Arc::clone(&store));
        Ok(store)
    }
}

/// Checks that `path` lies under `root`, component by component, with no `..` left in it.
fn confine(path: &std::path::Path, root: &str) -> std::result::Result<(), String> {
    use std::path::Component;
    if root.is_empty() {
        return Err("this catalog keeps no tables in local files".into());
    }
    let climbs = path
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir));
    if climbs || !path.starts_with(root) || path == std::path::Path::new(root) {
        return Err(format!("it is not under the warehouse {root}"));
    }
    Ok(())
}

fn is_truthy(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "true" | "t" | "1" | "on" | "yes"
    )
}

fn storage_error(message: String) -> Error {
    Error::new(ErrorKind::DataInvalid, message)
}

fn object_store_error(location: &str, err: object_store::Error) -> Error {
    let kind = match err {
        object_store::Error::NotFound { .. } => ErrorKind::DataInvalid,
        _ => ErrorKind::Unexpected,
    };
    Error::new(
        kind,
        format!("object store operation on '{location}' failed"),
    )
    .with_source(err)
}

#[typetag::serde(name = "sqe_object_store")]
#[async_trait]
impl Storage for ObjectStoreStorage {
    async fn exists(&self, path: &str) -> iceberg::Result<bool> {
        let (store, key) = self.resolve(path)?;
        match store.head(&key).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(object_store_error(path, e)),
        }
    }

    async fn metadata(&self, path: &str) -> iceberg::Result<FileMetadata> {
        let (store, key) = self.resolve(path)?;
        let meta = store
            .head(&key)
            .await
            .map_err(|e| object_store_error(path, e))?;
        Ok(FileMetadata { size: meta.size })
    }

    async fn read(&self, path: &str) -> iceberg::Result<Bytes> {
        let (store, key) = self.resolve(path)?;
        let result = store
            .get(&key)
            .await
            .map_err(|e| object_store_error(path, e))?;
        result
            .bytes()
            .await
            .map_err(|e| object_store_error(path, e))
    }

    async fn reader(&self, path: &str) -> iceberg::Result<Box<dyn FileRead>> {
        let (store, key) = self.resolve(path)?;
        Ok(Box::new(ObjectReader {
            store,
            key,
            location: path.to_string(),
        }))
    }

    async fn write(&self, path: &str, bs: Bytes) -> iceberg::Result<()> {
        let (store, key) = self.resolve(path)?;
        store
            .put(&key, bs.into())
            .await
            .map_err(|e| object_store_error(path, e))?;
        Ok(())
    }

    async fn writer(&self, path: &str) -> iceberg::Result<Box<dyn FileWrite>> {
        let (store, key) = self.resolve(path)?;
        Ok(Box::new(ObjectWriter::new(
            BufWriter::new(store, key),
            path,
        )))
    }

    async fn delete(&self, path: &str) -> iceberg::Result<()> {
        let (store, key) = self.resolve(path)?;
        match store.delete(&key).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(object_store_error(path, e)),
        }
    }

    async fn delete_prefix(&self, path: &str) -> iceberg::Result<()> {
        let (store, prefix) = self.resolve(path)?;
        let locations = store
            .list(Some(&prefix))
            .map_ok(|meta| meta.location)
            .boxed();
        store
            .delete_stream(locations)
            .try_collect::<Vec<_>>()
            .await
            .map_err(|e| object_store_error(path, e))?;
        Ok(())
    }

    async fn delete_stream(&self, mut paths: BoxStream<'static, String>) -> iceberg::Result<()> {
        while let Some(path) = paths.next().await {
            self.delete(&path).await?;
        }
        Ok(())
    }

    fn new_input(&self, path: &str) -> iceberg::Result<InputFile> {
        Ok(InputFile::new(Arc::new(self.clone()), path.to_string()))
    }

    fn new_output(&self, path: &str) -> iceberg::Result<OutputFile> {
        Ok(OutputFile::new(Arc::new(self.clone()), path.to_string()))
    }
}

struct ObjectReader {
    store: Arc<dyn ObjectStore>,
    key: ObjectPath,
    location: String,
}

#[async_trait]
impl FileRead for ObjectReader {
    async fn read(&self, range: Range<u64>) -> iceberg::Result<Bytes> {
        self.store
            .get_range(&self.key, range)
            .await
            .map_err(|e| object_store_error(&self.location, e))
    }
}

/// Writes a file, in parts once it outgrows the buffer (an S3 multipart upload). A writer
/// dropped before it is closed (its statement cancelled, or failed) aborts its upload: the
/// store would otherwise keep, and bill, the parts of an upload nobody completes.
struct ObjectWriter {
    /// Until it is closed.
    open: Option<BufWriter>,
    location: String,
}

impl ObjectWriter {
    fn new(writer: BufWriter, location: &str) -> Self {
        Self {
            open: Some(writer),
            location: location.to_string(),
        }
    }

    fn closed(&self) -> Error {
        Error::new(
            ErrorKind::Unexpected,
            format!("'{}' was already closed", self.location),
        )
    }
}

#[async_trait]
impl FileWrite for ObjectWriter {
    async fn write(&mut self, bs: Bytes) -> iceberg::Result<()> {
        let Some(writer) = self.open.as_mut() else {
            return Err(self.closed());
        };
        writer
            .put(bs)
            .await
            .map_err(|e| object_store_error(&self.location, e))
    }

    async fn close(&mut self) -> iceberg::Result<()> {
        // Once closing has begun the upload is being completed; it can no longer be aborted.
        let Some(mut writer) = self.open.take() else {
            return Err(self.closed());
        };
        writer.shutdown().await.map_err(|e| {
            Error::new(
                ErrorKind::Unexpected,
                format!("failed to finish writing '{}'", self.location),
            )
            .with_source(e)
        })
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        let Some(mut writer) = self.open.take() else {
            return;
        };
        let location = std::mem::take(&mut self.location);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(%location, "a file left unfinished outside a runtime: its upload is not aborted");
            return;
        };
        runtime.spawn(async move {
            if let Err(e) = writer.abort().await {
                tracing::warn!(%location, error = %e, "could not abort the upload of an unfinished file");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-memory store counting the multipart uploads begun and aborted.
    #[derive(Debug, Default)]
    struct CountingStore {
        inner: object_store::memory::InMemory,
        begun: Arc<std::sync::atomic::AtomicUsize>,
        aborted: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl std::fmt::Display for CountingStore {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("CountingStore")
        }
    }

    #[derive(Debug)]
    struct CountedUpload {
        inner: Box<dyn object_store::MultipartUpload>,
        aborted: Arc<std::sync::atomic::AtomicUsize>,
    }

    #[async_trait]
    impl object_store::MultipartUpload for CountedUpload {
        fn put_part(&mut self, data: object_store::PutPayload) -> object_store::UploadPart {
            self.inner.put_part(data)
        }

        async fn complete(&mut self) -> object_store::Result<object_store::PutResult> {
            self.inner.complete().await
        }

        async fn abort(&mut self) -> object_store::Result<()> {
            self.aborted
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.abort().await
        }
    }

    #[async_trait]
    impl ObjectStore for CountingStore {
        async fn put_opts(
            &self,
            location: &ObjectPath,
            payload: object_store::PutPayload,
            opts: object_store::PutOptions,
        ) -> object_store::Result<object_store::PutResult> {
            self.inner.put_opts(location, payload, opts).await
        }

        async fn put_multipart_opts(
            &self,
            location: &ObjectPath,
            opts: object_store::PutMultipartOptions,
        ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
            self.begun.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let inner = self.inner.put_multipart_opts(location, opts).await?;
            Ok(Box::new(CountedUpload {
                inner,
                aborted: Arc::clone(&self.aborted),
            }))
        }

        async fn get_opts(
            &self,
            location: &ObjectPath,
            options: object_store::GetOptions,
        ) -> object_store::Result<object_store::GetResult> {
            self.inner.get_opts(location, options).await
        }

        fn delete_stream(
            &self,
            locations: BoxStream<'static, object_store::Result<ObjectPath>>,
        ) -> BoxStream<'static, object_store::Result<ObjectPath>> {
            self.inner.delete_stream(locations)
        }

        fn list(
            &self,
            prefix: Option<&ObjectPath>,
        ) -> BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
            self.inner.list(prefix)
        }

        async fn list_with_delimiter(
            &self,
            prefix: Option<&ObjectPath>,
        ) -> object_store::Result<object_store::ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }

        async fn copy_opts(
            &self,
            from: &ObjectPath,
            to: &ObjectPath,
            options: object_store::CopyOptions,
        ) -> object_store::Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }

    /// A writer of `key` into `store` that uploads in parts past 16 bytes.
    fn small_writer(store: &Arc<CountingStore>, key: &str) -> ObjectWriter {
        let store: Arc<dyn ObjectStore> = Arc::clone(store) as Arc<dyn ObjectStore>;
        ObjectWriter::new(
            BufWriter::with_capacity(store, ObjectPath::from(key), 16),
            key,
        )
    }

    #[tokio::test]
    async fn a_writer_dropped_unfinished_aborts_its_upload() {
        let store = Arc::new(CountingStore::default());
        let mut writer = small_writer(&store, "t/data/a.parquet");
        writer
            .write(Bytes::from(vec![7u8; 64]))
            .await
            .expect("written");
        assert_eq!(store.begun.load(std::sync::atomic::Ordering::SeqCst), 1);
        drop(writer);
        for _ in 0..100 {
            if store.aborted.load(std::sync::atomic::Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(store.aborted.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(
            store
                .head(&ObjectPath::from("t/data/a.parquet"))
                .await
                .is_err(),
            "no object was made"
        );
    }

    #[tokio::test]
    async fn a_closed_writer_completes_its_upload_and_aborts_nothing() {
        let store = Arc::new(CountingStore::default());
        let mut writer = small_writer(&store, "t/data/b.parquet");
        writer
            .write(Bytes::from(vec![7u8; 64]))
            .await
            .expect("written");
        writer.close().await.expect("closed");
        assert!(writer.write(Bytes::from_static(b"x")).await.is_err());
        drop(writer);
        tokio::task::yield_now().await;
        assert_eq!(store.aborted.load(std::sync::atomic::Ordering::SeqCst), 0);
        let meta = store
            .head(&ObjectPath::from("t/data/b.parquet"))
            .await
            .expect("the object");
        assert_eq!(meta.size, 64);
    }

    #[test]
    fn vended_credentials_replace_every_configured_credential() {
        let own = || {
            HashMap::from([
                (S3_ENDPOINT.to_string(), "http://store".to_string()),
                (S3_ACCESS_KEY_ID.to_string(), "long-lived".to_string()),
                (
                    S3_SECRET_ACCESS_KEY.to_string(),
                    "long-lived-secret".to_string(),
                ),
                (S3_SESSION_TOKEN.to_string(), "configured-token".to_string()),
            ])
        };
        let vended = HashMap::from([
            (S3_ACCESS_KEY_ID.to_string(), "vended".to_string()),
            (
                S3_SECRET_ACCESS_KEY.to_string(),
                "vended-secret".to_string(),
            ),
        ]);
        let props = overlay_table_props(own(), &vended);
        assert_eq!(
            props.get(S3_ACCESS_KEY_ID).map(String::as_str),
            Some("vended")
        );
        assert_eq!(
            props.get(S3_SESSION_TOKEN),
            None,
            "no configured token beside a vended key"
        );
        assert_eq!(
            props.get(S3_ENDPOINT).map(String::as_str),
            Some("http://store")
        );

        // Table properties without a credential leave the configured keys alone.
        let region = HashMap::from([(S3_REGION.to_string(), "eu-west-1".to_string())]);
        let props = overlay_table_props(own(), &region);
        assert_eq!(
            props.get(S3_SESSION_TOKEN).map(String::as_str),
            Some("configured-token")
        );
        assert_eq!(props.get(S3_REGION).map(String::as_str), Some("eu-west-1"));
    }

    #[tokio::test]
    async fn local_round_trip_and_prefix_delete() -> iceberg::Result<()> {
        let dir = tempfile::tempdir().map_err(|e| storage_error(e.to_string()))?;
        let io = file_io_with_props(HashMap::new());
        let base = format!("file://{}", dir.path().display());
        let file = format!("{base}/a/b/data.bin");
        io.new_output(&file)?
            .write(Bytes::from_static(b"hello world"))
            .await?;
        assert!(io.exists(&file).await?);
        let input = io.new_input(&file)?;
        assert_eq!(input.metadata().await?.size, 11);
        assert_eq!(
            input.reader().await?.read(6..11).await?,
            Bytes::from_static(b"world")
        );
        io.delete_prefix(format!("{base}/a")).await?;
        assert!(!io.exists(&file).await?);
        Ok(())
    }

    #[tokio::test]
    async fn local_files_stay_under_the_root() -> iceberg::Result<()> {
        let dir = tempfile::tempdir().map_err(|e| storage_error(e.to_string()))?;
        let root = dir.path().join("warehouse");
        let io = file_io_with_props(HashMap::from([(
            LOCAL_ROOT_PROP.to_string(),
            root.display().to_string(),
        )]));
        let inside = format!("file://{}/s/t/data.bin", root.display());
        io.new_output(&inside)?
            .write(Bytes::from_static(b"x"))
            .await?;
        assert!(io.exists(&inside).await?);
        let outside = dir.path().join("outside.bin");
        for location in [
            format!("file://{}", outside.display()),
            format!("{}/../outside.bin", root.display()),
            format!("file://{}/../outside.bin", root.display()),
            format!("file://{}x/t", root.display()),
            "/etc/passwd".to_string(),
        ] {
            let written = match io.new_output(&location) {
                Ok(file) => file.write(Bytes::from_static(b"x")).await.is_ok(),
                Err(_) => false,
            };
            assert!(!written, "{location} was written");
            assert!(io.exists(&location).await.is_err(), "{location}");
        }
        assert!(!outside.exists());
        let no_local = file_io_with_props(HashMap::from([(
            LOCAL_ROOT_PROP.to_string(),
            String::new(),
        )]));
        assert!(no_local.exists(&inside).await.is_err());
        Ok(())
    }

    #[tokio::test]
    async fn unknown_scheme_is_a_clear_error() {
        let io = file_io_with_props(HashMap::new());
        let msg = io
            .exists("gs://bucket/x")
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains("unsupported storage location 'gs://bucket/x'"),
            "{msg}"
        );
    }
}
