//! What sigbench knows about each syscall, in one table that the op table (`step.rs`), the
//! executor (the name each step issues and is timed under) and the recorder (where a
//! traced call's paths and descriptor are, whether it changes the filesystem, whether it
//! only looks) all read. Adding a syscall: a row here, a row in `step::OPS`, a function in
//! `sys::call::step` and its arm in `exec::steps::issue`, and — if traces should record it
//! — a family in `record::steps`.

/// One syscall, named as the kernel and strace name it.
#[derive(Debug)]
pub struct Syscall {
    pub name: &'static str,
    /// Signature ops that issue it (the first is what the recorder writes).
    pub ops: &'static [&'static str],
    /// Its path arguments as strace prints them: (dirfd argument, path argument).
    pub paths: &'static [(Option<usize>, usize)],
    /// The first argument is the descriptor it works on.
    pub on_fd: bool,
    /// It changes the filesystem (what picks the tree a recording is taken from).
    pub mutates: bool,
    /// It only looks (stat, access, read): recorded only with --keep-probes.
    pub probe: bool,
    /// Why a trace's call is not turned into a step, when it is not.
    pub not_recorded: Option<&'static str>,
}

const NONE: &[(Option<usize>, usize)] = &[];
const PATH: &[(Option<usize>, usize)] = &[(None, 0)];
const AT_PATH: &[(Option<usize>, usize)] = &[(Some(0), 1)];

/// A row with every fact false: the rows below say what differs.
const BASE: Syscall = Syscall {
    name: "",
    ops: &[],
    paths: NONE,
    on_fd: false,
    mutates: false,
    probe: false,
    not_recorded: None,
};

