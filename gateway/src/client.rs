//! `sqe sql`: run one statement against a coordinator over Flight SQL and print the result.

use arrow_flight::sql::client::FlightSqlServiceClient;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use futures::TryStreamExt;
use tonic::transport::Endpoint;

use crate::error::{GatewayError, Result};

/// Runs `sql` on the Flight SQL endpoint at `url` and returns the batches it produced.
pub async fn run_sql(url: &str, sql: &str) -> Result<Vec<RecordBatch>> {
    let channel = Endpoint::from_shared(url.to_string())
        .map_err(|e| GatewayError::Internal(format!("invalid coordinator URL {url}: {e}")))?
        .connect()
        .await
        .map_err(|e| {
            GatewayError::Internal(format!("cannot connect to the coordinator at {url}: {e}"))
        })?;
    let mut client = FlightSqlServiceClient::new(channel);
    let info = client
        .execute(sql.to_string(), None)
        .await
        .map_err(flight_error)?;
    let mut batches = Vec::new();
    for endpoint in info.endpoint {
        let ticket = endpoint.ticket.ok_or_else(|| {
            GatewayError::Internal("coordinator returned an endpoint without ticket".into())
        })?;
        let stream = client.do_get(ticket).await.map_err(flight_error)?;
        let mut part: Vec<RecordBatch> = stream.try_collect().await.map_err(flight_error)?;
        batches.append(&mut part);
    }
    Ok(batches)
}

/// Renders batches as a text table (an empty result prints its header).
pub fn format_table(batches: &[RecordBatch]) -> Result<String> {
    pretty_format_batches(batches)
        .map(|t| t.to_string())
        .map_err(|e| GatewayError::Internal(e.to_string()))
}

fn flight_error(err: arrow_flight::error::FlightError) -> GatewayError {
    match err {
        arrow_flight::error::FlightError::Tonic(status) => status_error(&status),
        other => GatewayError::Internal(other.to_string()),
    }
}

fn status_error(status: &tonic::Status) -> GatewayError {
    GatewayError::Remote {
        code: status.code(),
        message: status.message().to_string(),
    }
}
