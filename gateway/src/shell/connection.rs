//! The shell's Flight SQL connection: handshake, session, statements, cancellation.

use std::path::PathBuf;
use std::time::Duration;

use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::sql::{CommandStatementQuery, ProstMessageExt};
use arrow_flight::{
    Action, CancelFlightInfoRequest, CancelFlightInfoResult, CancelStatus, FlightDescriptor,
    FlightInfo, HandshakeRequest,
};
use base64::Engine as _;
use futures::{StreamExt, TryStreamExt};
use prost::Message;
use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use uuid::Uuid;

use super::error::{Result, ShellError};
use crate::flight::protocol::{
    CANCEL_FLIGHT_INFO, GET_SESSION_OPTIONS, GetSessionOptionsResult, QUERY_PROGRESS,
    SESSION_COOKIE, SET_SESSION_OPTIONS, SessionOptionValue, SetSessionOptionsRequest,
    SetSessionOptionsResult, parse_update_type, session_option_value::OptionValue,
};
use crate::flight::worker_results::PARALLEL_ENDPOINTS_HEADER;

/// Where the coordinator is and how to reach it.
#[derive(Clone, Debug)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub tls: Option<TlsOptions>,
}

#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// PEM CA certificate to trust besides the system's roots.
    pub ca_cert: Option<PathBuf>,
    /// Name to verify the server's certificate against, when it differs from `host`.
    pub domain: Option<String>,
}

impl Target {
    pub fn uri(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let host = if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{scheme}://{host}:{}", self.port)
    }
}

/// How the shell proves who it is.
#[derive(Clone, Debug)]
pub enum Credentials {
    None,
    /// HTTP Basic in the handshake, exchanged for a bearer token.
    Password {
        user: String,
        password: String,
    },
    /// A bearer token obtained elsewhere.
    Token(String),
}

/// What a statement returned.
pub enum StatementResult {
    /// Rows, streamed.
    Rows(FlightRecordBatchStream),
    /// A DDL or DML statement: its update type (e.g. `INSERT`) and its one-row result.
    Update {
        update_type: String,
        result: FlightRecordBatchStream,
    },
}

/// One connection to a coordinator, with its own Flight session.
#[derive(Clone)]
pub struct Connection {
    client: FlightServiceClient<Channel>,
    token: Option<String>,
    session: String,
}

