//! Counting tracepoint hits with perf_event_open: one counting (not sampling) event per
//! CPU, system-wide, optionally filtered. Enabled right before the window, disabled right
//! after; nothing runs in between and nothing has to be waited for.

use anyhow::{Result, bail};
use perf_event_open_sys as sys;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub struct TracepointCounter {
    fds: Vec<OwnedFd>,
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
            let fd = unsafe {
                sys::perf_event_open(
                    &mut attr,
                    -1,
                    cpu,
                    -1,
                    sys::bindings::PERF_FLAG_FD_CLOEXEC as _,
                )
            };
            if fd < 0 {
                bail!(
                    "perf_event_open on CPU {cpu}: {}",
                    std::io::Error::last_os_error()
                );
            }
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            if let Some(f) = filter {
                let c = std::ffi::CString::new(f)?;
                let r = unsafe { sys::ioctls::SET_FILTER(fd.as_raw_fd(), c.as_ptr() as *mut _) };
                if r < 0 {
                    bail!(
                        "the kernel rejected filter `{f}`: {}",
                        std::io::Error::last_os_error()
                    );
                }
            }
            fds.push(fd);
        }
        Ok(TracepointCounter { fds })
    }

    pub fn enable(&self) {
        for fd in &self.fds {
            unsafe {
                sys::ioctls::RESET(fd.as_raw_fd(), 0);
                sys::ioctls::ENABLE(fd.as_raw_fd(), 0);
            }
        }
    }

    pub fn disable(&self) {
        for fd in &self.fds {
            unsafe { sys::ioctls::DISABLE(fd.as_raw_fd(), 0) };
        }
    }

    /// Total count over all CPUs.
    pub fn read(&self) -> Result<u64> {
        let mut total = 0;
        for fd in &self.fds {
            let mut v = 0u64;
            let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
            if n != 8 {
                bail!(
                    "reading a perf counter: {}",
                    std::io::Error::last_os_error()
                );
            }
            total += v;
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
