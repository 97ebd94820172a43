//! `sqe shell`: an interactive SQL shell (and one-shot runner) over Arrow Flight SQL.
//!
//! It speaks only the public Flight SQL protocol, so it works against `sqe local` and any
//! remote coordinator: line editing and history, results written as they stream (aligned
//! table, CSV or JSON lines), a progress line on stderr, Ctrl-C cancelling the running
//! statement on the server, and `USE [catalog.]schema` setting the session's defaults.

pub mod connection;
mod error;

pub use error::ShellError;
pub mod input;
pub mod output;
pub mod progress;

use std::io::{BufWriter, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use arrow::array::{Array, UInt64Array};
use arrow_flight::decode::FlightRecordBatchStream;
use futures::StreamExt;

use connection::{Connection, Credentials, StatementResult, Target, TlsOptions, flight_error};
use error::Result;
use input::{ShellCommand, is_blank, shell_command, split_statements};
use output::{OutputFormat, ResultWriter};
use progress::{Progress, human_bytes, thousands};

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
            eprintln!("{}", describe(&e));
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
                    eprintln!("{}", describe(&e));
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
            .map(|b| b.auto_add_history(false).build());
        let editor = config.and_then(rustyline::DefaultEditor::with_config);
        let mut editor = match editor {
            Ok(editor) => editor,
            Err(e) => {
                eprintln!("cannot start line editing: {e}");
                return ExitCode::FAILURE;
            }
        };
        let history = history_file.or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".sqe_history"))
        });
        if let Some(path) = &history {
            // No history yet is normal.
            let _ = editor.load_history(path);
        }
        eprintln!(
            "SQE shell: end statements with ';', `help` for help, `quit` or Ctrl-D to leave."
        );
        let mut buffer = String::new();
        loop {
            let prompt = if buffer.is_empty() {
                format!(
                    "sqe:{}> ",
                    self.schema
                        .as_deref()
                        .unwrap_or(sqe_engine::catalog::DEFAULT_SCHEMA)
                )
            } else {
                "     -> ".to_string()
            };
            let line = tokio::task::block_in_place(|| editor.readline(&prompt));
            let line = match line {
                Ok(line) => line,
                Err(rustyline::error::ReadlineError::Interrupted) => {
                    buffer.clear();
                    continue;
                }
                Err(rustyline::error::ReadlineError::Eof) => break,
                Err(e) => {
                    eprintln!("cannot read input: {e}");
                    break;
                }
            };
            if buffer.is_empty()
                && let Some(command @ (ShellCommand::Quit | ShellCommand::Help)) =
                    shell_command(&line)
            {
                let _ = editor.add_history_entry(line.trim());
                if command == ShellCommand::Quit {
                    break;
                }
                print_help();
                continue;
            }
            buffer.push_str(&line);
            buffer.push('\n');
            let (statements, rest) = split_statements(&buffer);
            if statements.is_empty() {
                if is_blank(&buffer) {
                    buffer.clear();
                }
                continue;
            }
            let _ = editor.add_history_entry(buffer.trim());
            buffer = if is_blank(&rest) { String::new() } else { rest };
            let mut quit = false;
            for statement in statements {
                match self.run_statement(&statement).await {
                    Ok(Next::Continue) => {}
                    Ok(Next::Quit) => quit = true,
                    Err(e) => eprintln!("{}", describe(&e)),
                }
            }
            if quit {
                break;
            }
        }
        if let Some(path) = &history
            && let Err(e) = editor.save_history(path)
        {
            eprintln!("cannot save history to {}: {e}", path.display());
        }
        ExitCode::SUCCESS
    }

    async fn run_statement(&mut self, sql: &str) -> Result<Next> {
        match shell_command(sql) {
            Some(ShellCommand::Quit) => return Ok(Next::Quit),
            Some(ShellCommand::Help) => {
                print_help();
                return Ok(Next::Continue);
            }
            Some(ShellCommand::Use { catalog, schema }) => {
                self.connection
                    .set_session(catalog.as_deref(), Some(&schema))
                    .await?;
                if catalog.is_some() {
                    self.catalog = catalog;
                }
                self.schema = Some(schema);
                if self.interactive {
                    eprintln!("USE");
                }
                return Ok(Next::Continue);
            }
            None => {}
        }
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
        let outcome = tokio::select! {
            outcome = self.stream_results(&info, &mut progress, &mut ticker) => outcome,
            _ = &mut ctrl_c => Err(ShellError::Cancelled),
        };
        progress.clear();
        if matches!(outcome, Err(ShellError::Cancelled)) {
            // The server stops the statement on every worker; the shell goes on either way.
            let _ = self.connection.cancel(&info).await;
        }
        outcome?;
        Ok(Next::Continue)
    }

    /// Fetches and writes the results of a planned statement.
    async fn stream_results(
        &mut self,
        info: &arrow_flight::FlightInfo,
        progress: &mut Progress,
        ticker: &mut tokio::time::Interval,
    ) -> Result<()> {
        let mut fetcher = self.connection.clone();
        let fetch = fetcher.fetch(info);
        tokio::pin!(fetch);
        let result = loop {
            tokio::select! {
                result = &mut fetch => break result?,
                _ = ticker.tick() => progress.tick("RUNNING"),
            }
        };
        match result {
            StatementResult::Update {
                update_type,
                result,
            } => {
                let rows = updated_rows(result).await?;
                progress.clear();
                match rows {
                    Some(rows) => eprintln!("{update_type}: {} rows", thousands(rows)),
                    None => eprintln!("{update_type}"),
                }
                Ok(())
            }
            StatementResult::Rows(mut stream) => {
                let mut writer = ResultWriter::new(self.format, BufWriter::new(std::io::stdout()));
                loop {
                    tokio::select! {
                        batch = stream.next() => match batch {
                            None => break,
                            Some(batch) => {
                                let batch = batch.map_err(flight_error)?;
                                progress.add(batch.num_rows(), batch.get_array_memory_size());
                                progress.clear();
                                writer.write(&batch)?;
                            }
                        },
                        _ = ticker.tick() => progress.tick("RUNNING"),
                    }
                }
                progress.clear();
                let schema = stream
                    .schema()
                    .cloned()
                    .unwrap_or_else(|| std::sync::Arc::new(arrow::datatypes::Schema::empty()));
                writer.finish(&schema)?;
                if self.interactive {
                    eprintln!(
                        "({} rows, {}, {:.2}s)",
                        thousands(progress.rows()),
                        human_bytes(progress.bytes()),
                        progress.elapsed().as_secs_f64()
                    );
                }
                Ok(())
            }
        }
    }
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

/// How an error is shown: the server's gRPC code helps tell a typo from an outage.
pub fn describe(error: &ShellError) -> String {
    match error {
        ShellError::Remote { code, message } => format!("Query failed ({code:?}): {message}"),
        ShellError::Cancelled => "Query cancelled".to_string(),
        other => format!("Error: {other}"),
    }
}

fn exit_code(error: &ShellError) -> ExitCode {
    match error {
        // As shells report an interrupted command.
        ShellError::Cancelled => ExitCode::from(130),
        // Output closed early (`sqe shell -e ... | head`) is not a failure of the statement.
        ShellError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

fn print_help() {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "Statements end with ';' and may span lines. Ctrl-C cancels a running statement \
         (or clears the line), Ctrl-D or `quit` leaves.\n\
         Shell commands:\n  \
         USE schema | USE catalog.schema   set the default for unqualified names\n  \
         help                               this text\n  \
         quit | exit                        leave\n\
         Catalog metadata: SHOW TABLES, SHOW COLUMNS FROM t, information_schema.*"
    );
}
