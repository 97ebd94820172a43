use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::physical_plan::memory::MemoryStream;
use futures::TryStreamExt;
use iceberg::{NamespaceIdent, TableIdent};

use super::*;

fn key(n: u8) -> CacheKey {
    CacheKey([n; 32])
}

fn table(name: &str, snapshot: Option<i64>) -> TableVersion {
    TableVersion {
        table: TableIdent::new(NamespaceIdent::new("demo".into()), name.into()),
        uuid: format!("uuid-of-{name}"),
        snapshot,
    }
}

fn result(rows: i64) -> CachedResult {
    let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
    let values = Int64Array::from_iter_values(0..rows);
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(values)])
        .unwrap_or_else(|e| panic!("batch: {e}"));
    CachedResult {
        schema,
        batches: vec![batch],
    }
}

fn bytes(result: &CachedResult) -> usize {
    result
        .batches
        .iter()
        .map(RecordBatch::get_array_memory_size)
        .sum()
}

fn cache(max_memory: usize, max_entry: usize, ttl: Duration) -> ResultCache {
    ResultCache::new(
        CacheSettings {
            enabled: true,
            max_memory,
            max_entry,
            ttl,
        },
        None,
    )
}

/// The cache holds its entries in the coordinator's pool: beside a query's reservation the
/// pool fits fewer entries (older ones go), none when it is full, and what goes is given back.
#[test]
fn entries_are_held_in_the_coordinators_memory_pool() {
    use datafusion::execution::memory_pool::GreedyMemoryPool;
    let one = bytes(&result(1000));
    let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(3 * one));
    let cache = ResultCache::new(
        CacheSettings {
            enabled: true,
            max_memory: 10 * one,
            max_entry: one,
            ttl: Duration::from_secs(60),
        },
        Some(&pool),
    );
    let read = vec![table("t", Some(1))];
    cache.put(key(1), result(1000), read.clone());
    cache.put(key(2), result(1000), read.clone());
    assert_eq!(pool.reserved(), 2 * one);
    // A query takes most of what is left...
    let query = MemoryConsumer::new("query").register(&pool);
    assert!(query.try_grow(one / 2).is_ok());
    // ...so a third entry fits only once the oldest has gone.
    cache.put(key(3), result(1000), read.clone());
    assert!(cache.get(&key(1), &read).is_none(), "the oldest stayed");
    assert!(cache.get(&key(3), &read).is_some());
    assert_eq!(pool.reserved(), 2 * one + one / 2);
    // With the query holding everything the cache does not, nothing new is kept.
    cache.invalidate_table(&table("t", None).table);
    assert_eq!(pool.reserved(), one / 2);
    assert!(query.try_grow(3 * one - one / 2).is_ok());
    cache.put(key(4), result(1000), read.clone());
    assert!(cache.get(&key(4), &read).is_none());
    assert_eq!(cache.usage(), (0, 0));
}

#[test]
fn a_hit_needs_the_same_table_versions() {
    let cache = cache(1 << 20, 1 << 20, Duration::from_secs(60));
    let read = vec![table("t", Some(1))];
    assert!(cache.get(&key(1), &read).is_none());
    cache.put(key(1), result(10), read.clone());
    let hit = cache.get(&key(1), &read).map(|r| r.batches[0].num_rows());
    assert_eq!(hit, Some(10));
    // Another snapshot (a commit elsewhere): a miss, and the entry is gone for good.
    assert!(cache.get(&key(1), &[table("t", Some(2))]).is_none());
    assert!(cache.get(&key(1), &read).is_none());
    // A table dropped and created again under the same name has another UUID.
    cache.put(key(2), result(1), read.clone());
    let recreated = TableVersion {
        uuid: "another".into(),
        ..table("t", Some(1))
    };
    assert!(cache.get(&key(2), &[recreated]).is_none());
    assert_eq!((cache.hits(), cache.misses()), (1, 4));
}

#[test]
fn commits_and_drops_evict_what_read_the_table() {
    use sqe_iceberg::write::CommitListener;
    let cache = Arc::new(cache(1 << 20, 1 << 20, Duration::from_secs(60)));
    // Commits reach the cache through the catalog's commit listener.
    let commits = crate::commits::Commits::new(vec![Arc::clone(&cache) as Arc<dyn CommitListener>]);
    cache.put(
        key(1),
        result(1),
        vec![table("t", Some(1)), table("u", None)],
    );
    cache.put(key(2), result(1), vec![table("u", None)]);
    cache.put(key(3), result(1), vec![table("v", Some(7))]);
    commits.committed(&table("t", None).table, Some(2));
    assert_eq!(commits.commits(), 1);
    assert_eq!(cache.usage().0, 2);
    assert!(cache.get(&key(2), &[table("u", None)]).is_some());
    cache.invalidate_namespace(&NamespaceIdent::new("demo".into()));
    assert_eq!(cache.usage(), (0, 0));
}

#[test]
fn memory_is_bounded_least_recently_used_first() {
    let one = bytes(&result(1000));
    let cache = cache(2 * one + one / 2, one, Duration::from_secs(60));
    let read = vec![table("t", Some(1))];
    cache.put(key(1), result(1000), read.clone());
    cache.put(key(2), result(1000), read.clone());
    // Key 1 was used since key 2 was added: key 2 is evicted for key 3.
    assert!(cache.get(&key(1), &read).is_some());
    cache.put(key(3), result(1000), read.clone());
    assert!(cache.get(&key(2), &read).is_none());
    assert!(cache.get(&key(1), &read).is_some());
    assert!(cache.get(&key(3), &read).is_some());
    assert!(cache.usage().1 <= 2 * one + one / 2);
    // Larger than an entry may be: not kept.
    cache.put(key(4), result(5000), read.clone());
    assert!(cache.get(&key(4), &read).is_none());
}

#[test]
fn entries_expire() {
    let cache = cache(1 << 20, 1 << 20, Duration::from_millis(1));
    let read = vec![table("t", Some(1))];
    cache.put(key(1), result(1), read.clone());
    std::thread::sleep(Duration::from_millis(20));
    assert!(cache.get(&key(1), &read).is_none());
    assert_eq!(cache.usage(), (0, 0));
}

fn stream_of(result: CachedResult) -> SendableRecordBatchStream {
    match MemoryStream::try_new(result.batches, result.schema, None) {
        Ok(stream) => Box::pin(stream),
        Err(e) => panic!("stream: {e}"),
    }
}

use datafusion::physical_plan::SendableRecordBatchStream;

#[tokio::test]
async fn only_complete_results_are_kept() -> datafusion::error::Result<()> {
    let cache = Arc::new(cache(1 << 20, 1 << 20, Duration::from_secs(60)));
    let read = vec![table("t", Some(1))];
    // Read to the end: kept.
    let stream = CachingStream::new(
        stream_of(result(5)),
        Arc::clone(&cache),
        key(1),
        read.clone(),
    );
    let passed: Vec<RecordBatch> = stream.try_collect().await?;
    assert_eq!(passed[0].num_rows(), 5);
    assert!(cache.get(&key(1), &read).is_some());
    // Dropped before the end (the client went away): not kept.
    let two = CachedResult {
        batches: vec![result(2).batches[0].clone(), result(3).batches[0].clone()],
        ..result(0)
    };
    let mut stream = CachingStream::new(stream_of(two), Arc::clone(&cache), key(2), read.clone());
    let first = futures::StreamExt::next(&mut stream).await;
    assert!(matches!(first, Some(Ok(_))));
    drop(stream);
    assert!(cache.get(&key(2), &read).is_none());
    Ok(())
}
