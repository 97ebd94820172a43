//! A Flight SQL client over tonic, for tests that talk to the endpoint without ADBC.

use arrow_flight::sql::client::FlightSqlServiceClient;
use arrow_flight::sql::{CommandStatementQuery, ProstMessageExt};
use datafusion::arrow::array::RecordBatch;
use futures::TryStreamExt;
use prost::Message;
use tonic::transport::Channel;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A client of the Flight SQL endpoint at `url` (`http://host:port`).
pub async fn connect(url: &str) -> Result<FlightSqlServiceClient<Channel>> {
    let channel = tonic::transport::Endpoint::from_shared(url.to_string())?
        .connect()
        .await?;
    Ok(FlightSqlServiceClient::new(channel))
}

/// The descriptor of statement `sql`, for GetFlightInfo, PollFlightInfo or GetSchema.
pub fn statement_descriptor(sql: &str) -> arrow_flight::FlightDescriptor {
    let command = CommandStatementQuery {
        query: sql.to_string(),
        transaction_id: None,
    };
    arrow_flight::FlightDescriptor::new_cmd(command.as_any().encode_to_vec())
}

/// Asks the endpoint to cancel the statement `info` describes (`CancelFlightInfo`): its answer.
pub async fn cancel(
    client: &mut FlightSqlServiceClient<Channel>,
    info: arrow_flight::FlightInfo,
) -> Result<arrow_flight::CancelStatus> {
    let request = arrow_flight::CancelFlightInfoRequest { info: Some(info) };
    let action = arrow_flight::Action::new("CancelFlightInfo", request.encode_to_vec());
    let results: Vec<_> = client
        .inner_mut()
        .do_action(action)
        .await?
        .into_inner()
        .try_collect()
        .await?;
    let body = &results
        .first()
        .ok_or("CancelFlightInfo answered nothing")?
        .body;
    let result = arrow_flight::CancelFlightInfoResult::decode(body.as_ref())?;
    Ok(arrow_flight::CancelStatus::try_from(result.status)?)
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
