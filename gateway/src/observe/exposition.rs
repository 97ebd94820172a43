//! Prometheus' text exposition format (version 0.0.4), written by hand: a few families of
//! counters, gauges and histograms need no client library.

use sqe_engine::history::Histogram;
use std::fmt::Write;

/// The text of one scrape.
#[derive(Debug, Default)]
pub(crate) struct Exposition {
    out: String,
}

/// `name{labels} value` lines need label values escaped as the format says.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

impl Exposition {
    /// Starts a family: its `# HELP` and `# TYPE` lines.
    pub(crate) fn family(&mut self, name: &str, kind: &str, help: &str) -> &mut Self {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        self
    }

    /// One sample of the family just started.
    pub(crate) fn sample(&mut self, name: &str, pairs: &[(&str, &str)], value: f64) -> &mut Self {
        let _ = writeln!(self.out, "{name}{} {value}", labels(pairs));
        self
    }

    /// A family with one unlabelled sample.
    pub(crate) fn single(&mut self, name: &str, kind: &str, help: &str, value: f64) -> &mut Self {
        self.family(name, kind, help).sample(name, &[], value)
    }

    /// Families of one unlabelled sample each: `(name, kind, help, value)`.
    pub(crate) fn singles(&mut self, rows: &[(&str, &str, &str, f64)]) -> &mut Self {
        for (name, kind, help, value) in rows {
            self.single(name, kind, help, *value);
        }
        self
    }

    /// One labelled series of a histogram family already started.
    pub(crate) fn histogram(&mut self, name: &str, pairs: &[(&str, &str)], histogram: &Histogram) {
        let mut cumulative = 0;
        for (bound, count) in histogram.buckets() {
            cumulative += count;
            let le = bound.to_string();
            let mut with_le = pairs.to_vec();
            with_le.push(("le", &le));
            self.sample(&format!("{name}_bucket"), &with_le, cumulative as f64);
        }
        let count = histogram.count();
        let mut with_le = pairs.to_vec();
        with_le.push(("le", "+Inf"));
        self.sample(&format!("{name}_bucket"), &with_le, count as f64);
        let sum = histogram.sum_seconds();
        self.sample(&format!("{name}_sum"), pairs, sum);
        self.sample(&format!("{name}_count"), pairs, count as f64);
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_samples_and_histograms_render_in_the_text_format() {
        let histogram = Histogram::new(&[0.1, 1.0]);
        histogram.observe(0.05);
        histogram.observe(0.5);
        histogram.observe(5.0);
        let mut text = Exposition::default();
        text.family("sqe_queries_total", "counter", "Queries by state.")
            .sample("sqe_queries_total", &[("state", "FINISHED")], 3.0)
            .sample("sqe_queries_total", &[("state", "a\"b\\c\nd")], 1.0);
        text.family("sqe_query_duration_seconds", "histogram", "Latency.");
        text.histogram(
            "sqe_query_duration_seconds",
            &[("endpoint", "trino")],
            &histogram,
        );
        text.single("sqe_up", "gauge", "Up.", 1.0);
        let expected = "\
# HELP sqe_queries_total Queries by state.
# TYPE sqe_queries_total counter
sqe_queries_total{state=\"FINISHED\"} 3
sqe_queries_total{state=\"a\\\"b\\\\c\\nd\"} 1
# HELP sqe_query_duration_seconds Latency.
# TYPE sqe_query_duration_seconds histogram
sqe_query_duration_seconds_bucket{endpoint=\"trino\",le=\"0.1\"} 1
sqe_query_duration_seconds_bucket{endpoint=\"trino\",le=\"1\"} 2
sqe_query_duration_seconds_bucket{endpoint=\"trino\",le=\"+Inf\"} 3
sqe_query_duration_seconds_sum{endpoint=\"trino\"} 5.55
sqe_query_duration_seconds_count{endpoint=\"trino\"} 3
# HELP sqe_up Up.
# TYPE sqe_up gauge
sqe_up 1
";
        assert_eq!(text.finish(), expected);
    }
}
