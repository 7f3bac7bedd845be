//! What a signature may ask for. Signatures travel in bug reports and are recorded from
//! strangers' traces, so every size that becomes memory, disk or time is bounded here and
//! checked when the file is parsed (`sigbench validate` reports the same errors, with the
//! file and line). The run-time confinement (the workload runs chrooted into the test
//! filesystem, docs/ARCHITECTURE.md) is what keeps paths on the scratch filesystem; the
//! path checks below only give early, clear errors.
//!
//! docs/signatures.md lists these limits; a unit test keeps the two in step.

/// Files per case (`n`, `-n`).
pub const MAX_N: u64 = 100_000_000;
/// `rounds`.
pub const MAX_ROUNDS: u32 = 1_000;
/// A phase's `repeat`.
pub const MAX_REPEAT: u32 = 10_000;
/// Bytes one call may move or the executor must buffer: read, pread, write, pwrite,
/// getdents64 `size`, and setup.populate `size` (each is one buffer in memory).
pub const MAX_IO_BYTES: u64 = 64 << 20;
/// File sizes and offsets: truncate, ftruncate, fallocate, sync_file_range, pread/pwrite
/// `offset` (space on the scratch filesystem, not memory).
pub const MAX_FILE_BYTES: u64 = 1 << 40;
/// Characters in a path template.
pub const MAX_PATH_LEN: usize = 1024;
/// Components of a path template (`a/b/c` has 3).
pub const MAX_PATH_DEPTH: usize = 32;
/// Steps in a phase, and steps in the prelude.
pub const MAX_STEPS: usize = 256;
/// Phases in a signature.
pub const MAX_PHASES: usize = 64;
/// Directories in setup.mkdir.
pub const MAX_MKDIR: usize = 1_024;
/// Distinct descriptor slots.
pub const MAX_SLOTS: usize = 64;
/// Clients of one case (`clients`, `--clients`): each is a thread with its own histograms.
pub const MAX_CLIENTS: u32 = 1024;
/// Seconds of a run for a time (`time`, `--time`, `--warmup-time`): a day.
pub const MAX_TIME_S: f64 = 86_400.0;
/// Repetitions of a case (`-r`): a fresh filesystem each, so ten thousand are days.
pub const MAX_REPETITIONS: u32 = 10_000;
/// Warm-up repetitions of a case (`--warmup`).
pub const MAX_WARMUP: u32 = 1_000;

/// Every limit with its name as docs/signatures.md writes it.
pub const ALL: &[(&str, u64)] = &[
    ("n", MAX_N),
    ("rounds", MAX_ROUNDS as u64),
    ("repeat", MAX_REPEAT as u64),
    ("io size", MAX_IO_BYTES),
    ("file size/offset", MAX_FILE_BYTES),
    ("path length", MAX_PATH_LEN as u64),
    ("path depth", MAX_PATH_DEPTH as u64),
    ("steps", MAX_STEPS as u64),
    ("phases", MAX_PHASES as u64),
    ("mkdir", MAX_MKDIR as u64),
    ("slots", MAX_SLOTS as u64),
    ("clients", MAX_CLIENTS as u64),
    ("time", MAX_TIME_S as u64),
    ("repetitions", MAX_REPETITIONS as u64),
    ("warmup", MAX_WARMUP as u64),
];

/// `Err` naming `what` and the limit when `v` exceeds `max`.
pub fn check(what: &str, v: u64, max: u64) -> Result<u64, String> {
    if v > max {
        Err(format!("{what} {v} is over the limit of {max}"))
    } else {
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_documentation_lists_every_limit() {
        let doc = include_str!("../../../../docs/signatures.md");
        for (name, v) in super::ALL {
            let row = format!("| {name} | {v} |");
            assert!(doc.contains(&row), "docs/signatures.md lacks `{row}`");
        }
    }
}