impl Connection {
    pub async fn open(target: &Target, credentials: &Credentials) -> Result<Self> {
        let uri = target.uri();
        let mut endpoint = Endpoint::from_shared(uri.clone())
            .map_err(|e| ShellError::Connect(format!("invalid server address {uri}: {e}")))?
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true);
        if let Some(tls) = &target.tls {
            endpoint = endpoint
                .tls_config(tls_config(tls)?)
                .map_err(|e| ShellError::Connect(format!("TLS settings: {e}")))?;
        }
        let channel = endpoint.connect().await.map_err(|e| {
            ShellError::Connect(format!(
                "cannot connect to {uri}: {}",
                sqe_layers::error_chain(&e as &dyn std::error::Error)
            ))
        })?;
        let mut connection = Self {
            client: FlightServiceClient::new(channel)
                .max_decoding_message_size(usize::MAX)
                .max_encoding_message_size(usize::MAX),
            token: None,
            session: Uuid::new_v4().simple().to_string(),
        };
        match credentials {
            Credentials::None => {}
            Credentials::Token(token) => connection.token = Some(token.clone()),
            Credentials::Password { user, password } => {
                connection.token = Some(connection.handshake(user, password).await?);
            }
        }
        Ok(connection)
    }

    async fn handshake(&mut self, user: &str, password: &str) -> Result<String> {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let mut request = tonic::Request::new(futures::stream::iter([HandshakeRequest::default()]));
        request.metadata_mut().insert(
            "authorization",
            header_value(&format!("Basic {basic}"), "user name")?,
        );
        let response = self
            .client
            .handshake(request)
            .await
            .map_err(|s| status_error(&s))?;
        let token = response
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_string);
        let payload: Vec<_> = response
            .into_inner()
            .try_collect()
            .await
            .map_err(|s| status_error(&s))?;
        token
            .or_else(|| {
                payload
                    .first()
                    .and_then(|r| String::from_utf8(r.payload.to_vec()).ok())
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ShellError::Connect("the server returned no session token".into()))
    }

    /// Sends `message` with this connection's token and session cookie.
    fn request<T>(&self, message: T) -> Result<tonic::Request<T>> {
        let mut request = tonic::Request::new(message);
        let metadata = request.metadata_mut();
        if let Some(token) = &self.token {
            metadata.insert(
                "authorization",
                header_value(&format!("Bearer {token}"), "token")?,
            );
        }
        metadata.insert(
            "cookie",
            header_value(&format!("{SESSION_COOKIE}={}", self.session), "session")?,
        );
        // The shell reads results through the coordinator, the one address it was given
        // (workers may be out of its reach).
        metadata.insert(
            PARALLEL_ENDPOINTS_HEADER,
            header_value("false", "parallel endpoints")?,
        );
        Ok(request)
    }

    /// Plans `sql` on the coordinator. Its results are fetched by [`Self::fetch`].
    pub async fn plan(&mut self, sql: &str) -> Result<FlightInfo> {
        let command = CommandStatementQuery {
            query: sql.to_string(),
            transaction_id: None,
        };
        let descriptor = FlightDescriptor::new_cmd(command.as_any().encode_to_vec());
        let request = self.request(descriptor)?;
        Ok(self
            .client
            .get_flight_info(request)
            .await
            .map_err(|s| status_error(&s))?
            .into_inner())
    }

    /// Streams the results of a planned statement.
    pub async fn fetch(&mut self, info: &FlightInfo) -> Result<StatementResult> {
        let ticket = info
            .endpoint
            .first()
            .and_then(|e| e.ticket.clone())
            .ok_or_else(|| ShellError::Connect("the server returned no ticket".into()))?;
        if info.endpoint.len() > 1 {
            return Err(ShellError::Connect(
                "results in several endpoints are not supported by this shell".into(),
            ));
        }
        let request = self.request(ticket)?;
        let data = self
            .client
            .do_get(request)
            .await
            .map_err(|s| status_error(&s))?
            .into_inner()
            .map_err(FlightError::from);
        let stream = FlightRecordBatchStream::new_from_flight_data(data);
        Ok(match parse_update_type(&info.app_metadata) {
            Some(update_type) => StatementResult::Update {
                update_type: update_type.to_string(),
                result: stream,
            },
            None => StatementResult::Rows(stream),
        })
    }

    /// Runs a Flight action and returns its result stream.
    async fn action(
        &mut self,
        kind: &str,
        body: Vec<u8>,
    ) -> Result<tonic::Streaming<arrow_flight::Result>> {
        let request = self.request(Action::new(kind.to_string(), body))?;
        Ok(self
            .client
            .do_action(request)
            .await
            .map_err(|s| status_error(&s))?
            .into_inner())
    }

    /// Asks the coordinator to stop a running statement; whether it did.
    pub async fn cancel(&mut self, info: &FlightInfo) -> Result<bool> {
        let body = CancelFlightInfoRequest::new(info.clone()).encode_to_vec();
        let mut results = self.action(CANCEL_FLIGHT_INFO, body).await?;
        let Some(result) = results
            .next()
            .await
            .transpose()
            .map_err(|s| status_error(&s))?
        else {
            return Ok(false);
        };
        let result = CancelFlightInfoResult::decode(result.body)
            .map_err(|e| ShellError::Connect(format!("bad cancel result: {e}")))?;
        Ok(result.status() == CancelStatus::Cancelled)
    }

    /// How far a streaming statement has got, in percent; `None` while nothing is measured
    /// (planning, or a plan without distributed stages).
    pub async fn progress(&mut self, info: &FlightInfo) -> Result<Option<f64>> {
        let mut results = self.action(QUERY_PROGRESS, info.encode_to_vec()).await?;
        let Some(result) = results.try_next().await.map_err(|s| status_error(&s))? else {
            return Ok(None);
        };
        let progress: serde_json::Value = serde_json::from_slice(&result.body)
            .map_err(|e| ShellError::Connect(format!("bad progress result: {e}")))?;
        Ok(progress["progressPercentage"].as_f64())
    }

    /// The session's catalog and schema, as the server resolves unqualified names.
    pub async fn session_defaults(&mut self) -> Result<(Option<String>, Option<String>)> {
        let mut results = self.action(GET_SESSION_OPTIONS, Vec::new()).await?;
        let mut defaults = (None, None);
        while let Some(result) = results.try_next().await.map_err(|s| status_error(&s))? {
            let result = GetSessionOptionsResult::decode(result.body)
                .map_err(|e| ShellError::Connect(format!("bad session options: {e}")))?;
            let string = |name: &str| match result
                .session_options
                .get(name)
                .and_then(|v| v.option_value.as_ref())
            {
                Some(OptionValue::String(s)) => Some(s.clone()),
                _ => None,
            };
            defaults = (string("catalog"), string("schema"));
        }
        Ok(defaults)
    }

    /// The first column of a query's rows, as text (for names the shell completes).
    pub async fn strings(&mut self, sql: &str) -> Result<Vec<String>> {
        let info = self.plan(sql).await?;
        let StatementResult::Rows(mut stream) = self.fetch(&info).await? else {
            return Ok(Vec::new());
        };
        let mut strings = Vec::new();
        while let Some(batch) = stream.next().await {
            let batch = batch.map_err(flight_error)?;
            if batch.num_columns() == 0 {
                continue;
            }
            let column = arrow::compute::cast(batch.column(0), &arrow::datatypes::DataType::Utf8)
                .map_err(|e| ShellError::Format(e.to_string()))?;
            if let Some(column) = column.as_any().downcast_ref::<arrow::array::StringArray>() {
                strings.extend(column.iter().flatten().map(str::to_string));
            }
        }
        Ok(strings)
    }

    /// Sets the session's catalog and/or schema.
    pub async fn set_session(&mut self, catalog: Option<&str>, schema: Option<&str>) -> Result<()> {
        let string = |s: &str| SessionOptionValue {
            option_value: Some(OptionValue::String(s.to_string())),
        };
        let mut options = SetSessionOptionsRequest::default();
        if let Some(catalog) = catalog {
            options
                .session_options
                .insert("catalog".into(), string(catalog));
        }
        if let Some(schema) = schema {
            options
                .session_options
                .insert("schema".into(), string(schema));
        }
        let mut results = self
            .action(SET_SESSION_OPTIONS, options.encode_to_vec())
            .await?;
        while let Some(result) = results.try_next().await.map_err(|s| status_error(&s))? {
            let result = SetSessionOptionsResult::decode(result.body)
                .map_err(|e| ShellError::Connect(format!("bad session result: {e}")))?;
            if let Some(name) = result.errors.keys().next() {
                return Err(ShellError::Refused(format!(
                    "the server refused session option {name}"
                )));
            }
        }
        Ok(())
    }
}

