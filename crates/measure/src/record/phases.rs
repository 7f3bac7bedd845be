//! Stage 5 of recording: the signature's shape. The files whose steps have the most common
//! sequence make the signature (the others are dropped, counted); the cross-file order cuts
//! it into phases (step j+1 starts a phase when every file did step j before any did
//! j+1); sizes and offsets are the median over the files; populate when most files
//! existed before the program touched them.

use super::Log;
use super::steps::{PerFile, RecStep};
use anyhow::{Result, bail};
use std::collections::HashMap;
use std::path::Path;

/// The recorded signature before it is written.
pub(super) struct Common {
    /// The files of the common sequence, in the order the program first touched them.
    pub files: Vec<String>,
    /// One file's steps, numbers the median over the files.
    pub steps: Vec<RecStep>,
    /// Each phase's steps as a range of `steps`.
    pub phases: Vec<(usize, usize)>,
    /// The size to populate files with, when the program found them existing.
    pub populate: Option<i64>,
    /// Every kept call: (trace line, file, phase, syscall), all 1-based, in trace order.
    pub kept: Vec<super::KeptCall>,
}

fn median(mut v: Vec<i64>) -> i64 {
    v.sort_unstable();
    v[v.len() / 2]
}

pub(super) fn common(
    pf: &PerFile,
    shapes: &HashMap<String, Vec<String>>,
    tree: &Path,
    log: &mut Log,
) -> Result<Common> {
    let per_file = &pf.steps;
    let mut freq: HashMap<&Vec<String>, usize> = HashMap::new();
    for s in shapes.values() {
        *freq.entry(s).or_insert(0) += 1;
    }
    // Most frequent; on a tie the shorter, then the first in order (not the hash map's).
    let Some((&best, _)) = freq.iter().max_by(|a, b| {
        a.1.cmp(b.1)
            .then_with(|| b.0.len().cmp(&a.0.len()))
            .then_with(|| b.0.cmp(a.0))
    }) else {
        bail!("no calls on files under {} can be replayed", tree.display());
    };
    let mut files: Vec<String> = per_file
        .keys()
        .filter(|f| shapes[*f] == *best)
        .cloned()
        .collect();
    files.sort_by_key(|f| pf.first_seen[f]);
    let others: usize = per_file
        .iter()
        .filter(|(f, _)| shapes[*f] != *best)
        .map(|(_, v)| v.len())
        .sum();
    let other_files = per_file.len() - files.len();
    if other_files > 0 {
        log.drop_n(
            &format!("on {other_files} files whose calls differ from the common sequence"),
            others,
        );
    }
    let k = best.len();
    let phases = cut_phases(per_file, &files, k, log);
    let steps: Vec<RecStep> = (0..k)
        .map(|j| {
            let mut s = per_file[&files[0]][j].clone();
            for (x, number) in s.numbers.iter_mut().enumerate() {
                number.1 = median(files.iter().map(|f| per_file[f][j].numbers[x].1).collect());
            }
            s
        })
        .collect();
    Ok(Common {
        populate: populate(pf, &files),
        kept: kept_calls(per_file, &files, &phases),
        files,
        steps,
        phases,
    })
}

fn cut_phases(
    per_file: &std::collections::BTreeMap<String, Vec<RecStep>>,
    files: &[String],
    k: usize,
    log: &mut Log,
) -> Vec<(usize, usize)> {
    let n = files.len();
    let pos = |f: &String, j: usize| per_file[f][j].order;
    let mut phases: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for j in 0..k.saturating_sub(1) {
        let last_j = files.iter().map(|f| pos(f, j)).max().unwrap();
        let first_next = files.iter().map(|f| pos(f, j + 1)).min().unwrap();
        if n > 1 && last_j < first_next {
            phases.push((start, j + 1));
            start = j + 1;
        }
    }
    phases.push((start, k));
    for (p, &(a, _)) in phases.iter().enumerate().skip(1) {
        let mut by_order: Vec<usize> = (0..n).collect();
        by_order.sort_by_key(|&i| pos(&files[i], a));
        if by_order.iter().enumerate().any(|(x, &y)| x != y) {
            log.note(format!(
                "phase {} visits the files in another order than phase 1 in the trace; the replay keeps one order",
                p + 1
            ));
        }
    }
    phases
}

/// The populate size, when most of the files existed before the program touched them.
fn populate(pf: &PerFile, files: &[String]) -> Option<i64> {
    let existed = files
        .iter()
        .filter(|f| pf.existed.get(*f) == Some(&true))
        .count();
    if existed * 2 <= files.len() {
        return None;
    }
    let sizes: Vec<i64> = files
        .iter()
        .filter_map(|f| pf.initial_size.get(f))
        .filter_map(|v| v.first().copied())
        .collect();
    Some(if sizes.is_empty() { 0 } else { median(sizes) })
}

fn kept_calls(
    per_file: &std::collections::BTreeMap<String, Vec<RecStep>>,
    files: &[String],
    phases: &[(usize, usize)],
) -> Vec<super::KeptCall> {
    let mut v = Vec::new();
    for (i, f) in files.iter().enumerate() {
        for (p, &(a, b)) in phases.iter().enumerate() {
            for s in &per_file[f][a..b] {
                v.push(super::KeptCall {
                    line: s.line,
                    file: i as u64 + 1,
                    phase: p + 1,
                    syscall: s.op.clone(),
                });
            }
        }
    }
    v.sort();
    v
}
