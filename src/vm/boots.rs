//! The boots of `run --kernel`: their schedule over the kernels, and what each boot is told
//! to run — the plan written back as the guest's `sigbench run` arguments (the inverse of the
//! binary's option parsing, round-trip tested there).

use crate::plan::Plan;
use crate::testbed::device::DeviceSpec;
use anyhow::{Result, bail};

/// The boots of a plan over `kernels` kernels: one per kernel holding every repetition,
/// or with `interleave` one repetition per boot, the kernels alternating (A B A B …) so
/// drift of the machine cannot pose as a kernel change. (kernel index, repetitions)
pub fn boots(kernels: usize, repetitions: u32, interleave: bool) -> Vec<(usize, u32)> {
    if interleave {
        (0..repetitions)
            .flat_map(|_| (0..kernels).map(|k| (k, 1)))
            .collect()
    } else {
        (0..kernels).map(|k| (k, repetitions)).collect()
    }
}

/// What a guest runs of `plan`: the same, with every window settled first (`Plan::settle`)
/// — a guest has one CPU under the icount clock: the work the kernel left from booting or
/// from the previous case would otherwise run inside the window — and `--profile`'s rate
/// resolved for its clock (`icount`: taken apart).
pub fn in_guest(plan: &Plan, icount: bool) -> Plan {
    Plan {
        settle: true,
        profile: plan.profile.map(|r| r.resolve(icount)),
        ..plan.clone()
    }
}

/// Where the guest reads a signature given as a file (the initramfs puts it there).
pub const SIGNATURE: &str = "/etc/sigbench/signature.toml";
/// Where a guest finds the loadfile of a loadfile signature (`--loadfile`).
pub const LOADFILE: &str = "/etc/sigbench/loadfile.txt";

/// What a guest is told to run: its `run` arguments, and the files to put in its
/// initramfs for them — the signature when it is not a built-in one, the loadfile of a
/// loadfile signature (a guest has no dbench package).
#[derive(Clone, Debug, PartialEq)]
pub struct GuestPlan {
    /// What the guest's sigbench runs: `run` (the plan), or `calibrate`.
    pub command: &'static str,
    pub args: Vec<String>,
    pub signature: Option<String>,
    pub loadfile: Option<std::path::PathBuf>,
}

/// The guest's `run` arguments for `plan` and the files they name. Host-only options
/// (the store, --json, --kernel) are left out; the probes go as the plan resolved them.
pub fn guest_args(plan: &Plan, verbose: bool) -> Result<GuestPlan> {
    let builtin = crate::signature::builtins()
        .iter()
        .any(|s| s.origin == plan.signature.origin);
    let (sig_arg, sig_text) = if builtin {
        (plan.signature.name.clone(), None)
    } else {
        (SIGNATURE.to_string(), Some(plan.signature.source.clone()))
    };
    let t = &plan.testbed;
    if let DeviceSpec::Path(p) = &t.device {
        bail!(
            "--device {} cannot be used with --kernel: a guest has its own ramdisk",
            p.display()
        );
    }
    let mut v = vec![
        sig_arg,
        "--fs".into(),
        t.fs.name().into(),
        "--device".into(),
        t.device.arg(),
    ];
    let mkfs_opts = t.mkfs_opts.join(" ");
    for (flag, value) in [("--mkfs-opts", &mkfs_opts), ("--mount-opts", &t.mount_opts)] {
        if !value.is_empty() {
            v.push(format!("{flag}={value}"));
        }
    }
    for d in &plan.dirs {
        v.extend(["--dir".into(), d.text.clone()]);
    }
    let ns: Vec<String> = plan.n_values.iter().map(u64::to_string).collect();
    // A loadfile for a time counts no passes (its N is 0): no -n then.
    if !(plan.loadfile.is_some() && plan.time.is_some()) {
        v.extend(["-n".into(), ns.join(",")]);
    }
    v.extend(["-r".into(), plan.repetitions.to_string()]);
    v.extend(["--warmup".into(), plan.warmup.to_string()]);
    v.extend(["--seed".into(), plan.seed.to_string()]);
    if plan.loadfile.is_none() {
        v.extend(["--rounds".into(), plan.signature.rounds.to_string()]);
    }
    if plan.shuffle {
        v.push("--shuffle".into());
    }
    if plan.settle {
        v.push("--settle".into());
    }
    if let Some(hz) = plan.profile {
        v.push(format!("--profile={hz}"));
    }
    // The plan's probes already include the defaults.
    v.push("--no-default-probes".into());
    for p in &plan.probes {
        v.extend(["--probe".into(), p.arg()]);
    }
    if let Some(k) = &plan.clients {
        let ks: Vec<String> = k.iter().map(u32::to_string).collect();
        v.extend(["--clients".into(), ks.join(",")]);
    }
    if let Some(t) = plan.time {
        v.extend([
            "--time".into(),
            t.time.as_secs_f64().to_string(),
            "--warmup-time".into(),
            t.warmup.as_secs_f64().to_string(),
        ]);
    }
    let loadfile = plan.loadfile.as_ref().map(|l| {
        v.extend(["--loadfile".into(), LOADFILE.into()]);
        std::path::PathBuf::from(&l.path)
    });
    if verbose {
        v.push("-v".into());
    }
    Ok(GuestPlan {
        command: "run",
        args: v,
        signature: sig_text,
        loadfile,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boots_hold_every_repetition_or_alternate_the_kernels() {
        assert_eq!(boots(2, 3, false), [(0, 3), (1, 3)]);
        assert_eq!(
            boots(2, 3, true),
            [(0, 1), (1, 1), (0, 1), (1, 1), (0, 1), (1, 1)]
        );
        assert_eq!(boots(3, 1, true), [(0, 1), (1, 1), (2, 1)]);
    }
}
