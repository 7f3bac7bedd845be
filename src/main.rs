//! The `sigbench` command line: one thin file per subcommand under `cmd/`, all work in
//! the library.

#![deny(unsafe_code)]

mod cmd;

use clap::{Parser, Subcommand};
use measure::interrupt::Interrupted;
use measure::vm::boots::GuestWork;

#[derive(Parser)]
#[command(
    name = "sigbench",
    version,
    about = "Reproduce, measure and pin down Linux filesystem performance regressions from syscall signatures",
    long_about = None,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a signature on a fresh scratch filesystem and measure it
    Run(Box<cmd::measure::Args>),
    /// Compare labelled results: ratios, significance, scaling; exit codes for bisecting
    Compare(cmd::compare::Args),
    /// Write a self-contained HTML (or Markdown) report with plots
    Report(cmd::report::Args),
    /// List the runs in the results store
    Runs(cmd::runs::Args),
    /// Write runs from the store as JSON (for `import` elsewhere) or Go benchmark text
    Export(cmd::export::ExportArgs),
    /// Add runs exported elsewhere (or `run --json` documents) to the store
    Import(cmd::export::ImportArgs),
    /// Turn a program's strace log (or a command run under strace) into a signature
    Record(cmd::record::Args),
    /// Find the first bad kernel of an ordered list (oldest good, newest bad), or the first
    /// bad commit of a kernel tree
    #[command(mut_arg("json", |a| a.help("Write the outcome (first bad, the steps, each verdict) as JSON to FILE")))]
    Bisect(Box<cmd::bisect::BisectArgs>),
    /// Watch a series of kernels: notice a change by itself, measure it again, bisect it,
    /// report it once
    #[command(mut_arg("label", |a| a.hide(true)))]
    Watch(Box<cmd::watch::WatchArgs>),
    /// One step of a `git bisect run`: run on --kernel, compare with --baseline; exit 0 good,
    /// 1 bad, 125 skip, 128 error
    Judge(Box<cmd::judge::JudgeArgs>),
    /// Shrink a signature to the steps that still show an effect (delta debugging)
    #[command(mut_arg("json", |a| a.hide(true)), mut_arg("label", |a| a.hide(true)))]
    Minimize(Box<cmd::minimize::MinimizeArgs>),
    /// Run the plan as a Slurm job array, one slice per task, into a shared store
    #[command(mut_arg("json", |a| a.hide(true)), mut_arg("op_log", |a| a.hide(true)))]
    Submit(Box<cmd::submit::SubmitArgs>),
    /// List the built-in signatures
    List(cmd::list::Args),
    /// Print a signature file (built-in or on disk)
    Show(cmd::show::Args),
    /// Check signature files without running anything
    Validate(cmd::validate::Args),
    /// Write a signature as one C file that reproduces it without sigbench
    Repro(cmd::repro::Args),
    /// Show what this machine can do, and find or remove leftovers of killed runs
    Doctor(cmd::doctor::Args),
    /// Record what a person decided about a change point: new, acknowledged, invalid, fixed
    Triage(cmd::triage::Args),
    /// Write the store as a static site: every series, every change and its triage
    Site(cmd::site::Args),
    /// What the cost model charges against what this machine pays: a dependent-load chase
    /// here, and with --kernel strided reads in a guest under the model
    Calibrate(cmd::calibrate::Args),
    /// A Slurm task (`submit`, `--slurm`): `run` with the options as JSON on stdin
    #[command(hide = true)]
    Task(cmd::run::TaskArgs),
}

fn main() {
    // As PID 1 this binary is the init of a guest booted by `run --kernel`.
    if std::process::id() == 1 {
        measure::vm::guest::init(&mut |work, port| match work {
            GuestWork::Run { spec, verbose } => {
                exit_code(cmd::run::in_guest(*spec, verbose, port), 1)
            }
            GuestWork::Calibrate => exit_code(cmd::calibrate::in_guest(&port), 1),
        });
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                usage_error_code()
            } else {
                0 // --help, --version
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    // A judge's (`compare`) errors must not read as a verdict to `git bisect run`.
    let error_code = match cli.command {
        Command::Compare(_) | Command::Judge(_) => cmd::compare::ERROR_EXIT,
        _ => 1,
    };
    let result = match cli.command {
        Command::Run(a) => cmd::run::run(*a),
        Command::Record(a) => cmd::record::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Runs(a) => cmd::runs::run(a),
        Command::Export(a) => cmd::export::export(a),
        Command::Import(a) => cmd::export::import(a),
        Command::List(a) => cmd::list::run(a),
        Command::Bisect(a) => cmd::bisect::run(*a),
        Command::Watch(a) => cmd::watch::run(*a),
        Command::Judge(a) => cmd::judge::run(*a),
        Command::Minimize(a) => cmd::minimize::run(*a),
        Command::Submit(a) => cmd::submit::run(*a),
        Command::Show(a) => cmd::show::run(a),
        Command::Validate(a) => cmd::validate::run(a),
        Command::Repro(a) => cmd::repro::run(a),
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Triage(a) => cmd::triage::run(a),
        Command::Site(a) => cmd::site::run(a),
        Command::Calibrate(a) => cmd::calibrate::run(a),
        Command::Task(a) => cmd::run::task(a),
    };
    let code = exit_code(result, error_code);
    // Diagnostics the library raised after the last case (teardown) or outside a run.
    for w in model::diag::take() {
        model::say!("sigbench: warning: {w}");
    }
    std::process::exit(code);
}

/// The exit code of a command line clap refused: `compare`'s is the judge's error code (a
/// usage error must stop a `git bisect run`, not mark a commit bad), 2 otherwise.
fn usage_error_code() -> i32 {
    match std::env::args().nth(1).as_deref() {
        Some("compare" | "judge") => cmd::compare::ERROR_EXIT,
        _ => 2,
    }
}

/// Print an error as one line and turn the outcome into an exit code (`error` for errors).
fn exit_code(result: anyhow::Result<i32>, error: i32) -> i32 {
    match result {
        Ok(code) => code,
        Err(e) => match e.downcast_ref::<Interrupted>() {
            Some(i) => {
                model::say!("sigbench: {i}");
                i.exit_code()
            }
            None => {
                model::say!("sigbench: {e:#}");
                error
            }
        },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
