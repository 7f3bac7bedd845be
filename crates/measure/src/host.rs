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
    /// How the CPUs' clock speed was governed (cpufreq), which reference 001 pins to
    /// `performance` before measuring; absent where the OS does not set it (a VM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency: Option<Frequency>,
}

/// The CPU frequency policy of a machine, from /sys/devices/system/cpu.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Frequency {
    /// The cpufreq driver (`intel_pstate`, `acpi-cpufreq`, …).
    pub driver: String,
    /// Each governor in use and on how many CPUs (`performance`, `powersave`, …).
    pub governors: Vec<(String, u32)>,
    /// Whether the CPUs may boost above their base clock (turbo), where the driver says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turbo: Option<bool>,
}

impl Frequency {
    /// Read under `cpu` (/sys/devices/system/cpu); None without cpufreq.
    pub fn read(cpu: &std::path::Path) -> Option<Frequency> {
        let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok();
        let mut governors: Vec<(String, u32)> = Vec::new();
        let mut driver = None;
        let mut entries: Vec<_> = std::fs::read_dir(cpu).ok()?.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name
                .strip_prefix("cpu")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                continue;
            }
            let Some(g) = read(e.path().join("cpufreq/scaling_governor")) else {
                continue;
            };
            driver = driver.or_else(|| read(e.path().join("cpufreq/scaling_driver")));
            let g = g.trim().to_string();
            match governors.iter_mut().find(|(x, _)| *x == g) {
                Some(x) => x.1 += 1,
                None => governors.push((g, 1)),
            }
        }
        if governors.is_empty() {
            return None;
        }
        let flag = |p: &str| read(cpu.join(p)).map(|t| t.trim() == "1");
        let turbo = flag("intel_pstate/no_turbo")
            .map(|no| !no)
            .or_else(|| flag("cpufreq/boost"));
        Some(Frequency {
            driver: driver.map_or_else(|| "unknown".into(), |d| d.trim().to_string()),
            governors,
            turbo,
        })
    }

    /// What to say when not every CPU runs the `performance` governor (None: all do).
    pub fn warning(&self) -> Option<String> {
        let others: Vec<String> = self
            .governors
            .iter()
            .filter(|(g, _)| g != "performance")
            .map(|(g, n)| format!("`{g}` on {n} CPU{}", if *n == 1 { "" } else { "s" }))
            .collect();
        (!others.is_empty()).then(|| {
            format!(
                "the CPU frequency governor is {}: times move with the clock speed it picks (reference 001 measured with `performance`: echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
                others.join(", ")
            )
        })
    }
}

fn field(c: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = c
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// This machine's memory (MemTotal), in KiB; 0 when /proc/meminfo does not say.
pub fn mem_total_kib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
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
        let mem_total_kib = mem_total_kib();
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
            frequency: Frequency::read(std::path::Path::new("/sys/devices/system/cpu")),
        }
    }
}

/// Who is at the keyboard, as a triage note records it: the login behind `sudo`
/// (`SUDO_USER`), else `USER`, else the name /etc/passwd gives this process's uid, else
/// `uid N`.
pub fn login() -> String {
    for var in ["SUDO_USER", "USER", "LOGNAME"] {
        if let Ok(v) = std::env::var(var) {
            let v = v.trim();
            if !v.is_empty() && v.len() <= 64 && !v.chars().any(char::is_control) {
                return v.to_string();
            }
        }
    }
    use std::os::unix::fs::MetadataExt;
    let Ok(uid) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return "unknown".into();
    };
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|p| {
            p.lines().find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() > 2 && f[2] == uid.to_string()).then(|| f[0].to_string())
            })
        })
        .unwrap_or_else(|| format!("uid {uid}"))
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
    fn reads_governors_and_turbo_and_warns_unless_performance() {
        let d = std::env::temp_dir().join(format!("sigbench-freq-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for (cpu, g) in [
            ("cpu0", "powersave"),
            ("cpu1", "performance"),
            ("cpu2", "powersave"),
        ] {
            std::fs::create_dir_all(d.join(cpu).join("cpufreq")).unwrap();
            std::fs::write(
                d.join(cpu).join("cpufreq/scaling_governor"),
                format!("{g}\n"),
            )
            .unwrap();
            std::fs::write(d.join(cpu).join("cpufreq/scaling_driver"), "intel_pstate\n").unwrap();
        }
        std::fs::create_dir_all(d.join("cpuidle")).unwrap();
        std::fs::create_dir_all(d.join("intel_pstate")).unwrap();
        std::fs::write(d.join("intel_pstate/no_turbo"), "0\n").unwrap();
        let f = super::Frequency::read(&d).unwrap();
        assert_eq!(f.driver, "intel_pstate");
        assert_eq!(
            f.governors,
            [("powersave".to_string(), 2), ("performance".to_string(), 1)]
        );
        assert_eq!(f.turbo, Some(true));
        let w = f.warning().unwrap();
        assert!(
            w.starts_with("the CPU frequency governor is `powersave` on 2 CPUs"),
            "{w}"
        );
        let all = super::Frequency {
            governors: vec![("performance".into(), 3)],
            ..f
        };
        assert_eq!(all.warning(), None);
        // No cpufreq at all (a VM): nothing to report.
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::create_dir_all(d.join("cpu0")).unwrap();
        assert_eq!(super::Frequency::read(&d), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

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
