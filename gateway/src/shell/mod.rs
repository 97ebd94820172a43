//! `sqe shell`: an interactive SQL shell (and one-shot runner) over Arrow Flight SQL.
//!
//! It speaks only the public Flight SQL protocol, so it works against `sqe local` and any
//! remote coordinator: line editing with history, Tab completion of keywords and the server's
//! names, colours, statements checked as they are entered, results written as they stream
//! (aligned table, vertical, CSV or JSON lines) through a pager when interactive, a row limit
//! for interactive results, a progress line on stderr, Ctrl-C cancelling the running statement
//! on the server, psql-style backslash commands and `USE [catalog.]schema`.

mod commands;
pub mod completion;
pub mod connection;
mod editor;
mod error;
mod highlight;
pub mod input;
pub mod output;
mod pager;
pub mod progress;

pub use error::ShellError;

use std::io::{BufWriter, IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use arrow::array::{Array, UInt64Array};
use arrow_flight::decode::FlightRecordBatchStream;
use futures::StreamExt;

use commands::{HELP, ShellCommand, shell_command};
use completion::{Defaults, ServerNames};
use connection::{Connection, Credentials, StatementResult, Target, TlsOptions, flight_error};
use editor::SqlHelper;
use error::Result;
use input::{is_blank, split_statements};
use output::{OutputFormat, ResultWriter};
use pager::Screen;
use progress::{Progress, human_bytes, thousands};

/// How often the progress line asks the server how far the statement has got.
const PROGRESS_POLL: Duration = Duration::from_millis(500);

/// Connection and output options of `sqe shell`.
#[derive(clap::Args, Debug, Clone)]
pub struct ShellArgs {
    /// Coordinator host.
    #[arg(long, default_value = "127.0.0.1", env = "SQE_HOST")]
    pub host: String,
    /// Coordinator Flight SQL port.
    #[arg(long, default_value_t = 50051, env = "SQE_PORT")]
    pub port: u16,
    /// User name; with client authentication on, also give a password.
    #[arg(long, env = "SQE_USER")]
    pub user: Option<String>,
    /// Password of --user (prefer SQE_PASSWORD: arguments are visible to other local users).
    #[arg(long, env = "SQE_PASSWORD", hide_env_values = true, requires = "user")]
    pub password: Option<String>,
    /// A bearer token instead of user and password.
    #[arg(long, env = "SQE_TOKEN", hide_env_values = true, conflicts_with_all = ["user", "password"])]
    pub token: Option<String>,
    /// Connect with TLS (the system's root certificates are trusted).
    #[arg(long)]
    pub tls: bool,
    /// Also trust this PEM CA certificate (implies --tls).
    #[arg(long, value_name = "PEM")]
    pub tls_ca_cert: Option<PathBuf>,
    /// Verify the server certificate for this name instead of --host (implies --tls).
    #[arg(long, value_name = "NAME")]
    pub tls_domain: Option<String>,
    /// Catalog of unqualified names.
    #[arg(long)]
    pub catalog: Option<String>,
    /// Schema of unqualified names.
    #[arg(long)]
    pub schema: Option<String>,
    /// Run these statements (separated by `;`) and exit; stops at the first failure.
    #[arg(short = 'e', long, value_name = "SQL", conflicts_with = "file")]
    pub execute: Option<String>,
    /// Run the statements in this file and exit; stops at the first failure.
    #[arg(short = 'f', long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// How results are written to stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub output_format: OutputFormat,
    /// Rows an interactive result shows before the rest is only counted; 0 shows all.
    /// Results of -e, -f and piped input are never cut.
    #[arg(long, default_value_t = 1000)]
    pub max_rows: u64,
    /// Send statements without checking them first (Enter otherwise keeps a statement this
    /// shell's parser rejects in the editor; a newer server may read more).
    #[arg(long)]
    pub no_validate: bool,
    /// Never draw the progress line (it is drawn only when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// Where interactive history is kept [default: ~/.sqe_history].
    #[arg(long, env = "SQE_HISTORY_FILE")]
    pub history_file: Option<PathBuf>,
}

impl ShellArgs {
    fn target(&self) -> Target {
        let tls = self.tls || self.tls_ca_cert.is_some() || self.tls_domain.is_some();
        Target {
            host: self.host.clone(),
            port: self.port,
            tls: tls.then(|| TlsOptions {
                ca_cert: self.tls_ca_cert.clone(),
                domain: self.tls_domain.clone(),
            }),
        }
    }

    fn credentials(&self) -> Credentials {
        match (&self.token, &self.user) {
            (Some(token), _) => Credentials::Token(token.clone()),
            (None, Some(user)) => Credentials::Password {
                user: user.clone(),
                password: self.password.clone().unwrap_or_default(),
            },
            (None, None) => Credentials::None,
        }
    }
}

/// Runs the shell: the statements of `-e`/`-f`/piped stdin, or an interactive session.
pub async fn run(args: ShellArgs) -> ExitCode {
    let mut shell = match Shell::connect(&args).await {
        Ok(shell) => shell,
        Err(e) => {
            eprintln!("{}", describe(&e, None));
            return ExitCode::FAILURE;
        }
    };
    let script = if let Some(sql) = &args.execute {
        Some(Ok(sql.clone()))
    } else if let Some(path) = &args.file {
        Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display())),
        )
    } else if !std::io::stdin().is_terminal() {
        let mut text = String::new();
        Some(
            std::io::stdin()
                .read_to_string(&mut text)
                .map(|_| text)
                .map_err(|e| format!("cannot read stdin: {e}")),
        )
    } else {
        None
    };
    match script {
        Some(Ok(text)) => shell.run_script(&text).await,
        Some(Err(message)) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
        None => shell.run_interactive(args.history_file.clone()).await,
    }
}

