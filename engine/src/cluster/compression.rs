//! How Arrow IPC buffers are compressed where SQE sends them: query results to Flight SQL
//! clients, and batches between nodes (shuffles, broadcasts and the stream of each worker
//! task to its consumer).

use datafusion::arrow::ipc::CompressionType;

/// A compression of Arrow IPC buffers (the readers decompress what the writer chose).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IpcCompression {
    /// Plain buffers: cheapest where the link is fast (loopback, one data centre).
    #[default]
    None,
    /// LZ4 frames: fast, a smaller saving.
    Lz4,
    /// Zstandard: slower, a larger saving.
    Zstd,
}

impl IpcCompression {
    /// Arrow's name for it (`None` for plain buffers).
    pub fn compression_type(self) -> Option<CompressionType> {
        match self {
            IpcCompression::None => None,
            IpcCompression::Lz4 => Some(CompressionType::LZ4_FRAME),
            IpcCompression::Zstd => Some(CompressionType::ZSTD),
        }
    }

    /// As Trino's `exchange_compression_codec` writes it.
    pub fn name(self) -> &'static str {
        match self {
            IpcCompression::None => "NONE",
            IpcCompression::Lz4 => "LZ4",
            IpcCompression::Zstd => "ZSTD",
        }
    }
}

impl std::str::FromStr for IpcCompression {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(Self::None),
            "lz4" => Ok(Self::Lz4),
            "zstd" => Ok(Self::Zstd),
            other => Err(format!("IPC compression '{other}': none, lz4 or zstd")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_in_either_case() {
        for compression in [
            IpcCompression::None,
            IpcCompression::Lz4,
            IpcCompression::Zstd,
        ] {
            assert_eq!(compression.name().parse(), Ok(compression));
            assert_eq!(compression.name().to_lowercase().parse(), Ok(compression));
        }
        assert!("gzip".parse::<IpcCompression>().is_err());
    }
}
