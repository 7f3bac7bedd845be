//! Safe wrappers for what the crate asks of the kernel outside a step's own call: mounts,
//! loop and filesystem ioctls, perf events, locks, rusage, uname, modules, confinement and
//! power-off. Each takes typed, borrowed arguments and returns `io::Result`, so callers
//! need no `unsafe` and no errno handling.

use std::ffi::CStr;
use std::io::{Error, Result};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

fn ok(ret: libc::c_int) -> Result<()> {
    if ret < 0 {
        Err(Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The effective user id.
pub fn geteuid() -> u32 {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::geteuid() }
}

/// `mount(2)`.
pub fn mount(
    source: &CStr,
    target: &CStr,
    fstype: &CStr,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> Result<()> {
    let data = data.map_or(std::ptr::null(), |d| d.as_ptr().cast::<libc::c_void>());
    // SAFETY: every string is NUL-terminated and borrowed for the call; `data` is a
    // NUL-terminated option string or null, which mount(2) accepts.
    ok(unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data,
        )
    })
}

/// `umount2(2)`.
pub fn umount2(target: &CStr, flags: libc::c_int) -> Result<()> {
    // SAFETY: `target` is NUL-terminated and borrowed for the call.
    ok(unsafe { libc::umount2(target.as_ptr(), flags) })
}

/// `sched_setaffinity(2)` of the calling thread: run it on CPU `cpu` only.
pub fn pin_to_cpu(cpu: usize) -> Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: an all-zero `cpu_set_t` is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above), inside the set's bits.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a `cpu_set_t` of the size given, read by the kernel during the call.
    ok(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })
}

/// `flock(2)` (`LOCK_EX`, `LOCK_NB`, …).
pub fn flock(fd: BorrowedFd<'_>, operation: libc::c_int) -> Result<()> {
    // SAFETY: no pointers; the descriptor is borrowed, so it is open.
    ok(unsafe { libc::flock(fd.as_raw_fd(), operation) })
}

/// `struct loop_info64` (linux/loop.h).
#[repr(C)]
pub struct LoopInfo64 {
    pub lo_device: u64,
    pub lo_inode: u64,
    pub lo_rdevice: u64,
    pub lo_offset: u64,
    pub lo_sizelimit: u64,
    pub lo_number: u32,
    pub lo_encrypt_type: u32,
    pub lo_encrypt_key_size: u32,
    pub lo_flags: u32,
    pub lo_file_name: [u8; LO_NAME_SIZE],
    pub lo_crypt_name: [u8; LO_NAME_SIZE],
    pub lo_encrypt_key: [u8; 32],
    pub lo_init: [u64; 2],
}

pub const LO_NAME_SIZE: usize = 64;

/// `struct loop_config` (linux/loop.h), the argument of LOOP_CONFIGURE.
#[repr(C)]
pub struct LoopConfig {
    pub fd: u32,
    pub block_size: u32,
    pub info: LoopInfo64,
    pub reserved: [u64; 8],
}

const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const KVM_GET_API_VERSION: libc::c_ulong = 0xAE00;
/// `_IOW('R', 0x03, int[2])`
const RNDADDENTROPY: libc::c_ulong = 0x4008_5203;

/// `struct rand_pool_info` with a 32-byte buffer.
#[repr(C)]
struct RandPoolInfo {
    entropy_count: libc::c_int,
    buf_size: libc::c_int,
    buf: [u8; 32],
}

/// RNDADDENTROPY on /dev/random: mix `seed` into the kernel's input pool and credit all of
/// its 256 bits, which initialises the kernel's random number generator at once.
pub fn credit_entropy(random: BorrowedFd<'_>, seed: &[u8; 32]) -> Result<()> {
    let info = RandPoolInfo {
        entropy_count: 256,
        buf_size: 32,
        buf: *seed,
    };
    // SAFETY: the kernel reads the two ints and then `buf_size` (32) bytes, which
    // `RandPoolInfo` holds in that layout (repr(C)); it is borrowed for the call.
    ok(unsafe {
        libc::ioctl(
            random.as_raw_fd(),
            RNDADDENTROPY,
            &info as *const RandPoolInfo,
        )
    })
}

/// LOOP_CTL_GET_FREE on /dev/loop-control: the number of a free loop device.
pub fn loop_ctl_get_free(ctl: BorrowedFd<'_>) -> Result<i32> {
    // SAFETY: the request takes no argument.
    let n = unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE) };
    ok(n).map(|_| n)
}

