//! A Flight SQL client over tonic, for tests that talk to the endpoint without ADBC.

use arrow_flight::sql::client::FlightSqlServiceClient;
use datafusion::arrow::array::RecordBatch;
use futures::TryStreamExt;
use tonic::transport::Channel;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A client of the Flight SQL endpoint at `url` (`http://host:port`).
pub async fn connect(url: &str) -> Result<FlightSqlServiceClient<Channel>> {
    let channel = tonic::transport::Endpoint::from_shared(url.to_string())?
        .connect()
        .await?;
    Ok(FlightSqlServiceClient::new(channel))
}

/// Every batch of the endpoints of `info`, fetched in order.
pub async fn fetch(
    client: &mut FlightSqlServiceClient<Channel>,
    info: arrow_flight::FlightInfo,
) -> Result<Vec<RecordBatch>> {
    let mut batches = Vec::new();
    for endpoint in info.endpoint {
        let ticket = endpoint.ticket.ok_or("endpoint without ticket")?;
        batches.extend(client.do_get(ticket).await?.try_collect::<Vec<_>>().await?);
    }
    Ok(batches)
}

/// Plans and fetches `sql` (GetFlightInfo, then DoGet); a refused statement is its status.
pub async fn query(
    client: &mut FlightSqlServiceClient<Channel>,
    sql: &str,
) -> std::result::Result<Vec<RecordBatch>, tonic::Status> {
    let info = client
        .execute(sql.to_string(), None)
        .await
        .map_err(|e| match e {
            arrow_flight::error::FlightError::Tonic(status) => *status,
            other => tonic::Status::unknown(other.to_string()),
        })?;
    fetch(client, info)
        .await
        .map_err(|e| tonic::Status::unknown(e.to_string()))
}
