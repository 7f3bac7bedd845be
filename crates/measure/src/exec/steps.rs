//! A signature's client: its steps over N files, each step one system call issued through
//! `sys::call` exactly as the step names it (no libc wrapper picks a different call), with
//! a result buffer sized from every step's `Op::out_len`, results checked, per-syscall HDR
//! histograms. The working directory must already be the client's; paths are relative to
//! it, so the calls walk one path component like the programs they imitate.
//!
//! Over a fixed amount of work it runs the signature's window once: every round, every
//! phase, every selected file. For a time it loops that window over the same N files (a
//! pass) until told to stop — a signature that does not leave its files as it found them
//! (creating names it never removes) fails its second pass, with a hint to use `-n`.

use super::{Bound, Client, Ctl, Event, Tally};
use crate::interrupt;
use crate::signature::{Expect, Op, Signature, Step, Template, Vars};
use crate::sys::{CPath, Errno, SysResult, call};
use anyhow::{Result, anyhow, bail};
use std::ffi::CStr;
use std::io::Write;
use std::time::Instant;

pub use super::OpLatency;

/// How often (in files) the loops poll for a signal and report progress.
const TICK: u64 = 1024;

/// How many places the executor's loop can lie at (`plan::states::layout` chooses one per
/// state). Where a program's hot code lies within its pages decides which sets of the first-level
/// instruction cache it shares with the kernel's hot path (the cost model's L1I, as a
/// real one, is indexed by the address bits inside a page) — what every rebuild of
/// sigbench moves, as link order moves a program's speed (Mytkowicz et al., ASPLOS 2009).
/// So the loop exists in this many copies, each [`LAYOUT_STEP`] bytes further into its
/// function than the last, together spanning a page: a state samples one.
pub const LAYOUTS: usize = 16;
/// The distance between two of the loop's places (16 × 256 bytes: a page).
const LAYOUT_STEP: usize = 256;

pub struct Executor<'s> {
    sig: &'s Signature,
    n: u64,
    seed: u64,
    /// Descriptor per signature slot; -1 when closed.
    fds: Vec<i32>,
    a: CPath,
    b: CPath,
    scratch: Vec<u8>,
    /// Histogram index of every timed step, by phase then step.
    hist_of: Vec<Vec<usize>>,
    /// Bytes every timed step's read or write asks for, by phase then step.
    io_of: Vec<Vec<u64>>,
    tally: Tally,
    /// Time of each phase (summed over rounds and passes).
    phase_ns: Vec<u64>,
    /// Whole windows completed.
    passes: u64,
    /// A slot the last step opened while it was still open (its old descriptor was
    /// closed, untimed, to not leak it; the run stops with an error).
    reopened: Option<usize>,
    /// Where every timed call is logged, when asked (`run --op-log`).
    log: Option<Box<dyn std::io::Write + Send>>,
    /// Which copy of the loop runs (`LAYOUTS`).
    layout: usize,
}

