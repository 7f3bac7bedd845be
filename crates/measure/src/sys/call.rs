//! The system calls of a signature's steps, one function each, issued by the `syscall`
//! instruction with an explicit number where the executor's loop inlines them (`step`),
//! and the few untimed calls the executor prepares a case with.
//!
//! Soundness rests on facts each function checks itself rather than trusting its callers:
//! paths are `&CStr` (NUL-terminated, live for the call), and a buffer the kernel writes
//! into is a `&mut [u8]` whose own length is the length passed to the kernel, or — for
//! the fixed structures of the stat family — at least that structure's size.

use super::{Errno, SysResult, check};
use libc::{AT_FDCWD, c_long};
use std::ffi::CStr;

/// The calls a signature's steps issue (`exec::steps` picks one per op), named as the
/// syscalls are, `*at` ones relative to the working directory (`AT_FDCWD`). Descriptors
/// are plain integers: a closed or invalid one makes the kernel return EBADF, nothing
/// worse.
pub mod step {
    use super::*;

    /// A system call's argument as the 64-bit register the kernel reads it from: integers
    /// widened (signed ones with their sign — the kernel reads an `int` from the low half),
    /// pointers as their address.
    pub trait Word {
        fn word(self) -> usize;
    }
    impl Word for i32 {
        #[inline(always)]
        fn word(self) -> usize {
            self as isize as usize
        }
    }
    impl Word for u32 {
        #[inline(always)]
        fn word(self) -> usize {
            self as usize
        }
    }
    impl Word for u64 {
        #[inline(always)]
        fn word(self) -> usize {
            self as usize
        }
    }
    impl Word for usize {
        #[inline(always)]
        fn word(self) -> usize {
            self
        }
    }
    impl<T> Word for *const T {
        #[inline(always)]
        fn word(self) -> usize {
            self as usize
        }
    }
    impl<T> Word for *mut T {
        #[inline(always)]
        fn word(self) -> usize {
            self as usize
        }
    }

