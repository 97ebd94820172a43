//! Flight SQL parallel endpoints: a distributed query's result read straight from the workers,
//! one endpoint per partition of its last stage, each ticket good for its own client once.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use arrow_flight::sql::client::FlightSqlServiceClient;
use arrow_flight::{CancelStatus, FlightInfo};
use datafusion::arrow::array::RecordBatch;
use sqe_engine::history::{QueryRecord, QueryState};
use sqe_gateway::local::LocalOptions;
use sqe_tests::cluster::TestCluster;
use sqe_tests::flight::{cancel, do_get_at, fetch, location_url};
use sqe_tests::render;
use tonic::Code;
use tonic::transport::Channel;

use crate::TestResult;

type Client = FlightSqlServiceClient<Channel>;

const HEADER: &str = "x-sqe-parallel-endpoints";

/// Two workers over TPC-H SF 0.01, with password users alice and bob.
async fn cluster_with_two_users() -> Result<TestCluster, Box<dyn std::error::Error + Send + Sync>> {
    let users = ["alice", "bob"]
        .into_iter()
        .map(|user| Ok((user.to_string(), bcrypt::hash(format!("{user}-pw"), 4)?)))
        .collect::<Result<HashMap<_, _>, bcrypt::BcryptError>>()?;
    Ok(TestCluster::start_with(LocalOptions {
        workers: 2,
        scale_factor: 0.01,
        worker_memory_limit: Some(512 * 1024 * 1024),
        trino_http_port: None,
        client_auth: sqe_gateway::config::ClientAuthConfig {
            kind: sqe_gateway::config::ClientAuthType::Password,
            users,
            ..Default::default()
        },
        ..TestCluster::options()
    })
    .await?)
}

async fn signed_in(
    cluster: &TestCluster,
    user: &str,
) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    let mut client = sqe_tests::flight::connect(&cluster.flight_url()).await?;
    client.handshake(user, &format!("{user}-pw")).await?;
    Ok(client)
}

/// Rows as sorted text lines: the parts of a result come in any order.
fn sorted_rows(batches: &[RecordBatch]) -> Vec<String> {
    let mut rows: Vec<String> = render(batches)
        .lines()
        .filter(|line| line.starts_with("| "))
        .skip(1)
        .map(str::to_string)
        .collect();
    rows.sort();
    rows
}

/// The history's records of statement `sql`, the first one first.
fn snapshots_of(cluster: &TestCluster, sql: &str) -> Vec<Arc<QueryRecord>> {
    let mut records: Vec<Arc<QueryRecord>> = cluster
        .engine()
        .history()
        .records()
        .into_iter()
        .filter(|r| r.snapshot().start.sql == sql)
        .collect();
    records.sort_by_key(|r| r.created_at());
    records
}

