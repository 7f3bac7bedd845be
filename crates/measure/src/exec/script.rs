//! A dbench loadfile's client: the compiled [`Script`] replayed with dbench 4.0's file-I/O
//! semantics (`fileio.c`), syscall for syscall.
//!
//! Every path operation first resolves the name as Samba's `pvfs_resolve_name` would:
//! `stat`, and when that fails the parent directory read to its end (or to a name equal
//! but for case). `opendir`/`readdir`/`closedir` are issued as glibc issues them: `openat`
//! with `O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY`, `fstat`, `getdents64` into a buffer of
//! the directory's `st_blksize` clamped to 32 KiB … 1 MiB (refilled when it runs out; an
//! entry with inode 0 is skipped), `close`. What each operation issues:
//!
//! | operation | syscalls |
//! |---|---|
//! | NTCreateX | resolve; [`mkdir(0700)` for a directory]; `openat` (`O_RDWR`, `+O_CREAT` for disposition 2, `+O_CREAT\|O_TRUNC` for 4 and 5, `O_RDONLY\|O_DIRECTORY` for a directory; again as a directory on EISDIR); `fstat` |
//! | Close | `close` |
//! | Rename | resolve both; `rename` |
//! | Unlink, Rmdir, Mkdir | resolve; `unlink`, `rmdir`, `mkdir(0777)` |
//! | Deltree | the tree walked depth first: `stat` each entry, `unlink` files (directories stay) |
//! | QUERY_PATH_INFORMATION | resolve |
//! | QUERY_FILE_INFORMATION | `fstat` |
//! | QUERY_FS_INFORMATION | `statfs` of the test directory |
//! | SET_FILE_INFORMATION | `fstat`; `utimensat` with atime − 10 s and mtime − 12 s |
//! | FIND_FIRST | resolve; with a wildcard, the parent directory read for at most the count |
//! | WriteX, ReadX | `pwrite64` (zeroes), `pread64` at the line's offset and size |
//! | LockX, UnlockX | `fcntl(F_SETLKW)` write lock / unlock |
//! | Flush | `fsync` |
//!
//! A status mismatch stops the client only where dbench stops: unlink, rename, rmdir, a
//! failed or short write, a handle that is not open, a full handle table. A failed open
//! or a short read is counted and said once after the run (dbench prints a line).

use super::{Bound, Client, Ctl, Tally};
use crate::loadfile::{LoadOp, MAX_HANDLES, NO_PATH, OPS, PathId, Script};
use crate::sys::call::script as sys;
use crate::sys::{CPath, Errno, SysResult};
use anyhow::{Result, anyhow, bail};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often (in lines) a run over a fixed amount reports progress.
const TICK: u64 = 4096;
/// Directories a Deltree descends at most (each level holds a read buffer).
pub const MAX_DELTREE_DEPTH: usize = 64;
/// Directory levels whose buffers are allocated before the window (client.txt's deepest
/// Deltree goes 4 levels down).
const PREALLOCATED_LEVELS: usize = 8;

/// glibc's `opendir` flags.
const OPENDIR: i32 = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_DIRECTORY;

/// An open directory read as glibc's `readdir` reads it.
struct DirStream {
    fd: i32,
    buf: Vec<u8>,
    /// The read size: `st_blksize` clamped to 32 KiB … 1 MiB.
    size: usize,
    pos: usize,
    len: usize,
}

impl DirStream {
    fn new() -> DirStream {
        DirStream {
            fd: -1,
            buf: Vec::new(),
            size: 0,
            pos: 0,
            len: 0,
        }
    }
}

/// What went wrong without stopping the client: counted, with the first occurrence.
#[derive(Default)]
struct Notes(Vec<(String, u64)>);

impl Notes {
    fn add(&mut self, what: impl FnOnce() -> String, key: &str) {
        if let Some(n) = self.0.iter_mut().find(|(m, _)| m.starts_with(key)) {
            n.1 += 1;
        } else {
            let m = what();
            debug_assert!(m.starts_with(key));
            self.0.push((m, 1));
        }
    }
}

