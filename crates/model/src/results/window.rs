//! What the timed window produced, as the run document keeps it: each kind of operation's
//! latency, each second of a run for a time, each client (`sigbench-measure`'s `exec`).

use serde::{Deserialize, Serialize};

/// Latency of one kind of operation over the timed window, in nanoseconds: a syscall of a
/// signature, or an operation of a dbench loadfile (`NTCreateX`, timed with its lookup).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OpLatency {
    pub syscall: String,
    pub count: u64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
}

/// One second of a run for a time (cumulative since the window opened).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Tick {
    /// Seconds since the window opened.
    pub s: u32,
    pub ops: u64,
    pub bytes: u64,
    /// The longest operation so far.
    pub max_latency_ns: u64,
}

/// What one client did over the window.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ClientResult {
    pub ops: u64,
    pub bytes: u64,
    /// Passes over its work completed (fractions for a loadfile stopped mid-way).
    pub passes: f64,
    /// CPU time of its thread over the window (exact: the thread's CPU clock).
    pub cpu_ns: u64,
    /// Time in the window its thread was not on a CPU: blocked (locks, I/O, sleeps) or
    /// waiting to run.
    pub off_cpu_ns: u64,
    /// Context switches of its thread: it blocked (voluntary) or was preempted.
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}
