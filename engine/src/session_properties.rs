//! The session properties a client may set (Trino's `SET SESSION`, the `X-Trino-Session`
//! header). Each one is honoured by the engine; an unknown name or a value of the wrong type is
//! an error, never silently ignored.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cluster::IpcCompression;
use crate::dialect::units::{format_duration, parse_duration};
use crate::error::{Error, ErrorCode, ObjectKind, Result};

/// The SQL type of a property's value, as `SHOW SESSION` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropertyType {
    Boolean,
    Integer,
    Varchar,
}

impl PropertyType {
    pub fn name(self) -> &'static str {
        match self {
            PropertyType::Boolean => "boolean",
            PropertyType::Integer => "integer",
            PropertyType::Varchar => "varchar",
        }
    }
}

/// One property: its name, type and what it does.
#[derive(Debug)]
pub(crate) struct PropertyDefinition {
    pub name: &'static str,
    pub property_type: PropertyType,
    pub description: &'static str,
}

/// How joins are distributed across workers (Trino's `join_distribution_type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum JoinDistribution {
    /// The planner decides from table statistics: small build sides are broadcast.
    #[default]
    Automatic,
    /// Both sides are repartitioned on the join keys.
    Partitioned,
    /// The build side is always broadcast to every task of the probe side.
    Broadcast,
}

impl JoinDistribution {
    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_uppercase().as_str() {
            "AUTOMATIC" => Some(Self::Automatic),
            "PARTITIONED" => Some(Self::Partitioned),
            "BROADCAST" => Some(Self::Broadcast),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Automatic => "AUTOMATIC",
            Self::Partitioned => "PARTITIONED",
            Self::Broadcast => "BROADCAST",
        }
    }
}

/// Whether inner joins are reordered (Trino's `join_reordering_strategy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum JoinReordering {
    /// By estimated sizes, where that is estimated to make far fewer rows.
    #[default]
    Automatic,
    /// As written, but a join whose condition is in `WHERE` is a join, not a cross join.
    EliminateCrossJoins,
    /// As written (in SQE the same as `EliminateCrossJoins`: DataFusion always turns a cross
    /// join with an equality in `WHERE` into a join).
    None,
}

impl JoinReordering {
    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_uppercase().as_str() {
            "AUTOMATIC" => Some(Self::Automatic),
            "ELIMINATE_CROSS_JOINS" => Some(Self::EliminateCrossJoins),
            "NONE" => Some(Self::None),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Automatic => "AUTOMATIC",
            Self::EliminateCrossJoins => "ELIMINATE_CROSS_JOINS",
            Self::None => "NONE",
        }
    }
}

/// What a query that fails for a reason not its own does (Trino's `retry_policy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum QueryRetryPolicy {
    /// It fails.
    #[default]
    None,
    /// A read-only query is planned again on the workers there are and run once more, as long
    /// as none of its rows has been sent (up to `query_retry_attempts` times).
    Query,
}

impl QueryRetryPolicy {
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::Query => "QUERY",
        }
    }
}

impl std::str::FromStr for QueryRetryPolicy {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, Self::Err> {
        match text.trim().to_ascii_uppercase().as_str() {
            "NONE" => Ok(Self::None),
            "QUERY" => Ok(Self::Query),
            // Trino's third policy retries single tasks from spooled exchanges, which SQE's
            // streaming stages do not keep.
            "TASK" => Err(
                "'TASK' is not supported: SQE retries whole queries (QUERY) or none (NONE)".into(),
            ),
            other => Err(format!("'{other}' is not NONE or QUERY")),
        }
    }
}

impl TryFrom<String> for QueryRetryPolicy {
    type Error = String;

    fn try_from(text: String) -> std::result::Result<Self, Self::Error> {
        text.parse()
    }
}

/// Trino's default for `query_retry_attempts`.
pub const DEFAULT_QUERY_RETRY_ATTEMPTS: u32 = 4;
/// More retries than this would only repeat a failure that is not going away.
const MAX_QUERY_RETRY_ATTEMPTS: u32 = 100;