/// One client replaying a script.
pub struct ScriptClient {
    script: Arc<Script>,
    /// dbench's child id: `client1` in paths becomes `client{id}`.
    id: u32,
    /// Passes of a run over a fixed amount.
    passes: u64,
    /// Open handles: the loadfile's number, the descriptor, the path it was opened by.
    handles: Vec<(u32, i32, PathId)>,
    a: CPath,
    b: CPath,
    /// A parent directory or a Deltree entry's path.
    c: CPath,
    st: libc::stat,
    stfs: libc::statfs,
    read_buf: Vec<u8>,
    /// Zeroes for WriteX, shared by the clients (dbench writes a zeroed buffer).
    zeros: Arc<[u8]>,
    /// Directory streams by depth (Deltree nests them; 0 serves resolve and FIND_FIRST).
    dirs: Vec<DirStream>,
    tally: Tally,
    lines_done: u64,
    /// When the timed part started (again when the warm-up ended), and how long it took.
    run_start: Instant,
    run_ns: u64,
    notes: Notes,
}

impl ScriptClient {
    /// A client of `script` with dbench id `id`, running `passes` passes when the run is
    /// over a fixed amount. `zeros` is at least `script.max_write` long.
    pub fn new(script: Arc<Script>, id: u32, passes: u64, zeros: Arc<[u8]>) -> Result<Self> {
        if zeros.len() < script.max_write as usize {
            bail!("the write buffer is shorter than the loadfile's largest WriteX");
        }
        let rows: Vec<&'static str> = OPS.iter().filter_map(|o| o.row).collect();
        Ok(ScriptClient {
            read_buf: vec![0; script.max_read as usize],
            script,
            id,
            passes,
            handles: Vec::with_capacity(32),
            a: CPath::default(),
            b: CPath::default(),
            c: CPath::default(),
            st: sys::empty_stat(),
            stfs: sys::empty_statfs(),
            zeros,
            dirs: Vec::new(),
            tally: Tally::new(&rows)?,
            lines_done: 0,
            run_start: Instant::now(),
            run_ns: 0,
            notes: Notes::default(),
        })
    }

    #[inline]
    fn counted(&mut self, r: SysResult) -> SysResult {
        self.tally.calls += 1;
        r
    }

    /// The descriptor of `handle`, or the error that stops the client (dbench exits).
    #[inline]
    fn fd_of(&self, handle: u32, at: u32, op: LoadOp) -> Result<i32> {
        match self.handles.iter().find(|h| h.0 == handle) {
            Some(h) => Ok(h.1),
            None => Err(anyhow!(
                "{}:{at}: {}: handle {handle} is not open",
                self.script.origin,
                op.info().name
            )),
        }
    }

    /// `opendir` into stream `depth` of the path in `c`: openat + fstat (+ close when
    /// it is no directory). False when it could not be opened.
    fn opendir(&mut self, depth: usize) -> bool {
        let r = sys::open(self.c.as_cstr(), OPENDIR, 0);
        self.tally.calls += 1;
        let Ok(fd) = r else { return false };
        let fd = fd as i32;
        let r = sys::fstat(fd, &mut self.st);
        self.tally.calls += 1;
        if r.is_err() || self.st.st_mode & libc::S_IFMT != libc::S_IFDIR {
            let _ = self.counted(sys::close(fd));
            return false;
        }
        while self.dirs.len() <= depth {
            self.dirs.push(DirStream::new());
        }
        let size = (self.st.st_blksize as usize).clamp(32 << 10, 1 << 20);
        let d = &mut self.dirs[depth];
        if d.buf.len() < size {
            d.buf.resize(size, 0);
        }
        d.fd = fd;
        d.size = size;
        d.pos = 0;
        d.len = 0;
        true
    }

    /// `readdir` of stream `depth`: the next entry's name as (start, end) in its buffer.
    fn readdir(&mut self, depth: usize) -> Option<(usize, usize)> {
        loop {
            let d = &mut self.dirs[depth];
            if d.pos >= d.len {
                let r = sys::getdents64(d.fd, &mut d.buf[..d.size]);
                self.tally.calls += 1;
                let d = &mut self.dirs[depth];
                match r {
                    Ok(n) if n > 0 => {
                        d.len = (n as usize).min(d.size);
                        d.pos = 0;
                    }
                    _ => return None,
                }
            }
            let d = &mut self.dirs[depth];
            // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name.
            let rec = d.buf.get(d.pos..d.len)?;
            if rec.len() < 19 {
                return None;
            }
            let ino = u64::from_ne_bytes(rec[0..8].try_into().ok()?);
            let reclen = u16::from_ne_bytes(rec[16..18].try_into().ok()?) as usize;
            if reclen < 19 || reclen > rec.len() {
                return None;
            }
            let start = d.pos + 19;
            let name_len = rec[19..reclen].iter().position(|&b| b == 0)?;
            d.pos += reclen;
            if ino != 0 {
                return Some((start, start + name_len));
            }
        }
    }