/// A field of the op log: a backslash, tab, line break or other control character (and a
/// space, which separates a step's two paths) written as an escape, so every line has
/// its five columns.
fn tsv_field(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            ' ' => out.push_str("\\x20"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

impl<'s> Executor<'s> {
    pub fn new(sig: &'s Signature, n: u64, seed: u64) -> Result<Self> {
        let mut names: Vec<&'static str> = Vec::new();
        let mut hist_of = Vec::new();
        let mut io_of = Vec::new();
        for phase in &sig.phases {
            let mut idx = Vec::new();
            let mut io = Vec::new();
            for step in &phase.steps {
                let k = match names.iter().position(|name| *name == step.syscall) {
                    Some(k) => k,
                    None => {
                        names.push(step.syscall);
                        names.len() - 1
                    }
                };
                idx.push(k);
                io.push(step.op.requested_bytes());
            }
            hist_of.push(idx);
            io_of.push(io);
        }
        // Every buffer handed to the kernel is sized by the steps that use it: the largest
        // any step (timed or prelude) may have written into.
        let scratch_len = sig
            .timed_steps()
            .chain(sig.prelude.iter())
            .map(|s| s.op.out_len())
            .max()
            .unwrap_or(0)
            .max(1);
        Ok(Executor {
            sig,
            n,
            seed,
            fds: vec![-1; sig.slots.len()],
            a: CPath::default(),
            b: CPath::default(),
            scratch: vec![0; scratch_len],
            hist_of,
            io_of,
            tally: Tally::new(&names)?,
            phase_ns: vec![0; sig.phases.len()],
            passes: 0,
            reopened: None,
            log: None,
            layout: 0,
        })
    }

    /// Run the loop's copy `layout` (of [`LAYOUTS`]; a state's `plan::states::layout`).
    pub fn place(&mut self, layout: usize) {
        self.layout = layout % LAYOUTS;
    }

    /// [`Executor::pass`] in the copy of the loop its layout names.
    fn pass_placed(
        &mut self,
        ctl: &Ctl,
        me: usize,
        looping: bool,
        epoch: &mut u32,
        hook: &mut Option<&mut dyn FnMut(Event)>,
    ) -> Result<bool> {
        macro_rules! copies {
            ($($l:literal)*) => {
                match self.layout {
                    $($l => self.pass::<$l>(ctl, me, looping, epoch, hook),)*
                    _ => unreachable!("place() keeps the layout below LAYOUTS"),
                }
            };
        }
        const _: () = assert!(LAYOUTS == 16, "one arm a layout");
        copies!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    }

    /// The length of the buffer the kernel may write results into.
    pub fn scratch_len(&self) -> usize {
        self.scratch.len()
    }

    /// Log every call of the timed window to `w` as `phase, file, syscall, paths, result`
    /// (tab-separated). It costs time inside the window; runs with a log say so.
    pub fn log_to(&mut self, w: Box<dyn std::io::Write + Send>) {
        self.log = Some(w);
    }

    fn log_call(&mut self, phase: usize, i: u64, step: &Step, r: SysResult) {
        let Some(log) = self.log.as_mut() else { return };
        let vars = Vars {
            i,
            n: self.n,
            seed: self.seed,
            name: &self.sig.file,
        };
        let paths: Vec<String> = step
            .paths()
            .iter()
            .map(|t| t.render_string(&vars))
            .collect();
        let result = match r {
            Ok(v) => v.to_string(),
            Err(e) => e.name(),
        };
        // A path is bytes: a tab or a line break in a name would shift the columns.
        let paths: Vec<String> = paths.iter().map(|p| tsv_field(p)).collect();
        let _ = writeln!(
            log,
            "{}\t{i}\t{}\t{}\t{result}",
            phase + 1,
            step.syscall,
            paths.join(" ")
        );
    }

    fn vars(&self, i: u64) -> Vars<'s> {
        Vars {
            i,
            n: self.n,
            seed: self.seed,
            name: &self.sig.file,
        }
    }

    /// The untimed part: sub-directories, N populated files, sync, directory fsync and
    /// the prelude. The working directory must be the client's.
    pub fn prepare(&mut self, tick: &mut dyn FnMut(u64)) -> Result<()> {
        let sig = self.sig;
        let vars0 = self.vars(0);
        for d in &sig.setup.mkdir {
            self.a.clear();
            d.render(&vars0, &mut self.a);
            if let Err(e) = call::mkdir(self.a.as_cstr(), 0o755) {
                bail!("setup: mkdir {} failed: {e}", self.a.display());
            }
        }
        if let Some(pop) = &sig.setup.populate {
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC;
            for i in 1..=self.n {
                if i.is_multiple_of(TICK) {
                    interrupt::check()?;
                    tick(i);
                }
                self.a.clear();
                sig.file.render(&self.vars(i), &mut self.a);
                let fd = call::openat(self.a.as_cstr(), flags, 0o644)
                    .map_err(|e| anyhow!("setup: creating {} failed: {e}", self.a.display()))?;
                if !pop.data.is_empty() {
                    let w = call::write(fd, &pop.data);
                    if w != Ok(pop.data.len() as i64) {
                        call::close(fd);
                        let why = match w {
                            Err(e) => e.to_string(),
                            Ok(k) => format!("wrote {k} of {} bytes", pop.data.len()),
                        };
                        bail!("setup: writing {} failed: {why}", self.a.display());
                    }
                }
                call::close(fd);
            }
        }
        if sig.setup.sync {
            call::sync();
        }
        if sig.setup.fsync_dir {
            let fd = call::openat(
                c".",
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                0,
            )
            .map_err(|e| anyhow!("setup: opening the test directory failed: {e}"))?;
            let r = call::fsync(fd);
            call::close(fd);
            r.map_err(|e| anyhow!("setup: fsync of the test directory failed: {e}"))?;
        }
        for step in &sig.prelude {
            let r = self.issue(step, &vars0).1;
            self.expect(step, r, "prelude", 0)?;
            if let Some(s) = self.reopened.take() {
                return Err(self.reopen_error(step, s, "prelude", 0));
            }
        }
        Ok(())
    }

    /// One pass of the window: every round, every phase, every selected file, every step.
    /// `hook` hears of progress every few thousand files and of the end of every phase but
    /// the last (untimed). Round r (0-based) works on files r·N+1 … (r+1)·N. For a run for
    /// a time (`looping`) it returns false as soon as `ctl` says stop, and a new epoch (the
    /// warm-up ended) starts the counts afresh.
    ///
    /// Its copy `L` lies `L` × [`LAYOUT_STEP`] bytes further on (never inlined: each copy
    /// is a function of its own).
    #[inline(never)]
    fn pass<const L: usize>(
        &mut self,
        ctl: &Ctl,
        me: usize,
        looping: bool,
        epoch: &mut u32,
        hook: &mut Option<&mut dyn FnMut(Event)>,
    ) -> Result<bool> {
        crate::sys::skip::<L, LAYOUT_STEP>();
        let sig = self.sig;
        let segments = sig.rounds as usize * sig.phases.len();
        let mut segment = 0;
        for round in 0..sig.rounds as u64 {
            for (k, phase) in sig.phases.iter().enumerate() {
                let start = Instant::now();
                for i in round * self.n + 1..=(round + 1) * self.n {
                    if !phase.select.includes(i) {
                        continue;
                    }
                    if looping {
                        if ctl.stopping() {
                            self.phase_ns[k] += start.elapsed().as_nanos() as u64;
                            return Ok(false);
                        }
                        self.follow_epoch(ctl, epoch);
                    }
                    self.tally.done += 1;
                    if self.tally.done.is_multiple_of(TICK) {
                        if ctl.stopping() {
                            interrupt::check()?;
                            return Ok(false);
                        }
                        if let Some(h) = hook.as_mut() {
                            h(Event::Done(self.tally.done));
                        }
                    }
                    let vars = self.vars(i);
                    for _ in 0..phase.repeat {
                        for (j, step) in phase.steps.iter().enumerate() {
                            let (ns, r) = self.issue(step, &vars);
                            self.tally.calls += 1;
                            self.tally.bytes += self.io_of[k][j];
                            self.tally.record(self.hist_of[k][j], ns);
                            if self.log.is_some() {
                                self.log_call(k, i, step, r);
                            }
                            if !step.expect.matches(r) {
                                return Err(self.mismatch(step, r, &phase.name, i));
                            }
                            if let Some(s) = self.reopened.take() {
                                return Err(self.reopen_error(step, s, &phase.name, i));
                            }
                        }
                    }
                    ctl.publish(me, *epoch, &self.tally);
                }
                self.phase_ns[k] += start.elapsed().as_nanos() as u64;
                segment += 1;
                // Phases are released together only over a fixed amount of work; a run
                // for a time has no checkpoints between them.
                if segment < segments
                    && !looping
                    && let Some(h) = hook.as_mut()
                {
                    h(Event::PhaseEnded(k));
                }
            }
        }
        self.passes += 1;
        Ok(true)
    }

    /// A new epoch (the warm-up ended): count afresh, so nothing done in the warm-up — an
    /// operation under way when it ended included — is counted.
    fn follow_epoch(&mut self, ctl: &Ctl, epoch: &mut u32) {
        let e = ctl.epoch();
        if e != *epoch {
            *epoch = e;
            self.tally.reset();
            self.phase_ns.iter_mut().for_each(|p| *p = 0);
            self.passes = 0;
        }
    }

    /// Close whatever the signature left open (untimed).
    pub fn finish(&mut self) {
        if let Some(log) = self.log.as_mut() {
            let _ = log.flush();
        }
        for fd in &mut self.fds {
            if *fd >= 0 {
                call::close(*fd);
                *fd = -1;
            }
        }
    }

    fn expect(&self, step: &Step, r: SysResult, phase: &str, i: u64) -> Result<()> {
        if step.expect.matches(r) {
            Ok(())
        } else {
            Err(self.mismatch(step, r, phase, i))
        }
    }

    /// Where in the workload a step ran, for messages (file 0: the prelude).
    fn at(&self, phase: &str, i: u64) -> String {
        let pass = if self.passes > 0 {
            format!(", pass {}", self.passes + 1)
        } else {
            String::new()
        };
        if i == 0 {
            phase.to_string()
        } else {
            format!("phase `{phase}`, file {i} of {}{pass}", self.n)
        }
    }

    fn reopen_error(&self, step: &Step, slot: usize, phase: &str, i: u64) -> anyhow::Error {
        let at = self.at(phase, i);
        anyhow!(
            "{}:{}: {at}: {} opens slot `{}` while it is still open: add {{ op = \"close\", slot = \"{}\" }} before it (sigbench issues only the calls a signature names)",
            self.sig.origin,
            step.line,
            step.syscall,
            self.sig.slots[slot],
            self.sig.slots[slot]
        )
    }

    fn mismatch(&self, step: &Step, r: SysResult, phase: &str, i: u64) -> anyhow::Error {
        let vars = self.vars(i);
        let args: Vec<String> = step
            .paths()
            .iter()
            .map(|t: &&Template| format!("\"{}\"", t.render_string(&vars)))
            .collect();
        let got = match r {
            Ok(v) => format!("returned {v}"),
            Err(e) => format!("failed with {e}"),
        };
        let want = match step.expect {
            Expect::Ok => "success".to_string(),
            other => other.describe(),
        };
        let closed_slot = step.op.slot().filter(|&s| self.fds[s] < 0);
        let hint = match closed_slot {
            Some(s) => format!(" (slot `{}` is not open)", self.sig.slots[s]),
            None if self.passes > 0 => " (the signature does not leave its files as it found them, so it cannot loop: run it for a number of files, -n, not for a time)".to_string(),
            None => String::new(),
        };
        let at = self.at(phase, i);
        anyhow!(
            "{}:{}: {at}: {}({}) {got}, expected {want}{hint}",
            self.sig.origin,
            step.line,
            step.syscall,
            args.join(", ")
        )
    }

    /// Render the step's paths, then issue its one syscall and time only that. Inlined into
    /// each copy of the loop, so the copy holds the calls too.
    #[inline(always)]
    fn issue(&mut self, step: &Step, vars: &Vars<'_>) -> (u64, SysResult) {
        let (a, b) = (&mut self.a, &mut self.b);
        a.clear();
        b.clear();
        let [first, second] = step.op.paths();
        if let Some(t) = first {
            t.render(vars, a);
        }
        if let Some(t) = second {
            t.render(vars, b);
        }
        let fd = step.op.slot().map(|s| self.fds[s]).unwrap_or(-1);
        let (a, b) = (a.as_cstr(), b.as_cstr());
        let scratch = self.scratch.as_mut_slice();
        let t0 = Instant::now();
        let r = issue(&step.op, fd, a, b, scratch);
        let ns = t0.elapsed().as_nanos() as u64;
        match (&step.op, r) {
            // A new descriptor. One still open in the slot would need a close the signature
            // does not have: close it (no leak) and report it, instead of hiding a close()
            // in the timed window.
            (Op::Open { slot, .. } | Op::Dup { new_slot: slot, .. }, Ok(newfd)) => {
                let old = std::mem::replace(&mut self.fds[*slot], newfd as i32);
                if old >= 0 {
                    call::close(old);
                    self.reopened = Some(*slot);
                }
            }
            (Op::Close { slot }, _) => self.fds[*slot] = -1,
            _ => {}
        }
        (ns, r)
    }
}

impl Client for Executor<'_> {
    fn prepare(&mut self, progress: &mut dyn FnMut(u64)) -> Result<()> {
        Executor::prepare(self, progress)
    }

    fn segments(&self) -> usize {
        self.sig.rounds as usize * self.sig.phases.len()
    }

    fn run(
        &mut self,
        ctl: &Ctl,
        me: usize,
        bound: Bound,
        mut hook: Option<&mut dyn FnMut(Event)>,
    ) -> Result<()> {
        let mut epoch = ctl.epoch();
        match bound {
            Bound::Count => {
                self.pass_placed(ctl, me, false, &mut epoch, &mut hook)?;
            }
            Bound::Time { .. } => {
                while self.pass_placed(ctl, me, true, &mut epoch, &mut hook)? {}
                // Stopped inside the operation the warm-up ended in: none of it counts.
                self.follow_epoch(ctl, &mut epoch);
            }
        }
        interrupt::check()?;
        Ok(())
    }

    fn tally(&self) -> &Tally {
        &self.tally
    }

    fn tally_mut(&mut self) -> &mut Tally {
        &mut self.tally
    }

    fn phase_ns(&self) -> Vec<u64> {
        self.phase_ns.clone()
    }

    fn passes(&self) -> f64 {
        self.passes as f64
    }

    fn notes(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    fn finish(&mut self) {
        Executor::finish(self);
    }
}

impl Drop for Executor<'_> {
    /// Descriptors a failed case left open would keep its filesystem busy.
    fn drop(&mut self) {
        self.finish();
    }
}