/// What comes after a statement.
enum Next {
    Continue,
    Quit,
}

pub struct Shell {
    connection: Connection,
    format: OutputFormat,
    progress: bool,
    interactive: bool,
    /// Whether the line after a result shows its size and time (`\timing`).
    timing: bool,
    max_rows: u64,
    validate: bool,
    catalog: Option<String>,
    schema: Option<String>,
}

impl Shell {
    pub async fn connect(args: &ShellArgs) -> Result<Self> {
        let mut connection = Connection::open(&args.target(), &args.credentials()).await?;
        if args.catalog.is_some() || args.schema.is_some() {
            connection
                .set_session(args.catalog.as_deref(), args.schema.as_deref())
                .await?;
        }
        Ok(Self {
            connection,
            format: args.output_format,
            progress: !args.no_progress && std::io::stderr().is_terminal(),
            interactive: false,
            timing: true,
            max_rows: args.max_rows,
            validate: !args.no_validate,
            catalog: args.catalog.clone(),
            schema: args.schema.clone(),
        })
    }

    /// Runs every statement of `text` in order; the first failure stops it.
    pub async fn run_script(&mut self, text: &str) -> ExitCode {
        let (mut statements, rest) = split_statements(text);
        if !is_blank(&rest) {
            statements.push(rest.trim().to_string());
        }
        for statement in statements {
            match self.run_statement(&statement).await {
                Ok(Next::Continue) => {}
                Ok(Next::Quit) => break,
                Err(e) => {
                    eprintln!("{}", describe(&e, as_sql(&statement)));
                    return exit_code(&e);
                }
            }
        }
        ExitCode::SUCCESS
    }

