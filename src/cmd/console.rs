//! What `run` shows while it runs: s3e's line as each case finishes (on stdout, or on
//! stderr when stdout carries the JSON document) and a progress bar on a terminal's
//! stderr once a run has taken more than a second. Storing is another observer
//! (`search::storing::Storing`) beside this one.

use anyhow::{Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use measure::exec::Tick;
use measure::plan::{Case, Observer, Plan};
use model::results::CaseResult;
use present::report::text;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// The first failed write to stdout, if any.
static STDOUT_FAILED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Write to stdout. A failure (a reader that went away, a full disk behind `>`) does not
/// stop the run — it must still tear down its testbed, store and write its JSON — but
/// makes it exit non-zero at the end (`stdout_result`).
pub(crate) fn stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        let _ = STDOUT_FAILED.set(e.to_string());
    }
}

pub(crate) fn stdout_result() -> Result<()> {
    match STDOUT_FAILED.get() {
        Some(e) => bail!("could not write the report to stdout: {e}"),
        None => Ok(()),
    }
}

/// Prints s3e lines as cases finish and draws a progress bar on a terminal's stderr once a
/// run has taken more than a second.
pub(crate) struct Console {
    layout: text::LineLayout,
    to_stderr: bool,
    bar: Option<ProgressBar>,
    started: Instant,
    shown: bool,
    cases_total: usize,
    cases_done: usize,
    /// The previous tick's operations and bytes (and whether it was in the warm-up).
    last_tick: Option<(u64, u64, bool)>,
}

impl Console {
    /// `to_stderr`: stdout carries the JSON document (`--json -`), the lines go to stderr.
    pub(crate) fn new(plan: &Plan, mount_point_len: usize, to_stderr: bool) -> Console {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template("{prefix} {bar:30} {pos}/{len} {msg}") {
                b.set_style(style);
            }
            b
        });
        Console {
            layout: text::LineLayout::new(plan, mount_point_len),
            to_stderr,
            bar,
            started: Instant::now(),
            shown: false,
            cases_total: plan.case_count(),
            cases_done: 0,
            last_tick: None,
        }
    }

    fn emit(&self, line: &str) {
        let print = || {
            if self.to_stderr {
                model::say!("{line}");
            } else {
                stdout(&format!("{line}\n"));
            }
        };
        match &self.bar {
            Some(b) if self.shown => b.suspend(print),
            _ => print(),
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Observer for Console {
    fn case_started(&mut self, case: &Case, plan: &Plan, work: u64) {
        if let Some(b) = &self.bar {
            b.set_length(work);
            b.set_position(0);
            b.set_prefix(format!("case {}/{}", self.cases_done + 1, self.cases_total));
            b.set_message(format!(
                "{} N={}{} rep {}",
                plan.dirs[case.dir].name,
                case.n,
                if plan.clients.is_some() {
                    format!(" K={}", case.clients)
                } else {
                    String::new()
                },
                case.rep
            ));
        }
    }

    fn tick(&mut self, done: u64) {
        if let Some(b) = &self.bar {
            if !self.shown && self.started.elapsed() > Duration::from_secs(1) {
                b.set_draw_target(ProgressDrawTarget::stderr());
                self.shown = true;
            }
            b.set_position(done);
        }
    }

    fn case_done(&mut self, result: &CaseResult, plan: &Plan) -> Result<()> {
        self.cases_done += 1;
        self.emit(&text::case_lines(plan, result, &self.layout));
        Ok(())
    }

    /// A second of a case for a time: dbench's progress line (clients, operations, MB/s
    /// of the last second, the longest operation so far), as the bar's message on a
    /// terminal and as a line on stderr otherwise.
    fn second(&mut self, tick: &Tick, clients: usize, warmup: bool) {
        let (ops, bytes) = (tick.ops, tick.bytes);
        let dbytes = match self.last_tick {
            Some((_, b, w)) if w == warmup => bytes.saturating_sub(b),
            _ => bytes,
        };
        self.last_tick = Some((ops, bytes, warmup));
        let line = format!(
            "{clients:4} clients  {} {:3} s  {ops:10} ops  {:9.2} MB/sec  max latency {:.3} ms",
            if warmup { "warmup " } else { "execute" },
            tick.s,
            dbytes as f64 / 1e6,
            tick.max_latency_ns as f64 / 1e6
        );
        match &self.bar {
            Some(b) => {
                if !self.shown {
                    b.set_draw_target(ProgressDrawTarget::stderr());
                    self.shown = true;
                }
                b.set_message(line);
            }
            None => model::say!("{line}"),
        }
    }

    fn warning(&mut self, message: &str) {
        let m = format!("sigbench: warning: {message}");
        match &self.bar {
            Some(b) if self.shown => b.suspend(|| model::say!("{m}")),
            _ => model::say!("{m}"),
        }
    }
}
