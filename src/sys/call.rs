//! The one system call of a signature step, issued with `syscall(2)` and an explicit
//! number, and the few untimed calls the executor prepares a case with.
//!
//! Soundness rests on two facts that this module checks itself rather than trusting its
//! callers: paths are `&CStr` (NUL-terminated, live for the call), and the buffer a call
//! may write into is a `&mut [u8]` at least as long as the length passed to the kernel
//! ([`Op::out_len`] says how long; [`issue`] refuses a shorter buffer).

use super::{Errno, SysResult, check};
use crate::signature::Op;
use crate::signature::step::{ChownCall, GETXATTR_LEN, OpenCall, RenameCall, StatCall, SyncCall};
use libc::{AT_FDCWD, c_long};
use std::ffi::CStr;

/// Issue `op`'s system call. `a`/`b` are its rendered paths (empty when it takes fewer),
/// `fd` the descriptor of its slot (-1 when it has none), `out` the buffer the kernel
/// writes results into (read data, stat structures, directory entries, xattr values).
///
/// A buffer shorter than `op.out_len()` is refused with `EFAULT` without calling the
/// kernel: the executor sizes its buffer from every step, so this never happens unless
/// that sizing is wrong — and then it must not become a heap overflow.
#[inline(always)]
pub fn issue(op: &Op, fd: i32, a: &CStr, b: &CStr, out: &mut [u8]) -> SysResult {
    if out.len() < op.out_len() {
        return Err(Errno(libc::EFAULT));
    }
    let (a, b) = (a.as_ptr(), b.as_ptr());
    let buf = out.as_mut_ptr();
    use libc::syscall as sc;
    // SAFETY: every pointer passed is either a NUL-terminated path borrowed for the
    // duration of the call (`a`, `b`, the xattr name), a buffer of the exact length passed
    // with it (write data, xattr value), null where the kernel accepts null (utimensat's
    // times), or `buf`, which the check above guarantees is at least as long as the
    // length the kernel may fill (`size` for read/pread/getdents64, the stat or statx
    // structure, GETXATTR_LEN for getxattr). Descriptors are plain integers: a closed or
    // invalid one makes the kernel return EBADF, nothing worse.
    let ret: c_long = unsafe {
        match op {
            Op::Open {
                call, flags, mode, ..
            } => match call {
                OpenCall::Open => sc(libc::SYS_open, a, *flags, *mode),
                OpenCall::Openat => sc(libc::SYS_openat, AT_FDCWD, a, *flags, *mode),
                OpenCall::Creat => sc(libc::SYS_creat, a, *mode),
            },
            Op::Close { .. } => sc(libc::SYS_close, fd),
            Op::Write { data, .. } => sc(libc::SYS_write, fd, data.as_ptr(), data.len()),
            Op::Pwrite { data, offset, .. } => {
                sc(libc::SYS_pwrite64, fd, data.as_ptr(), data.len(), *offset)
            }
            Op::Read { size, .. } => sc(libc::SYS_read, fd, buf, *size),
            Op::Pread { size, offset, .. } => sc(libc::SYS_pread64, fd, buf, *size, *offset),
            Op::Dup { .. } => sc(libc::SYS_dup, fd),
            Op::SyncFileRange {
                offset,
                size,
                flags,
                ..
            } => sc(libc::SYS_sync_file_range, fd, *offset, *size, *flags),
            Op::FdSync { call, .. } => match call {
                SyncCall::Fsync => sc(libc::SYS_fsync, fd),
                SyncCall::Fdatasync => sc(libc::SYS_fdatasync, fd),
                SyncCall::Syncfs => sc(libc::SYS_syncfs, fd),
            },
            Op::Sync => sc(libc::SYS_sync),
            Op::Rename { call, flags, .. } => match call {
                RenameCall::Rename => sc(libc::SYS_rename, a, b),
                RenameCall::Renameat => sc(libc::SYS_renameat, AT_FDCWD, a, AT_FDCWD, b),
                RenameCall::Renameat2 => sc(libc::SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, *flags),
            },
            Op::Link { at: false, .. } => sc(libc::SYS_link, a, b),
            Op::Link {
                at: true, flags, ..
            } => sc(libc::SYS_linkat, AT_FDCWD, a, AT_FDCWD, b, *flags),
            Op::Symlink { at: false, .. } => sc(libc::SYS_symlink, a, b),
            Op::Symlink { at: true, .. } => sc(libc::SYS_symlinkat, a, AT_FDCWD, b),
            Op::Unlink { .. } => sc(libc::SYS_unlink, a),
            Op::Unlinkat { flags, .. } => sc(libc::SYS_unlinkat, AT_FDCWD, a, *flags),
            Op::Mkdir {
                at: false, mode, ..
            } => sc(libc::SYS_mkdir, a, *mode),
            Op::Mkdir { at: true, mode, .. } => sc(libc::SYS_mkdirat, AT_FDCWD, a, *mode),
            Op::Rmdir { .. } => sc(libc::SYS_rmdir, a),
            Op::Stat {
                call, flags, mask, ..
            } => match call {
                StatCall::Stat => sc(libc::SYS_stat, a, buf),
                StatCall::Lstat => sc(libc::SYS_lstat, a, buf),
                StatCall::Fstatat => sc(libc::SYS_newfstatat, AT_FDCWD, a, buf, *flags),
                StatCall::Statx => sc(libc::SYS_statx, AT_FDCWD, a, *flags, *mask, buf),
            },
            Op::Fstat { .. } => sc(libc::SYS_fstat, fd, buf),
            Op::Truncate { size, .. } => sc(libc::SYS_truncate, a, *size),
            Op::Ftruncate { size, .. } => sc(libc::SYS_ftruncate, fd, *size),
            Op::Fallocate {
                flags,
                offset,
                size,
                ..
            } => sc(libc::SYS_fallocate, fd, *flags, *offset, *size),
            Op::Chmod {
                at: false, mode, ..
            } => sc(libc::SYS_chmod, a, *mode),
            Op::Chmod { at: true, mode, .. } => sc(libc::SYS_fchmodat, AT_FDCWD, a, *mode),
            Op::Fchmod { mode, .. } => sc(libc::SYS_fchmod, fd, *mode),
            Op::Chown {
                call,
                uid,
                gid,
                flags,
                ..
            } => match call {
                ChownCall::Chown => sc(libc::SYS_chown, a, *uid, *gid),
                ChownCall::Lchown => sc(libc::SYS_lchown, a, *uid, *gid),
                ChownCall::Fchownat => sc(libc::SYS_fchownat, AT_FDCWD, a, *uid, *gid, *flags),
            },
            Op::Fchown { uid, gid, .. } => sc(libc::SYS_fchown, fd, *uid, *gid),
            Op::Utimensat {
                path: Some(_),
                flags,
                ..
            } => sc(
                libc::SYS_utimensat,
                AT_FDCWD,
                a,
                std::ptr::null::<u8>(),
                *flags,
            ),
            Op::Utimensat {
                path: None, flags, ..
            } => sc(
                libc::SYS_utimensat,
                fd,
                std::ptr::null::<u8>(),
                std::ptr::null::<u8>(),
                *flags,
            ),
            Op::Access {
                at: false, mode, ..
            } => sc(libc::SYS_access, a, *mode),
            Op::Access { at: true, mode, .. } => sc(libc::SYS_faccessat, AT_FDCWD, a, *mode),
            Op::Setxattr {
                name, value, flags, ..
            } => sc(
                libc::SYS_setxattr,
                a,
                name.as_ptr(),
                value.as_ptr(),
                value.len(),
                *flags,
            ),
            Op::Getxattr { name, .. } => {
                sc(libc::SYS_getxattr, a, name.as_ptr(), buf, GETXATTR_LEN)
            }
            Op::Removexattr { name, .. } => sc(libc::SYS_removexattr, a, name.as_ptr()),
            Op::Getdents64 { size, .. } => sc(libc::SYS_getdents64, fd, buf, *size),
        }
    };
    check(ret)
}