    /// Reads statements from the terminal until `quit` or end of input.
    pub async fn run_interactive(&mut self, history_file: Option<PathBuf>) -> ExitCode {
        self.interactive = true;
        let config = rustyline::Config::builder()
            .max_history_size(10_000)
            .map(|b| {
                b.auto_add_history(false)
                    .completion_type(rustyline::CompletionType::List)
                    .build()
            });
        let editor = config.and_then(
            rustyline::Editor::<SqlHelper, rustyline::history::DefaultHistory>::with_config,
        );
        let mut editor = match editor {
            Ok(editor) => editor,
            Err(e) => {
                eprintln!("cannot start line editing: {e}");
                return ExitCode::FAILURE;
            }
        };
        // What unqualified names mean, for completion; the server's defaults fill the gaps.
        let (catalog, schema) = self.connection.session_defaults().await.unwrap_or_default();
        self.catalog = self.catalog.take().or(catalog);
        self.schema = self.schema.take().or(schema);
        editor.set_helper(Some(SqlHelper {
            names: ServerNames::new(self.connection.clone(), tokio::runtime::Handle::current()),
            defaults: self.defaults(),
            validate: self.validate,
            colour: std::env::var_os("NO_COLOR").is_none()
                && std::env::var("TERM").is_ok_and(|term| term != "dumb"),
        }));
        let history = history_file.or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".sqe_history"))
        });
        if let Some(path) = &history {
            // No history yet is normal.
            let _ = editor.load_history(path);
        }
        eprintln!(
            "SQE shell: end statements with ';', Tab completes, `help` for help, `quit` or \
             Ctrl-D to leave."
        );
        loop {
            let prompt = format!(
                "sqe:{}> ",
                self.schema
                    .as_deref()
                    .unwrap_or(sqe_engine::catalog::DEFAULT_SCHEMA)
            );
            // The editor asks for more lines itself until the statement is complete.
            let input = tokio::task::block_in_place(|| editor.readline(&prompt));
            let input = match input {
                Ok(input) => input,
                Err(rustyline::error::ReadlineError::Interrupted) => continue,
                Err(rustyline::error::ReadlineError::Eof) => break,
                Err(e) => {
                    eprintln!("cannot read input: {e}");
                    break;
                }
            };
            if is_blank(&input) {
                continue;
            }
            let _ = editor.add_history_entry(input.trim());
            let (mut statements, rest) = split_statements(&input);
            if !is_blank(&rest) {
                // A shell command needs no `;`.
                statements.push(rest.trim().to_string());
            }
            let mut quit = false;
            for statement in statements {
                match self.run_statement(&statement).await {
                    Ok(Next::Continue) => {}
                    Ok(Next::Quit) => quit = true,
                    Err(e) => eprintln!("{}", describe(&e, as_sql(&statement))),
                }
            }
            if quit {
                break;
            }
            if let Some(helper) = editor.helper_mut() {
                // The statements may have created, dropped or moved names.
                helper.names.forget();
                helper.defaults = self.defaults();
            }
        }
        if let Some(path) = &history
            && let Err(e) = editor.save_history(path)
        {
            eprintln!("cannot save history to {}: {e}", path.display());
        }
        ExitCode::SUCCESS
    }

    fn defaults(&self) -> Defaults {
        Defaults {
            catalog: self.catalog.clone().unwrap_or_default(),
            schema: self
                .schema
                .clone()
                .unwrap_or_else(|| sqe_engine::catalog::DEFAULT_SCHEMA.to_string()),
        }
    }

    async fn run_statement(&mut self, sql: &str) -> Result<Next> {
        let Some(command) = shell_command(sql) else {
            self.run_sql(sql).await?;
            return Ok(Next::Continue);
        };
        let say = |message: String| {
            if self.interactive {
                eprintln!("{message}");
            }
        };
        let on = |on: bool| if on { "on" } else { "off" };
        match command {
            ShellCommand::Quit => return Ok(Next::Quit),
            ShellCommand::Help => eprintln!("{HELP}"),
            ShellCommand::Use { catalog, schema } => {
                self.connection
                    .set_session(catalog.as_deref(), Some(&schema))
                    .await?;
                if catalog.is_some() {
                    self.catalog = catalog;
                }
                self.schema = Some(schema);
                say("USE".into());
            }
            ShellCommand::Sql(sql) => self.run_sql(&sql).await?,
            ShellCommand::Timing(switch) => {
                self.timing = switch.unwrap_or(!self.timing);
                say(format!("Timing is {}.", on(self.timing)));
            }
            ShellCommand::Expanded(switch) => {
                let vertical = switch.unwrap_or(self.format != OutputFormat::Vertical);
                self.format = if vertical {
                    OutputFormat::Vertical
                } else {
                    OutputFormat::Table
                };
                say(format!("Expanded display is {}.", on(vertical)));
            }
            ShellCommand::Format(format) => {
                self.format = format;
                say(format!("Output format is {format:?}."));
            }
            ShellCommand::MaxRows(rows) => {
                self.max_rows = rows;
                say(match rows {
                    0 => "Results show all their rows.".to_string(),
                    n => format!("Results show at most {} rows.", thousands(n)),
                });
            }
            ShellCommand::Invalid(message) => return Err(ShellError::Command(message)),
        }
        Ok(Next::Continue)
    }

    async fn run_sql(&mut self, sql: &str) -> Result<()> {
        let mut progress = Progress::new(self.progress);
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);

        let mut planner = self.connection.clone();
        let plan = planner.plan(sql);
        tokio::pin!(plan);
        let info = loop {
            tokio::select! {
                info = &mut plan => break info,
                _ = ticker.tick() => progress.tick("PLANNING"),
                _ = &mut ctrl_c => {
                    // Dropping the request ends the planning RPC.
                    progress.clear();
                    return Err(ShellError::Cancelled);
                }
            }
        };
        let info = match info {
            Ok(info) => info,
            Err(e) => {
                progress.clear();
                return Err(e);
            }
        };
        let outcome = self
            .stream_results(&info, &mut progress, &mut ticker, &mut ctrl_c)
            .await;
        progress.clear();
        // Ctrl-C, counting stopped, or the reader left (`q` in the pager, `| head`): the server
        // stops the statement on every worker; the shell goes on either way.
        if matches!(outcome, Ok(Streamed::Stopped) | Err(ShellError::Cancelled)) {
            let _ = self.connection.cancel(&info).await;
        }
        outcome.map(|_| ())
    }

    /// The server's progress of a streaming statement, asked for every [`PROGRESS_POLL`] in
    /// a task of its own that ends with the receiver. Only when the line is drawn.
    fn watch_progress(
        &self,
        info: &arrow_flight::FlightInfo,
    ) -> tokio::sync::watch::Receiver<Option<f64>> {
        let (sender, receiver) = tokio::sync::watch::channel(None);
        if !self.progress {
            return receiver;
        }
        let mut connection = self.connection.clone();
        let info = info.clone();
        sqe_layers::task::spawn(async move {
            loop {
                tokio::select! {
                    _ = sender.closed() => return,
                    _ = tokio::time::sleep(PROGRESS_POLL) => {}
                }
                // Not streaming yet or any more, or a server without progress: the line goes
                // on without, until the statement ends.
                if let Ok(Some(p)) = connection.progress(&info).await
                    && sender.send(Some(p)).is_err()
                {
                    return;
                }
            }
        });
        receiver
    }

    /// Fetches and writes the results of a planned statement.
    async fn stream_results(
        &mut self,
        info: &arrow_flight::FlightInfo,
        progress: &mut Progress,
        ticker: &mut tokio::time::Interval,
        ctrl_c: &mut std::pin::Pin<&mut impl std::future::Future<Output = std::io::Result<()>>>,
    ) -> Result<Streamed> {
        let mut fetcher = self.connection.clone();
        let fetch = fetcher.fetch(info);
        tokio::pin!(fetch);
        progress.follow(self.watch_progress(info));
        let result = loop {
            tokio::select! {
                result = &mut fetch => break result?,
                _ = ticker.tick() => progress.tick("RUNNING"),
                _ = &mut *ctrl_c => return Err(ShellError::Cancelled),
            }
        };
        let mut stream = match result {
            StatementResult::Update {
                update_type,
                result,
            } => {
                let rows = tokio::select! {
                    rows = updated_rows(result) => rows?,
                    _ = &mut *ctrl_c => return Err(ShellError::Cancelled),
                };
                progress.clear();
                match rows {
                    Some(rows) => eprintln!("{update_type}: {} rows", thousands(rows)),
                    None => eprintln!("{update_type}"),
                }
                return Ok(Streamed::Whole);
            }
            StatementResult::Rows(stream) => stream,
        };
        let screen = Screen::new(if self.interactive {
            pager::configured()
        } else {
            None
        });
        let (paging, left) = (screen.paging(), screen.left());
        let mut writer = Some(ResultWriter::new(self.format, BufWriter::new(screen)));
        // Only a person reading a terminal gets a cut result; a redirect gets all of it.
        let limit = (self.interactive && self.max_rows > 0 && std::io::stdout().is_terminal())
            .then_some(self.max_rows);
        let mut shown: u64 = 0;
        let mut counting_stopped = false;
        loop {
            let counting = limit.is_some_and(|limit| shown >= limit);
            tokio::select! {
                batch = stream.next() => match batch {
                    None => break,
                    Some(batch) => {
                        let batch = batch.map_err(flight_error)?;
                        progress.add(batch.num_rows(), batch.get_array_memory_size());
                        let room = limit.map_or(u64::MAX, |limit| limit - shown);
                        let take = room.min(batch.num_rows() as u64);
                        if let Some(out) = writer.as_mut().filter(|_| take > 0) {
                            progress.clear();
                            let slice = batch.slice(0, take as usize);
                            let written = tokio::task::block_in_place(|| out.write(&slice));
                            if left.load(std::sync::atomic::Ordering::Relaxed) {
                                return Ok(Streamed::Stopped);
                            }
                            written?;
                            shown += take;
                            if paging.load(std::sync::atomic::Ordering::Relaxed) {
                                progress.disable();
                            }
                        }
                        if limit.is_some_and(|limit| shown >= limit)
                            && let Some(out) = writer.take()
                        {
                            // The rows shown are shown now (and the pager left) while the
                            // rest is counted.
                            if close_output(out, &batch.schema(), &left)? {
                                return Ok(Streamed::Stopped);
                            }
                            progress.resume();
                        }
                    }
                },
                _ = ticker.tick() => progress.tick(if counting { "COUNTING" } else { "RUNNING" }),
                // Past the limit Ctrl-C only stops the counting; the rows shown stay.
                _ = &mut *ctrl_c => {
                    if !counting {
                        return Err(ShellError::Cancelled);
                    }
                    counting_stopped = true;
                    break;
                }
            }
        }
        progress.clear();
        if let Some(out) = writer.take() {
            let schema = stream
                .schema()
                .cloned()
                .unwrap_or_else(|| std::sync::Arc::new(arrow::datatypes::Schema::empty()));
            if close_output(out, &schema, &left)? {
                return Ok(Streamed::Stopped);
            }
        }
        if self.interactive {
            let total = progress.rows();
            let rows = if counting_stopped {
                format!(
                    "{} rows shown, at least {} in all: counting stopped",
                    thousands(shown),
                    thousands(total)
                )
            } else if total > shown {
                format!(
                    "{} of {} rows shown; \\maxrows 0 shows all",
                    thousands(shown),
                    thousands(total)
                )
            } else {
                format!("{} rows", thousands(total))
            };
            let timing = if self.timing {
                format!(
                    ", {}, {:.2}s",
                    human_bytes(progress.bytes()),
                    progress.elapsed().as_secs_f64()
                )
            } else {
                String::new()
            };
            eprintln!("({rows}{timing})");
        }
        Ok(if counting_stopped {
            Streamed::Stopped
        } else {
            Streamed::Whole
        })
    }
}