fn tls_config(tls: &TlsOptions) -> Result<ClientTlsConfig> {
    let mut config = ClientTlsConfig::new().with_native_roots();
    if let Some(path) = &tls.ca_cert {
        let pem = std::fs::read(path).map_err(|e| {
            ShellError::Connect(format!(
                "cannot read CA certificate {}: {e}",
                path.display()
            ))
        })?;
        config = config.ca_certificate(Certificate::from_pem(pem));
    }
    if let Some(domain) = &tls.domain {
        config = config.domain_name(domain.clone());
    }
    Ok(config)
}

fn header_value(value: &str, what: &str) -> Result<MetadataValue<tonic::metadata::Ascii>> {
    MetadataValue::try_from(value)
        .map_err(|_| ShellError::Connect(format!("the {what} is not a valid header value")))
}

/// A server's error as the gateway's, keeping its gRPC code, its error name and location.
pub fn status_error(status: &tonic::Status) -> ShellError {
    let metadata = |key| {
        status
            .metadata()
            .get(key)
            .and_then(|value| value.to_str().ok())
    };
    ShellError::Remote {
        code: status.code(),
        name: metadata(sqe_engine::error::ERROR_NAME_KEY).map(str::to_string),
        location: metadata(sqe_engine::error::ERROR_LOCATION_KEY).and_then(|at| at.parse().ok()),
        message: if status.message().is_empty() {
            status.code().description().to_string()
        } else {
            status.message().to_string()
        },
    }
}

/// A stream error, keeping the server's gRPC code when it has one.
pub fn flight_error(error: FlightError) -> ShellError {
    match error {
        FlightError::Tonic(status) => status_error(&status),
        other => ShellError::Connect(other.to_string()),
    }
}
