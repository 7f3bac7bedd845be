//! Diagnostics raised by library code where no caller can take them (teardown in `Drop`,
//! one-off notes such as "mounted tracefs"). Library code never prints: it queues them
//! here; the plan driver moves them into the run document's warnings (and its observer)
//! after every case, and the binary prints what is left before it exits. So stdout carries
//! only what was asked for, and a guest's console only the guest's own lines.

use std::sync::Mutex;

/// `eprintln!` that never panics: a closed or full stderr must not turn a finished run into
/// a crash (exit 101) — what was measured is already stored or written.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            $crate::shell::printable(&format!($($arg)*))
        );
    }};
}

/// `eprint!` that never panics.
#[macro_export]
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(
            std::io::stderr(),
            "{}",
            $crate::shell::printable(&format!($($arg)*))
        );
    }};
}

static PENDING: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Queue a diagnostic (one line, no `sigbench:` prefix).
pub fn warn(message: impl Into<String>) {
    if let Ok(mut p) = PENDING.lock() {
        p.push(message.into());
    }
}

/// Everything queued so far, oldest first; the queue is emptied.
pub fn take() -> Vec<String> {
    PENDING
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn queued_in_order_and_taken_once() {
        super::warn("a");
        super::warn(String::from("b"));
        let got = super::take();
        assert!(
            got.ends_with(&["a".to_string(), "b".to_string()]),
            "{got:?}"
        );
        assert!(!super::take().contains(&"a".to_string()));
    }
}