/// `mkdir(2)`.
pub fn mkdir(path: &CStr, mode: u32) -> SysResult {
    // SAFETY: `path` is NUL-terminated and borrowed for the call.
    check(unsafe { libc::syscall(libc::SYS_mkdir, path.as_ptr(), mode) })
}

/// `openat(AT_FDCWD, path, flags, mode)`; the new descriptor.
pub fn openat(path: &CStr, flags: i32, mode: u32) -> Result<i32, Errno> {
    // SAFETY: `path` is NUL-terminated and borrowed for the call.
    check(unsafe { libc::syscall(libc::SYS_openat, AT_FDCWD, path.as_ptr(), flags, mode) })
        .map(|fd| fd as i32)
}

/// `write(2)` of the whole of `data` in one call; the bytes written.
pub fn write(fd: i32, data: &[u8]) -> SysResult {
    // SAFETY: `data` is a live slice and its exact length is passed with it.
    check(unsafe { libc::syscall(libc::SYS_write, fd, data.as_ptr(), data.len()) })
}

/// `fsync(2)`.
pub fn fsync(fd: i32) -> SysResult {
    // SAFETY: no pointers; an invalid descriptor is EBADF.
    check(unsafe { libc::syscall(libc::SYS_fsync, fd) })
}

/// `close(2)` of a descriptor this crate opened by number (a signature's slot).
pub fn close(fd: i32) {
    // SAFETY: no pointers. The caller owns `fd` (the executor's slot table) and forgets
    // it after this call, so no other owner's descriptor is closed.
    unsafe { libc::close(fd) };
}

