//! The boots of `run --kernel`: their schedule over the kernels, and what each boot is told
//! to do — the plan as a run spec (`plan::spec`), data the guest makes the same plan from
//! (round-trip tested in the binary's options).

use crate::plan::Plan;
use crate::plan::spec::RunSpec;
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

/// What a guest does, as data (JSON in its initramfs, `initramfs::PLAN`): its sigbench
/// makes the plan from the spec as the host made its own, and sends its results to the port.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum GuestWork {
    /// `run`: the spec, and whether to print the kernel counters that moved most.
    Run { spec: Box<RunSpec>, verbose: bool },
    /// `calibrate`'s stride loop between the cost model's marks.
    Calibrate,
}

/// What a guest is told: its work, and the files to put in its initramfs for it — the
/// signature when it is not a built-in one, the loadfile of a loadfile signature (a guest
/// has no dbench package).
#[derive(Clone, Debug, PartialEq)]
pub struct GuestPlan {
    pub work: GuestWork,
    pub signature: Option<String>,
    pub loadfile: Option<std::path::PathBuf>,
}

/// The guest's spec for `plan` and the files it names: the plan as it was resolved (its
/// directories, N values and probes, the defaults included), the signature and loadfile at
/// the guest's paths. Host-only options (the store, --json, --kernel) are not in a spec.
pub fn guest_plan(plan: &Plan, verbose: bool) -> Result<GuestPlan> {
    let builtin = crate::signature::builtins()
        .iter()
        .any(|s| s.origin == plan.signature.origin);
    let (signature, text) = if builtin {
        (plan.signature.name.clone(), None)
    } else {
        (SIGNATURE.to_string(), Some(plan.signature.source.clone()))
    };
    if let DeviceSpec::Path(p) = &plan.testbed.device {
        bail!(
            "--device {} cannot be used with --kernel: a guest has its own ramdisk",
            p.display()
        );
    }
    let loadfile = plan.loadfile.as_ref();
    let spec = RunSpec {
        signature,
        loadfile: loadfile.map(|_| LOADFILE.into()),
        ..RunSpec::resolved(plan)
    };
    Ok(GuestPlan {
        work: GuestWork::Run {
            spec: Box::new(spec),
            verbose,
        },
        signature: text,
        loadfile: loadfile.map(|l| std::path::PathBuf::from(&l.path)),
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