/// LOOP_CONFIGURE: attach `cfg.fd` to the loop device `dev`.
pub fn loop_configure(dev: BorrowedFd<'_>, cfg: &LoopConfig) -> Result<()> {
    // SAFETY: the kernel reads exactly a `struct loop_config`, which `LoopConfig` mirrors
    // field for field (repr(C)); it is borrowed for the call.
    ok(unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CONFIGURE, cfg as *const LoopConfig) })
}

/// LOOP_CLR_FD: detach the loop device `dev`.
pub fn loop_clr_fd(dev: BorrowedFd<'_>) -> Result<()> {
    // SAFETY: the request takes an integer argument (unused, 0).
    ok(unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CLR_FD, 0) })
}

/// KVM_GET_API_VERSION on /dev/kvm.
pub fn kvm_api_version(kvm: BorrowedFd<'_>) -> Result<i32> {
    // SAFETY: the request takes no argument.
    let v = unsafe { libc::ioctl(kvm.as_raw_fd(), KVM_GET_API_VERSION) };
    ok(v).map(|_| v)
}

/// FS_IOC_GETFLAGS: the inode flags of `fd` (chattr's letters).
pub fn fs_get_flags(fd: BorrowedFd<'_>) -> Result<libc::c_long> {
    let mut flags: libc::c_long = 0;
    // SAFETY: the kernel writes one `long` (the request is sized for it) into `flags`,
    // which lives for the call.
    ok(unsafe { libc::ioctl(fd.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) })?;
    Ok(flags)
}

/// FS_IOC_SETFLAGS.
pub fn fs_set_flags(fd: BorrowedFd<'_>, flags: libc::c_long) -> Result<()> {
    // SAFETY: the kernel reads one `long` from `&flags`, which lives for the call.
    ok(unsafe { libc::ioctl(fd.as_raw_fd(), libc::FS_IOC_SETFLAGS, &flags) })
}

/// `setxattr(2)`.
pub fn setxattr(path: &CStr, name: &CStr, value: &[u8]) -> Result<()> {
    // SAFETY: both strings are NUL-terminated; `value` is passed with its exact length.
    ok(unsafe {
        libc::setxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    })
}

/// `getrusage(RUSAGE_SELF)`: this process, all its threads.
pub fn rusage_self() -> libc::rusage {
    // SAFETY: `rusage` is plain integers, for which all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel fills the structure `ru` points to; RUSAGE_SELF cannot fail.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru
}

/// RLIMIT_NPROC's soft limit (None: unlimited).
pub fn nproc_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a live, exclusively borrowed rlimit the kernel fills.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// `uname(2)`.
pub fn uname() -> libc::utsname {
    // SAFETY: `utsname` is arrays of bytes, for which all-zero is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel fills the structure (NUL-terminated fields); cannot fail.
    unsafe { libc::uname(&mut u) };
    u
}

/// `membarrier(MEMBARRIER_CMD_GLOBAL)`: returns after every CPU has passed through a
/// quiescent state (an RCU grace period, as far as freeing goes).
pub fn membarrier_global() {
    const MEMBARRIER_CMD_GLOBAL: libc::c_int = 1;
    // SAFETY: no pointers.
    unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) };
}

/// `finit_module(2)` with no parameters.
pub fn finit_module(module: BorrowedFd<'_>) -> Result<()> {
    // SAFETY: the parameter string is an empty NUL-terminated literal.
    let r = unsafe { libc::syscall(libc::SYS_finit_module, module.as_raw_fd(), c"".as_ptr(), 0) };
    ok(r as libc::c_int)
}

/// `sync(2)` then `reboot(2)` with `cmd` (RB_POWER_OFF, RB_AUTOBOOT, …).
pub fn sync_and_reboot(cmd: libc::c_int) -> Result<()> {
    // SAFETY: no pointers; reboot returns only on failure.
    unsafe { libc::sync() };
    // SAFETY: as above.
    ok(unsafe { libc::reboot(cmd) })
}

/// Give the calling thread its own filesystem context (root and working directory), so a
/// `chroot` it makes afterwards applies to it alone.
pub fn unshare_fs() -> Result<()> {
    // SAFETY: no pointers; CLONE_FS only copies the thread's fs_struct.
    ok(unsafe { libc::unshare(libc::CLONE_FS) })
}

/// Give the calling thread its own filesystem context and its own descriptor table: a
/// client of a run with several works in a directory of its own, and its descriptors are
/// its own as a process's are (the kernel's per-table locks are not shared).
pub fn unshare_fs_files() -> Result<()> {
    // SAFETY: no pointers; CLONE_FS and CLONE_FILES only copy the thread's fs_struct and
    // descriptor table.
    ok(unsafe { libc::unshare(libc::CLONE_FS | libc::CLONE_FILES) })
}

