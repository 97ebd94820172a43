//! Reading a node's Prometheus `/metrics`.

use std::net::SocketAddr;

/// The text of `addr`'s `/metrics`.
pub async fn scrape(
    client: &reqwest::Client,
    addr: SocketAddr,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    Ok(client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await?
        .text()
        .await?)
}

/// The value of `series` (`name` or `name{labels}`, exactly as exposed) in `text`.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}
