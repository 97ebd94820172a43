//! Interactive results through a pager (`$SQE_PAGER`, `$PAGER`, or `less -FXRS`), started only
//! when the first byte of a result is written, so that short results and DML never spawn one.

use std::io::{self, IsTerminal, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The pager command to use, if any: `$SQE_PAGER`, else `$PAGER`, else `less -FXRS` when
/// `less` is installed (it quits at once when the result fits on the screen). Set empty, the
/// variables turn paging off.
pub(super) fn configured() -> Option<String> {
    for variable in ["SQE_PAGER", "PAGER"] {
        if let Some(command) = std::env::var_os(variable) {
            let command = command.to_string_lossy().trim().to_string();
            return (!command.is_empty()).then_some(command);
        }
    }
    on_path("less").then(|| "less -FXRS".to_string())
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Where a result goes: stdout, or a pager started on first write.
pub(super) struct Screen {
    pager: Option<String>,
    running: Option<(Child, ChildStdin)>,
    started: Arc<AtomicBool>,
    left: Arc<AtomicBool>,
    stdout: io::Stdout,
}

impl Screen {
    /// A result's destination; `pager` is used only when stdout is a terminal.
    pub(super) fn new(pager: Option<String>) -> Self {
        Self {
            pager: pager.filter(|_| io::stdout().is_terminal()),
            running: None,
            started: Arc::new(AtomicBool::new(false)),
            left: Arc::new(AtomicBool::new(false)),
            stdout: io::stdout(),
        }
    }

    /// Set once a pager owns the terminal (so nothing else should draw on it).
    pub(super) fn paging(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.started)
    }

    /// Set once the reader has gone (the pager quit early, stdout closed): writing more is
    /// pointless, and the error a writer makes of it is not the statement's failure.
    pub(super) fn left(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.left)
    }

    /// Ends the result: the pager reads the rest and the shell waits until it is left.
    pub(super) fn close(mut self) -> io::Result<()> {
        self.wait()
    }

    fn wait(&mut self) -> io::Result<()> {
        match self.running.take() {
            Some((mut child, stdin)) => {
                drop(stdin);
                tokio::task::block_in_place(|| child.wait()).map(|_| ())
            }
            None => self.flush(),
        }
    }

    /// `outcome` of a write, noting a reader who has gone.
    fn note_gone<T>(&self, outcome: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &outcome
            && e.kind() == io::ErrorKind::BrokenPipe
        {
            self.left.store(true, Ordering::Relaxed);
        }
        outcome
    }

    fn out(&mut self) -> io::Result<&mut dyn Write> {
        if self.running.is_none()
            && let Some(command) = self.pager.take()
        {
            match Command::new("sh")
                .args(["-c", &command])
                .stdin(Stdio::piped())
                .spawn()
            {
                Ok(mut child) => {
                    if let Some(stdin) = child.stdin.take() {
                        self.started.store(true, Ordering::Relaxed);
                        self.running = Some((child, stdin));
                    }
                }
                Err(e) => eprintln!("cannot start the pager `{command}`: {e}"),
            }
        }
        Ok(match &mut self.running {
            Some((_, stdin)) => stdin,
            None => &mut self.stdout,
        })
    }
}

impl Write for Screen {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.out()?.write(buf);
        self.note_gone(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        let flushed = match &mut self.running {
            Some((_, stdin)) => stdin.flush(),
            None => self.stdout.flush(),
        };
        self.note_gone(flushed)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        // A result that failed midway still hands the terminal back only when the pager ends.
        let _ = self.wait();
    }
}