/// Issue `op`'s system call. `a`/`b` are its rendered paths (empty when it takes fewer),
/// `fd` the descriptor of its slot (-1 when it has none), `out` the buffer the kernel
/// writes results into (read data, stat structures, directory entries, xattr values).
///
/// A buffer shorter than the call may fill (`op.out_len()`) is refused with `EFAULT`
/// without calling the kernel: the executor sizes its buffer from every step, so this
/// never happens unless that sizing is wrong — and then it must not become a heap
/// overflow (`sys::call::step` passes each slice with its own length, and checks the
/// stat family's buffer holds its structure).
#[inline(always)]
fn issue(op: &Op, fd: i32, a: &CStr, b: &CStr, out: &mut [u8]) -> SysResult {
    use crate::signature::step::{
        ChownCall, GETXATTR_LEN, OpenCall, RenameCall, StatCall, SyncCall,
    };
    use crate::sys::call::step as sc;
    // The first `n` bytes of `out`, which the kernel may fill (EFAULT, no call, when
    // `out` is shorter).
    macro_rules! first {
        ($n:expr) => {
            match out.get_mut(..$n) {
                Some(b) => b,
                None => return Err(Errno(libc::EFAULT)),
            }
        };
    }
    match op {
        Op::Open {
            call, flags, mode, ..
        } => match call {
            OpenCall::Open => sc::open(a, *flags, *mode),
            OpenCall::Openat => sc::openat(a, *flags, *mode),
            OpenCall::Creat => sc::creat(a, *mode),
        },
        Op::Close { .. } => sc::close(fd),
        Op::Write { data, .. } => sc::write(fd, data),
        Op::Pwrite { data, offset, .. } => sc::pwrite64(fd, data, *offset),
        Op::Read { size, .. } => sc::read(fd, first!(*size)),
        Op::Pread { size, offset, .. } => sc::pread64(fd, first!(*size), *offset),
        Op::Dup { .. } => sc::dup(fd),
        Op::SyncFileRange {
            offset,
            size,
            flags,
            ..
        } => sc::sync_file_range(fd, *offset, *size, *flags),
        Op::FdSync { call, .. } => match call {
            SyncCall::Fsync => sc::fsync(fd),
            SyncCall::Fdatasync => sc::fdatasync(fd),
            SyncCall::Syncfs => sc::syncfs(fd),
        },
        Op::Sync => sc::sync(),
        Op::Rename { call, flags, .. } => match call {
            RenameCall::Rename => sc::rename(a, b),
            RenameCall::Renameat => sc::renameat(a, b),
            RenameCall::Renameat2 => sc::renameat2(a, b, *flags),
        },
        Op::Link { at: false, .. } => sc::link(a, b),
        Op::Link {
            at: true, flags, ..
        } => sc::linkat(a, b, *flags),
        Op::Symlink { at: false, .. } => sc::symlink(a, b),
        Op::Symlink { at: true, .. } => sc::symlinkat(a, b),
        Op::Unlink { .. } => sc::unlink(a),
        Op::Unlinkat { flags, .. } => sc::unlinkat(a, *flags),
        Op::Mkdir {
            at: false, mode, ..
        } => sc::mkdir(a, *mode),
        Op::Mkdir { at: true, mode, .. } => sc::mkdirat(a, *mode),
        Op::Rmdir { .. } => sc::rmdir(a),
        Op::Stat {
            call, flags, mask, ..
        } => match call {
            StatCall::Stat => sc::stat(a, out),
            StatCall::Lstat => sc::lstat(a, out),
            StatCall::Fstatat => sc::newfstatat(a, out, *flags),
            StatCall::Statx => sc::statx(a, *flags, *mask, out),
        },
        Op::Fstat { .. } => sc::fstat(fd, out),
        Op::Truncate { size, .. } => sc::truncate(a, *size),
        Op::Ftruncate { size, .. } => sc::ftruncate(fd, *size),
        Op::Fallocate {
            flags,
            offset,
            size,
            ..
        } => sc::fallocate(fd, *flags, *offset, *size),
        Op::Chmod {
            at: false, mode, ..
        } => sc::chmod(a, *mode),
        Op::Chmod { at: true, mode, .. } => sc::fchmodat(a, *mode),
        Op::Fchmod { mode, .. } => sc::fchmod(fd, *mode),
        Op::Chown {
            call,
            uid,
            gid,
            flags,
            ..
        } => match call {
            ChownCall::Chown => sc::chown(a, *uid, *gid),
            ChownCall::Lchown => sc::lchown(a, *uid, *gid),
            ChownCall::Fchownat => sc::fchownat(a, *uid, *gid, *flags),
        },
        Op::Fchown { uid, gid, .. } => sc::fchown(fd, *uid, *gid),
        Op::Utimensat {
            path: Some(_),
            flags,
            ..
        } => sc::utimensat_now(a, *flags),
        Op::Utimensat {
            path: None, flags, ..
        } => sc::futimens_now(fd, *flags),
        Op::Access {
            at: false, mode, ..
        } => sc::access(a, *mode),
        Op::Access { at: true, mode, .. } => sc::faccessat(a, *mode),
        Op::Setxattr {
            name, value, flags, ..
        } => sc::setxattr(a, name, value, *flags),
        Op::Getxattr { name, .. } => sc::getxattr(a, name, first!(GETXATTR_LEN)),
        Op::Removexattr { name, .. } => sc::removexattr(a, name),
        Op::Getdents64 { size, .. } => sc::getdents64(fd, first!(*size)),
    }
}

