//! The machine and kernel a run happened on: the metadata every result carries so that
//! results from different machines can be told apart and compared (gathered by
//! `sigbench-measure`'s `host`).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Host {
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`: build number and date, distinguishes rebuilds of one release.
    pub kernel_version: String,
    pub kernel_cmdline: String,
    pub arch: String,
    pub cpu_model: String,
    pub cpus: usize,
    pub mem_total_kib: u64,
    /// The run happened in an emulated machine (QEMU TCG): times are not the hardware's,
    /// counts are exact.
    #[serde(default)]
    pub emulated: bool,
    /// `qemu-tcg` or `qemu-kvm` when the run happened in a guest booted by `run --kernel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator: Option<String>,
    /// For a guest: what its times count (`crate::clock`); absent on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<crate::clock::Clock>,
    /// For a guest: the identity (short hash) of the kernel image it booted, so results of
    /// two images with one release are told apart (`bisect --resume`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_image: Option<String>,
    /// How the CPUs' clock speed was governed (cpufreq), which reference 001 pins to
    /// `performance` before measuring; absent where the OS does not set it (a VM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency: Option<Frequency>,
}

/// The CPU frequency policy of a machine, from /sys/devices/system/cpu.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Frequency {
    /// The cpufreq driver (`intel_pstate`, `acpi-cpufreq`, …).
    pub driver: String,
    /// Each governor in use and on how many CPUs (`performance`, `powersave`, …).
    pub governors: Vec<(String, u32)>,
    /// Whether the CPUs may boost above their base clock (turbo), where the driver says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turbo: Option<bool>,
}

impl Frequency {
    /// What to say when not every CPU runs the `performance` governor (None: all do).
    pub fn warning(&self) -> Option<String> {
        let others: Vec<String> = self
            .governors
            .iter()
            .filter(|(g, _)| g != "performance")
            .map(|(g, n)| format!("`{g}` on {n} CPU{}", if *n == 1 { "" } else { "s" }))
            .collect();
        (!others.is_empty()).then(|| {
            format!(
                "the CPU frequency governor is {}: times move with the clock speed it picks (reference 001 measured with `performance`: echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
                others.join(", ")
            )
        })
    }
}

impl Host {
    /// What this machine's times count: runs compare their times only within one base.
    pub fn timebase(&self) -> crate::clock::TimeBase {
        crate::clock::TimeBase::of(self.clock.as_ref(), self.emulated)
    }
}
