//! Single-process DataFusion (the version SQE is built on, no SQE code on the read path) over
//! the Parquet data files of an SQE warehouse's tables: the baseline `tpch.py` and `tpcds.py`
//! time beside SQE and DuckDB in the same run.
//!
//! It reads one JSON object per line on stdin, `{"sql": "..."}`, runs the query, and answers one
//! line on stdout: `{"seconds": <time>, "rows": <count>}`, or `{"error": "..."}`; with
//! `"explain": true`, `{"plan": "..."}`, the physical plan it runs (to set beside SQE's). The caller
//! warms, repeats and alternates (one process, so DataFusion's caches stay warm between runs).
//!
//!     datafusion_queries --warehouse sqe-data/warehouse --schema tpch
//!
//! Every directory `<warehouse>/<schema>/<table>/data` is registered as the table `<table>`:
//! right for tables written once and never deleted from, such as generated benchmark data.

// Benchmark code: the lock and spawn bans are for the code that ships.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use datafusion::prelude::{ParquetReadOptions, SessionContext};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn argument(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

async fn session(warehouse: &Path, schema: &str) -> Result<SessionContext, BoxError> {
    let ctx = SessionContext::new();
    let root = warehouse.join(schema);
    let mut tables = 0;
    for entry in std::fs::read_dir(&root)? {
        let dir: PathBuf = entry?.path();
        let data = dir.join("data");
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !data.is_dir() {
            continue;
        }
        let path = format!("{}/", data.display());
        ctx.register_parquet(name, &path, ParquetReadOptions::default())
            .await?;
        tables += 1;
    }
    if tables == 0 {
        return Err(format!("no tables under {}", root.display()).into());
    }
    Ok(ctx)
}

async fn run(ctx: &SessionContext, sql: &str) -> Result<usize, BoxError> {
    let batches = ctx.sql(sql).await?.collect().await?;
    Ok(batches.iter().map(|b| b.num_rows()).sum())
}

async fn plan(ctx: &SessionContext, sql: &str) -> Result<String, BoxError> {
    let df = ctx.sql(sql).await?;
    let physical = df.create_physical_plan().await?;
    Ok(datafusion::physical_plan::displayable(physical.as_ref())
        .indent(false)
        .to_string())
}

async fn answer(ctx: &SessionContext, request: &str) -> serde_json::Value {
    let request: serde_json::Value = match serde_json::from_str(request) {
        Ok(r) => r,
        Err(e) => return serde_json::json!({ "error": format!("not a request: {e}") }),
    };
    let Some(sql) = request.get("sql").and_then(|s| s.as_str()) else {
        return serde_json::json!({ "error": "a request has \"sql\"" });
    };
    if request.get("explain").and_then(|e| e.as_bool()) == Some(true) {
        return match plan(ctx, sql).await {
            Ok(plan) => serde_json::json!({ "plan": plan }),
            Err(e) => serde_json::json!({ "error": e.to_string() }),
        };
    }
    let started = Instant::now();
    match run(ctx, sql).await {
        Ok(rows) => {
            serde_json::json!({ "seconds": started.elapsed().as_secs_f64(), "rows": rows })
        }
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    }
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(warehouse), Some(schema)) =
        (argument(&args, "--warehouse"), argument(&args, "--schema"))
    else {
        eprintln!("usage: datafusion_queries --warehouse <dir> --schema <schema>");
        std::process::exit(2);
    };
    let ctx = session(Path::new(&warehouse), &schema).await?;
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = answer(&ctx, &line).await;
        writeln!(stdout, "{reply}")?;
        stdout.flush()?;
    }
    Ok(())
}