/// The calling thread's own resource usage (`RUSAGE_THREAD`): its CPU time and context
/// switches.
pub fn rusage_thread() -> libc::rusage {
    // SAFETY: an all-zero rusage is valid (plain integers); getrusage only writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live, exclusively borrowed rusage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru
}

/// CPU time the calling thread has used, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`:
/// exact, unlike rusage's tick-sampled split).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, exclusively borrowed timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `perf_event_open(2)` for `attr` on one CPU (all processes), close-on-exec.
pub fn perf_event_open(
    attr: &mut perf_event_open_sys::bindings::perf_event_attr,
    cpu: i32,
) -> Result<OwnedFd> {
    // SAFETY: `attr` is a valid, initialised perf_event_attr whose `size` field the
    // caller set; the kernel reads it (and may write its size back) during the call.
    let fd = unsafe {
        perf_event_open_sys::perf_event_open(
            attr,
            -1,
            cpu,
            -1,
            perf_event_open_sys::bindings::PERF_FLAG_FD_CLOEXEC as _,
        )
    };
    ok(fd)?;
    // SAFETY: `fd` is a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// PERF_EVENT_IOC_SET_FILTER.
pub fn perf_set_filter(fd: BorrowedFd<'_>, filter: &CStr) -> Result<()> {
    // SAFETY: the kernel copies the NUL-terminated filter string during the call (the
    // binding wants *mut, but the kernel only reads it).
    ok(unsafe {
        perf_event_open_sys::ioctls::SET_FILTER(fd.as_raw_fd(), filter.as_ptr() as *mut _)
    })
}

/// PERF_EVENT_IOC_RESET then PERF_EVENT_IOC_ENABLE.
pub fn perf_reset_enable(fd: BorrowedFd<'_>) {
    // SAFETY: both requests take an integer flag argument, no pointers.
    unsafe {
        perf_event_open_sys::ioctls::RESET(fd.as_raw_fd(), 0);
        perf_event_open_sys::ioctls::ENABLE(fd.as_raw_fd(), 0);
    }
}

/// PERF_EVENT_IOC_DISABLE.
pub fn perf_disable(fd: BorrowedFd<'_>) {
    // SAFETY: an integer flag argument, no pointers.
    unsafe { perf_event_open_sys::ioctls::DISABLE(fd.as_raw_fd(), 0) };
}

/// Remember in `slot` which signal arrived first (for the exit code): the handler only
/// stores to an atomic.
pub fn record_signal(sig: libc::c_int, slot: &'static std::sync::atomic::AtomicI32) -> Result<()> {
    use std::sync::atomic::Ordering;
    // SAFETY: the action only does a compare-exchange on a static atomic, which is
    // async-signal-safe; it allocates, locks and panics on nothing.
    unsafe {
        signal_hook::low_level::register(sig, move || {
            let _ = slot.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
        })
    }
    .map(|_| ())
}

/// Have the child `cmd` starts killed (SIGKILL) when the thread that started it ends —
/// also when sigbench is killed with SIGKILL, which leaves no chance to stop it: a QEMU
/// would run on as an orphan. The starting thread must own the child to its end (`vm::run`
/// boots and waits on one thread).
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid has no arguments and cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls may be made: prctl, getppid and _exit are, and it allocates
    // nothing and takes no lock (an io::Error from an errno is a plain integer).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(Error::last_os_error());
            }
            // The parent died before the prctl: nothing would ever deliver the signal.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// A sealed memory file holding `bytes` (`memfd_create`, then every seal): nobody — not
/// even its creator — can change, grow or shrink it, and it has no name in any directory,
/// so what a child opens as `/proc/self/fd/N` is exactly `bytes` (the cost plugin QEMU
/// loads as root is never a file another user could swap). Closed on exec unless passed
/// with [`keep_across_exec`].
pub fn sealed_memfd(name: &CStr, bytes: &[u8]) -> Result<OwnedFd> {
    use std::io::Write;
    // SAFETY: `name` is a NUL-terminated string that outlives the call; the flags are
    // plain integers.
    let fd =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: memfd_create returned a new descriptor that nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(owned);
    file.write_all(bytes)?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl with F_ADD_SEALS takes an integer argument; the descriptor is open
    // (owned by `file`).
    ok(unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) })?;
    Ok(OwnedFd::from(file))
}

