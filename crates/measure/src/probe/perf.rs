//! Counting tracepoint hits with perf_event_open: one counting (not sampling) event per
//! CPU, system-wide, optionally filtered. Enabled right before the window, disabled right
//! after; nothing runs in between and nothing has to be waited for.

use anyhow::{Result, bail};
use perf_event_open_sys as sys;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsFd;

pub struct TracepointCounter {
    fds: Vec<File>,
}

/// CPUs in /sys/devices/system/cpu/online.
pub fn online_cpus() -> Vec<i32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let cpus = parse_cpu_list(&text);
    if cpus.is_empty() { vec![0] } else { cpus }
}

/// Parse a kernel CPU list such as `0-3,6`.
fn parse_cpu_list(text: &str) -> Vec<i32> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i32>(), b.parse::<i32>()) {
                    cpus.extend(a..=b);
                }
            }
            None => cpus.extend(part.parse::<i32>().ok()),
        }
    }
    cpus
}

impl TracepointCounter {
    /// Open a disabled counter for tracepoint `id` on every online CPU. `filter` is an
    /// ftrace filter expression (`dev == 7340032`).
    pub fn open(id: u64, filter: Option<&str>) -> Result<TracepointCounter> {
        let mut fds = Vec::new();
        for cpu in online_cpus() {
            let mut attr = sys::bindings::perf_event_attr {
                type_: sys::bindings::PERF_TYPE_TRACEPOINT,
                size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
                config: id,
                ..Default::default()
            };
            attr.set_disabled(1);
            let fd = crate::sys::os::perf_event_open(&mut attr, cpu)
                .map_err(|e| anyhow::anyhow!("perf_event_open on CPU {cpu}: {e}"))?;
            if let Some(f) = filter {
                let c = std::ffi::CString::new(f)?;
                if let Err(e) = crate::sys::os::perf_set_filter(fd.as_fd(), &c) {
                    bail!("the kernel rejected filter `{f}`: {e}");
                }
            }
            fds.push(File::from(fd));
        }
        Ok(TracepointCounter { fds })
    }

    pub fn enable(&self) {
        for fd in &self.fds {
            crate::sys::os::perf_reset_enable(fd.as_fd());
        }
    }

    pub fn disable(&self) {
        for fd in &self.fds {
            crate::sys::os::perf_disable(fd.as_fd());
        }
    }

    /// Total count over all CPUs.
    pub fn read(&self) -> Result<u64> {
        let mut total = 0;
        for fd in &self.fds {
            let mut v = [0u8; 8];
            (&*fd)
                .read_exact(&mut v)
                .map_err(|e| anyhow::anyhow!("reading a perf counter: {e}"))?;
            total += u64::from_ne_bytes(v);
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_cpu_lists() {
        assert_eq!(super::parse_cpu_list("0-3,6\n"), [0, 1, 2, 3, 6]);
        assert_eq!(super::parse_cpu_list("0\n"), [0]);
        assert!(super::parse_cpu_list("").is_empty());
    }
}
