//! What machine and kernel a run happened on: the metadata every result carries so that
//! results from different machines can be told apart and compared.

pub use model::results::{Frequency, Host};

/// The CPU frequency policy read under `cpu` (/sys/devices/system/cpu); None without
/// cpufreq.
pub fn frequency(cpu: &std::path::Path) -> Option<Frequency> {
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

/// A fresh run id (UUID v4 from the kernel).
pub fn new_run_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            format!("{:032x}", t ^ ((std::process::id() as u128) << 64))
        })
}

/// This machine, as a run document records it.
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
        frequency: frequency(std::path::Path::new("/sys/devices/system/cpu")),
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

/// Who sends a mail sigbench writes: `sigbench <LOGIN@HOST>`.
pub fn mail_from() -> String {
    let host = field(&crate::sys::os::uname().nodename);
    let clean = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric() || "._-".contains(*c))
            .collect()
    };
    let (user, host) = (clean(&login()), clean(&host));
    format!(
        "sigbench <{}@{}>",
        if user.is_empty() { "root" } else { &user },
        if host.is_empty() { "localhost" } else { &host }
    )
}

/// Refuse `dir` (`what` names it: `the cache`) when a user other than this one and root
/// could change what is in it: the directory, or one above it, owned by another user or
/// writable by group or others (a directory above it may be a sticky one such as /tmp,
/// where no one renames another's entries). sigbench runs, as root, what the cache holds —
/// kernels it built, the QEMU it unpacked — so a cache someone else can write is a way to
/// run code as root. A directory that does not exist yet is checked where it will be made.
pub fn private_dir(dir: &std::path::Path, what: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = crate::sys::os::geteuid();
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let existing = absolute
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(std::path::Path::new("/"));
    let real = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.to_path_buf());
    let whole = real == absolute || std::fs::canonicalize(&absolute).ok() == Some(real.clone());
    for (k, a) in real.ancestors().enumerate() {
        let Ok(m) = std::fs::metadata(a) else {
            continue;
        };
        let mode = m.mode() & 0o7777;
        let own = m.uid() == 0 || m.uid() == me;
        // Others may add entries to a sticky directory above, never rename or remove ours.
        let shared = mode & 0o022 != 0 && !(mode & 0o1000 != 0 && (k > 0 || !whole));
        if !own || shared {
            anyhow::bail!(
                "{what} {}: {} is {} (mode {mode:04o}, owner uid {}): another user could change what sigbench runs as root from it; give a directory only root can write (chown root, chmod go-w)",
                dir.display(),
                a.display(),
                if own {
                    "writable by other users"
                } else {
                    "owned by another user"
                },
                m.uid()
            );
        }
    }
    Ok(())
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
        let f = super::frequency(&d).unwrap();
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
        assert_eq!(super::frequency(&d), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn reads_this_host() {
        let h = super::current();
        assert!(!h.kernel_release.is_empty());
        assert!(h.cpus >= 1);
        assert!(h.mem_total_kib > 0);
    }
}
