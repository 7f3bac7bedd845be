//! A window's function-level profile as the run document keeps it: folded stacks per
//! phase, and the functions' self and total shares derived from them
//! (`sigbench-measure`'s `probe::profile` samples it).

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One phase's samples, folded: `root;…;leaf` → samples.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseProfile {
    pub name: String,
    pub samples: u64,
    pub stacks: BTreeMap<String, u64>,
}

/// A function's share of a profile's samples, in per cent.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FunctionShare {
    pub function: String,
    /// Samples where it was running (the leaf).
    pub self_pct: f64,
    /// Samples with it anywhere on the stack (itself or a callee running).
    pub total_pct: f64,
}

/// The profile of one window.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Profile {
    /// The sampling event (`cpu-clock`).
    pub event: String,
    /// Samples a second of the thread's CPU time.
    pub hz: u64,
    pub samples: u64,
    /// Samples the ring buffer could not hold (0 when the profile is whole).
    pub lost: u64,
    /// Times the kernel throttled the sampling (it took too long): samples missing.
    #[serde(default)]
    pub throttled: u64,
    pub phases: Vec<PhaseProfile>,
    /// Taken apart from the timed window (`Rate::Apart`): that second window's own time,
    /// longer than the timed one by its sampling. The shares are its; the times they are
    /// taken of, the timed window's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apart_ns: Option<u64>,
    /// The functions of the whole window with at least `LISTED_PCT` total share, most
    /// self first: the same numbers `functions()` derives from the stacks, kept for
    /// readers of the document.
    #[serde(default)]
    pub functions: Vec<FunctionShare>,
}

/// The smallest share (self or total) a function needs to be listed and compared: below
/// it a share is a handful of samples.
pub const LISTED_PCT: f64 = 0.1;

/// A case's profile, or why it could not be taken.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ProfileReading {
    Sampled(Profile),
    Unavailable { reason: String },
}

/// A function's name as two kernels are compared by it: the compiler's clones
/// (`.isra.0`, `.constprop.3`, `.part.1`, `.cold`, `.llvm.123…`, `.lto_priv.0`) are the
/// function, and 6.10's allocation-profiling wrappers renamed `kmem_cache_alloc` to
/// `kmem_cache_alloc_noprof` without changing what it does. Flame graphs keep real names.
pub fn fold_symbol(name: &str) -> &str {
    let mut s = name;
    loop {
        let before = s;
        // `.SUFFIX` or `.SUFFIX.DIGITS` at the end.
        if let Some((head, tail)) = s.rsplit_once('.') {
            if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit()) {
                if let Some((h2, kind)) = head.rsplit_once('.')
                    && CLONE_SUFFIXES.contains(&kind)
                    && !h2.is_empty()
                {
                    s = h2;
                }
            } else if CLONE_SUFFIXES.contains(&tail) && !head.is_empty() {
                s = head;
            }
        }
        if let Some(h) = s.strip_suffix("_noprof")
            && !h.is_empty()
        {
            s = h;
        }
        if s == before {
            return s;
        }
    }
}

/// The suffixes GCC and Clang give a function's clones and split parts.
const CLONE_SUFFIXES: &[&str] = &[
    "isra",
    "constprop",
    "part",
    "cold",
    "llvm",
    "lto_priv",
    "specialized",
    "localalias",
];

/// `stacks` with every frame's name folded ([`fold_symbol`]): stacks that differ only by
/// a clone's name are one.
pub fn folded_stacks<'a>(
    stacks: impl IntoIterator<Item = (&'a String, &'a u64)>,
) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, &n) in stacks {
        let s: Vec<&str> = stack.split(';').map(fold_symbol).collect();
        *out.entry(s.join(";")).or_default() += n;
    }
    out
}

/// Self and total shares of the samples in `stacks` (the folded stacks of one phase or
/// several), every function with at least `min_pct` of either, most self first.
pub fn shares<'a>(
    stacks: impl IntoIterator<Item = (&'a String, &'a u64)>,
    min_pct: f64,
) -> Vec<FunctionShare> {
    let mut own: HashMap<&str, u64> = HashMap::new();
    let mut total: HashMap<&str, u64> = HashMap::new();
    let mut samples = 0u64;
    for (stack, &n) in stacks {
        samples += n;
        let frames: Vec<&str> = stack.split(';').collect();
        if let Some(leaf) = frames.last() {
            *own.entry(leaf).or_default() += n;
        }
        let mut seen: Vec<&str> = Vec::with_capacity(frames.len());
        for f in frames {
            if !seen.contains(&f) {
                seen.push(f);
                *total.entry(f).or_default() += n;
            }
        }
    }
    if samples == 0 {
        return Vec::new();
    }
    let pct = |n: u64| n as f64 * 100.0 / samples as f64;
    let mut v: Vec<FunctionShare> = total
        .iter()
        .map(|(f, &t)| FunctionShare {
            function: f.to_string(),
            self_pct: pct(own.get(f).copied().unwrap_or(0)),
            total_pct: pct(t),
        })
        .filter(|s| s.self_pct >= min_pct || s.total_pct >= min_pct)
        .collect();
    v.sort_by(|a, b| {
        b.self_pct
            .total_cmp(&a.self_pct)
            .then_with(|| b.total_pct.total_cmp(&a.total_pct))
            .then_with(|| a.function.cmp(&b.function))
    });
    v
}

