//! Trino's spooling protocol. A client that names encodings in `X-Trino-Query-Data-Encoding`
//! (`json`, `json+zstd`, `json+lz4`) gets each page's rows as a segment instead of a `data`
//! array: inline (base64 in the page) while small, as Trino inlines a result's first rows;
//! otherwise spooled and named by a URI the client downloads it from, with an `ackUri` that
//! deletes it once read. Spooled segments are objects in a spooling location, downloaded by
//! presigned URLs straight from the store (Trino's `STORAGE` retrieval), or, without a
//! location, held by the coordinator and downloaded from it (Trino's `COORDINATOR_PROXY`).
//! A client that names none of these encodings gets the classic protocol.

mod store;

use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use datafusion::execution::memory_pool::MemoryPool;
use serde_json::{Value, json};

use store::SpooledHandle;
pub(crate) use store::{MAX_PRESIGNED_TTL, SegmentStore, SpoolObjects};

/// Trino's inlining limits (`protocol.spooling.inlining.max-rows` and `.max-size`): a page
/// within both carries its rows itself.
const INLINE_MAX_ROWS: u64 = 1000;
const INLINE_MAX_BYTES: usize = 128 * 1024;
/// Below this a segment is not compressed: the codec's frame would cost more than it saves.
const COMPRESS_FROM_BYTES: usize = 4096;
/// zstd's default level: most of its ratio at a small fraction of the higher levels' time.
const ZSTD_LEVEL: i32 = 3;
/// The header a spooled segment's acknowledgement, and its download from the coordinator,
/// must carry: the coordinator's URIs alone (which proxies and access logs see) reach nothing.
/// (A presigned URL of the store is a credential in itself, valid until the segment expires.)
pub(crate) const SEGMENT_KEY_HEADER: &str = "x-sqe-segment-key";

/// How a spooled page's rows are written: Trino's JSON rows, compressed or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DataEncoding {
    Json,
    JsonZstd,
    JsonLz4,
}

impl DataEncoding {
    pub(crate) fn name(self) -> &'static str {
        match self {
            DataEncoding::Json => "json",
            DataEncoding::JsonZstd => "json+zstd",
            DataEncoding::JsonLz4 => "json+lz4",
        }
    }

    /// The first encoding of a client's comma-separated list that SQE writes (the client
    /// lists them in its order of preference); `None`: the classic protocol.
    pub(crate) fn negotiate(header: &str) -> Option<Self> {
        header.split(',').map(str::trim).find_map(|name| {
            [
                DataEncoding::Json,
                DataEncoding::JsonZstd,
                DataEncoding::JsonLz4,
            ]
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(name))
        })
    }

    /// `json` as this encoding writes it. Compressed only when that pays (a large enough
    /// segment that shrinks); the uncompressed size is then given, which tells the client to
    /// decompress.
    pub(crate) fn encode(self, json: Vec<u8>) -> EncodedSegment {
        let compressed = match self {
            _ if json.len() < COMPRESS_FROM_BYTES => None,
            DataEncoding::Json => None,
            // Compressed in one call, so the frame names its content size (which the python
            // client's decompressor requires).
            DataEncoding::JsonZstd => zstd::bulk::compress(&json, ZSTD_LEVEL).ok(),
            // A raw LZ4 block: the client decompresses it to the uncompressed size given.
            DataEncoding::JsonLz4 => Some(lz4_flex::block::compress(&json)),
        };
        match compressed {
            Some(bytes) if bytes.len() < json.len() => EncodedSegment {
                uncompressed_size: Some(json.len()),
                bytes: Bytes::from(bytes),
            },
            _ => EncodedSegment {
                bytes: Bytes::from(json),
                uncompressed_size: None,
            },
        }
    }
}

/// A query's spooling: the encoding its client chose and where its spooled segments are held.
#[derive(Clone)]
pub(crate) struct Spooling {
    pub encoding: DataEncoding,
    pub store: Arc<SegmentStore>,
}

/// A segment's bytes as they are sent.
pub(crate) struct EncodedSegment {
    pub bytes: Bytes,
    /// Set when `bytes` are compressed.
    pub uncompressed_size: Option<usize>,
}