pub(crate) const QUERY_MAX_RUN_TIME: &str = "query_max_run_time";
pub(crate) const TASK_CONCURRENCY: &str = "task_concurrency";
pub(crate) const JOIN_DISTRIBUTION_TYPE: &str = "join_distribution_type";
pub(crate) const JOIN_REORDERING_STRATEGY: &str = "join_reordering_strategy";
pub(crate) const DISTRIBUTED_EXECUTION: &str = "distributed_execution";
pub(crate) const QUERY_PRIORITY: &str = "query_priority";
pub(crate) const EXPIRE_SNAPSHOTS_MIN_RETENTION: &str = "expire_snapshots_min_retention";
pub(crate) const REMOVE_ORPHAN_FILES_MIN_RETENTION: &str = "remove_orphan_files_min_retention";
pub(crate) const RETRY_POLICY: &str = "retry_policy";
pub(crate) const QUERY_RETRY_ATTEMPTS: &str = "query_retry_attempts";
pub(crate) const EXCHANGE_COMPRESSION_CODEC: &str = "exchange_compression_codec";

/// Trino's default for both minimum retentions: a week.
const DEFAULT_MIN_RETENTION: Duration = Duration::from_secs(7 * 86_400);

/// Every property, in the order `SHOW SESSION` lists them (by name).
pub(crate) const PROPERTIES: &[PropertyDefinition] = &[
    PropertyDefinition {
        name: DISTRIBUTED_EXECUTION,
        property_type: PropertyType::Boolean,
        description: "Split queries into stages and tasks run by the workers; false runs them on the coordinator alone",
    },
    PropertyDefinition {
        name: EXCHANGE_COMPRESSION_CODEC,
        property_type: PropertyType::Varchar,
        description: "Compression of the data nodes send each other: NONE, LZ4 or ZSTD",
    },
    PropertyDefinition {
        name: EXPIRE_SNAPSHOTS_MIN_RETENTION,
        property_type: PropertyType::Varchar,
        description: "Minimal retention period for expire_snapshots (its retention_threshold may not be shorter)",
    },
    PropertyDefinition {
        name: JOIN_DISTRIBUTION_TYPE,
        property_type: PropertyType::Varchar,
        description: "Join distribution type: AUTOMATIC (broadcast small build sides), PARTITIONED or BROADCAST",
    },
    PropertyDefinition {
        name: JOIN_REORDERING_STRATEGY,
        property_type: PropertyType::Varchar,
        description: "Join reordering strategy: AUTOMATIC (inner joins by estimated sizes), ELIMINATE_CROSS_JOINS or NONE (as written)",
    },
    PropertyDefinition {
        name: QUERY_MAX_RUN_TIME,
        property_type: PropertyType::Varchar,
        description: "Maximum run time of a query, results streamed included (e.g. 30s, 10m); may not exceed the coordinator's limit",
    },
    PropertyDefinition {
        name: QUERY_PRIORITY,
        property_type: PropertyType::Integer,
        description: "The priority of queries. Larger numbers are higher priority: a queued query is admitted before every queued query of lower priority",
    },
    PropertyDefinition {
        name: QUERY_RETRY_ATTEMPTS,
        property_type: PropertyType::Integer,
        description: "Maximum number of times a query is run again under retry_policy QUERY",
    },
    PropertyDefinition {
        name: REMOVE_ORPHAN_FILES_MIN_RETENTION,
        property_type: PropertyType::Varchar,
        description: "Minimal retention period for remove_orphan_files (its retention_threshold may not be shorter)",
    },
    PropertyDefinition {
        name: RETRY_POLICY,
        property_type: PropertyType::Varchar,
        description: "NONE, or QUERY: a read-only query that fails for a reason not its own (a worker lost) before sending a row is planned again on the workers left and run once more",
    },
    PropertyDefinition {
        name: TASK_CONCURRENCY,
        property_type: PropertyType::Integer,
        description: "Parallel threads per query on each node (a power of two)",
    },
];

pub(crate) fn definition(name: &str) -> Option<&'static PropertyDefinition> {
    PROPERTIES.iter().find(|p| p.name == name)
}

/// A client's property values; `None` is the property's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionProperties {
    pub query_max_run_time: Option<Duration>,
    pub task_concurrency: Option<usize>,
    pub join_distribution_type: Option<JoinDistribution>,
    pub join_reordering_strategy: Option<JoinReordering>,
    pub distributed_execution: Option<bool>,
    pub query_priority: Option<i32>,
    pub expire_snapshots_min_retention: Option<Duration>,
    pub remove_orphan_files_min_retention: Option<Duration>,
    pub retry_policy: Option<QueryRetryPolicy>,
    pub query_retry_attempts: Option<u32>,
    pub exchange_compression_codec: Option<IpcCompression>,
    /// Each set property's value as the client wrote it: what Trino keeps, sends back in
    /// `X-Trino-Set-Session` and shows in `SHOW SESSION` (`10m`, not `10.00m`).
    written: BTreeMap<String, String>,
}

