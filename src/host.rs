//! What machine and kernel a run happened on: the metadata every result carries so that
//! results from different machines can be told apart and compared.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Host {
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`: build number and date, distinguishes rebuilds of one release.
    pub kernel_version: String,
    pub kernel_cmdline: String,
    pub arch: String,
    pub cpu_model: String,
    pub cpus: usize,
    pub mem_total_kib: u64,
    /// The run happened in an emulated machine (QEMU TCG): times are not the hardware's,
    /// counts are exact.
    #[serde(default)]
    pub emulated: bool,
    /// `qemu-tcg` or `qemu-kvm` when the run happened in a guest booted by `run --kernel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator: Option<String>,
    /// For a guest: what its times count (`crate::clock`); absent on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<crate::clock::Clock>,
    /// For a guest: the identity (short hash) of the kernel image it booted, so results of
    /// two images with one release are told apart (`bisect --resume`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_image: Option<String>,
}

fn field(c: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = c
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Host {
    /// What this machine's times count: runs compare their times only within one base.
    pub fn timebase(&self) -> crate::clock::TimeBase {
        crate::clock::TimeBase::of(self.clock.as_ref(), self.emulated)
    }

    pub fn current() -> Host {
        let u = crate::sys::os::uname();
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "model name").then(|| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let mem_total_kib = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        Host {
            hostname: field(&u.nodename),
            kernel_release: field(&u.release),
            kernel_version: field(&u.version),
            kernel_cmdline: read("/proc/cmdline").trim().to_string(),
            arch: field(&u.machine),
            cpu_model,
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            mem_total_kib,
            emulated: false,
            accelerator: None,
            clock: None,
            kernel_image: None,
        }
    }
}

/// Current UTC time as RFC 3339 (`2026-11-22T19:24:00Z`), without a date library.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        // `date -u -d @1795375440 +%FT%TZ`
        assert_eq!(super::rfc3339(1_795_375_440), "2026-11-22T19:24:00Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn reads_this_host() {
        let h = super::Host::current();
        assert!(!h.kernel_release.is_empty());
        assert!(h.cpus >= 1);
        assert!(h.mem_total_kib > 0);
    }
}