impl Profile {
    /// What the profile misses, in words, when it is not whole: samples the ring buffer
    /// could not hold, or times the kernel throttled the sampling. Its shares then count
    /// what was kept, which need not be what ran.
    pub fn shortfall(&self) -> Option<String> {
        let mut what = Vec::new();
        if self.lost > 0 {
            what.push(format!(
                "lost {} of {} samples (its buffer was full)",
                self.lost,
                self.lost + self.samples
            ));
        }
        if self.throttled > 0 {
            what.push(format!(
                "was throttled {} time(s) by the kernel (sampling took too long)",
                self.throttled
            ));
        }
        (!what.is_empty()).then(|| {
            let lower = match self.hz / 4 {
                0 => String::new(),
                hz => format!("; a lower rate (--profile={hz}) misses less"),
            };
            format!(
                "the profile {}: its shares may not be what ran{lower}",
                what.join(" and ")
            )
        })
    }

    /// The whole window's folded stacks (every phase's summed).
    pub fn stacks(&self) -> BTreeMap<String, u64> {
        let mut all: BTreeMap<String, u64> = BTreeMap::new();
        for p in &self.phases {
            for (s, n) in &p.stacks {
                *all.entry(s.clone()).or_default() += n;
            }
        }
        all
    }

    /// The whole window's function shares (`LISTED_PCT` and more).
    pub fn functions(&self) -> Vec<FunctionShare> {
        shares(&self.stacks(), LISTED_PCT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_and_renames_fold_to_the_function() {
        for (raw, folded) in [
            ("kmem_cache_alloc_noprof", "kmem_cache_alloc"),
            ("kmem_cache_alloc", "kmem_cache_alloc"),
            ("btrfs_search_slot.isra.0", "btrfs_search_slot"),
            ("do_unlinkat.constprop.0.isra.0", "do_unlinkat"),
            ("__d_lookup_rcu.part.12", "__d_lookup_rcu"),
            ("shrink_dentry_list.cold", "shrink_dentry_list"),
            (
                "memcg_slab_post_alloc_hook.llvm.1234567",
                "memcg_slab_post_alloc_hook",
            ),
            ("__kmalloc_node_noprof.cold", "__kmalloc_node"),
            // Not clones: a dot-less name, a version-like name, a bare suffix.
            ("ext4_da_write_end", "ext4_da_write_end"),
            ("foo.1", "foo.1"),
            (".cold", ".cold"),
            ("_noprof", "_noprof"),
            ("[unknown]", "[unknown]"),
        ] {
            assert_eq!(fold_symbol(raw), folded, "{raw}");
        }
        let stacks: BTreeMap<String, u64> = [
            ("a;kmem_cache_alloc".to_string(), 3),
            ("a;kmem_cache_alloc_noprof".to_string(), 4),
            ("a.isra.0;b".to_string(), 1),
        ]
        .into_iter()
        .collect();
        let f = folded_stacks(&stacks);
        assert_eq!(f.get("a;kmem_cache_alloc"), Some(&7));
        assert_eq!(f.get("a;b"), Some(&1));
    }

    #[test]
    fn a_profile_that_is_not_whole_says_what_it_misses() {
        let mut p = Profile {
            event: "cpu-clock".into(),
            hz: 4000,
            samples: 900,
            lost: 0,
            throttled: 0,
            phases: vec![],
            apart_ns: None,
            functions: vec![],
        };
        assert_eq!(p.shortfall(), None);
        p.lost = 100;
        let why = p.shortfall().unwrap();
        assert!(why.contains("lost 100 of 1000 samples"), "{why}");
        assert!(
            why.contains("--profile=1000") && !why.contains("throttled"),
            "{why}"
        );
        p.throttled = 2;
        let why = p.shortfall().unwrap();
        assert!(why.contains(" and was throttled 2 time(s)"), "{why}");
        p.lost = 0;
        p.hz = 3;
        let why = p.shortfall().unwrap();
        assert!(why.starts_with("the profile was throttled"), "{why}");
        assert!(!why.contains("--profile="), "never a rate of 0: {why}");
    }

    #[test]
    fn self_and_total_shares_count_each_sample_once() {
        let stacks: BTreeMap<String, u64> = [
            ("a;b;c".to_string(), 6u64),
            ("a;b".to_string(), 2),
            ("a;x;a;y".to_string(), 2), // recursion: a counted once per sample
        ]
        .into_iter()
        .collect();
        let v = shares(&stacks, 0.0);
        let get = |f: &str| v.iter().find(|s| s.function == f).unwrap();
        assert_eq!(get("c").self_pct, 60.0);
        assert_eq!(get("c").total_pct, 60.0);
        assert_eq!(get("b").self_pct, 20.0);
        assert_eq!(get("b").total_pct, 80.0);
        assert_eq!(get("a").total_pct, 100.0);
        assert_eq!(get("a").self_pct, 0.0);
        assert_eq!(v[0].function, "c", "most self first");
        // The floor drops functions below it on both shares.
        assert!(shares(&stacks, 25.0).iter().all(|s| s.function != "y"));
        assert!(shares(&BTreeMap::new(), 0.0).is_empty());
    }
}