    fn closedir(&mut self, depth: usize) {
        let fd = std::mem::replace(&mut self.dirs[depth].fd, -1);
        let _ = self.counted(sys::close(fd));
    }

    /// dbench's `resolve_name` of the path in `a` or `b`.
    fn resolve(&mut self, which: Name) {
        let path = match which {
            Name::A => &mut self.a,
            Name::B => &mut self.b,
        };
        let r = sys::stat(path.as_cstr(), &mut self.st);
        self.tally.calls += 1;
        if r.is_ok() {
            return;
        }
        // The parent into `c`, the last component kept to compare with.
        let bytes = path.as_cstr().to_bytes();
        let (parent, name) = match bytes.iter().rposition(|&b| b == b'/') {
            Some(k) => (&bytes[..k], &bytes[k + 1..]),
            None => (&b"."[..], bytes),
        };
        self.c.clear();
        self.c.push(parent);
        let mut name_buf = [0u8; 256];
        let name_len = name.len().min(name_buf.len());
        name_buf[..name_len].copy_from_slice(&name[..name_len]);
        let name = &name_buf[..name_len];
        if !self.opendir(0) {
            return;
        }
        while let Some((s, e)) = self.readdir(0) {
            if self.dirs[0].buf[s..e].eq_ignore_ascii_case(name) {
                break;
            }
        }
        self.closedir(0);
    }

    /// FIND_FIRST's second read: the parent of `a` for at most `max` entries.
    fn find(&mut self, mut max: u32) {
        let bytes = self.a.as_cstr().to_bytes();
        if !bytes.iter().any(|b| b"<>*?\"".contains(b)) {
            return;
        }
        let parent: &[u8] = match bytes.iter().rposition(|&b| b == b'/') {
            Some(k) => &bytes[..k],
            None => b".",
        };
        self.c.clear();
        self.c.push(parent);
        if !self.opendir(0) {
            return;
        }
        while max > 0 && self.readdir(0).is_some() {
            max -= 1;
        }
        self.closedir(0);
    }