/// Ends a result's output: what is held back is written and the pager waited for. Whether
/// the reader left before the end (the pager quit, or stdout closed).
fn close_output(
    writer: ResultWriter<BufWriter<Screen>>,
    schema: &arrow::datatypes::SchemaRef,
    left: &std::sync::atomic::AtomicBool,
) -> Result<bool> {
    let closed = tokio::task::block_in_place(|| {
        let out = writer.finish(schema)?;
        let screen = out
            .into_inner()
            .map_err(|e| ShellError::Output(e.into_error()))?;
        screen.close().map_err(ShellError::Output)
    });
    match closed {
        _ if left.load(std::sync::atomic::Ordering::Relaxed) => Ok(true),
        Ok(()) => Ok(false),
        Err(e) => Err(e),
    }
}

/// How a result's stream ended.
enum Streamed {
    /// It was read to its end.
    Whole,
    /// The shell stopped reading it: the server should stop the statement.
    Stopped,
}

/// The row count of a DML result (`rows` column); DDL has none.
async fn updated_rows(mut result: FlightRecordBatchStream) -> Result<Option<u64>> {
    let mut rows = None;
    while let Some(batch) = result.next().await {
        let batch = batch.map_err(flight_error)?;
        if let Some(column) = batch
            .column_by_name("rows")
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            && !column.is_empty()
        {
            rows = Some(column.value(0));
        }
    }
    Ok(rows)
}

