//! The real `sqe` binary, run as separate processes.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `sqe` binary next to this test binary (`cargo build --bin sqe` puts it there), or
/// `SQE_BIN` when set.
pub fn sqe_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("SQE_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/<test binary> -> target/<profile>/sqe
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    let bin = dir.join("sqe");
    assert!(
        bin.exists(),
        "{} does not exist: build it first with `cargo build --bin sqe` (scripts/test.sh does)",
        bin.display()
    );
    bin
}

/// A port on 127.0.0.1 free right now (another process may still take it before it is used).
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A running `sqe` process; killed when dropped. Its stderr goes to a log file for diagnosis.
pub struct SqeProcess {
    pub name: String,
    child: Child,
    pub log: PathBuf,
}

impl SqeProcess {
    pub fn spawn(
        name: &str,
        args: &[&str],
        cwd: &Path,
        env: &[(&str, &str)],
    ) -> std::io::Result<Self> {
        let log = cwd.join(format!("{name}.log"));
        let stderr = std::fs::File::create(&log)?;
        let mut command = Command::new(sqe_binary());
        command
            .args(args)
            .current_dir(cwd)
            .stdout(Stdio::null())
            .stderr(stderr)
            .env("SQE_LOG", "info");
        for (k, v) in env {
            command.env(k, v);
        }
        Ok(Self {
            name: name.to_string(),
            child: command.spawn()?,
            log,
        })
    }

    /// Waits until `addr` accepts connections, or the process exits, or `timeout` passes.
    pub fn wait_for_port(&mut self, addr: SocketAddr, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "{} exited with {status}: {}",
                    self.name,
                    self.log_text()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!(
            "{} did not listen on {addr} within {timeout:?}: {}",
            self.name,
            self.log_text()
        ))
    }

    /// Resident memory of the process now, in bytes (`VmRSS` of `/proc/<pid>/status`).
    pub fn resident_bytes(&self) -> std::io::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .ok_or_else(|| std::io::Error::other("no VmRSS in /proc/<pid>/status"))
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the process to exit; returns whether it exited cleanly.
    pub fn terminate(&mut self, timeout: Duration) -> bool {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// SIGTERM, and an error with the process's log unless it exits cleanly within 20 s.
    pub fn stop_cleanly(mut self) -> Result<(), String> {
        if self.terminate(Duration::from_secs(20)) {
            Ok(())
        } else {
            Err(format!(
                "{} did not stop cleanly: {}",
                self.name,
                self.log_text()
            ))
        }
    }
}

/// `sqe local` in `dir` on free ports, once its Flight SQL port listens.
pub struct LocalProcess {
    pub process: SqeProcess,
    pub flight_sql_port: u16,
    pub trino_port: u16,
}

impl LocalProcess {
    /// Starts `sqe local` with its data in `dir/data`, `workers` workers and TPC-H at
    /// `scale_factor`.
    pub fn start(dir: &Path, workers: u32, scale_factor: &str) -> Result<Self, String> {
        let error = |e: std::io::Error| e.to_string();
        let (flight_sql_port, trino_port) =
            (free_port().map_err(error)?, free_port().map_err(error)?);
        let data = dir.join("data").display().to_string();
        let (flight, trino, workers) = (
            flight_sql_port.to_string(),
            trino_port.to_string(),
            workers.to_string(),
        );
        let args = [
            "local",
            "--data-dir",
            &data,
            "--workers",
            &workers,
            "--scale-factor",
            scale_factor,
            "--flight-sql-port",
            &flight,
            "--trino-http-port",
            &trino,
        ];
        let mut process = SqeProcess::spawn("local", &args, dir, &[]).map_err(error)?;
        process.wait_for_port(
            SocketAddr::from(([127, 0, 0, 1], flight_sql_port)),
            Duration::from_secs(60),
        )?;
        Ok(Self {
            process,
            flight_sql_port,
            trino_port,
        })
    }
}

impl Drop for SqeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `sqe` to completion (for one-shot commands such as `sqe sql`).
pub fn run_sqe(args: &[&str], cwd: &Path) -> std::io::Result<Output> {
    Command::new(sqe_binary())
        .args(args)
        .current_dir(cwd)
        .output()
}

/// Runs `sqe shell <options> -e <statement>`: what it printed (results on stdout, DDL/DML
/// reports on stderr), or an error with both when it failed.
pub fn shell(cwd: &Path, options: &[&str], statement: &str) -> Result<String, String> {
    let mut args = vec!["shell"];
    args.extend_from_slice(options);
    args.extend(["-e", statement]);
    let output = run_sqe(&args, cwd).map_err(|e| e.to_string())?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() {
        Ok(text)
    } else {
        Err(format!("`{statement}` failed: {text}"))
    }
}