    /// dbench's `nb_deltree` of the path in `a`, depth first, without recursion: files
    /// are unlinked, directories are walked and left.
    fn deltree(&mut self, at: u32) -> Result<()> {
        self.c.clear();
        self.c.push(self.a.as_cstr().to_bytes());
        // The length of `c` at each open level.
        let mut lens: Vec<usize> = Vec::new();
        if !self.opendir(0) {
            return Ok(());
        }
        lens.push(self.c.as_cstr().to_bytes().len());
        while let Some(&len) = lens.last() {
            let depth = lens.len() - 1;
            let Some((s, e)) = self.readdir(depth) else {
                self.closedir(depth);
                lens.pop();
                continue;
            };
            let name = &self.dirs[depth].buf[s..e];
            if name == b"." || name == b".." {
                continue;
            }
            // c = the level's path + "/" + name.
            let mut entry = [0u8; 256];
            let n = name.len().min(entry.len());
            entry[..n].copy_from_slice(&name[..n]);
            self.c.truncate(len);
            self.c.push(b"/");
            self.c.push(&entry[..n]);
            let r = sys::stat(self.c.as_cstr(), &mut self.st);
            self.tally.calls += 1;
            if r.is_err() {
                continue;
            }
            if self.st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                if lens.len() >= MAX_DELTREE_DEPTH {
                    for d in (0..lens.len()).rev() {
                        self.closedir(d);
                    }
                    bail!(
                        "{}:{at}: Deltree goes deeper than {MAX_DELTREE_DEPTH} directories",
                        self.script.origin
                    );
                }
                let depth = lens.len();
                if self.opendir(depth) {
                    lens.push(self.c.as_cstr().to_bytes().len());
                }
            } else {
                let r = sys::unlink(self.c.as_cstr());
                self.tally.calls += 1;
                if let Err(e) = r {
                    let origin = &self.script.origin;
                    self.notes.add(
                        || format!("{origin}:{at}: Deltree: an unlink failed ({})", e.name()),
                        &format!("{origin}:{at}: Deltree: an unlink failed"),
                    );
                }
            }
        }
        Ok(())
    }

    /// A status the loadfile expects that the call did not give: the error that stops
    /// the client (unlink, rename, rmdir).
    fn mismatch(&self, at: u32, what: &str, r: SysResult, ok: bool) -> anyhow::Error {
        let got = match r {
            Ok(_) => "succeeded".to_string(),
            Err(e) => format!("failed with {e}"),
        };
        let want = if ok { "success" } else { "a failure" };
        anyhow!(
            "{}:{at}: {what} {got}, the loadfile expects {want}",
            self.script.origin
        )
    }

    /// One line: its operation, as dbench issues it.
    fn op(&mut self, k: usize, ctl: &Ctl) -> Result<()> {
        let line = self.script.lines[k];
        let at = line.at;
        self.a.clear();
        self.b.clear();
        if line.path != NO_PATH {
            self.script.path(line.path).render(self.id, &mut self.a);
        }
        if line.path2 != NO_PATH {
            self.script.path(line.path2).render(self.id, &mut self.b);
        }
        let [n0, n1, n2, n3] = line.nums;
        match line.op {
            LoadOp::NtCreateX => {
                let (options, disposition, handle) = (n0, n1, n2);
                self.resolve(Name::A);
                let mut flags = libc::O_RDWR;
                if disposition == 2 {
                    flags |= libc::O_CREAT;
                }
                if disposition == 4 || disposition == 5 {
                    flags |= libc::O_CREAT | libc::O_TRUNC;
                }
                if options & 1 != 0 {
                    let r = sys::mkdir(self.a.as_cstr(), 0o700);
                    let _ = self.counted(r);
                    flags = libc::O_RDONLY | libc::O_DIRECTORY;
                }
                let mut r = sys::open(self.a.as_cstr(), flags, 0o600);
                self.tally.calls += 1;
                if r == Err(Errno(libc::EISDIR)) {
                    r = sys::open(self.a.as_cstr(), libc::O_RDONLY | libc::O_DIRECTORY, 0o600);
                    self.tally.calls += 1;
                }
                match (r, line.ok) {
                    (Err(e), true) => self.notes.add(
                        || format!("{}:{at}: NTCreateX: the open failed ({}) where the loadfile expects success", self.script.origin, e.name()),
                        &format!("{}:{at}: NTCreateX: the open failed", self.script.origin),
                    ),
                    (Err(_), false) => {}
                    (Ok(fd), false) => {
                        let _ = self.counted(sys::close(fd as i32));
                        self.notes.add(
                            || format!("{}:{at}: NTCreateX: the open succeeded where the loadfile expects a failure", self.script.origin),
                            &format!("{}:{at}: NTCreateX: the open succeeded", self.script.origin),
                        );
                    }
                    (Ok(fd), true) => {
                        if self.handles.len() >= MAX_HANDLES {
                            let _ = self.counted(sys::close(fd as i32));
                            bail!(
                                "{}:{at}: NTCreateX: more than {MAX_HANDLES} handles open at once (dbench's file table is full)",
                                self.script.origin
                            );
                        }
                        self.handles.push((handle, fd as i32, line.path));
                        let r = sys::fstat(fd as i32, &mut self.st);
                        let _ = self.counted(r);
                    }
                }
            }
            LoadOp::Close => {
                let fd = self.fd_of(n0, at, line.op)?;
                if let Some(k) = self.handles.iter().position(|h| h.0 == n0) {
                    self.handles.remove(k);
                }
                let _ = self.counted(sys::close(fd));
            }
            LoadOp::Rename => {
                self.resolve(Name::A);
                self.resolve(Name::B);
                let r = sys::rename(self.a.as_cstr(), self.b.as_cstr());
                self.tally.calls += 1;
                if r.is_ok() != line.ok {
                    let what = format!("Rename {} {}", self.a.display(), self.b.display());
                    return Err(self.mismatch(at, &what, r, line.ok));
                }
            }
            LoadOp::Unlink | LoadOp::Rmdir => {
                self.resolve(Name::A);
                let (r, name) = if line.op == LoadOp::Unlink {
                    (sys::unlink(self.a.as_cstr()), "Unlink")
                } else {
                    (sys::rmdir(self.a.as_cstr()), "Rmdir")
                };
                self.tally.calls += 1;
                if r.is_ok() != line.ok {
                    let what = format!("{name} {}", self.a.display());
                    return Err(self.mismatch(at, &what, r, line.ok));
                }
            }
            LoadOp::Deltree => self.deltree(at)?,
            LoadOp::Mkdir => {
                self.resolve(Name::A);
                let r = sys::mkdir(self.a.as_cstr(), 0o777);
                let _ = self.counted(r);
            }
            LoadOp::QueryPath => self.resolve(Name::A),
            LoadOp::QueryFile => {
                let fd = self.fd_of(n0, at, line.op)?;
                let r = sys::fstat(fd, &mut self.st);
                let _ = self.counted(r);
            }
            LoadOp::QueryFs => {
                let r = sys::statfs(c".", &mut self.stfs);
                let _ = self.counted(r);
            }
            LoadOp::SetFile => {
                let fd = self.fd_of(n0, at, line.op)?;
                let path = self
                    .handles
                    .iter()
                    .find(|h| h.0 == n0)
                    .map_or(NO_PATH, |h| h.2);
                let r = sys::fstat(fd, &mut self.st);
                let _ = self.counted(r);
                let (atime, mtime) = (self.st.st_atime - 10, self.st.st_mtime - 12);
                self.b.clear();
                if path != NO_PATH {
                    self.script.path(path).render(self.id, &mut self.b);
                }
                let r = sys::utime(self.b.as_cstr(), atime, mtime);
                let _ = self.counted(r);
            }
            LoadOp::FindFirst => {
                self.resolve(Name::A);
                self.find(n1);
            }
            LoadOp::WriteX => {
                let (handle, offset, size, want) = (n0, n1, n2, n3);
                let fd = self.fd_of(handle, at, line.op)?;
                let r = sys::pwrite(fd, &self.zeros[..size as usize], offset as i64);
                self.tally.calls += 1;
                match r {
                    Err(e) => bail!(
                        "{}:{at}: WriteX: the write on handle {handle} failed with {e}",
                        self.script.origin
                    ),
                    Ok(n) if n != want as i64 => bail!(
                        "{}:{at}: WriteX: wrote {n} bytes on handle {handle}, the loadfile expects {want}",
                        self.script.origin
                    ),
                    Ok(_) => {}
                }
                self.tally.bytes += size as u64;
            }
            LoadOp::ReadX => {
                let (handle, offset, size, want) = (n0, n1, n2, n3);
                let fd = self.fd_of(handle, at, line.op)?;
                let r = sys::pread(fd, &mut self.read_buf[..size as usize], offset as i64);
                self.tally.calls += 1;
                if r != Ok(want as i64) {
                    self.notes.add(
                        || format!("{}:{at}: ReadX: a read returned {} where the loadfile expects {want} bytes", self.script.origin, match r { Ok(n) => n.to_string(), Err(e) => e.name() }),
                        &format!("{}:{at}: ReadX: a read returned", self.script.origin),
                    );
                }
                self.tally.bytes += size as u64;
            }
            LoadOp::LockX | LoadOp::UnlockX => {
                let (handle, offset, size) = (n0, n1, n2);
                let kind = if line.op == LoadOp::LockX {
                    libc::F_WRLCK
                } else {
                    libc::F_UNLCK
                };
                let fd = self.fd_of(handle, at, line.op)?;
                let r = sys::lock_wait(fd, kind, offset as i64, size as i32 as i64);
                let _ = self.counted(r);
            }
            LoadOp::Flush => {
                let fd = self.fd_of(n0, at, line.op)?;
                let r = sys::fsync(fd);
                let _ = self.counted(r);
            }
            LoadOp::Sleep => {
                ctl.pause(Duration::from_micros(n0 as u64));
            }
        }
        Ok(())
    }

    /// A new epoch (the warm-up ended): count afresh, so nothing done in the warm-up — a
    /// line under way when it ended included — is counted.
    fn follow_epoch(&mut self, ctl: &Ctl, epoch: &mut u32) {
        let e = ctl.epoch();
        if e != *epoch {
            *epoch = e;
            self.tally.reset();
            self.lines_done = 0;
            self.run_start = Instant::now();
        }
    }

    /// One pass over the script (or what is left of it when `ctl` says stop). `epoch`:
    /// the warm-up generation this client counts in; a new one resets its tally.
    fn pass(&mut self, ctl: &Ctl, me: usize, epoch: &mut u32, hook: &mut Hook) -> Result<bool> {
        let start = Instant::now();
        for k in 0..self.script.lines.len() {
            if ctl.stopping() {
                return Ok(false);
            }
            self.follow_epoch(ctl, epoch);
            if let Some(pace) = &self.script.pace
                && pace[k] > 0.0
            {
                // The parser bounds a timestamp to a day; a pause ends when the run stops.
                let due = Duration::try_from_secs_f64(pace[k]).unwrap_or(Duration::MAX);
                if !ctl.pause(due.saturating_sub(start.elapsed())) {
                    return Ok(false);
                }
            }
            let line = self.script.lines[k];
            let t0 = Instant::now();
            self.op(k, ctl)?;
            let ns = t0.elapsed().as_nanos() as u64;
            if line.op != LoadOp::Sleep {
                self.tally.record(line.op as usize, ns);
            }
            self.lines_done += 1;
            self.tally.done += 1;
            ctl.publish(me, *epoch, &self.tally);
            if self.tally.done.is_multiple_of(TICK)
                && let Some(h) = hook.as_mut()
            {
                h(super::Event::Done(self.tally.done));
            }
        }
        Ok(true)
    }
}