/// One page's rows under the spooling protocol.
pub(crate) struct Segment {
    encoding: DataEncoding,
    /// The segment's first row in the whole result, and its rows.
    row_offset: u64,
    rows: u64,
    segment_size: usize,
    uncompressed_size: Option<usize>,
    place: Placement,
}

enum Placement {
    Inline(Bytes),
    Spooled(SpooledHandle),
}

impl Segment {
    /// The page's `rows` (JSON rows, `[[..],[..]]`, the result's rows from `row_offset` on)
    /// in `encoding`: inline when small, otherwise spooled in `store` for query `query`, its
    /// bytes held in `memory` (a segment the pool cannot hold goes inline).
    pub(crate) async fn of_rows(
        encoding: DataEncoding,
        json: Vec<u8>,
        row_offset: u64,
        rows: u64,
        store: &SegmentStore,
        query: &str,
        memory: Option<&Arc<dyn MemoryPool>>,
    ) -> Self {
        let inline = rows <= INLINE_MAX_ROWS && json.len() <= INLINE_MAX_BYTES;
        let encoded = encoding.encode(json);
        let segment_size = encoded.bytes.len();
        let place = if inline {
            Placement::Inline(encoded.bytes)
        } else {
            match store.put(query, encoded.bytes.clone(), memory).await {
                Ok(handle) => Placement::Spooled(handle),
                Err(refused) => {
                    tracing::debug!(%refused, "a spooled segment went inline");
                    Placement::Inline(encoded.bytes)
                }
            }
        };
        Self {
            encoding,
            row_offset,
            rows,
            segment_size,
            uncompressed_size: encoded.uncompressed_size,
            place,
        }
    }

    /// Whether the client downloads it (rather than reading it from the page).
    #[cfg(test)]
    pub(crate) fn is_spooled(&self) -> bool {
        matches!(self.place, Placement::Spooled(_))
    }

