//! An in-process cluster: coordinator and workers as real gRPC servers on loopback.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use futures::TryStreamExt;
use sqe_engine::Error;
use sqe_engine::engine::{Engine, Outcome, SessionSettings};
use sqe_engine::queries::{Endpoint, Output, Queries, QueryRequest, Session, Statement};
use sqe_gateway::error::StartError;
use sqe_gateway::local::{LocalCluster, LocalOptions, start_local};
use tempfile::TempDir;

/// A cluster with TPC-H data; dropped, it leaves nothing behind.
pub struct TestCluster {
    pub cluster: LocalCluster,
    dir: TempDir,
}

/// What a statement returned, collected.
#[derive(Debug)]
pub enum Collected {
    Rows(Vec<RecordBatch>),
    Updated(Option<u64>),
}

impl Collected {
    pub fn rows(self) -> Vec<RecordBatch> {
        match self {
            Collected::Rows(rows) => rows,
            Collected::Updated(n) => {
                panic!("expected rows, the statement reported an update of {n:?}")
            }
        }
    }
}

impl TestCluster {
    /// `workers` workers, TPC-H at `scale_factor` in 4 files per large table, and scans split
    /// into a task per 8 KiB so that even this small data spreads over every worker.
    pub async fn start(workers: usize, scale_factor: f64) -> Result<Self, StartError> {
        Self::start_with(LocalOptions {
            workers,
            scale_factor,
            worker_memory_limit: Some(512 * 1024 * 1024),
            ..Self::options()
        })
        .await
    }

    /// The options [`Self::start`] uses, to adjust; `data_dir` is replaced by a temporary one.
    pub fn options() -> LocalOptions {
        LocalOptions {
            flight_sql_port: 0,
            trino_http_port: Some(0),
            tpch_parts: 4,
            scan_bytes_per_partition: Some(8 * 1024),
            ..LocalOptions::default()
        }
    }

    pub async fn start_with(options: LocalOptions) -> Result<Self, StartError> {
        let dir = tempfile::tempdir().map_err(|e| StartError::System(e.to_string()))?;
        let options = LocalOptions {
            data_dir: dir.path().to_path_buf(),
            ..options
        };
        let cluster = start_local(&options).await?;
        Ok(Self { cluster, dir })
    }

    /// Two workers over TPC-H SF 0.01, 512 MiB each, with `admin` as the one administrator
    /// (no client authentication: users are who they say).
    pub async fn two_workers_with_admin() -> Result<Self, StartError> {
        Self::start_with(LocalOptions {
            workers: 2,
            scale_factor: 0.01,
            worker_memory_limit: Some(512 * 1024 * 1024),
            client_auth: sqe_gateway::config::ClientAuthConfig {
                admin_users: vec!["admin".into()],
                ..Default::default()
            },
            ..Self::options()
        })
        .await
    }

    /// One worker, no data, and password authentication with one user.
    pub async fn with_password_user(user: &str, password: &str) -> Result<Self, StartError> {
        let hash = bcrypt::hash(password, 4).map_err(|e| StartError::System(e.to_string()))?;
        Self::start_with(LocalOptions {
            workers: 1,
            scale_factor: 0.0,
            trino_http_port: None,
            client_auth: sqe_gateway::config::ClientAuthConfig {
                kind: sqe_gateway::config::ClientAuthType::Password,
                users: std::collections::HashMap::from([(user.to_string(), hash)]),
                ..Default::default()
            },
            ..Self::options()
        })
        .await
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.cluster.coordinator.engine
    }

    /// The lifecycle every statement of the endpoints goes through.
    pub fn queries(&self) -> &Arc<Queries> {
        &self.cluster.coordinator.queries
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Where the coordinator serves the Trino protocol.
    pub fn trino_addr(&self) -> Result<std::net::SocketAddr, &'static str> {
        self.cluster
            .coordinator
            .trino_http_addr
            .ok_or("the test cluster serves the Trino protocol")
    }