/// The limits a property value is checked against: the coordinator's configuration.
#[derive(Debug, Clone, Copy, Default)]
pub struct PropertyLimits {
    pub max_run_time: Option<Duration>,
    /// The coordinator's default threads per query.
    pub default_concurrency: usize,
    /// The coordinator's `retry_policy` and `query_retry_attempts`.
    pub retry_policy: QueryRetryPolicy,
    pub query_retry_attempts: u32,
    /// The coordinator's `exchange_compression`.
    pub exchange_compression: IpcCompression,
}

fn invalid(name: &str, message: impl std::fmt::Display) -> Error {
    Error::invalid(
        ErrorCode::InvalidSessionProperty,
        format!("invalid value for session property {name}: {message}"),
    )
}

impl SessionProperties {
    /// Properties as clients send them (`X-Trino-Session`), each checked.
    pub fn from_pairs(pairs: &BTreeMap<String, String>, limits: &PropertyLimits) -> Result<Self> {
        let mut properties = Self::default();
        for (name, value) in pairs {
            properties.set(name, value, limits)?;
        }
        Ok(properties)
    }

    /// Sets one property from its text form; returns the canonical text clients store.
    pub fn set(&mut self, name: &str, value: &str, limits: &PropertyLimits) -> Result<String> {
        let Some(definition) = definition(name) else {
            return Err(unknown_property(name));
        };
        let value = value.trim();
        match definition.name {
            QUERY_MAX_RUN_TIME => {
                let time = parse_duration(value)
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| {
                        invalid(
                            name,
                            format!("'{value}' is not a duration such as 30s or 10m"),
                        )
                    })?;
                if let Some(limit) = limits.max_run_time
                    && time > limit
                {
                    return Err(invalid(
                        name,
                        format!(
                            "{value} exceeds the coordinator's limit of {}",
                            format_duration(limit)
                        ),
                    ));
                }
                self.query_max_run_time = Some(time);
            }
            TASK_CONCURRENCY => {
                let n: usize = value
                    .parse()
                    .map_err(|_| invalid(name, format!("'{value}' is not an integer")))?;
                if !n.is_power_of_two() || n > 1024 {
                    return Err(invalid(
                        name,
                        format!("{n} is not a power of two up to 1024"),
                    ));
                }
                self.task_concurrency = Some(n);
            }
            JOIN_DISTRIBUTION_TYPE => {
                let kind = JoinDistribution::parse(value).ok_or_else(|| {
                    invalid(
                        name,
                        format!("'{value}' is not AUTOMATIC, PARTITIONED or BROADCAST"),
                    )
                })?;
                self.join_distribution_type = Some(kind);
            }
            JOIN_REORDERING_STRATEGY => {
                let strategy = JoinReordering::parse(value).ok_or_else(|| {
                    invalid(
                        name,
                        format!("'{value}' is not AUTOMATIC, ELIMINATE_CROSS_JOINS or NONE"),
                    )
                })?;
                self.join_reordering_strategy = Some(strategy);
            }
            DISTRIBUTED_EXECUTION => {
                let on = match value.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(invalid(name, format!("'{value}' is not true or false"))),
                };
                self.distributed_execution = Some(on);
            }
            EXPIRE_SNAPSHOTS_MIN_RETENTION | REMOVE_ORPHAN_FILES_MIN_RETENTION => {
                let time = parse_duration(value).ok_or_else(|| {
                    invalid(
                        name,
                        format!("'{value}' is not a duration such as 7d or 1h"),
                    )
                })?;
                if definition.name == EXPIRE_SNAPSHOTS_MIN_RETENTION {
                    self.expire_snapshots_min_retention = Some(time);
                } else {
                    self.remove_orphan_files_min_retention = Some(time);
                }
            }
            RETRY_POLICY => {
                let policy: QueryRetryPolicy = value.parse().map_err(|e| invalid(name, e))?;
                self.retry_policy = Some(policy);
            }
            QUERY_RETRY_ATTEMPTS => {
                let attempts = value
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n <= MAX_QUERY_RETRY_ATTEMPTS)
                    .ok_or_else(|| {
                        invalid(
                            name,
                            format!(
                                "'{value}' is not an integer from 0 to {MAX_QUERY_RETRY_ATTEMPTS}"
                            ),
                        )
                    })?;
                self.query_retry_attempts = Some(attempts);
            }
            EXCHANGE_COMPRESSION_CODEC => {
                let codec: IpcCompression = value
                    .parse()
                    .map_err(|_| invalid(name, format!("'{value}' is not NONE, LZ4 or ZSTD")))?;
                self.exchange_compression_codec = Some(codec);
            }
            QUERY_PRIORITY => {
                let priority: i32 = value
                    .parse()
                    .map_err(|_| invalid(name, format!("'{value}' is not an integer")))?;
                self.query_priority = Some(priority);
            }
            other => return Err(unknown_property(other)),
        }
        self.written
            .insert(definition.name.to_string(), value.to_string());
        Ok(value.to_string())
    }

    /// The current value of `name` as text, the default when unset.
    pub fn value(&self, name: &str, limits: &PropertyLimits) -> Option<String> {
        if let Some(written) = self.written.get(name) {
            return Some(written.clone());
        }
        Some(match name {
            QUERY_MAX_RUN_TIME => match self.query_max_run_time {
                Some(time) => format_duration(time),
                None => default_value(name, limits)?,
            },
            TASK_CONCURRENCY => self
                .task_concurrency
                .unwrap_or(limits.default_concurrency)
                .to_string(),
            JOIN_DISTRIBUTION_TYPE => self.join_distribution().name().to_string(),
            JOIN_REORDERING_STRATEGY => self.join_reordering().name().to_string(),
            DISTRIBUTED_EXECUTION => self.distributed_execution.unwrap_or(true).to_string(),
            QUERY_PRIORITY => self.priority().to_string(),
            EXCHANGE_COMPRESSION_CODEC => self
                .exchange_compression_codec
                .unwrap_or(limits.exchange_compression)
                .name()
                .to_string(),
            RETRY_POLICY => self.retry_policy(limits).name().to_string(),
            QUERY_RETRY_ATTEMPTS => self
                .query_retry_attempts
                .unwrap_or(limits.query_retry_attempts)
                .to_string(),
            EXPIRE_SNAPSHOTS_MIN_RETENTION => {
                format_duration(self.expire_snapshots_min_retention())
            }
            REMOVE_ORPHAN_FILES_MIN_RETENTION => {
                format_duration(self.remove_orphan_files_min_retention())
            }
            _ => return None,
        })
    }

    /// The shortest `retention_threshold` `expire_snapshots` takes.
    pub fn expire_snapshots_min_retention(&self) -> Duration {
        self.expire_snapshots_min_retention
            .unwrap_or(DEFAULT_MIN_RETENTION)
    }

    /// The shortest `retention_threshold` `remove_orphan_files` takes.
    pub fn remove_orphan_files_min_retention(&self) -> Duration {
        self.remove_orphan_files_min_retention
            .unwrap_or(DEFAULT_MIN_RETENTION)
    }

    /// Trino's default priority is 1.
    pub fn priority(&self) -> i32 {
        self.query_priority.unwrap_or(1)
    }

    pub fn join_distribution(&self) -> JoinDistribution {
        self.join_distribution_type.unwrap_or_default()
    }

    pub fn join_reordering(&self) -> JoinReordering {
        self.join_reordering_strategy.unwrap_or_default()
    }

    pub fn retry_policy(&self, limits: &PropertyLimits) -> QueryRetryPolicy {
        self.retry_policy.unwrap_or(limits.retry_policy)
    }

    /// How many times a failed query is run again: none unless the policy is QUERY.
    pub fn query_retries(&self, limits: &PropertyLimits) -> u32 {
        match self.retry_policy(limits) {
            QueryRetryPolicy::None => 0,
            QueryRetryPolicy::Query => self
                .query_retry_attempts
                .unwrap_or(limits.query_retry_attempts),
        }
    }

    /// The run-time limit of a query: the session's, else the coordinator's.
    pub fn max_run_time(&self, limits: &PropertyLimits) -> Option<Duration> {
        self.query_max_run_time.or(limits.max_run_time)
    }
}

