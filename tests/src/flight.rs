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
    // With the client's credential and headers, as its own calls.
    let results: Vec<_> = client.do_action(action).await?.try_collect().await?;
    let body = &results
        .first()
        .ok_or("CancelFlightInfo answered nothing")?
        .body;
    let result = arrow_flight::CancelFlightInfoResult::decode(body.as_ref())?;
    Ok(arrow_flight::CancelStatus::try_from(result.status)?)
}

/// Every batch of the endpoints of `info`, fetched in order, each where it is located (as a
/// Flight client does: an endpoint without a location is the server's own), with the client's
/// credential.
pub async fn fetch(
    client: &mut FlightSqlServiceClient<Channel>,
    info: arrow_flight::FlightInfo,
) -> Result<Vec<RecordBatch>> {
    let mut batches = Vec::new();
    for endpoint in info.endpoint {
        let ticket = endpoint.ticket.ok_or("endpoint without ticket")?;
        match endpoint.location.first() {
            None => {
                batches.extend(client.do_get(ticket).await?.try_collect::<Vec<_>>().await?);
            }
            Some(location) => {
                let authorization = client.token().map(|t| format!("Bearer {t}"));
                let data = do_get_at(&location.uri, ticket, authorization.as_deref()).await?;
                batches.extend(data);
            }
        }
    }
    Ok(batches)
}

/// The URL a tonic channel dials for a Flight location (`grpc+tcp://host:port`).
pub fn location_url(location: &str) -> Result<String> {
    let (scheme, rest) = location
        .split_once("://")
        .ok_or_else(|| format!("not a Flight location: {location}"))?;
    let scheme = match scheme {
        "grpc" | "grpc+tcp" => "http",
        "grpc+tls" => "https",
        other => return Err(format!("unknown Flight location scheme {other}").into()),
    };
    Ok(format!("{scheme}://{rest}"))
}

/// The batches of `ticket` redeemed at `location`, with `authorization` when given.
pub async fn do_get_at(
    location: &str,
    ticket: arrow_flight::Ticket,
    authorization: Option<&str>,
) -> std::result::Result<Vec<RecordBatch>, tonic::Status> {
    let url = location_url(location).map_err(|e| tonic::Status::invalid_argument(e.to_string()))?;
    let channel = tonic::transport::Endpoint::from_shared(url)
        .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?
        .connect()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let mut client = arrow_flight::flight_service_client::FlightServiceClient::new(channel);
    let mut request = tonic::Request::new(ticket);
    if let Some(value) = authorization {
        let value = value
            .parse()
            .map_err(|_| tonic::Status::invalid_argument("authorization is not a header value"))?;
        request.metadata_mut().insert("authorization", value);
    }
    let data = client.do_get(request).await?.into_inner();
    let batches = arrow_flight::decode::FlightRecordBatchStream::new_from_flight_data(
        data.map_err(arrow_flight::error::FlightError::from),
    );
    batches.try_collect().await.map_err(|e| match e {
        arrow_flight::error::FlightError::Tonic(status) => *status,
        other => tonic::Status::unknown(other.to_string()),
    })
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