/// Let the child `cmd` starts inherit `fd` (its close-on-exec flag cleared in the child
/// only, so other children started meanwhile do not get it). The caller keeps `fd` open
/// until the child has started.
pub fn keep_across_exec(cmd: &mut std::process::Command, fd: BorrowedFd<'_>) {
    use std::os::unix::process::CommandExt;
    let raw = fd.as_raw_fd();
    // SAFETY: the closure runs in the child between fork and exec: fcntl is
    // async-signal-safe, it allocates nothing and takes no lock; `raw` is open in the
    // child (fork copied the parent's table, and the caller keeps it open until spawn).
    unsafe {
        cmd.pre_exec(move || ok(libc::fcntl(raw, libc::F_SETFD, 0)));
    }
}

/// `kill(2)`.
pub fn kill(pid: i32, sig: libc::c_int) -> Result<()> {
    // SAFETY: no pointers; signalling a pid is memory-safe whatever the pid.
    ok(unsafe { libc::kill(pid, sig) })
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::gettid() }
}

/// Open `rel` (read-only) relative to the directory `dir`: reaches a /proc file through a
/// directory opened before the thread was confined to the test filesystem, where /proc
/// is not.
pub fn open_in(dir: BorrowedFd<'_>, rel: &CStr) -> Result<std::fs::File> {
    // SAFETY: `rel` is NUL-terminated and borrowed for the call; `dir` is open.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            rel.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
        )
    };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// The directory `dir` (the working directory when None) or what `name` names in it,
/// for `*at` calls.
fn at_fd(dir: Option<BorrowedFd<'_>>) -> libc::c_int {
    dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd())
}

/// Open the directory `name` in `dir` without following a symbolic link at `name`
/// (`O_DIRECTORY|O_NOFOLLOW`: a link is ELOOP, anything else ENOTDIR).
pub fn open_dir_at(dir: Option<BorrowedFd<'_>>, name: &CStr) -> Result<OwnedFd> {
    // SAFETY: `name` is NUL-terminated and borrowed for the call; `dir` is open or
    // AT_FDCWD.
    let fd = unsafe {
        libc::openat(
            at_fd(dir),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `mkdirat(2)`.
pub fn mkdir_at(dir: BorrowedFd<'_>, name: &CStr, mode: libc::mode_t) -> Result<()> {
    // SAFETY: `name` is NUL-terminated and borrowed for the call; `dir` is open.
    ok(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) })
}

/// Create the new file `name` in `dir` for writing: `O_CREAT|O_EXCL|O_NOFOLLOW`, so
/// nothing already there — a link above all — is opened.
pub fn create_new_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    mode: libc::mode_t,
) -> Result<std::fs::File> {
    // SAFETY: `name` is NUL-terminated and borrowed for the call; `dir` is open; the mode
    // is passed as the variadic argument O_CREAT requires.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// `renameat(2)` within one directory.
pub fn rename_at(dir: BorrowedFd<'_>, from: &CStr, to: &CStr) -> Result<()> {
    // SAFETY: both names are NUL-terminated and borrowed for the call; `dir` is open.
    ok(unsafe { libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr()) })
}

/// `unlinkat(2)` of a file (not a directory).
pub fn unlink_at(dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    // SAFETY: `name` is NUL-terminated and borrowed for the call; `dir` is open.
    ok(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) })
}