/// Which of a line's two paths.
#[derive(Clone, Copy)]
enum Name {
    A,
    B,
}

type Hook<'h> = Option<&'h mut dyn FnMut(super::Event)>;

impl Client for ScriptClient {
    fn prepare(&mut self, _progress: &mut dyn FnMut(u64)) -> Result<()> {
        // A loadfile makes its own directories (Deltree, Mkdir, NTCreateX of a directory).
        // What the window needs in memory is allocated here, on the client's thread, so no
        // allocation (and no brk, mmap or mprotect growing its heap) happens inside it:
        // directory buffers for resolving and a few levels of Deltree, the handle table.
        for _ in 0..PREALLOCATED_LEVELS {
            let mut d = DirStream::new();
            d.buf.resize(32 << 10, 0);
            self.dirs.push(d);
        }
        self.handles.reserve(MAX_HANDLES);
        self.notes.0.reserve(16);
        Ok(())
    }

    fn segments(&self) -> usize {
        1
    }

    fn run(
        &mut self,
        ctl: &Ctl,
        me: usize,
        bound: Bound,
        mut hook: Option<&mut dyn FnMut(super::Event)>,
    ) -> Result<()> {
        let mut epoch = ctl.epoch();
        self.run_start = Instant::now();
        // A fixed number of passes, or passes until the run is stopped.
        let mut left = matches!(bound, Bound::Count).then_some(self.passes);
        let r = loop {
            match &mut left {
                Some(0) => break Ok(()),
                Some(n) => *n -= 1,
                None => {}
            }
            match self.pass(ctl, me, &mut epoch, &mut hook) {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        // Stopped inside the line the warm-up ended in: none of it counts.
        self.follow_epoch(ctl, &mut epoch);
        self.run_ns = self.run_start.elapsed().as_nanos() as u64;
        r?;
        crate::interrupt::check()?;
        Ok(())
    }

    fn tally(&self) -> &Tally {
        &self.tally
    }

    fn tally_mut(&mut self) -> &mut Tally {
        &mut self.tally
    }

    fn phase_ns(&self) -> Vec<u64> {
        vec![self.run_ns]
    }

    fn passes(&self) -> f64 {
        self.lines_done as f64 / self.script.lines.len().max(1) as f64
    }

    fn notes(&self) -> Vec<(String, u64)> {
        self.notes.0.clone()
    }

    fn finish(&mut self) {
        for (_, fd, _) in self.handles.drain(..) {
            let _ = sys::close(fd);
        }
        for d in &mut self.dirs {
            if d.fd >= 0 {
                let _ = sys::close(d.fd);
                d.fd = -1;
            }
        }
    }
}

impl Drop for ScriptClient {
    /// Descriptors a failed case left open would keep its filesystem busy.
    fn drop(&mut self) {
        self.finish();
    }
}
