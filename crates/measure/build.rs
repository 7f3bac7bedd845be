//! Builds the cost model's QEMU plugin (`crates/cost/`, with `--cfg sigbench_plugin`) as the
//! shared library QEMU loads, so the sigbench binary can carry it (`vm::cost`): installing
//! sigbench stays one file.
//!
//! rustc is called directly rather than through Cargo: the binary's target flags link it
//! statically (`.cargo/config.toml`), and a shared library cannot be; the plugin needs no
//! crate but std, so one rustc invocation is the whole build.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let lib = PathBuf::from("../cost/src/lib.rs");
    println!("cargo:rerun-if-changed=../cost/src");
    // Two builds of one source: QEMU 7.2 takes plugin API version 1 at most, QEMU 9 and
    // later version 2 at least (crates/cost/src/qemu.rs).
    for (api, cfg) in [("1", None), ("2", Some("sigbench_plugin_api=\"2\""))] {
        let so = out.join(format!("sigbench-cost-api{api}.so"));
        let mut c = Command::new(&rustc);
        c.args([
            "--edition",
            "2024",
            "--crate-type",
            "cdylib",
            "--crate-name",
            "sigbench_cost",
            "--cfg",
            "sigbench_plugin",
            "--check-cfg",
            "cfg(sigbench_plugin, test)",
            "--check-cfg",
            "cfg(sigbench_plugin_api, values(\"2\"))",
            "-C",
            "opt-level=3",
            "-C",
            "panic=abort",
            "-C",
            "strip=symbols",
            "-D",
            "warnings",
        ]);
        if let Some(cfg) = cfg {
            c.args(["--cfg", cfg]);
        }
        let status = c.arg(&lib).arg("-o").arg(&so).status().expect("rustc runs");
        assert!(
            status.success(),
            "building the cost plugin (API {api}) failed"
        );
    }
}