#[cfg(test)]
mod tests {

    /// Issue 56: a tab or a line break in a path never shifts the op log's columns.
    #[test]
    fn op_log_fields_keep_their_columns() {
        assert_eq!(
            super::tsv_field("a\tb c\nd\\e\x1b"),
            "a\\tb\\x20c\\nd\\\\e\\x1b"
        );
        assert_eq!(super::tsv_field("file_1"), "file_1");
    }

    use super::*;
    use crate::signature::limits::MAX_IO_BYTES;
    use crate::signature::step::{op_fields, op_names};
    use crate::testbed::confine::run_in_dir;

    #[test]
    fn a_buffer_shorter_than_the_call_needs_is_refused_before_the_kernel() {
        let op = Op::Pread {
            slot: 0,
            size: 1 << 20,
            offset: 0,
        };
        let mut small = vec![0u8; 4096];
        assert_eq!(
            super::issue(&op, -1, c"", c"", &mut small),
            Err(Errno(libc::EFAULT))
        );
        // Large enough: the kernel is asked, and says the descriptor is bad.
        let mut big = vec![0u8; 1 << 20];
        assert_eq!(
            super::issue(&op, -1, c"", c"", &mut big),
            Err(Errno(libc::EBADF))
        );
    }

    /// One signature step of `op` with every field it takes, sizes at their maximum.
    fn step_of(op: &str) -> String {
        let mut fields = vec![format!("op = \"{op}\""), "expect = \"any\"".to_string()];
        for f in op_fields(op).unwrap() {
            let f = f.trim_start_matches('!');
            let v = match f {
                "path" => "\"{name}.p\"".to_string(),
                "from" => "\"{name}\"".to_string(),
                "to" => "\"{name}.to\"".to_string(),
                "target" => "\"{name}\"".to_string(),
                // Open-like ops define a slot of their own (reopening `f` is an error).
                "slot" if ["open", "openat", "creat"].contains(&op) => "\"g\"".to_string(),
                "slot" => "\"f\"".to_string(),
                "new_slot" => "\"g\"".to_string(),
                // The largest call the limits allow moves through memory; file sizes stay
                // small so the test does not fill the disk it runs on.
                "size"
                    if ["truncate", "ftruncate", "fallocate", "sync_file_range"].contains(&op) =>
                {
                    "4096".to_string()
                }
                "size" => MAX_IO_BYTES.to_string(),
                "offset" => "0".to_string(),
                "mode" => "0o644".to_string(),
                "uid" | "gid" => "0".to_string(),
                "name" => "\"user.sigbench\"".to_string(),
                "value" => "\"v\"".to_string(),
                "pattern" => "\"byte:0x5a\"".to_string(),
                "flags" | "mask" => continue,
                other => panic!("no test value for field `{other}` of `{op}`"),
            };
            if op == "utimensat" && f == "path" {
                continue; // path or slot, not both
            }
            fields.push(format!("{f} = {v}"));
        }
        format!("{{ {} }}", fields.join(", "))
    }

