//! A flood from one user against a real `sqe local` process: prepared statements and planned
//! statements left unfetched pile up to the user's cap and no further, the process's memory
//! stops growing once the cap is reached however long the flood goes on, and another user's
//! `SELECT 1` is still answered.

use arrow_flight::sql::client::FlightSqlServiceClient;
use sqe_tests::process::LocalProcess;
use tonic::Code;
use tonic::transport::Channel;

use crate::TestResult;

/// What one user may hold of each (the coordinator's per-user caps).
const CAP: usize = 1000;
/// Refused attempts per kind after the cap, in all.
const REFUSED: usize = 4 * CAP;

async fn client_as(
    port: u16,
    user: &str,
) -> Result<FlightSqlServiceClient<Channel>, Box<dyn std::error::Error + Send + Sync>> {
    use base64::Engine as _;
    let mut client = sqe_tests::flight::connect(&format!("http://127.0.0.1:{port}")).await?;
    let credentials = base64::engine::general_purpose::STANDARD.encode(format!("{user}:"));
    client.set_header("authorization", format!("Basic {credentials}"));
    Ok(client)
}

fn code(error: arrow_flight::error::FlightError) -> Code {
    match error {
        arrow_flight::error::FlightError::Tonic(status) => status.code(),
        _ => Code::Unknown,
    }
}

/// One prepared statement and one planned, never fetched statement: (prepared, planned) codes.
async fn hold_one(client: &mut FlightSqlServiceClient<Channel>) -> (Code, Code) {
    let prepared = match client.prepare("SELECT 1".into(), None).await {
        // Never closed: the server keeps it until it expires.
        Ok(statement) => {
            std::mem::forget(statement);
            Code::Ok
        }
        Err(e) => code(e),
    };
    let planned = match client.execute("SELECT 2".into(), None).await {
        Ok(_) => Code::Ok,
        Err(e) => code(e),
    };
    (prepared, planned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_stops_at_the_cap_and_memory_stops_with_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let LocalProcess {
        process: local,
        flight_sql_port: flight,
        ..
    } = LocalProcess::start(dir.path(), 1, "0")?;
    let mut flooder = client_as(flight, "flooder").await?;
    let mut other = client_as(flight, "other").await?;
    for _ in 0..20 {
        sqe_tests::flight::query(&mut other, "SELECT 1").await?;
    }
    let before = local.resident_bytes()?;

    for n in 0..CAP {
        let held = hold_one(&mut flooder).await;
        assert_eq!(held, (Code::Ok, Code::Ok), "attempt {n} under the cap");
    }
    let at_cap = local.resident_bytes()?;

    let mut highest = at_cap;
    for n in 0..REFUSED {
        let held = hold_one(&mut flooder).await;
        assert_eq!(
            held,
            (Code::ResourceExhausted, Code::ResourceExhausted),
            "attempt {n} over the cap"
        );
        if n % CAP == 0 {
            highest = highest.max(local.resident_bytes()?);
        }
    }
    highest = highest.max(local.resident_bytes()?);
    let answered = sqe_tests::flight::query(&mut other, "SELECT 1").await?;
    assert_eq!(answered.iter().map(|b| b.num_rows()).sum::<usize>(), 1);

    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let held = at_cap.saturating_sub(before);
    let after = highest.saturating_sub(at_cap);
    eprintln!(
        "resident: {:.1} MiB before, +{:.1} MiB holding {CAP} of each, +{:.1} MiB more over {REFUSED} refused attempts of each",
        mib(before),
        mib(held),
        mib(after)
    );
    // Had the refused ones been kept as the first were, memory would have grown by four times
    // what the first took; it may grow by a fraction of that once (allocator and history noise).
    let allowed = (held / 2).max(16 << 20);
    assert!(
        after < allowed,
        "memory grew by {:.1} MiB while every attempt was refused (holding {CAP} took {:.1} MiB)",
        mib(after),
        mib(held)
    );
    local.stop_cleanly()?;
    Ok(())
}
