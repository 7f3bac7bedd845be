//! `sigbench calibrate [--kernel K [--guest-cpus 2]] [--json FILE]`: what the cost model
//! charges against what this machine pays (`measure::calibrate`): a dependent-load chase
//! here and its price in the model, a two-CPU ping-pong here; with `--kernel`, a stride
//! loop in a guest under the model, and with two guest CPUs the ping-pong there.

use anyhow::{Context, Result};
use measure::calibrate::{self, Chase, GuestPingPong, GuestStrides, Stride};
use measure::vm::{VmOptions, kernel};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Also boot this kernel (a package, an image, a build tree) under the icount clock
    /// and read memory at strides of 4 B, 64 B and 4 KiB between the model's marks
    #[arg(long, value_name = "KERNEL")]
    kernel: Option<String>,
    /// Write the figures as JSON to FILE (`-`: stdout)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Loads of the chase per working set (at least 1000)
    #[arg(long, default_value_t = 2_000_000, value_name = "N")]
    loads: usize,
    /// CPUs of the guest: with 2 or more it also runs the ping-pong (on QEMU 10: an icount
    /// guest of several CPUs needs it)
    #[arg(long, default_value_t = 1, value_name = "K")]
    guest_cpus: u32,
    #[command(flatten)]
    cache: super::options::CacheOptions,
}

/// The fewest loads a chase times: fewer time the loop around them.
const MIN_LOADS: usize = 1000;

#[derive(serde::Serialize)]
struct Figures {
    schema: &'static str,
    model: String,
    weights: sigbench_cost::Weights,
    chase: Vec<Chase>,
    /// ns a round trip of the ping-pong on this machine (None: it has one CPU).
    ping_pong_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    guest: Option<GuestFigures>,
}

#[derive(serde::Serialize)]
struct GuestFigures {
    kernel: String,
    reads: u64,
    rounds: u64,
    strides: Vec<Stride>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ping_pong: Option<GuestPingPong>,
}

/// In a guest: the stride loop between the model's marks, its figures to the results port.
pub fn in_guest(port: &str) -> Result<i32> {
    let text = serde_json::to_string(&calibrate::guest_strides())?;
    measure::outputs::write_file(std::path::Path::new(port), text.as_bytes())?;
    Ok(0)
}

