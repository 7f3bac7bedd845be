//! What the probes read around the window, as the run document keeps it: counters
//! (or why one is unavailable), CPU time, slab caches' changes, the machine's load
//! (`sigbench-measure`'s `probe`).

use serde::{Deserialize, Serialize};

/// One counter's value over the window.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Counter {
    pub name: String,
    pub probe: String,
    #[serde(flatten)]
    pub reading: Reading,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Reading {
    Counted { value: u64, scope: String },
    Unavailable { reason: String },
}

impl Reading {
    pub fn value(&self) -> Option<u64> {
        match self {
            Reading::Counted { value, .. } => Some(*value),
            Reading::Unavailable { .. } => None,
        }
    }
}

/// CPU time this process spent in the window.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Cpu {
    pub user_ns: u64,
    pub sys_ns: u64,
}

/// One slab cache's change over the window.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SlabDelta {
    pub cache: String,
    pub active_objs: i64,
    pub num_objs: i64,
    pub pages: i64,
}

/// What else the machine did during a window: how long tasks waited for a CPU (pressure
/// stall information, "some": at least one runnable task waited) and how long a
/// hypervisor kept the CPUs from the machine (steal). A busy machine makes a host time
/// inconclusive (`stats::compare::busy_share`); the icount clock does not see either.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Load {
    /// How long the thread that opened and closed the window — the workload's, in a
    /// case of one client — was ready to run and waited for a CPU in it (ms). Pressure
    /// and steal are read with the snapshots around the window, so they also span the
    /// RCU grace periods waited for there.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub run_delay_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu_pressure_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub steal_ms: Option<f64>,
}