    /// System call `number` with `args` (unused ones 0), issued by the `syscall`
    /// instruction where this is inlined — in the executor's loop, so the instruction lies
    /// in each copy of it (`exec::steps::LAYOUTS`), not in one C library function every
    /// copy calls. Returns the kernel's value: -4095…-1 is an error number, negated.
    ///
    /// # Safety
    /// Every pointer among `args` must be valid for what the call `number` does with it
    /// (read a NUL-terminated path, read or write a slice of the length passed beside it).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn raw(number: c_long, args: [usize; 6]) -> c_long {
        let ret: c_long;
        // SAFETY: the x86-64 Linux system call convention: the number in rax, the
        // arguments in rdi, rsi, rdx, r10, r8, r9; the kernel returns in rax and
        // overwrites rcx and r11 (declared clobbered) and no other register, and never
        // touches the user stack. What it reads or writes through the arguments is the
        // caller's contract (this function's # Safety), so memory is not declared
        // untouched.
        unsafe {
            std::arch::asm!(
                "syscall",
                inlateout("rax") number => ret,
                in("rdi") args[0],
                in("rsi") args[1],
                in("rdx") args[2],
                in("r10") args[3],
                in("r8") args[4],
                in("r9") args[5],
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        ret
    }

    /// Elsewhere, through the C library's `syscall(2)` (its -1 and errno made the
    /// negated error number `raw` returns).
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    unsafe fn raw(number: c_long, a: [usize; 6]) -> c_long {
        // SAFETY: as the x86-64 variant: the caller's contract covers the pointers.
        let r = unsafe { libc::syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]) };
        if r < 0 {
            -c_long::from(Errno::last().0)
        } else {
            r
        }
    }

    /// `raw`'s return as a result: -4095…-1 the error number, else the value.
    #[inline(always)]
    fn checked(ret: c_long) -> SysResult {
        if (-4095..0).contains(&ret) {
            Err(Errno(-ret as i32))
        } else {
            Ok(ret)
        }
    }

    /// A null pointer for an argument the kernel accepts as null (utimensat's times:
    /// "now"; futimens' path).
    const NULL: *const u8 = std::ptr::null();

    /// Up to six arguments as the registers' words, the rest 0.
    macro_rules! words {
        () => {
            [0usize; 6]
        };
        ($a:expr) => {
            [Word::word($a), 0, 0, 0, 0, 0]
        };
        ($a:expr, $b:expr) => {
            [Word::word($a), Word::word($b), 0, 0, 0, 0]
        };
        ($a:expr, $b:expr, $c:expr) => {
            [Word::word($a), Word::word($b), Word::word($c), 0, 0, 0]
        };
        ($a:expr, $b:expr, $c:expr, $d:expr) => {
            [
                Word::word($a),
                Word::word($b),
                Word::word($c),
                Word::word($d),
                0,
                0,
            ]
        };
        ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
            [
                Word::word($a),
                Word::word($b),
                Word::word($c),
                Word::word($d),
                Word::word($e),
                0,
            ]
        };
        ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr) => {
            [
                Word::word($a),
                Word::word($b),
                Word::word($c),
                Word::word($d),
                Word::word($e),
                Word::word($f),
            ]
        };
    }

    /// What the kernel returned, with a call whose only pointers are the NUL-terminated
    /// paths and slices its arguments borrow for the call, each slice with its own
    /// length passed beside it.
    macro_rules! call {
        ($number:expr $(, $arg:expr)* $(,)?) => {{
            let args = words!($($arg),*);
            // SAFETY: the pointers among the arguments come from `&CStr` paths (NUL-
            // terminated, borrowed for the call), from slices passed with their own
            // length (`as_ptr`/`as_mut_ptr` beside `len()`), or are null where the kernel
            // takes null; a stat-family buffer is checked by the caller to hold the
            // structure. Everything else is an integer.
            checked(unsafe { raw($number, args) })
        }};
    }

    /// Whether `out` can hold a `T` the kernel writes (the stat family's structures).
    fn holds<T>(out: &[u8]) -> Result<(), Errno> {
        if out.len() < std::mem::size_of::<T>() {
            return Err(Errno(libc::EFAULT));
        }
        Ok(())
    }

    /// One function per line: `fn NAME(ARGS) => (NUMBER, ARGUMENTS…);` becomes a safe,
    /// always-inlined `pub fn NAME(ARGS) -> SysResult` issuing that call.
    macro_rules! calls {
        ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) => ($($x:expr),+);)*) => {
            $($(#[$doc])* #[inline(always)] pub fn $name($($arg: $ty),*) -> SysResult {
                call!($($x),+)
            })*
        };
    }

    calls! {
        fn open(path: &CStr, flags: i32, mode: u32) => (libc::SYS_open, path.as_ptr(), flags, mode);
        fn openat(path: &CStr, flags: i32, mode: u32) => (libc::SYS_openat, AT_FDCWD, path.as_ptr(), flags, mode);
        fn creat(path: &CStr, mode: u32) => (libc::SYS_creat, path.as_ptr(), mode);
        fn close(fd: i32) => (libc::SYS_close, fd);
        fn write(fd: i32, data: &[u8]) => (libc::SYS_write, fd, data.as_ptr(), data.len());
        fn pwrite64(fd: i32, data: &[u8], offset: u64) => (libc::SYS_pwrite64, fd, data.as_ptr(), data.len(), offset);
        fn read(fd: i32, buf: &mut [u8]) => (libc::SYS_read, fd, buf.as_mut_ptr(), buf.len());
        fn pread64(fd: i32, buf: &mut [u8], offset: u64) => (libc::SYS_pread64, fd, buf.as_mut_ptr(), buf.len(), offset);
        fn dup(fd: i32) => (libc::SYS_dup, fd);
        fn sync_file_range(fd: i32, offset: u64, size: u64, flags: u32) => (libc::SYS_sync_file_range, fd, offset, size, flags);
        fn fsync(fd: i32) => (libc::SYS_fsync, fd);
        fn fdatasync(fd: i32) => (libc::SYS_fdatasync, fd);
        fn syncfs(fd: i32) => (libc::SYS_syncfs, fd);
        fn sync() => (libc::SYS_sync);
        fn rename(from: &CStr, to: &CStr) => (libc::SYS_rename, from.as_ptr(), to.as_ptr());
        fn renameat(from: &CStr, to: &CStr) => (libc::SYS_renameat, AT_FDCWD, from.as_ptr(), AT_FDCWD, to.as_ptr());
        fn renameat2(from: &CStr, to: &CStr, flags: u32) => (libc::SYS_renameat2, AT_FDCWD, from.as_ptr(), AT_FDCWD, to.as_ptr(), flags);
        fn link(from: &CStr, to: &CStr) => (libc::SYS_link, from.as_ptr(), to.as_ptr());
        fn linkat(from: &CStr, to: &CStr, flags: i32) => (libc::SYS_linkat, AT_FDCWD, from.as_ptr(), AT_FDCWD, to.as_ptr(), flags);
        fn symlink(target: &CStr, path: &CStr) => (libc::SYS_symlink, target.as_ptr(), path.as_ptr());
        fn symlinkat(target: &CStr, path: &CStr) => (libc::SYS_symlinkat, target.as_ptr(), AT_FDCWD, path.as_ptr());
        fn unlink(path: &CStr) => (libc::SYS_unlink, path.as_ptr());
        fn unlinkat(path: &CStr, flags: i32) => (libc::SYS_unlinkat, AT_FDCWD, path.as_ptr(), flags);
        fn mkdir(path: &CStr, mode: u32) => (libc::SYS_mkdir, path.as_ptr(), mode);
        fn mkdirat(path: &CStr, mode: u32) => (libc::SYS_mkdirat, AT_FDCWD, path.as_ptr(), mode);
        fn rmdir(path: &CStr) => (libc::SYS_rmdir, path.as_ptr());
        fn truncate(path: &CStr, size: u64) => (libc::SYS_truncate, path.as_ptr(), size);
        fn ftruncate(fd: i32, size: u64) => (libc::SYS_ftruncate, fd, size);
        fn fallocate(fd: i32, flags: i32, offset: u64, size: u64) => (libc::SYS_fallocate, fd, flags, offset, size);
        fn chmod(path: &CStr, mode: u32) => (libc::SYS_chmod, path.as_ptr(), mode);
        fn fchmodat(path: &CStr, mode: u32) => (libc::SYS_fchmodat, AT_FDCWD, path.as_ptr(), mode);
        fn fchmod(fd: i32, mode: u32) => (libc::SYS_fchmod, fd, mode);
        fn chown(path: &CStr, uid: u32, gid: u32) => (libc::SYS_chown, path.as_ptr(), uid, gid);
        fn lchown(path: &CStr, uid: u32, gid: u32) => (libc::SYS_lchown, path.as_ptr(), uid, gid);
        fn fchownat(path: &CStr, uid: u32, gid: u32, flags: i32) => (libc::SYS_fchownat, AT_FDCWD, path.as_ptr(), uid, gid, flags);
        fn fchown(fd: i32, uid: u32, gid: u32) => (libc::SYS_fchown, fd, uid, gid);
        /// `utimensat(AT_FDCWD, path, NULL, flags)`: both times "now".
        fn utimensat_now(path: &CStr, flags: i32) => (libc::SYS_utimensat, AT_FDCWD, path.as_ptr(), NULL, flags);
        /// `utimensat(fd, NULL, NULL, flags)` (futimens): both times "now".
        fn futimens_now(fd: i32, flags: i32) => (libc::SYS_utimensat, fd, NULL, NULL, flags);
        fn access(path: &CStr, mode: i32) => (libc::SYS_access, path.as_ptr(), mode);
        fn faccessat(path: &CStr, mode: i32) => (libc::SYS_faccessat, AT_FDCWD, path.as_ptr(), mode);
        fn removexattr(path: &CStr, name: &CStr) => (libc::SYS_removexattr, path.as_ptr(), name.as_ptr());
        fn getdents64(fd: i32, out: &mut [u8]) => (libc::SYS_getdents64, fd, out.as_mut_ptr(), out.len());
    }

    /// `stat(2)` into `out` (at least a `struct stat`, else EFAULT without a call).
    #[inline(always)]
    pub fn stat(path: &CStr, out: &mut [u8]) -> SysResult {
        holds::<libc::stat>(out)?;
        call!(libc::SYS_stat, path.as_ptr(), out.as_mut_ptr())
    }
    #[inline(always)]
    pub fn lstat(path: &CStr, out: &mut [u8]) -> SysResult {
        holds::<libc::stat>(out)?;
        call!(libc::SYS_lstat, path.as_ptr(), out.as_mut_ptr())
    }
    #[inline(always)]
    pub fn newfstatat(path: &CStr, out: &mut [u8], flags: i32) -> SysResult {
        holds::<libc::stat>(out)?;
        call!(
            libc::SYS_newfstatat,
            AT_FDCWD,
            path.as_ptr(),
            out.as_mut_ptr(),
            flags
        )
    }
    #[inline(always)]
    pub fn statx(path: &CStr, flags: i32, mask: u32, out: &mut [u8]) -> SysResult {
        holds::<libc::statx>(out)?;
        call!(
            libc::SYS_statx,
            AT_FDCWD,
            path.as_ptr(),
            flags,
            mask,
            out.as_mut_ptr()
        )
    }
    #[inline(always)]
    pub fn fstat(fd: i32, out: &mut [u8]) -> SysResult {
        holds::<libc::stat>(out)?;
        call!(libc::SYS_fstat, fd, out.as_mut_ptr())
    }
    #[inline(always)]
    pub fn setxattr(path: &CStr, name: &CStr, value: &[u8], flags: i32) -> SysResult {
        let (p, n) = (path.as_ptr(), name.as_ptr());
        call!(libc::SYS_setxattr, p, n, value.as_ptr(), value.len(), flags)
    }
    #[inline(always)]
    pub fn getxattr(path: &CStr, name: &CStr, out: &mut [u8]) -> SysResult {
        let (p, n) = (path.as_ptr(), name.as_ptr());
        call!(libc::SYS_getxattr, p, n, out.as_mut_ptr(), out.len())
    }
}