pub fn run(args: Args) -> Result<i32> {
    if let Some(j) = &args.json {
        let o = measure::outputs::Outputs::new(None).output("--json", j);
        match &args.kernel {
            Some(k) => o.kernel(k),
            None => o,
        }
        .check()?;
    }
    if args.loads < MIN_LOADS {
        anyhow::bail!(
            "--loads {}: at least {MIN_LOADS} (fewer loads time the loop, not the memory)",
            args.loads
        );
    }
    let loads = args.loads;

    // The kernel is checked and made ready before the chase: a bad one is refused at once.
    let kern = match &args.kernel {
        None => None,
        Some(k) => {
            let spec = kernel::KernelSpec::parse(k)?;
            if spec == kernel::KernelSpec::Host {
                anyhow::bail!(
                    "--kernel host: calibrate boots a guest; give a package, an image or a build tree"
                );
            }
            measure::host::private_dir(&args.cache.cache_dir, "--cache-dir")?;
            Some(kernel::prepare(&spec, k, &args.cache.cache_dir)?)
        }
    };
    let chase: Vec<Chase> = calibrate::WORKING_SETS
        .iter()
        .map(|&bytes| Chase {
            bytes,
            measured_ns: calibrate::chase_here(bytes, loads),
            model_ns: calibrate::chase_model(bytes, loads.min(400_000)),
        })
        .collect();
    let ping_pong_ns = match calibrate::ping_pong(calibrate::ROUND_TRIPS_HERE, false) {
        Ok(ns) => Some(ns),
        Err(e) => {
            model::say!("sigbench: calibrate: no ping-pong on this machine: {e}");
            None
        }
    };
    let guest = match kern {
        None => None,
        Some(kern) => {
            let opts = VmOptions {
                cache: args.cache.cache_dir.clone(),
                accel: Some(measure::vm::qemu::Accel::Tcg),
                clock: Some(model::clock::ClockKind::Icount),
                mem_mib: 1024,
                cpus: Some(args.guest_cpus),
                clients: 1,
                timeout: None,
                cost_model: true,
            };
            let (results, records) = measure::vm::calibrate(&kern, &opts)?;
            let g: GuestStrides = serde_json::from_str(&results).with_context(|| {
                format!(
                    "kernel {}: what the guest sent is not its strides",
                    kern.name
                )
            })?;
            if args.guest_cpus > 1 && g.ping_pong.is_none() {
                anyhow::bail!(
                    "kernel {}: the guest of {} CPUs did not run the ping-pong (does the kernel have SMP?)",
                    kern.name,
                    args.guest_cpus
                );
            }
            let (strides, ping_pong) = calibrate::guest_figures(&g, &records)?;
            Some(GuestFigures {
                kernel: kern.name.clone(),
                reads: g.reads,
                rounds: g.rounds,
                strides,
                ping_pong,
            })
        }
    };
    let figures = Figures {
        schema: "sigbench.calibrate",
        model: measure::vm::cost::model(),
        weights: model::metric::COST_WEIGHTS,
        chase,
        ping_pong_ns,
        guest,
    };
    match &args.json {
        Some(p) if p.as_os_str() == "-" => {
            super::out(&(serde_json::to_string_pretty(&figures)? + "\n"))?
        }
        Some(p) => {
            measure::outputs::write_file(
                p,
                (serde_json::to_string_pretty(&figures)? + "\n").as_bytes(),
            )?;
            super::out(&text(&figures))?;
        }
        None => super::out(&text(&figures))?,
    }
    Ok(0)
}

fn text(f: &Figures) -> String {
    let mut out = String::new();
    super::outln!(out, "the cost model: {}", f.model);
    super::outln!(out, "cost: {}\n", model::clock::cost_note());
    super::outln!(
        out,
        "a dependent-load chase (each load's address read by the one before) over a working set:"
    );
    super::outln!(
        out,
        "{:>12} {:>16} {:>14}",
        "working set",
        "this machine ns",
        "the model ns"
    );
    for c in &f.chase {
        let size = if c.bytes >= 1 << 20 {
            format!("{} MiB", c.bytes >> 20)
        } else {
            format!("{} KiB", c.bytes >> 10)
        };
        super::outln!(
            out,
            "{size:>12} {:>16.2} {:>14.2}",
            c.measured_ns,
            c.model_ns
        );
    }
    if let Some(ns) = f.ping_pong_ns {
        super::outln!(
            out,
            "\na ping-pong of one cache line between two CPUs: {ns:.1} ns a round trip on this machine"
        );
    }
    if let Some(g) = &f.guest {
        super::outln!(
            out,
            "\nin a guest of {} under the model: {} reads {} times at a stride of",
            g.kernel,
            g.reads,
            g.rounds
        );
        super::outln!(
            out,
            "{:>8} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}",
            "stride",
            "insns",
            "loads",
            "L1D miss",
            "L2 miss",
            "LL miss",
            "cost ms",
            "ns/read"
        );
        for s in &g.strides {
            let c = &s.counters;
            super::outln!(
                out,
                "{:>6} B {:>12} {:>10} {:>10} {:>10} {:>10} {:>10.3} {:>9.2}",
                s.stride,
                c.insns,
                c.loads,
                c.l1d_misses,
                c.l2_misses,
                c.ll_misses,
                s.cost_ms,
                s.ns_per_read
            );
        }
        if let Some(p) = &g.ping_pong {
            super::outln!(
                out,
                "the ping-pong in the guest ({} round trips): {:.2} coherence misses a round trip, priced {:.1} ns (the window's whole cost {:.1} ns a round trip: under icount a CPU spins until the other runs)",
                p.round_trips,
                p.transfers_per_round_trip,
                p.transfer_ns,
                p.cost_ns
            );
        }
    }
    out
}