    /// The page's `data`: `{"encoding": .., "segments": [..]}`, URIs under `base`.
    pub(crate) fn to_json(&self, base: &str) -> Value {
        let mut metadata = json!({
            "rowOffset": self.row_offset,
            "rowsCount": self.rows,
            "segmentSize": self.segment_size,
        });
        if let Some(size) = self.uncompressed_size {
            metadata["uncompressedSize"] = json!(size);
        }
        let segment = match &self.place {
            Placement::Inline(bytes) => json!({
                "type": "inline",
                "data": base64::engine::general_purpose::STANDARD.encode(bytes),
                "metadata": metadata,
            }),
            Placement::Spooled(handle) => {
                let download = handle.direct.clone().unwrap_or_else(|| {
                    format!("{base}/v1/spooled/download/{}", handle.id.simple())
                });
                metadata["expiresAt"] = json!(
                    chrono::DateTime::<chrono::Utc>::from(handle.expires_at)
                        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                );
                json!({
                    "type": "spooled",
                    "uri": download,
                    "ackUri": format!("{base}/v1/spooled/ack/{}", handle.id.simple()),
                    "metadata": metadata,
                    "headers": {SEGMENT_KEY_HEADER: [handle.key.simple().to_string()]},
                })
            }
        };
        json!({"encoding": self.encoding.name(), "segments": [segment]})
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::time::Duration;

    use datafusion::execution::memory_pool::GreedyMemoryPool;

    use super::*;

    fn rows_json(rows: usize) -> Vec<u8> {
        let rows: Vec<String> = (0..rows).map(|i| format!("[{i},\"row {i}\"]")).collect();
        format!("[{}]", rows.join(",")).into_bytes()
    }

    #[test]
    fn the_first_encoding_sqe_writes_is_chosen() {
        assert_eq!(
            DataEncoding::negotiate("json+zstd,json+lz4,json"),
            Some(DataEncoding::JsonZstd)
        );
        assert_eq!(
            DataEncoding::negotiate("arrow-ipc, json+lz4"),
            Some(DataEncoding::JsonLz4)
        );
        assert_eq!(DataEncoding::negotiate("JSON"), Some(DataEncoding::Json));
        assert_eq!(DataEncoding::negotiate("arrow-ipc"), None);
        assert_eq!(DataEncoding::negotiate(""), None);
    }

    #[test]
    fn compressed_segments_decode_to_their_rows_and_small_ones_stay_plain() -> Result<(), String> {
        let json = rows_json(2000);
        let zstd = DataEncoding::JsonZstd.encode(json.clone());
        assert_eq!(zstd.uncompressed_size, Some(json.len()));
        assert!(zstd.bytes.len() < json.len() / 2, "{}", zstd.bytes.len());
        // A streaming decoder, as a client without the size would use: the frame is whole.
        let mut decoded = Vec::new();
        zstd::stream::read::Decoder::new(&zstd.bytes[..])
            .and_then(|mut d| d.read_to_end(&mut decoded))
            .map_err(|e| e.to_string())?;
        assert_eq!(decoded, json);

        let lz4 = DataEncoding::JsonLz4.encode(json.clone());
        assert_eq!(lz4.uncompressed_size, Some(json.len()));
        let decoded =
            lz4_flex::block::decompress(&lz4.bytes, json.len()).map_err(|e| e.to_string())?;
        assert_eq!(decoded, json);

        let plain = DataEncoding::Json.encode(json.clone());
        assert_eq!(
            (plain.bytes.as_ref(), plain.uncompressed_size),
            (&json[..], None)
        );
        let small = DataEncoding::JsonZstd.encode(rows_json(3));
        assert_eq!(small.uncompressed_size, None);
        assert_eq!(small.bytes.as_ref(), rows_json(3));
        Ok(())
    }

    #[tokio::test]
    async fn small_pages_go_inline_and_large_ones_are_spooled_with_trinos_metadata() {
        let store = SegmentStore::new(Duration::from_secs(60));
        let small =
            Segment::of_rows(DataEncoding::Json, rows_json(3), 10, 3, &store, "q1", None).await;
        assert!(!small.is_spooled());
        let page = small.to_json("http://c:8080");
        assert_eq!(page["encoding"], "json");
        let segment = &page["segments"][0];
        assert_eq!(segment["type"], "inline");
        assert_eq!(segment["metadata"]["rowOffset"], 10);
        assert_eq!(segment["metadata"]["rowsCount"], 3);
        let data = base64::engine::general_purpose::STANDARD
            .decode(segment["data"].as_str().unwrap_or_default())
            .unwrap_or_default();
        assert_eq!(data, rows_json(3));
        assert_eq!(segment["metadata"]["segmentSize"], data.len());

        let json = rows_json(5000);
        let large = Segment::of_rows(
            DataEncoding::JsonLz4,
            json.clone(),
            0,
            5000,
            &store,
            "q1",
            None,
        )
        .await;
        assert!(large.is_spooled());
        let page = large.to_json("http://c:8080");
        let segment = &page["segments"][0];
        assert_eq!(segment["type"], "spooled");
        assert_eq!(segment["metadata"]["uncompressedSize"], json.len());
        let uri = segment["uri"].as_str().unwrap_or_default();
        let id = uri
            .strip_prefix("http://c:8080/v1/spooled/download/")
            .unwrap_or_default();
        assert_eq!(
            segment["ackUri"].as_str(),
            Some(format!("http://c:8080/v1/spooled/ack/{id}").as_str())
        );
        let key = segment["headers"][SEGMENT_KEY_HEADER][0]
            .as_str()
            .unwrap_or_default();
        let bytes = store.download(id, Some(key)).unwrap_or_default();
        assert_eq!(segment["metadata"]["segmentSize"], bytes.len());
        assert_eq!(
            lz4_flex::block::decompress(&bytes, json.len()).unwrap_or_default(),
            json
        );
    }

    #[tokio::test]
    async fn a_segment_the_querys_memory_cannot_hold_goes_inline() {
        let tiny: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(16));
        let store = SegmentStore::new(Duration::from_secs(60));
        let segment = Segment::of_rows(
            DataEncoding::Json,
            rows_json(2000),
            0,
            2000,
            &store,
            "q",
            Some(&tiny),
        )
        .await;
        assert!(!segment.is_spooled());
        assert_eq!(store.held(), (0, 0));
    }
}
