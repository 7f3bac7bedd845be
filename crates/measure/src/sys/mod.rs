//! The raw system-call layer, and the only module of the crate allowed to write `unsafe`
//! (`#![deny(unsafe_code)]` in lib.rs; `clippy::undocumented_unsafe_blocks` is denied too,
//! so every block here says why it is sound).
//!
//! - `call`: the one system call of a signature step, and the untimed calls the executor
//!   prepares with. The executor must issue exactly the syscall a step names (`rename` is
//!   `SYS_rename`, not glibc's choice of `renameat`), so steps issue the `syscall`
//!   instruction with an explicit number (inlined into each copy of the executor's loop),
//!   never a libc or std wrapper.
//! - `os`: small safe wrappers for everything else the crate asks of the kernel (mount,
//!   loop and perf ioctls, flock, rusage, uname, confinement, power-off).
//! - here: errno values by name, the one place that turns a `syscall(2)` return into
//!   `Result`, and the jump over padding that places the executor's loop (`skip`).

pub mod call;
pub mod os;

use std::ffi::CStr;
use std::fmt;

/// Jump over `COUNT` × `STEP` bytes of padding, so the code after the call site lies that
/// much further into its function (the executor's copies of its loop, each at its own
/// place in the page: `exec::steps::LAYOUTS`). Inlined, it is one jump; on other
/// architectures nothing.
#[inline(always)]
pub fn skip<const COUNT: usize, const STEP: usize>() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a jump to the label right after the padding: the padding (int3 bytes) is
    // never executed, and no register, flag, stack slot or memory is read or written.
    unsafe {
        std::arch::asm!(
            "jmp 2f",
            ".skip {pad}, 0xcc",
            "2:",
            pad = const COUNT * STEP,
            options(nomem, nostack, preserves_flags)
        );
    }
}

/// A kernel error number, printed by its symbolic name (`ENOENT`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct Errno(pub i32);

/// Symbolic names of the errno values a filesystem workload can plausibly see.
const ERRNO_NAMES: &[(&str, i32)] = &[
    ("EPERM", libc::EPERM),
    ("ENOENT", libc::ENOENT),
    ("ESRCH", libc::ESRCH),
    ("EINTR", libc::EINTR),
    ("EIO", libc::EIO),
    ("ENXIO", libc::ENXIO),
    ("E2BIG", libc::E2BIG),
    ("EBADF", libc::EBADF),
    ("EAGAIN", libc::EAGAIN),
    ("ENOMEM", libc::ENOMEM),
    ("EACCES", libc::EACCES),
    ("EFAULT", libc::EFAULT),
    ("EBUSY", libc::EBUSY),
    ("EEXIST", libc::EEXIST),
    ("EXDEV", libc::EXDEV),
    ("ENODEV", libc::ENODEV),
    ("ENOTDIR", libc::ENOTDIR),
    ("EISDIR", libc::EISDIR),
    ("EINVAL", libc::EINVAL),
    ("ENFILE", libc::ENFILE),
    ("EMFILE", libc::EMFILE),
    ("ENOTTY", libc::ENOTTY),
    ("ETXTBSY", libc::ETXTBSY),
    ("EFBIG", libc::EFBIG),
    ("ENOSPC", libc::ENOSPC),
    ("ESPIPE", libc::ESPIPE),
    ("EROFS", libc::EROFS),
    ("EMLINK", libc::EMLINK),
    ("EPIPE", libc::EPIPE),
    ("ERANGE", libc::ERANGE),
    ("ENAMETOOLONG", libc::ENAMETOOLONG),
    ("ENOSYS", libc::ENOSYS),
    ("ENOTEMPTY", libc::ENOTEMPTY),
    ("ELOOP", libc::ELOOP),
    ("ENODATA", libc::ENODATA),
    ("EOVERFLOW", libc::EOVERFLOW),
    ("EOPNOTSUPP", libc::EOPNOTSUPP),
    ("ENOTSUP", libc::ENOTSUP),
    ("EDQUOT", libc::EDQUOT),
    ("ESTALE", libc::ESTALE),
];

impl Errno {
    /// The errno of the calling thread's last failed libc call.
    pub fn last() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    pub fn from_name(name: &str) -> Option<Errno> {
        ERRNO_NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| Errno(v))
    }

    pub fn name(self) -> String {
        ERRNO_NAMES
            .iter()
            .find(|&&(_, v)| v == self.0)
            .map(|(n, _)| (*n).to_string())
            .unwrap_or_else(|| format!("errno {}", self.0))
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({})",
            self.name(),
            std::io::Error::from_raw_os_error(self.0)
                .to_string()
                .split(" (os error")
                .next()
                .unwrap_or_default()
        )
    }
}

/// The result of one system call: its non-negative return value, or the errno.
pub type SysResult = Result<i64, Errno>;

/// Turn a raw `syscall(2)` return into a `SysResult`.
#[inline]
pub fn check(ret: libc::c_long) -> SysResult {
    if ret < 0 { Err(Errno::last()) } else { Ok(ret) }
}

/// A path as the kernel wants it: the bytes plus a trailing NUL, built without allocating
/// once the buffer has grown to its working size.
#[derive(Default)]
pub struct CPath {
    buf: Vec<u8>,
}

impl CPath {
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// Keep the first `len` bytes of the path.
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Terminate the path and return it as the kernel reads it. Templates cannot contain
    /// NUL bytes (the parser rejects them), so the string ends where the path ends.
    pub fn as_cstr(&mut self) -> &CStr {
        if self.buf.last() != Some(&0) {
            self.buf.push(0);
        }
        CStr::from_bytes_until_nul(&self.buf).unwrap_or(c"")
    }

    /// The path without its terminating NUL, for messages.
    pub fn display(&self) -> String {
        let bytes = self.buf.strip_suffix(&[0]).unwrap_or(&self.buf);
        String::from_utf8_lossy(bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_round_trip() {
        assert_eq!(Errno::from_name("ENOENT"), Some(Errno(libc::ENOENT)));
        assert_eq!(Errno(libc::EEXIST).name(), "EEXIST");
        assert_eq!(Errno(4242).name(), "errno 4242");
        assert_eq!(Errno::from_name("ENOPE"), None);
        assert!(
            Errno(libc::ENOENT)
                .to_string()
                .starts_with("ENOENT (No such file")
        );
    }

    #[test]
    fn cpath_is_nul_terminated_once() {
        let mut p = CPath::default();
        p.push(b"file_1");
        let _ = p.as_cstr();
        assert_eq!(p.as_cstr().to_bytes(), b"file_1");
        assert_eq!(p.buf, b"file_1\0");
        assert_eq!(p.display(), "file_1");
    }
}
