//! Slices: a plan split into independent parts — one per kernel × filesystem × directory
//! (× repetition with `split_reps`) — so that a Slurm job array (`sigbench submit`) or a
//! person (`run --slice I/S`) can run one part anywhere. The list has a fixed order, so
//! every array task computes the same one and picks its own.

use crate::testbed::Fs;
use anyhow::{Result, bail};

/// One independent part of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    /// A `--kernel` argument, or None for the machine's own kernel.
    pub kernel: Option<String>,
    pub fs: Fs,
    /// A `--dir` argument (the directory with its properties).
    pub dir: String,
    /// One repetition, when repetitions are split too.
    pub rep: Option<u32>,
}

impl Slice {
    pub fn describe(&self) -> String {
        format!(
            "{} on {}, directory {}{}",
            self.kernel.as_deref().unwrap_or("this kernel"),
            self.fs.name(),
            self.dir,
            self.rep
                .map_or(String::new(), |r| format!(", repetition {r}"))
        )
    }
}

/// The slices, kernels outermost, then filesystems, directories (`dirs` gives each
/// filesystem's), repetitions.
pub fn slices(
    kernels: &[String],
    filesystems: &[Fs],
    dirs: &dyn Fn(Fs) -> Result<Vec<String>>,
    repetitions: u32,
    split_reps: bool,
) -> Result<Vec<Slice>> {
    let kernels: Vec<Option<String>> = if kernels.is_empty() {
        vec![None]
    } else {
        kernels.iter().cloned().map(Some).collect()
    };
    let reps: Vec<Option<u32>> = if split_reps {
        (1..=repetitions).map(Some).collect()
    } else {
        vec![None]
    };
    let mut v = Vec::new();
    for kernel in &kernels {
        for &fs in filesystems {
            for dir in dirs(fs)? {
                for &rep in &reps {
                    v.push(Slice {
                        kernel: kernel.clone(),
                        fs,
                        dir: dir.clone(),
                        rep,
                    });
                }
            }
        }
    }
    Ok(v)
}

/// `I/S` → (I, S), slice I of S counted from 0.
pub fn parse(s: &str) -> Result<(usize, usize)> {
    let parsed = s
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
    match parsed {
        Some((i, n)) if i < n => Ok((i, n)),
        _ => bail!("--slice {s}: give I/S with 0 <= I < S (slice I of S, counted from 0)"),
    }
}

/// The Slurm job this process runs in, from Slurm's environment: `JOBID_TASK` for a job
/// array's task, else the job id.
pub fn slurm_job() -> Option<String> {
    match (
        std::env::var("SLURM_ARRAY_JOB_ID"),
        std::env::var("SLURM_ARRAY_TASK_ID"),
    ) {
        (Ok(job), Ok(task)) => Some(format!("{job}_{task}")),
        _ => std::env::var("SLURM_JOB_ID").ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_outermost_then_filesystems_directories_and_repetitions() {
        let dirs = |fs: Fs| -> Result<Vec<String>> {
            Ok(match fs {
                Fs::Btrfs => vec!["z:compression=zstd".into(), "u".into()],
                _ => vec!["u".into()],
            })
        };
        let s = slices(&[], &[Fs::Btrfs, Fs::Ext4], &dirs, 3, false).unwrap();
        let got: Vec<(Fs, &str, Option<u32>)> =
            s.iter().map(|s| (s.fs, s.dir.as_str(), s.rep)).collect();
        assert_eq!(
            got,
            [
                (Fs::Btrfs, "z:compression=zstd", None),
                (Fs::Btrfs, "u", None),
                (Fs::Ext4, "u", None)
            ]
        );
        assert!(s.iter().all(|s| s.kernel.is_none()));
        let k = ["a.deb".to_string(), "b.deb".to_string()];
        let s = slices(&k, &[Fs::Ext4], &dirs, 2, true).unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(
            (
                s[1].kernel.as_deref(),
                s[1].rep,
                s[2].kernel.as_deref(),
                s[2].rep
            ),
            (Some("a.deb"), Some(2), Some("b.deb"), Some(1))
        );
        assert_eq!(s[3].describe(), "b.deb on ext4, directory u, repetition 2");
    }

    #[test]
    fn reads_slice_numbers() {
        assert_eq!(parse("0/4").unwrap(), (0, 4));
        assert_eq!(parse(" 3 / 4 ").unwrap(), (3, 4));
        for bad in ["4/4", "1", "-1/4", "a/b", "1/0"] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("0 <= I < S"), "{bad}: {e}");
        }
    }
}