/// `sync(2)`.
pub fn sync() {
    // SAFETY: no arguments.
    unsafe { libc::sync() };
}

/// The calls of a dbench loadfile's operations (`exec::script`): each exactly the syscall
/// glibc issues for the libc function dbench calls (`stat` is `newfstatat(AT_FDCWD, path,
/// buf, 0)`, `opendir` is `openat` with `O_DIRECTORY` …), with typed buffers.
pub mod script {
    use super::*;

    /// `newfstatat(AT_FDCWD, path, st, 0)`: glibc's `stat`.
    pub fn stat(path: &CStr, st: &mut libc::stat) -> SysResult {
        // SAFETY: `path` is NUL-terminated and borrowed for the call; `st` is a live,
        // exclusively borrowed `struct stat`, exactly what the kernel writes.
        check(unsafe {
            libc::syscall(
                libc::SYS_newfstatat,
                AT_FDCWD,
                path.as_ptr(),
                st as *mut libc::stat,
                0,
            )
        })
    }

    /// `fstat(fd, st)`.
    pub fn fstat(fd: i32, st: &mut libc::stat) -> SysResult {
        // SAFETY: `st` is a live, exclusively borrowed `struct stat`; a bad descriptor is
        // EBADF.
        check(unsafe { libc::syscall(libc::SYS_fstat, fd, st as *mut libc::stat) })
    }

    /// `openat(AT_FDCWD, path, flags, mode)`.
    pub fn open(path: &CStr, flags: i32, mode: u32) -> SysResult {
        // SAFETY: `path` is NUL-terminated and borrowed for the call.
        check(unsafe { libc::syscall(libc::SYS_openat, AT_FDCWD, path.as_ptr(), flags, mode) })
    }

    /// `close(fd)` of a descriptor the caller owns and forgets.
    pub fn close(fd: i32) -> SysResult {
        // SAFETY: no pointers; the caller's handle table owns `fd` and drops it.
        check(unsafe { libc::syscall(libc::SYS_close, fd) })
    }

