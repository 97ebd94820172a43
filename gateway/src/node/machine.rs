//! How much memory this process may have: the machine's, or less if its container (cgroup)
//! is limited, as a Kubernetes pod's is. A node whose config sets no `memory_limit` takes
//! [`DEFAULT_MEMORY_SHARE`] of it, so that a query that would need more fails (or spills)
//! instead of the kernel killing the process.

/// The share of the memory a node's queries may use when its config sets no `memory_limit`:
/// the rest is for the process itself (buffers, pages, the result cache, the allocator).
pub(crate) const DEFAULT_MEMORY_SHARE: f64 = 0.7;

/// At or above this a cgroup v1 limit means "no limit" (the kernel's page-rounded i64::MAX).
const UNLIMITED_V1: u64 = 1 << 62;

/// The memory limit of a node that shares the process with `nodes - 1` others (`sqe local`):
/// its part of [`DEFAULT_MEMORY_SHARE`] of the memory; `None` where it cannot be read.
pub(crate) fn default_memory_limit(nodes: usize) -> Option<usize> {
    let memory = memory_bytes()?;
    let share = DEFAULT_MEMORY_SHARE / nodes.max(1) as f64;
    usize::try_from((memory as f64 * share) as u64).ok()
}

/// The memory this process may have, in bytes.
fn memory_bytes() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let total = read("/proc/meminfo").and_then(|text| mem_total(&text));
    let cgroup = read("/sys/fs/cgroup/memory.max")
        .or_else(|| read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
        .and_then(|text| cgroup_limit(&text));
    match (total, cgroup) {
        (Some(total), Some(limit)) => Some(total.min(limit)),
        (total, limit) => total.or(limit),
    }
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line.split_whitespace().skip(1);
    let amount: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => amount.checked_mul(1024),
        None => Some(amount),
        Some(_) => None,
    }
}

/// A cgroup's memory limit (v2 `memory.max`, v1 `memory.limit_in_bytes`); `None` when it
/// sets none.
fn cgroup_limit(text: &str) -> Option<u64> {
    let text = text.trim();
    if text == "max" {
        return None;
    }
    text.parse::<u64>()
        .ok()
        .filter(|&n| n > 0 && n < UNLIMITED_V1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machines_memory_and_its_containers_limit_are_read() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n";
        assert_eq!(mem_total(meminfo), Some(24_576_000 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(cgroup_limit("max\n"), None);
        assert_eq!(cgroup_limit("2147483648\n"), Some(2 << 30));
        // cgroup v1 says "no limit" with a number near i64::MAX.
        assert_eq!(cgroup_limit("9223372036854771712\n"), None);
        assert_eq!(cgroup_limit("garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn nodes_of_one_process_share_the_default() -> Result<(), &'static str> {
        let alone = default_memory_limit(1).ok_or("no memory size read on Linux")?;
        let third = default_memory_limit(3).ok_or("no memory size read on Linux")?;
        let memory = memory_bytes().ok_or("no memory size read on Linux")?;
        assert_eq!(alone as u64, (memory as f64 * DEFAULT_MEMORY_SHARE) as u64);
        assert!(third.abs_diff(alone / 3) <= 1, "{third} vs {}", alone / 3);
        Ok(())
    }
}
