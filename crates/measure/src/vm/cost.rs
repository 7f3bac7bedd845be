//! The cost model in guests (`sigbench_cost`): the QEMU plugin this binary carries, written
//! to the cache when a guest starts; QEMU's argument that loads it with the file its
//! records go to; and the records read back into the guest's run document — each timed
//! window's counters on its case, each phase's on its phase.
//!
//! The guest marks its timed windows in the order it runs its cases (`plan`'s
//! `CaseAround`), so the k-th window of the records is the k-th case of the document. When
//! the two do not line up (a guest that failed inside a window), nothing is attached and
//! the document says why: a cost is never guessed.

use anyhow::{Context, Result};
use model::results::RunDocument;
use std::path::{Path, PathBuf};

/// The plugin, built from `cost/` by the build script for QEMU's plugin API version 1
/// (QEMU 7.2) and 2 (QEMU 9 and later).
const PLUGIN_API1: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sigbench-cost-api1.so"));
const PLUGIN_API2: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sigbench-cost-api2.so"));

/// The build of the plugin QEMU `version` (`7.2.22`, `10.0.2`) loads.
fn plugin_for(version: Option<&str>) -> &'static [u8] {
    if plugin_api(version) >= 2 {
        PLUGIN_API2
    } else {
        PLUGIN_API1
    }
}

/// The plugin API generation of QEMU `version` the cost model's plugin is built for: 2
/// from QEMU 9 on (the register and memory-access API), 1 before.
pub fn plugin_api(version: Option<&str>) -> u32 {
    let major = version
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok())
        .unwrap_or(7);
    if major >= 9 { 2 } else { 1 }
}

/// What the documents record of the model: its record format and its geometry.
pub fn model() -> String {
    use sigbench_cost::{L1D, L1I, L2, LL};
    let g = |c: sigbench_cost::Geometry| format!("{} KiB {}-way", c.bytes >> 10, c.ways);
    format!(
        "{}: L1I {}, L1D {}, L2 {} per CPU, kept coherent (write-invalidate); last level {} shared, hashed sets; 64 B lines, LRU, physical addresses",
        sigbench_cost::RECORD_TAG,
        g(L1I),
        g(L1D),
        g(L2),
        g(LL)
    )
}

/// The plugin QEMU loads, in a sealed memory file (`sys::os::sealed_memfd`): QEMU runs as
/// root and runs the plugin's code, so it gets no file by name that someone could swap
/// between a check and the load (a plugin written to `<cache>/plugins` was: any user who
/// could rename files there ran code as root). QEMU opens it as `/proc/self/fd/N`, the
/// descriptor it inherits ([`Plugin::fd`]).
pub struct Plugin {
    fd: std::os::fd::OwnedFd,
}

impl Plugin {
    /// The build of the plugin `qemu` loads.
    pub fn new(qemu: &std::path::Path) -> Result<Plugin> {
        let bytes = plugin_for(super::qemu::version_of(qemu).as_deref());
        let fd = crate::sys::os::sealed_memfd(c"sigbench-cost", bytes)
            .context("cannot make the cost model's plugin file (memfd_create)")?;
        Ok(Plugin { fd })
    }

    /// The descriptor QEMU must inherit.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd.as_fd()
    }

    /// The path QEMU opens it by: its own descriptor.
    pub fn path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }
}

/// QEMU's arguments that load `plugin` writing its records to `records`, for a guest of
/// `cpus` CPUs whose code lies within its pages as `placement` puts it (0: as linked;
/// `plan::states::placement`). A comma in a path is doubled, as QEMU's option syntax wants.
pub fn qemu_args(plugin: &Path, records: &Path, cpus: u32, placement: u64) -> Vec<String> {
    let q = |p: &Path| p.display().to_string().replace(',', ",,");
    let mut arg = format!("{},out={},cpus={cpus}", q(plugin), q(records));
    if placement != 0 {
        arg.push_str(&format!(",placement={placement:x}"));
    }
    vec!["-plugin".into(), arg]
}

/// Attach the windows of the records in `text` to `doc`'s cases, in order. Returns a
/// warning when they do not line up (nothing is attached then).
pub fn attach(doc: &mut RunDocument, text: &str) -> Option<String> {
    let windows = sigbench_cost::windows_in(text);
    if windows.len() != doc.cases.len() || windows.iter().any(Option::is_none) {
        return Some(format!(
            "the cost model's records hold {} window(s) ({} whole) for {} case(s): no cost is given",
            windows.len(),
            windows.iter().flatten().count(),
            doc.cases.len()
        ));
    }
    for (case, w) in doc.cases.iter_mut().zip(windows.into_iter().flatten()) {
        case.cost = Some(w.total);
        let phases = case.phases.len().max(1);
        // Segments are phases in order, round after round (a run for a time is one).
        if w.phases.len() % phases == 0 && !case.phases.is_empty() {
            for (k, seg) in w.phases.iter().enumerate() {
                let p = &mut case.phases[k % phases];
                p.cost = Some(p.cost.map_or(*seg, |c| c.plus(seg)));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use sigbench_cost::{Counters, Mark, Record};

    fn line(mark: Mark, insns: u64) -> String {
        Record {
            mark,
            counters: Counters {
                insns,
                ..Default::default()
            },
        }
        .line()
    }

    #[test]
    fn windows_go_to_their_cases_and_phases() {
        let mut doc = model::results::fixtures::doc("a", &[1.0, 2.0], &[0, 0]);
        let text: String = [
            line(Mark::Open, 10),
            line(Mark::Pause, 40),
            line(Mark::Resume, 45),
            line(Mark::Close, 50),
            "noise from QEMU\n".into(),
            line(Mark::Open, 100),
            line(Mark::Pause, 110),
            line(Mark::Resume, 130),
            line(Mark::Close, 200),
        ]
        .concat();
        assert_eq!(attach(&mut doc, &text), None);
        let c = &doc.cases[0];
        assert_eq!(c.cost.unwrap().insns, 35);
        assert_eq!(c.phases[0].cost.unwrap().insns, 30);
        assert_eq!(c.phases[1].cost.unwrap().insns, 5);
        assert_eq!(doc.cases[1].cost.unwrap().insns, 80);
        // A window short: nothing attached, and said.
        let mut doc = model::results::fixtures::doc("a", &[1.0, 2.0], &[0, 0]);
        let w = attach(&mut doc, &line(Mark::Open, 1)).unwrap();
        assert!(w.contains("1 window(s) (0 whole) for 2 case(s)"), "{w}");
        assert!(doc.cases.iter().all(|c| c.cost.is_none()));
        assert!(
            qemu_args(Path::new("/a,b/p.so"), Path::new("/r"), 2, 0)[1]
                == "/a,,b/p.so,out=/r,cpus=2"
        );
        assert_eq!(
            qemu_args(Path::new("/p.so"), Path::new("/r"), 1, 0xbeef)[1],
            "/p.so,out=/r,cpus=1,placement=beef"
        );
    }
}
