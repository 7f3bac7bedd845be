//! The boots of `run --kernel`: their schedule over the kernels, and what each boot is told
//! to do — the plan as a run spec (`plan::spec`), data the guest makes the same plan from
//! (round-trip tested in the binary's options).

use crate::plan::Plan;
use crate::plan::spec::RunSpec;
use crate::plan::states::States;
use crate::testbed::device::DeviceSpec;
use anyhow::{Result, bail};

/// The turns of a plan over `kernels` kernels: one per kernel holding every repetition,
/// or with `interleave` one repetition per turn, the kernels alternating (A B A B …) so
/// drift of the machine cannot pose as a kernel change. (kernel index, repetitions, the
/// number of its first repetition's state: each turn of a kernel starts from states of
/// its own)
pub fn boots(kernels: usize, repetitions: u32, interleave: bool) -> Vec<(usize, u32, u32)> {
    if interleave {
        (0..repetitions)
            .flat_map(|r| (0..kernels).map(move |k| (k, 1, r)))
            .collect()
    } else {
        (0..kernels).map(|k| (k, repetitions, 0)).collect()
    }
}

/// The boots `plan` takes in a guest: under the icount clock with its states sampled, one
/// per repetition, each from the state of its own seed (`states::seed_of`: the run's seed
/// and the repetition's number, from `first_state` on) holding that repetition and the
/// warm-ups; else `plan` itself, in one boot.
pub fn per_state(plan: &Plan, icount: bool) -> Vec<Plan> {
    if !(icount && plan.states == States::Sampled) {
        return vec![plan.clone()];
    }
    (0..plan.repetitions)
        .map(|r| Plan {
            repetitions: 1,
            states: States::One(crate::plan::states::seed_of(
                plan.seed,
                plan.first_state + r,
            )),
            ..plan.clone()
        })
        .collect()
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
    /// The state the guest boots in (`plan::states`): its seed on the kernel's command
    /// line and in the initramfs' size. None: the one fixed state.
    pub state: Option<u64>,
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
        // Where a boot's states start is the host's business (its state, if any, is in
        // `states`): every byte a guest is given can move what it measures — boots of one
        // fixed state that differed in it alone differed by 500 ns in a 54 ms window.
        first_state: 0,
        ..RunSpec::resolved(plan)
    };
    Ok(GuestPlan {
        work: GuestWork::Run {
            spec: Box::new(spec),
            verbose,
        },
        signature: text,
        loadfile: loadfile.map(|l| std::path::PathBuf::from(&l.path)),
        state: match plan.states {
            States::One(s) => Some(s),
            _ => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boots_hold_every_repetition_or_alternate_the_kernels() {
        assert_eq!(boots(2, 3, false), [(0, 3, 0), (1, 3, 0)]);
        assert_eq!(
            boots(2, 3, true),
            [
                (0, 1, 0),
                (1, 1, 0),
                (0, 1, 1),
                (1, 1, 1),
                (0, 1, 2),
                (1, 1, 2)
            ]
        );
        assert_eq!(boots(3, 1, true), [(0, 1, 0), (1, 1, 0), (2, 1, 0)]);
    }

    /// Sampled states under icount: a boot a repetition, each from a state of its own,
    /// the same states again for the same seed; fixed, or on the host's clock: one boot.
    #[test]
    fn sampled_states_are_a_boot_a_repetition() {
        let plan = crate::plan::fixtures::plan(3, 1, false);
        let boots = per_state(&plan, true);
        assert_eq!(boots.len(), 3);
        let seeds: Vec<States> = boots.iter().map(|p| p.states).collect();
        assert!(boots.iter().all(|p| p.repetitions == 1 && p.warmup == 1));
        assert_eq!(
            seeds,
            per_state(&plan, true)
                .iter()
                .map(|p| p.states)
                .collect::<Vec<_>>()
        );
        assert!(seeds.iter().all(|s| matches!(s, States::One(_))));
        assert_ne!(seeds[0], seeds[1]);
        let later = Plan {
            first_state: 3,
            ..plan.clone()
        };
        assert!(
            per_state(&later, true)
                .iter()
                .all(|p| !seeds.contains(&p.states))
        );
        assert_eq!(per_state(&plan, false).len(), 1);
        let fixed = Plan {
            states: States::Fixed,
            ..plan
        };
        assert_eq!(per_state(&fixed, true).len(), 1);
    }
}