    #[test]
    fn every_op_runs_with_its_largest_buffer() {
        let dir = std::env::temp_dir().join(format!("sigbench-exec-ops-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut checked = 0;
        for op in op_names() {
            let text = format!(
                "format = 1\nname = \"op-{op}\"\nn = 1\n[setup]\npopulate = {{ size = 4096 }}\n\
                 [[phase]]\nname = \"p\"\nsteps = [\n\
                 {{ op = \"openat\", path = \"{{name}}\", flags = \"O_RDWR\", slot = \"f\" }},\n\
                 {},\n{{ op = \"close\", slot = \"f\", expect = \"any\" }},\n]\n",
                step_of(op)
            );
            let sig = Signature::parse(&text, &format!("<{op}>"))
                .unwrap_or_else(|e| panic!("{op}: {e:#}\n{text}"));
            let step = &sig.phases[0].steps[1];
            let exec = Executor::new(&sig, 1, 1).unwrap();
            assert!(
                exec.scratch_len() >= step.op.out_len(),
                "{op}: buffer {} < {}",
                exec.scratch_len(),
                step.op.out_len()
            );
            let case = dir.join(op);
            std::fs::create_dir_all(&case).unwrap();
            let timed = run_in_dir(&case, || {
                let seats = vec![super::super::Seat {
                    client: exec,
                    dir: None,
                }];
                super::super::run(seats, Bound::Count, &mut super::super::Quiet)
            })
            .unwrap()
            .unwrap_or_else(|e| panic!("{op}: {e:#}"));
            assert_eq!(timed.calls, 3, "{op}");
            checked += 1;
        }
        assert!(checked >= 50, "only {checked} ops");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