    /// `getdents64(fd, buf, buf.len())`: directory entries into `buf`.
    pub fn getdents64(fd: i32, buf: &mut [u8]) -> SysResult {
        // SAFETY: `buf` is a live, exclusively borrowed slice and its exact length is the
        // count passed: the kernel writes at most that many bytes.
        check(unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) })
    }

    /// `pread64(fd, buf, buf.len(), offset)`.
    pub fn pread(fd: i32, buf: &mut [u8], offset: i64) -> SysResult {
        // SAFETY: `buf` is a live, exclusively borrowed slice of exactly the length passed.
        check(unsafe { libc::syscall(libc::SYS_pread64, fd, buf.as_mut_ptr(), buf.len(), offset) })
    }

    /// `pwrite64(fd, data, data.len(), offset)`.
    pub fn pwrite(fd: i32, data: &[u8], offset: i64) -> SysResult {
        // SAFETY: `data` is a live slice of exactly the length passed; the kernel only
        // reads it.
        check(unsafe { libc::syscall(libc::SYS_pwrite64, fd, data.as_ptr(), data.len(), offset) })
    }

    /// `fsync(fd)`.
    pub fn fsync(fd: i32) -> SysResult {
        // SAFETY: no pointers.
        check(unsafe { libc::syscall(libc::SYS_fsync, fd) })
    }

    /// `mkdir(path, mode)`.
    pub fn mkdir(path: &CStr, mode: u32) -> SysResult {
        super::mkdir(path, mode)
    }

    /// `unlink(path)`.
    pub fn unlink(path: &CStr) -> SysResult {
        // SAFETY: `path` is NUL-terminated and borrowed for the call.
        check(unsafe { libc::syscall(libc::SYS_unlink, path.as_ptr()) })
    }

    /// `rmdir(path)`.
    pub fn rmdir(path: &CStr) -> SysResult {
        // SAFETY: `path` is NUL-terminated and borrowed for the call.
        check(unsafe { libc::syscall(libc::SYS_rmdir, path.as_ptr()) })
    }

    /// `rename(from, to)`.
    pub fn rename(from: &CStr, to: &CStr) -> SysResult {
        // SAFETY: both paths are NUL-terminated and borrowed for the call.
        check(unsafe { libc::syscall(libc::SYS_rename, from.as_ptr(), to.as_ptr()) })
    }

    /// `statfs(path, st)`: glibc's `statvfs`.
    pub fn statfs(path: &CStr, st: &mut libc::statfs) -> SysResult {
        // SAFETY: `path` is NUL-terminated and borrowed; `st` is a live, exclusively
        // borrowed `struct statfs`, exactly what the kernel writes.
        check(unsafe { libc::syscall(libc::SYS_statfs, path.as_ptr(), st as *mut libc::statfs) })
    }

    /// `utimensat(AT_FDCWD, path, [atime, mtime], 0)` with whole seconds: glibc's `utime`.
    pub fn utime(path: &CStr, atime: i64, mtime: i64) -> SysResult {
        let times = [
            libc::timespec {
                tv_sec: atime,
                tv_nsec: 0,
            },
            libc::timespec {
                tv_sec: mtime,
                tv_nsec: 0,
            },
        ];
        // SAFETY: `path` is NUL-terminated and borrowed; `times` is a live array of the two
        // timespecs utimensat reads.
        check(unsafe {
            libc::syscall(
                libc::SYS_utimensat,
                AT_FDCWD,
                path.as_ptr(),
                times.as_ptr(),
                0,
            )
        })
    }

    /// `fcntl(fd, F_SETLKW, {l_type, SEEK_SET, start, len})`: a blocking record lock
    /// (`F_WRLCK`) or its release (`F_UNLCK`).
    pub fn lock_wait(fd: i32, l_type: i32, start: i64, len: i64) -> SysResult {
        let fl = libc::flock {
            l_type: l_type as libc::c_short,
            l_whence: libc::SEEK_SET as libc::c_short,
            l_start: start,
            l_len: len,
            l_pid: 0,
        };
        // SAFETY: `fl` is a live `struct flock` the kernel reads (F_SETLKW does not write it).
        check(unsafe {
            libc::syscall(
                libc::SYS_fcntl,
                fd,
                libc::F_SETLKW,
                &fl as *const libc::flock,
            )
        })
    }

    /// A `struct stat` for [`stat`] and [`fstat`] to fill.
    pub fn empty_stat() -> libc::stat {
        // SAFETY: `struct stat` is plain integers; all zeroes is a valid value.
        unsafe { std::mem::zeroed() }
    }

    /// A `struct statfs` for [`statfs`] to fill.
    pub fn empty_statfs() -> libc::statfs {
        // SAFETY: `struct statfs` is plain integers; all zeroes is a valid value.
        unsafe { std::mem::zeroed() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_shorter_than_the_call_needs_is_refused_before_the_kernel() {
        let op = Op::Pread {
            slot: 0,
            size: 1 << 20,
            offset: 0,
        };
        let mut small = vec![0u8; 4096];
        assert_eq!(
            issue(&op, -1, c"", c"", &mut small),
            Err(Errno(libc::EFAULT))
        );
        // Large enough: the kernel is asked, and says the descriptor is bad.
        let mut big = vec![0u8; 1 << 20];
        assert_eq!(issue(&op, -1, c"", c"", &mut big), Err(Errno(libc::EBADF)));
    }
}