/// What `name` in `dir` is, itself (a link is not followed: `AT_SYMLINK_NOFOLLOW`).
pub fn lstat_at(dir: BorrowedFd<'_>, name: &CStr) -> Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is NUL-terminated and borrowed for the call; `st` is a `stat` the
    // kernel fills; `dir` is open.
    ok(unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    Ok(st)
}

/// Execute the no-op that is `mark` to the cost model's QEMU plugin (`sigbench_cost::Mark`:
/// `nopl 0x5167000K(%rax)`). Outside such a guest it is a no-op like any other.
#[inline(never)]
pub fn mark(mark: sigbench_cost::Mark) {
    use sigbench_cost::Mark;
    // SAFETY: each is a multi-byte NOP (`0F 1F /0` with a 32-bit displacement): it reads
    // and writes no memory, register or flag.
    unsafe {
        match mark {
            Mark::Open => std::arch::asm!(
                ".byte 0x0f, 0x1f, 0x80, 0x01, 0x00, 0x67, 0x51",
                options(nomem, nostack, preserves_flags)
            ),
            Mark::Pause => std::arch::asm!(
                ".byte 0x0f, 0x1f, 0x80, 0x02, 0x00, 0x67, 0x51",
                options(nomem, nostack, preserves_flags)
            ),
            Mark::Resume => std::arch::asm!(
                ".byte 0x0f, 0x1f, 0x80, 0x03, 0x00, 0x67, 0x51",
                options(nomem, nostack, preserves_flags)
            ),
            Mark::Close => std::arch::asm!(
                ".byte 0x0f, 0x1f, 0x80, 0x04, 0x00, 0x67, 0x51",
                options(nomem, nostack, preserves_flags)
            ),
            Mark::Arm => std::arch::asm!(
                ".byte 0x0f, 0x1f, 0x80, 0x05, 0x00, 0x67, 0x51",
                options(nomem, nostack, preserves_flags)
            ),
        }
    }
}

/// Anonymous memory whose pages were each touched (each one a page of the machine's
/// memory), and given back to the kernel one at a time (`release`): what a guest's state
/// uses to leave the page allocator's free lists fragmented its own way
/// (`plan::states::churn`). What is not released stays for the process's life: the
/// mapping is never unmapped (no `Drop`).
pub struct TouchedPages {
    at: *mut u8,
    pages: usize,
}

impl TouchedPages {
    /// `pages` pages, mapped and each written once.
    pub fn new(pages: usize) -> Result<TouchedPages> {
        let len = pages * 4096;
        // SAFETY: an anonymous private mapping at an address the kernel chooses: no
        // pointer is passed in, nothing existing is replaced; the result is checked.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(Error::last_os_error());
        }
        let at = at.cast::<u8>();
        for k in 0..pages {
            // SAFETY: `at` maps `len` writable bytes and `k * 4096 < len`; this process
            // holds the only reference to the mapping.
            unsafe { at.add(k * 4096).write_volatile(0x5a) };
        }
        Ok(TouchedPages { at, pages })
    }

    /// Give page `k` back to the kernel (MADV_DONTNEED: its memory freed now; the
    /// mapping stays, so no area is split).
    pub fn release(&mut self, k: usize) {
        if k < self.pages {
            // SAFETY: the range is one page inside the mapping made in `new`; DONTNEED
            // only drops its contents, which nothing reads.
            unsafe {
                libc::madvise(self.at.add(k * 4096).cast(), 4096, libc::MADV_DONTNEED);
            }
        }
    }
}

/// Read the byte at every `stride` of `mem`, `reads` of them from its start, `rounds`
/// times, and return their sum: five instructions a read whatever the stride or the
/// compiler's mood (the cost model's calibration compares strides instruction for
/// instruction). `reads × stride` must not exceed `mem`.
pub fn read_strided(mem: &[u8], stride: usize, reads: usize, rounds: usize) -> u64 {
    assert!(
        reads > 0 && stride > 0 && (reads - 1).saturating_mul(stride) < mem.len(),
        "read_strided: {reads} reads {stride} apart leave a slice of {}",
        mem.len()
    );
    let mut sum: u64 = 0;
    for _ in 0..rounds {
        // SAFETY: the loop reads `reads` bytes at `mem.as_ptr() + k × stride` for k below
        // `reads`, all inside `mem` (asserted above); it writes only the registers named.
        unsafe {
            std::arch::asm!(
                "2:",
                "movzx {byte:e}, byte ptr [{at}]",
                "add {sum}, {byte}",
                "add {at}, {stride}",
                "dec {left}",
                "jnz 2b",
                at = inout(reg) mem.as_ptr() => _,
                left = inout(reg) reads => _,
                stride = in(reg) stride,
                byte = out(reg) _,
                sum = inout(reg) sum,
                options(nostack, readonly)
            );
        }
    }
    sum
}

/// USER_HZ: the unit of /proc/stat's times (None if the system does not say).
pub fn clock_ticks_per_second() -> Option<u64> {
    // SAFETY: sysconf takes a constant and only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some(hz as u64)
}

/// CLOCK_MONOTONIC_COARSE in ns: it advances only at the timer tick.
pub fn coarse_now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Put the terminal `fd` in raw mode (cfmakeraw): bytes pass unchanged.
pub fn tty_raw(fd: BorrowedFd<'_>) -> Result<()> {
    // SAFETY: termios is plain data; all-zero is a valid value for tcgetattr to fill.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is a valid, writable termios for the call's duration.
    ok(unsafe { libc::tcgetattr(fd.as_raw_fd(), &mut t) })?;
    // SAFETY: `t` is a valid termios; cfmakeraw only changes its flags.
    unsafe { libc::cfmakeraw(&mut t) };
    // SAFETY: `t` is a valid termios, read for the call's duration.
    ok(unsafe { libc::tcsetattr(fd.as_raw_fd(), libc::TCSANOW, &t) })
}

/// tcdrain: wait until everything written to the terminal `fd` has been sent.
pub fn tty_drain(fd: BorrowedFd<'_>) -> Result<()> {
    // SAFETY: no pointers.
    ok(unsafe { libc::tcdrain(fd.as_raw_fd()) })
}