// The untimed calls the executor prepares a case with (populating files, syncing) are the
// steps' own: `mkdir(2)`, `write(2)` of the whole of `data` in one call, `fsync(2)`.
pub use step::{fsync, mkdir, write};

/// `openat(AT_FDCWD, path, flags, mode)`; the new descriptor.
pub fn openat(path: &CStr, flags: i32, mode: u32) -> Result<i32, Errno> {
    step::openat(path, flags, mode).map(|fd| fd as i32)
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

    /// A stat buffer too small for its structure is refused without a call.
    #[test]
    fn a_stat_buffer_shorter_than_its_structure_is_refused() {
        let mut small = vec![0u8; 16];
        assert_eq!(step::stat(c"/", &mut small), Err(Errno(libc::EFAULT)));
        assert_eq!(
            step::statx(c"/", 0, 0, &mut small),
            Err(Errno(libc::EFAULT))
        );
        let mut whole = vec![0u8; std::mem::size_of::<libc::statx>()];
        assert_eq!(step::stat(c"/", &mut whole), Ok(0));
        assert_eq!(step::fstat(-1, &mut whole), Err(Errno(libc::EBADF)));
    }

    /// The `syscall` instruction's arguments and results as the C library's wrapper gave
    /// them: a relative `*at` call (AT_FDCWD, negative, in a register), a descriptor, a
    /// buffer written and read back with its length, 64-bit offsets, flags, and error
    /// numbers negated back.
    #[test]
    fn steps_pass_every_kind_of_argument_and_return_errors_by_number() {
        let dir = std::env::temp_dir().join(format!("sigbench-step-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path =
            std::ffi::CString::new(dir.join("f").into_os_string().into_encoded_bytes()).unwrap();
        let fd = step::openat(&path, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600).unwrap();
        assert!(fd >= 0);
        let fd = fd as i32;
        assert_eq!(step::pwrite64(fd, b"hello", 1 << 33), Ok(5));
        let mut back = [0u8; 8];
        assert_eq!(step::pread64(fd, &mut back, (1 << 33) + 1), Ok(4));
        assert_eq!(&back[..4], b"ello");
        assert_eq!(
            step::openat(&path, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600),
            Err(Errno(libc::EEXIST))
        );
        assert_eq!(
            step::renameat2(&path, &path, u32::MAX),
            Err(Errno(libc::EINVAL))
        );
        assert_eq!(step::close(fd), Ok(0));
        assert_eq!(step::close(fd), Err(Errno(libc::EBADF)));
        assert_eq!(step::unlinkat(&path, 0), Ok(0));
        assert_eq!(step::unlink(&path), Err(Errno(libc::ENOENT)));
        // The relative form, from the working directory (AT_FDCWD is -100).
        assert_eq!(step::faccessat(c".", libc::F_OK), Ok(0));
        assert_eq!(step::sync(), Ok(0));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
