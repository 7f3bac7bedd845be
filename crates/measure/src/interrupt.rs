//! SIGINT/SIGTERM: turn the first one into a flag the long loops poll, so every guard
//! (mounts, loop devices, tmpfs) is dropped on the normal path. A second signal exits at
//! once and leaves the leftovers to `sigbench doctor --cleanup`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The error a run returns when it stopped because of a signal.
#[derive(Debug)]
pub struct Interrupted {
    pub signal: i32,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = if self.signal == libc::SIGTERM {
            "SIGTERM"
        } else {
            "SIGINT"
        };
        write!(
            f,
            "interrupted by {name}; everything sigbench set up was torn down"
        )
    }
}

impl std::error::Error for Interrupted {}

impl Interrupted {
    /// Shell convention: 128 + signal number.
    pub fn exit_code(&self) -> i32 {
        128 + self.signal
    }

    /// Whether `e` is a run stopped by a signal (which stops everything after it too),
    /// rather than a failure of one step.
    pub fn caused(e: &anyhow::Error) -> bool {
        e.downcast_ref::<Interrupted>().is_some()
    }
}

/// A failure of one step of a search (a kernel that did not unpack, boot or run) as the
/// text the search keeps and goes on without; an interruption is no step's failure: it
/// stays an error and ends the search (exit 130), wherever it was caught and however it
/// was worded on the way.
pub fn step_failed(e: anyhow::Error) -> anyhow::Result<String> {
    if Interrupted::caused(&e) {
        return Err(e);
    }
    check()?;
    Ok(format!("{e:#}"))
}

/// Install the handlers. Safe to call more than once.
pub fn install() -> std::io::Result<()> {
    if FLAG.get().is_some() {
        return Ok(());
    }
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // Order matters: the conditional shutdown sees the flag only from the second signal on.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&flag))?;
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
        // Remember which signal arrived, for the exit code.
        crate::sys::os::record_signal(sig, &SIGNAL)?;
    }
    let _ = FLAG.set(flag);
    Ok(())
}

/// Whether a signal asked the run to stop.
#[inline]
pub fn requested() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// `Err(Interrupted)` if a signal asked the run to stop.
pub fn check() -> Result<(), Interrupted> {
    if requested() {
        let signal = match SIGNAL.load(Ordering::Relaxed) {
            0 => libc::SIGINT,
            s => s,
        };
        Err(Interrupted { signal })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interruption_caught_under_context_stays_an_error_and_a_failure_becomes_its_text() {
        let stopped = anyhow::Error::new(Interrupted {
            signal: libc::SIGINT,
        })
        .context("preparing 6.1.0-56");
        let e = step_failed(stopped).unwrap_err();
        assert!(Interrupted::caused(&e), "{e:#}");
        let why = step_failed(anyhow::anyhow!("no HdrS header").context("booting")).unwrap();
        assert_eq!(why, "booting: no HdrS header");
    }
}