#[rustfmt::skip]
pub const SYSCALLS: &[Syscall] = &[
    Syscall { name: "open", ops: &["open"], paths: PATH, ..BASE },
    Syscall { name: "openat", ops: &["openat"], paths: AT_PATH, ..BASE },
    Syscall { name: "creat", ops: &["creat"], paths: PATH, mutates: true, ..BASE },
    Syscall { name: "close", ops: &["close"], on_fd: true, ..BASE },
    Syscall { name: "dup", ops: &["dup"], on_fd: true, ..BASE },
    Syscall { name: "dup2", on_fd: true, not_recorded: Some("a chosen descriptor number has no slot"), ..BASE },
    Syscall { name: "dup3", on_fd: true, not_recorded: Some("a chosen descriptor number has no slot"), ..BASE },
    Syscall { name: "fcntl", on_fd: true, not_recorded: Some("descriptor flags are not replayed"), ..BASE },
    Syscall { name: "write", ops: &["write"], on_fd: true, mutates: true, ..BASE },
    Syscall { name: "pwrite64", ops: &["pwrite64", "pwrite"], on_fd: true, mutates: true, ..BASE },
    Syscall { name: "read", ops: &["read"], on_fd: true, probe: true, ..BASE },
    Syscall { name: "pread64", ops: &["pread64", "pread"], on_fd: true, probe: true, ..BASE },
    Syscall { name: "fsync", ops: &["fsync"], on_fd: true, ..BASE },
    Syscall { name: "fdatasync", ops: &["fdatasync"], on_fd: true, ..BASE },
    Syscall { name: "syncfs", ops: &["syncfs"], on_fd: true, ..BASE },
    Syscall { name: "sync", ops: &["sync"], not_recorded: Some("syncs every filesystem, not the program's files"), ..BASE },
    Syscall { name: "sync_file_range", ops: &["sync_file_range"], on_fd: true, ..BASE },
    Syscall { name: "fstat", ops: &["fstat"], on_fd: true, probe: true, ..BASE },
    Syscall { name: "ftruncate", ops: &["ftruncate"], on_fd: true, mutates: true, ..BASE },
    Syscall { name: "fallocate", ops: &["fallocate"], on_fd: true, mutates: true, ..BASE },
    Syscall { name: "fchmod", ops: &["fchmod"], on_fd: true, mutates: true, ..BASE },
    Syscall { name: "fchown", ops: &["fchown"], on_fd: true, mutates: true, ..BASE },
    Syscall { name: "getdents64", ops: &["getdents64"], on_fd: true, probe: true, ..BASE },
    Syscall { name: "lseek", on_fd: true, not_recorded: Some("offsets are given per call"), ..BASE },
    Syscall { name: "fchdir", on_fd: true, not_recorded: Some("followed, not replayed"), ..BASE },
    Syscall { name: "fadvise64", on_fd: true, not_recorded: Some("advice is not replayed"), ..BASE },
    Syscall { name: "flock", on_fd: true, not_recorded: Some("locks are not replayed"), ..BASE },
    Syscall { name: "fgetxattr", on_fd: true, not_recorded: Some("xattrs by descriptor are not replayed"), ..BASE },
    Syscall { name: "fsetxattr", on_fd: true, not_recorded: Some("xattrs by descriptor are not replayed"), ..BASE },
    Syscall { name: "unlink", ops: &["unlink"], paths: PATH, mutates: true, ..BASE },
    Syscall { name: "unlinkat", ops: &["unlinkat"], paths: AT_PATH, mutates: true, ..BASE },
    Syscall { name: "rmdir", ops: &["rmdir"], paths: PATH, mutates: true, ..BASE },
    Syscall { name: "mkdir", ops: &["mkdir"], paths: PATH, mutates: true, ..BASE },
    Syscall { name: "mkdirat", ops: &["mkdirat"], paths: AT_PATH, mutates: true, ..BASE },
    Syscall { name: "rename", ops: &["rename"], paths: &[(None, 0), (None, 1)], mutates: true, ..BASE },
    Syscall { name: "renameat", ops: &["renameat"], paths: &[(Some(0), 1), (Some(2), 3)], mutates: true, ..BASE },
    Syscall { name: "renameat2", ops: &["renameat2"], paths: &[(Some(0), 1), (Some(2), 3)], mutates: true, ..BASE },
    Syscall { name: "link", ops: &["link"], paths: &[(None, 0), (None, 1)], mutates: true, ..BASE },
    Syscall { name: "linkat", ops: &["linkat"], paths: &[(Some(0), 1), (Some(2), 3)], mutates: true, ..BASE },
    Syscall { name: "symlink", ops: &["symlink"], paths: &[(None, 1)], mutates: true, ..BASE },
    Syscall { name: "symlinkat", ops: &["symlinkat"], paths: &[(Some(1), 2)], mutates: true, ..BASE },
    Syscall { name: "stat", ops: &["stat"], paths: PATH, probe: true, ..BASE },
    Syscall { name: "lstat", ops: &["lstat"], paths: PATH, probe: true, ..BASE },
    Syscall { name: "newfstatat", ops: &["newfstatat", "fstatat"], paths: AT_PATH, probe: true, ..BASE },
    Syscall { name: "fstatat64", paths: AT_PATH, probe: true, not_recorded: Some("a 32-bit call"), ..BASE },
    Syscall { name: "statx", ops: &["statx"], paths: AT_PATH, probe: true, ..BASE },
    Syscall { name: "access", ops: &["access"], paths: PATH, probe: true, ..BASE },
    Syscall { name: "faccessat", ops: &["faccessat"], paths: AT_PATH, probe: true, ..BASE },
    Syscall { name: "truncate", ops: &["truncate"], paths: PATH, mutates: true, ..BASE },
    Syscall { name: "chmod", ops: &["chmod"], paths: PATH, mutates: true, ..BASE },
    Syscall { name: "fchmodat", ops: &["fchmodat"], paths: AT_PATH, mutates: true, ..BASE },
    Syscall { name: "chown", ops: &["chown"], paths: PATH, mutates: true, ..BASE },
    Syscall { name: "lchown", ops: &["lchown"], paths: PATH, mutates: true, ..BASE },
    Syscall { name: "fchownat", ops: &["fchownat"], paths: AT_PATH, mutates: true, ..BASE },
    Syscall { name: "utimensat", ops: &["utimensat"], paths: AT_PATH, mutates: true, ..BASE },
    Syscall { name: "setxattr", ops: &["setxattr"], paths: PATH, mutates: true, not_recorded: Some("xattr values are not in the trace"), ..BASE },
    Syscall { name: "getxattr", ops: &["getxattr"], paths: PATH, probe: true, not_recorded: Some("xattr values are not in the trace"), ..BASE },
    Syscall { name: "removexattr", ops: &["removexattr"], paths: PATH, mutates: true, not_recorded: Some("xattrs are not recorded"), ..BASE },
    Syscall { name: "chdir", paths: PATH, not_recorded: Some("followed, not replayed"), ..BASE },
    Syscall { name: "chroot", paths: PATH, not_recorded: Some("followed, not replayed"), ..BASE },
];

/// The row of a syscall, by the name strace prints.
pub fn find(name: &str) -> Option<&'static Syscall> {
    SYSCALLS.iter().find(|s| s.name == name)
}

/// The syscall a signature op issues (`pwrite` issues `pwrite64`).
pub fn of_op(op: &str) -> Option<&'static Syscall> {
    SYSCALLS.iter().find(|s| s.ops.contains(&op))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::step::op_names;

    /// Every op issues a syscall of the table; every syscall of the table is recordable
    /// or says why not (the recorder's tests check it builds steps for exactly those).
    #[test]
    fn every_op_has_its_syscall_and_is_recordable_or_listed_as_not() {
        for op in op_names() {
            assert!(of_op(op).is_some(), "op {op} has no row");
        }
        for s in SYSCALLS {
            assert_eq!(
                SYSCALLS.iter().filter(|x| x.name == s.name).count(),
                1,
                "{} twice",
                s.name
            );
            for op in s.ops {
                assert!(op_names().any(|o| o == *op), "{}: no op {op}", s.name);
            }
            let recordable = s.not_recorded.is_none();
            assert!(
                !recordable || !s.ops.is_empty(),
                "{}: recorded into no op",
                s.name
            );
        }
    }
}