/// How an error is shown: the server's error name (or gRPC code) tells a typo from an outage,
/// and an error with a position points at it under the statement's line.
pub fn describe(error: &ShellError, statement: Option<&str>) -> String {
    match error {
        ShellError::Remote {
            code,
            name,
            location,
            message,
        } => {
            let kind = name.clone().unwrap_or_else(|| format!("{code:?}"));
            let mut text = format!("Query failed ({kind}): {message}");
            if let (Some(at), Some(statement)) = (location, statement) {
                text.push('\n');
                text.push_str(&caret(statement, *at));
            }
            text
        }
        ShellError::Cancelled => "Query cancelled".to_string(),
        other => format!("Error: {other}"),
    }
}

/// The statement as the server read it, for pointing at an error's position: a shell command
/// was sent as other text (`\d t` as `SHOW COLUMNS FROM t`), so there is nothing to point at.
fn as_sql(statement: &str) -> Option<&str> {
    shell_command(statement).is_none().then_some(statement)
}

/// The statement's lines up to `at`, and a caret under its column (tabs kept, so that it lines
/// up however wide they are drawn).
fn caret(statement: &str, at: sqe_engine::error::Location) -> String {
    let line = usize::try_from(at.line.max(1)).unwrap_or(usize::MAX);
    let lines: Vec<&str> = statement.lines().take(line).collect();
    let mut text = lines.join("\n");
    let pointed = lines.get(line - 1).copied().unwrap_or("");
    let column = usize::try_from(at.column.max(1)).unwrap_or(usize::MAX) - 1;
    text.push('\n');
    text.extend(
        pointed
            .chars()
            .take(column)
            .map(|c| if c == '\t' { '\t' } else { ' ' }),
    );
    text.push('^');
    text
}

fn exit_code(error: &ShellError) -> ExitCode {
    match error {
        // As shells report an interrupted command.
        ShellError::Cancelled => ExitCode::from(130),
        _ => ExitCode::FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_with_a_position_points_at_it() {
        let error = ShellError::Remote {
            code: tonic::Code::InvalidArgument,
            name: Some("SYNTAX_ERROR".into()),
            location: Some(sqe_engine::error::Location { line: 2, column: 3 }),
            message: "mismatched input".into(),
        };
        assert_eq!(
            describe(&error, Some("SELECT 1,\n\tx FORM t\nLIMIT 1")),
            "Query failed (SYNTAX_ERROR): mismatched input\nSELECT 1,\n\tx FORM t\n\t ^"
        );
        let unnamed = ShellError::Remote {
            code: tonic::Code::Unavailable,
            name: None,
            location: None,
            message: "down".into(),
        };
        assert_eq!(describe(&unnamed, None), "Query failed (Unavailable): down");
    }
}
