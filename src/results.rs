//! The results of a run: the versioned JSON document (docs/json.md) with raw samples,
//! counters and the metadata needed to compare runs from different machines.

use crate::exec::OpLatency;
use crate::host::Host;
use crate::probe::procfs::SlabDelta;
use crate::probe::{Counter, Cpu};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `schema` of every run document.
pub const SCHEMA: &str = "sigbench.run";
/// Bumped on any incompatible change of the document; docs/json.md lists the versions.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunDocument {
    pub schema: String,
    pub version: u32,
    pub tool: Tool,
    /// `complete`, `interrupted` or `failed`; `error` says why when not complete.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    pub started_at: String,
    pub host: Host,
    pub signature: SignatureMeta,
    pub testbed: TestbedMeta,
    pub plan: PlanMeta,
    pub cases: Vec<CaseResult>,
    pub warnings: Vec<String>,
    /// Peak resident memory of sigbench over the run.
    pub peak_rss_kib: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SignatureMeta {
    pub name: String,
    pub origin: String,
    pub sha256: String,
    /// The signature file, verbatim, so the run can be replayed from the document alone.
    pub source: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TestbedMeta {
    pub fs: String,
    pub mkfs_version: Option<String>,
    pub mkfs_opts: Vec<String>,
    pub mount_opts: String,
    pub device_kind: String,
    pub device: String,
    pub device_bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PlanMeta {
    pub n: Vec<u64>,
    pub repetitions: u32,
    pub warmup: u32,
    pub seed: u64,
    /// `interleaved` (repetition-major) or `shuffled`.
    pub order: String,
    pub dirs: Vec<String>,
    /// Probes as requested (`name=source`).
    pub probes: Vec<String>,
}

/// One measured case: a directory at one N, one repetition, on a fresh filesystem.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CaseResult {
    pub dir: String,
    pub n: u64,
    /// 1-based; warm-ups are numbered separately and flagged.
    pub rep: u32,
    pub warmup: bool,
    pub path: String,
    pub wall_ns: u64,
    pub calls: u64,
    pub cpu: Cpu,
    pub counters: Vec<Counter>,
    pub latency: Vec<OpLatency>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub vmstat: Option<BTreeMap<String, i64>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub slabinfo: Option<Vec<SlabDelta>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub blockstat: Option<BTreeMap<String, i64>>,
}

impl CaseResult {
    pub fn counter(&self, name: &str) -> Option<&Counter> {
        self.counters.iter().find(|c| c.name == name)
    }
}
