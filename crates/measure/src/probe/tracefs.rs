//! tracefs: where tracepoints are described (`events/SUBSYS/NAME/{id,format}`) and where
//! kprobe events are created (`kprobe_events`).

use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};

const CANONICAL: &str = "/sys/kernel/tracing";
const LEGACY: &str = "/sys/kernel/debug/tracing";

/// A mounted tracefs.
#[derive(Clone, Debug)]
pub struct Tracefs {
    pub root: PathBuf,
}

/// A tracepoint as tracefs describes it.
#[derive(Clone, Debug)]
pub struct Event {
    pub id: u64,
    /// Whether the event carries a `dev_t dev` field, so it can be filtered to one device.
    pub has_dev: bool,
}

impl Tracefs {
    /// Find tracefs; mount it at /sys/kernel/tracing if nothing is mounted there (the
    /// place the kernel documents and systemd uses, so this leaves the machine as a normal
    /// boot would). `Err` says why tracing is unavailable.
    pub fn find_or_mount() -> Result<Tracefs> {
        if let Some(t) = Tracefs::find() {
            return Ok(t);
        }
        if !Path::new(CANONICAL).is_dir() {
            bail!("{CANONICAL} does not exist (kernel built without tracefs?)");
        }
        let r = crate::sys::os::mount(c"tracefs", c"/sys/kernel/tracing", c"tracefs", 0, None);
        if let Err(err) = r {
            // Another process (a second sigbench, systemd) may have mounted it meanwhile:
            // the kernel then refuses ours with EBUSY, and theirs is as good.
            if let Some(t) = Tracefs::find() {
                return Ok(t);
            }
            bail!("cannot mount tracefs at {CANONICAL}: {err}");
        }
        model::diag::warn(format!("mounted tracefs at {CANONICAL}"));
        Tracefs::find().context("tracefs mounted but has no events directory")
    }

    /// Find an already-mounted tracefs without changing anything.
    pub fn find() -> Option<Tracefs> {
        [CANONICAL, LEGACY]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.join("events").is_dir())
            .map(|root| Tracefs { root })
    }

    pub fn event(&self, subsys: &str, name: &str) -> Option<Event> {
        let dir = self.root.join("events").join(subsys).join(name);
        let id = std::fs::read_to_string(dir.join("id"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let format = std::fs::read_to_string(dir.join("format")).unwrap_or_default();
        let has_dev = format.lines().any(|l| l.contains("field:dev_t dev;"));
        Some(Event { id, has_dev })
    }

    /// Events of a subsystem, for `doctor`.
    pub fn events_of(&self, subsys: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.root.join("events").join(subsys))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| e.path().join("id").exists())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Whether the kernel can create kprobe events.
    pub fn has_kprobes(&self) -> bool {
        self.root.join("kprobe_events").exists()
    }

    /// Create kprobe event `group/name` on `func`; returns the event to count.
    pub fn add_kprobe(&self, group: &str, name: &str, func: &str) -> Result<Event> {
        self.write_kprobe_events(&format!("p:{group}/{name} {func}\n"))
            .with_context(|| {
                format!("cannot place a kprobe on `{func}` (is it a kernel function here?)")
            })?;
        self.event(group, name)
            .with_context(|| format!("kprobe {group}/{name} created but has no event id"))
    }

    pub fn remove_kprobe(&self, group: &str, name: &str) -> Result<()> {
        self.write_kprobe_events(&format!("-:{group}/{name}\n"))
    }

    /// Kprobe groups whose name starts with `prefix` (leftovers of killed runs).
    pub fn kprobe_groups(&self, prefix: &str) -> Vec<(String, String)> {
        std::fs::read_to_string(self.root.join("kprobe_events"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let spec = l.split_whitespace().next()?;
                let (_, ev) = spec.split_once(':')?;
                let (g, n) = ev.split_once('/')?;
                g.starts_with(prefix)
                    .then(|| (g.to_string(), n.to_string()))
            })
            .collect()
    }

    fn write_kprobe_events(&self, line: &str) -> Result<()> {
        let path = self.root.join("kprobe_events");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        f.write_all(line.as_bytes())
            .with_context(|| format!("{} rejected `{}`", path.display(), line.trim()))
    }
}