    pub fn flight_url(&self) -> String {
        format!("http://{}", self.cluster.coordinator.flight_sql_addr)
    }

    /// Tasks each worker has accepted so far, in worker order.
    pub fn tasks_per_worker(&self) -> Vec<u64> {
        self.cluster
            .workers
            .iter()
            .map(|w| w.stats.tasks_received())
            .collect()
    }

    /// Runs one statement through the queries' lifecycle, as an endpoint does (history,
    /// deadline, cancellation), and collects what it returns.
    pub async fn submit(&self, sql: &str) -> Result<Collected, Error> {
        let handle = self.queries().submit(QueryRequest {
            statement: Statement::Sql(sql.to_string()),
            session: Session::default(),
            endpoint: Endpoint::FlightSql,
            source: Some("test".into()),
            traceparent: None,
        });
        match handle.run().await?.output {
            Output::Rows(stream) => Ok(Collected::Rows(stream.try_collect().await?)),
            Output::Updated { rows } => Ok(Collected::Updated(rows)),
        }
    }

    /// Runs one statement through the coordinator's engine and collects what it returns.
    pub async fn sql(&self, sql: &str) -> Result<Collected, Error> {
        match self
            .engine()
            .execute(&SessionSettings::default(), sql)
            .await?
        {
            Outcome::Rows(stream) => Ok(Collected::Rows(stream.try_collect().await?)),
            Outcome::Updated { rows } => Ok(Collected::Updated(rows)),
        }
    }

    /// The Iceberg table `schema.table` as the catalog holds it: the referee for what SQE
    /// committed.
    pub async fn iceberg_table(
        &self,
        schema: &str,
        table: &str,
    ) -> Result<iceberg::table::Table, iceberg::Error> {
        let ident =
            iceberg::TableIdent::new(iceberg::NamespaceIdent::new(schema.into()), table.into());
        self.engine().catalog().load_table(&ident).await
    }

    /// The error code a statement fails with; an error if it succeeds.
    pub async fn error_code(&self, sql: &str) -> Result<sqe_engine::ErrorCode, String> {
        self.sql(sql)
            .await
            .err()
            .map(|e| e.code())
            .ok_or_else(|| format!("{sql} succeeded"))
    }

    /// Runs a query and returns its rows.
    pub async fn query(&self, sql: &str) -> Result<Vec<RecordBatch>, Error> {
        Ok(self.sql(sql).await?.rows())
    }

    /// Stops every worker and makes the coordinator notice (as its next probe would).
    pub async fn stop_workers(&mut self) {
        for worker in self.cluster.workers.drain(..) {
            worker.stop().await;
        }
        self.engine().workers().probe().await;
    }

    pub async fn stop(self) {
        self.cluster.stop().await;
    }
}

/// A coordinator config on loopback with the embedded catalog and warehouse in `dir`, no
/// workers and no Trino port; tests adjust `coordinator` from here.
pub fn local_coordinator_config(dir: &Path) -> sqe_gateway::config::CoordinatorConfig {
    let (uri, warehouse) = sqe_engine::catalog::default_warehouse_layout(dir);
    sqe_gateway::config::CoordinatorConfig {
        coordinator: sqe_gateway::config::CoordinatorSection {
            bind_address: "127.0.0.1".into(),
            trino_http_port: 0,
            ..Default::default()
        },
        catalog: sqe_gateway::config::CatalogConfig {
            uri: Some(uri),
            warehouse: Some(warehouse),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// `session` with `distributed_execution = false`: statements run on the coordinator alone.
pub fn coordinator_alone(session: SessionSettings) -> Result<SessionSettings, Error> {
    let mut properties = session.properties.clone();
    properties.set(
        "distributed_execution",
        "false",
        &sqe_engine::PropertyLimits::default(),
    )?;
    Ok(SessionSettings {
        properties,
        ..session
    })
}