/// The default of `name` as text.
pub(crate) fn default_value(name: &str, limits: &PropertyLimits) -> Option<String> {
    Some(match name {
        // Trino's own default for an unbounded run time.
        QUERY_MAX_RUN_TIME => limits
            .max_run_time
            .map(format_duration)
            .unwrap_or_else(|| "100.00d".into()),
        other => SessionProperties::default().value(other, limits)?,
    })
}

pub(crate) fn unknown_property(name: &str) -> Error {
    Error::not_found(ObjectKind::SessionProperty, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> PropertyLimits {
        PropertyLimits {
            max_run_time: Some(Duration::from_secs(600)),
            default_concurrency: 4,
            retry_policy: QueryRetryPolicy::None,
            query_retry_attempts: DEFAULT_QUERY_RETRY_ATTEMPTS,
            exchange_compression: IpcCompression::None,
        }
    }

    #[test]
    fn exchange_compression_defaults_to_the_coordinators_and_takes_trinos_codecs() {
        let mut p = SessionProperties::default();
        let lz4 = PropertyLimits {
            exchange_compression: IpcCompression::Lz4,
            ..limits()
        };
        assert_eq!(
            p.value(EXCHANGE_COMPRESSION_CODEC, &lz4).as_deref(),
            Some("LZ4")
        );
        assert!(
            p.set(EXCHANGE_COMPRESSION_CODEC, "gzip", &limits())
                .is_err()
        );
        assert!(p.set(EXCHANGE_COMPRESSION_CODEC, "zstd", &limits()).is_ok());
        assert_eq!(p.exchange_compression_codec, Some(IpcCompression::Zstd));
    }

    #[test]
    fn values_are_checked_and_kept_as_written() {
        let mut p = SessionProperties::default();
        assert_eq!(
            p.set(TASK_CONCURRENCY, "8", &limits()).ok(),
            Some("8".into())
        );
        assert!(p.set(TASK_CONCURRENCY, "6", &limits()).is_err());
        assert!(p.set(TASK_CONCURRENCY, "x", &limits()).is_err());
        assert_eq!(
            p.set(JOIN_DISTRIBUTION_TYPE, "partitioned", &limits()).ok(),
            Some("partitioned".into())
        );
        assert_eq!(p.join_distribution(), JoinDistribution::Partitioned);
        assert_eq!(
            p.set(QUERY_MAX_RUN_TIME, "90s", &limits()).ok(),
            Some("90s".into())
        );
        assert_eq!(
            p.value(QUERY_MAX_RUN_TIME, &limits()).as_deref(),
            Some("90s")
        );
        assert_eq!(p.max_run_time(&limits()), Some(Duration::from_secs(90)));
        // The coordinator's limit cannot be raised by a client.
        assert!(p.set(QUERY_MAX_RUN_TIME, "1h", &limits()).is_err());
        assert!(p.set(DISTRIBUTED_EXECUTION, "yes", &limits()).is_err());
        let unknown = p.set("no_such_thing", "1", &limits());
        assert!(
            matches!(unknown, Err(Error::NotFound { kind: ObjectKind::SessionProperty, name }) if name == "no_such_thing")
        );
    }

    #[test]
    fn defaults_come_from_the_coordinator() {
        let p = SessionProperties::default();
        assert_eq!(p.value(TASK_CONCURRENCY, &limits()).as_deref(), Some("4"));
        assert_eq!(
            p.value(QUERY_MAX_RUN_TIME, &limits()).as_deref(),
            Some("10.00m")
        );
        assert_eq!(
            default_value(QUERY_MAX_RUN_TIME, &PropertyLimits::default()).as_deref(),
            Some("100.00d")
        );
        assert_eq!(
            p.value(DISTRIBUTED_EXECUTION, &limits()).as_deref(),
            Some("true")
        );
        assert_eq!(p.join_distribution(), JoinDistribution::Automatic);
        assert_eq!(p.value(RETRY_POLICY, &limits()).as_deref(), Some("NONE"));
        assert_eq!(p.query_retries(&limits()), 0);
        let query = PropertyLimits {
            retry_policy: QueryRetryPolicy::Query,
            ..limits()
        };
        assert_eq!(p.value(RETRY_POLICY, &query).as_deref(), Some("QUERY"));
        assert_eq!(p.query_retries(&query), DEFAULT_QUERY_RETRY_ATTEMPTS);
    }

    #[test]
    fn retries_follow_the_policy_and_the_attempts() {
        let mut p = SessionProperties::default();
        assert!(p.set(QUERY_RETRY_ATTEMPTS, "2", &limits()).is_ok());
        assert_eq!(p.query_retries(&limits()), 0, "NONE retries nothing");
        assert!(p.set(RETRY_POLICY, "query", &limits()).is_ok());
        assert_eq!(p.query_retries(&limits()), 2);
        for refused in ["TASK", "sometimes"] {
            let err = p.set(RETRY_POLICY, refused, &limits()).err();
            assert!(
                matches!(&err, Some(e) if e.code() == ErrorCode::InvalidSessionProperty),
                "{refused}: {err:?}"
            );
        }
        assert!(p.set(QUERY_RETRY_ATTEMPTS, "-1", &limits()).is_err());
        assert!(p.set(QUERY_RETRY_ATTEMPTS, "101", &limits()).is_err());
        assert_eq!(
            p.query_retries(&limits()),
            2,
            "a refused value changes nothing"
        );
    }
}
