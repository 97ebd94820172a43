//! The line on stderr that shows a running statement's time, rows and bytes.

use std::io::Write;
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// Cells of the progress bar.
const BAR_WIDTH: usize = 20;

/// Redraws at most this often.
const REDRAW: Duration = Duration::from_millis(100);

pub struct Progress {
    enabled: bool,
    wanted: bool,
    started: Instant,
    rows: u64,
    bytes: u64,
    last_draw: Option<Instant>,
    shown: bool,
    /// The server's latest percentage for the statement, once it measures one.
    percentage: Option<f64>,
    /// Where the server's percentages arrive, while a statement streams.
    percentages: Option<watch::Receiver<Option<f64>>>,
}

impl Progress {
    /// A progress line; `enabled` is false when stderr is not a terminal or it was turned off.
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            wanted: enabled,
            started: Instant::now(),
            rows: 0,
            bytes: 0,
            last_draw: None,
            shown: false,
            percentage: None,
            percentages: None,
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn add(&mut self, rows: usize, bytes: usize) {
        self.rows += rows as u64;
        self.bytes += bytes as u64;
    }

    /// The server's latest progress; it never goes back on the line.
    pub fn set_percentage(&mut self, percentage: f64) {
        let percentage = percentage.clamp(0.0, 100.0);
        self.percentage = Some(self.percentage.map_or(percentage, |p| p.max(percentage)));
    }

    /// Shows the percentages that arrive on `percentages` from now on.
    pub fn follow(&mut self, percentages: watch::Receiver<Option<f64>>) {
        self.percentages = Some(percentages);
    }

    /// Redraws the line if it is due.
    pub fn tick(&mut self, state: &str) {
        if let Some(p) = self
            .percentages
            .as_mut()
            .and_then(|percentages| *percentages.borrow_and_update())
        {
            self.set_percentage(p);
        }
        if !self.enabled || self.last_draw.is_some_and(|t| t.elapsed() < REDRAW) {
            return;
        }
        self.last_draw = Some(Instant::now());
        let line = self.line(state);
        let mut err = std::io::stderr().lock();
        // A progress line that cannot be drawn is not worth failing the statement for.
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.shown = true;
    }

    /// Erases the line and draws it no more (a pager owns the terminal).
    pub fn disable(&mut self) {
        self.clear();
        self.enabled = false;
    }

    /// Draws the line again, if it was wanted (the pager has left the terminal).
    pub fn resume(&mut self) {
        self.enabled = self.wanted;
    }

    /// Erases the line, before results or messages are written.
    pub fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.shown = false;
            self.last_draw = None;
        }
    }

    pub fn line(&self, state: &str) -> String {
        let seconds = self.elapsed().as_secs_f64();
        let rate = if seconds > 0.0 {
            self.rows as f64 / seconds
        } else {
            0.0
        };
        let bar = self.percentage.map(bar).unwrap_or_default();
        format!(
            "{state} {bar}{seconds:.1}s  {} rows  {}  ({} rows/s)",
            thousands(self.rows),
            human_bytes(self.bytes),
            thousands(rate as u64),
        )
    }
}

/// `[=====>        ] 42% `: a bar of [`BAR_WIDTH`] cells for `percentage`.
fn bar(percentage: f64) -> String {
    let filled = ((percentage / 100.0) * BAR_WIDTH as f64).floor() as usize;
    let filled = filled.min(BAR_WIDTH);
    let head = if filled < BAR_WIDTH { ">" } else { "" };
    let rest = BAR_WIDTH - filled - head.len();
    format!(
        "[{}{head}{}] {:>3.0}%  ",
        "=".repeat(filled),
        " ".repeat(rest),
        percentage.floor()
    )
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in binary units with one decimal.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_counts_and_sizes() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 * 1024 * 1024 * 1024), "3.0 GiB");
    }

    #[test]
    fn the_line_counts_what_arrived() {
        let mut progress = Progress::new(false);
        progress.add(1_500, 2048);
        progress.add(500, 0);
        let line = progress.line("RUNNING");
        assert!(line.starts_with("RUNNING "), "{line}");
        assert!(line.contains("2,000 rows  2.0 KiB"), "{line}");
    }

    #[test]
    fn the_bar_shows_the_servers_percentage_and_never_goes_back() {
        let mut progress = Progress::new(false);
        assert!(
            !progress.line("RUNNING").contains('%'),
            "nothing measured yet"
        );
        progress.set_percentage(42.5);
        let line = progress.line("RUNNING");
        assert!(
            line.starts_with("RUNNING [========>           ]  42%"),
            "{line}"
        );
        progress.set_percentage(10.0);
        assert!(progress.line("RUNNING").contains(" 42%"));
        progress.set_percentage(100.0);
        let line = progress.line("RUNNING");
        assert!(line.contains("[====================] 100%"), "{line}");
    }
}