fn locations(info: &FlightInfo) -> Vec<String> {
    info.endpoint
        .iter()
        .flat_map(|e| e.location.iter().map(|l| l.uri.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_distributed_result_is_read_at_the_workers_and_equals_the_coordinators() -> TestResult {
    let cluster = cluster_with_two_users().await?;
    let mut alice = signed_in(&cluster, "alice").await?;
    let workers: BTreeSet<String> = cluster
        .cluster
        .workers
        .iter()
        .map(|w| format!("http://{}", w.addr))
        .collect();

    for sql in [
        "SELECT * FROM tpch.lineitem",
        "SELECT l_returnflag, l_linestatus, count(*) AS n, sum(l_quantity) AS q \
         FROM tpch.lineitem GROUP BY 1, 2",
    ] {
        let info = alice.execute(sql.to_string(), None).await?;
        assert!(
            info.endpoint.len() > 1,
            "{sql}: {} endpoint(s)",
            info.endpoint.len()
        );
        let located: BTreeSet<String> = locations(&info)
            .iter()
            .map(|l| location_url(l))
            .collect::<Result<_, _>>()?;
        assert_eq!(
            located, workers,
            "{sql}: every endpoint at a worker, both used"
        );
        let parallel = fetch(&mut alice, info).await?;

        alice.set_header(HEADER, "false");
        let info = alice.execute(sql.to_string(), None).await?;
        assert_eq!(info.endpoint.len(), 1, "{sql}: through the coordinator");
        assert!(locations(&info).is_empty());
        let single = fetch(&mut alice, info).await?;
        alice.set_header(HEADER, "true");

        let rows = sorted_rows(&parallel);
        assert!(!rows.is_empty(), "{sql}");
        assert_eq!(rows, sorted_rows(&single), "{sql}");
        assert_eq!(
            parallel.first().map(|b| b.schema()),
            single.first().map(|b| b.schema()),
            "{sql}"
        );
    }

    // A result the coordinator must finish (a global order, a limit) is its own.
    for sql in [
        "SELECT l_orderkey FROM tpch.lineitem ORDER BY l_orderkey",
        "SELECT * FROM tpch.lineitem LIMIT 3",
    ] {
        let info = alice.execute(sql.to_string(), None).await?;
        assert_eq!(info.endpoint.len(), 1, "{sql}");
        assert!(locations(&info).is_empty(), "{sql}");
    }

    // The history counts what the clients read at the workers, once their tasks have ended.
    let read_at_workers = snapshots_of(&cluster, "SELECT * FROM tpch.lineitem").remove(0);
    let mut snapshot = read_at_workers.snapshot();
    for _ in 0..50 {
        if snapshot.state == QueryState::Finished {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        snapshot = read_at_workers.snapshot();
    }
    assert_eq!(snapshot.state, QueryState::Finished);
    assert_eq!(snapshot.output_rows, 60175);
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_result_ticket_is_good_once_and_only_for_its_own_client() -> TestResult {
    let cluster = cluster_with_two_users().await?;
    let mut alice = signed_in(&cluster, "alice").await?;
    let bob = signed_in(&cluster, "bob").await?;
    let info = alice
        .execute("SELECT * FROM tpch.orders".to_string(), None)
        .await?;
    let endpoint = info.endpoint.first().ok_or("no endpoint")?;
    let ticket = endpoint.ticket.clone().ok_or("no ticket")?;
    let location = endpoint.location.first().ok_or("no location")?.uri.clone();
    let bearer = |client: &Client| client.token().map(|t| format!("Bearer {t}"));

    for (who, authorization) in [("bob", bearer(&bob)), ("nobody", None)] {
        let refused = do_get_at(&location, ticket.clone(), authorization.as_deref()).await;
        assert_eq!(
            refused.as_ref().err().map(tonic::Status::code),
            Some(Code::PermissionDenied),
            "{who}: {refused:?}"
        );
    }
    // A signature of other bytes: its first character changed. (The last one carries
    // padding bits, so changing it may make the token malformed rather than forged.)
    let mut forged = ticket.clone();
    let mut bytes = forged.ticket.to_vec();
    let signature = bytes.iter().rposition(|b| *b == b'.').map(|dot| dot + 1);
    if let Some(first) = signature.and_then(|at| bytes.get_mut(at)) {
        *first = if *first == b'A' { b'B' } else { b'A' };
    }
    forged.ticket = bytes.into();
    let refused = do_get_at(&location, forged, bearer(&alice).as_deref()).await;
    assert_eq!(
        refused.as_ref().err().map(tonic::Status::code),
        Some(Code::Unauthenticated),
        "{refused:?}"
    );

    let read = do_get_at(&location, ticket.clone(), bearer(&alice).as_deref()).await?;
    assert!(read.iter().map(RecordBatch::num_rows).sum::<usize>() > 0);
    let again = do_get_at(&location, ticket, bearer(&alice).as_deref()).await;
    assert_eq!(
        again.as_ref().err().map(tonic::Status::code),
        Some(Code::FailedPrecondition),
        "{again:?}"
    );
    // The other partitions are alice's to read; the query ends when they are.
    let mut rest = info.clone();
    rest.endpoint.remove(0);
    fetch(&mut alice, rest).await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancelled_query_stops_its_readers_at_the_workers() -> TestResult {
    let cluster = cluster_with_two_users().await?;
    let mut alice = signed_in(&cluster, "alice").await?;
    let info = alice
        .execute("SELECT * FROM tpch.lineitem".to_string(), None)
        .await?;
    assert!(info.endpoint.len() > 1);
    assert_eq!(
        cancel(&mut alice, info.clone()).await?,
        CancelStatus::Cancelled
    );

    // The stop reaches the workers just after the cancel's answer: a partition read before
    // it may still be served, the next ones are refused with the query's end.
    let bearer = alice.token().map(|t| format!("Bearer {t}"));
    let mut refused = None;
    for endpoint in &info.endpoint {
        let location = endpoint.location.first().ok_or("no location")?.uri.clone();
        let ticket = endpoint.ticket.clone().ok_or("no ticket")?;
        if let Err(status) = do_get_at(&location, ticket, bearer.as_deref()).await {
            refused = Some(status);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(
        refused.as_ref().map(tonic::Status::code),
        Some(Code::Cancelled),
        "{refused:?}"
    );
    let cancelled = snapshots_of(&cluster, "SELECT * FROM tpch.lineitem").remove(0);
    assert_eq!(cancelled.snapshot().state, QueryState::Canceled);
    cluster.stop().await;
    Ok(())
}
