//! The QEMU TCG plugin: the model of `lib.rs` fed by QEMU's plugin API (version 1, as
//! Debian's QEMU 7.2 exports it; no package ships its header, so what is used is declared
//! here from QEMU's `include/qemu/qemu-plugin.h`).
//!
//! At translation each block gets a callback per run of instruction lines contiguous in
//! memory (the I-side: the lines, their count and the instructions in them packed in the
//! callback's argument, nothing allocated per block); per instruction a memory callback
//! (the D-side, on guest-physical addresses) flagged for `rep` string instructions, a
//! callback counting string iterations and locked instructions, and on sigbench's mark
//! no-ops a callback that writes the cumulative counters to the file named by the
//! plugin's `out=` argument. Callbacks only (no inline operations, whose functions changed
//! in API version 2), so one source serves QEMU 7.2 (API 1) and QEMU 9 and later (API 2
//! and up): sigbench builds it for both and loads the one QEMU takes.
//!
//! sigbench loads it only into a single-threaded TCG (`-accel tcg,thread=single`, the
//! icount clock): every callback runs on the one thread that runs every guest CPU.

use super::{CodeRegions, Kind, LINE_SHIFT, Machine, Mark, Record, kind_of};
use std::cell::UnsafeCell;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

type PluginId = u64;
type MemInfo = u32;

#[repr(C)]
struct Tb {
    _opaque: [u8; 0],
}
#[repr(C)]
struct Insn {
    _opaque: [u8; 0],
}
#[repr(C)]
struct HwAddr {
    _opaque: [u8; 0],
}
/// `qemu_info_t`: only its address is used.
#[repr(C)]
pub struct Info {
    _opaque: [u8; 0],
}

/// enum qemu_plugin_cb_flags: QEMU_PLUGIN_CB_NO_REGS.
const CB_NO_REGS: c_int = 0;
/// enum qemu_plugin_mem_rw: QEMU_PLUGIN_MEM_RW.
const MEM_RW: c_int = 3;

type TransCb = extern "C" fn(PluginId, *mut Tb);
type UdataCb = extern "C" fn(c_uint, *mut c_void);
type MemCb = extern "C" fn(c_uint, MemInfo, u64, *mut c_void);

unsafe extern "C" {
    fn qemu_plugin_register_vcpu_tb_trans_cb(id: PluginId, cb: TransCb);
    fn qemu_plugin_tb_n_insns(tb: *const Tb) -> usize;
    fn qemu_plugin_tb_get_insn(tb: *const Tb, idx: usize) -> *mut Insn;
    /// QEMU 7.2: a pointer to the instruction's bytes.
    #[cfg(not(sigbench_plugin_api = "2"))]
    fn qemu_plugin_insn_data(insn: *const Insn) -> *const c_void;
    /// QEMU 9.1 and later: the bytes copied into `dest` (at most `len`), how many.
    #[cfg(sigbench_plugin_api = "2")]
    fn qemu_plugin_insn_data(insn: *const Insn, dest: *mut c_void, len: usize) -> usize;
    fn qemu_plugin_insn_size(insn: *const Insn) -> usize;
    fn qemu_plugin_insn_haddr(insn: *const Insn) -> *mut c_void;
    fn qemu_plugin_register_vcpu_tb_exec_cb(
        tb: *mut Tb,
        cb: UdataCb,
        flags: c_int,
        udata: *mut c_void,
    );
    fn qemu_plugin_register_vcpu_insn_exec_cb(
        insn: *mut Insn,
        cb: UdataCb,
        flags: c_int,
        udata: *mut c_void,
    );
    fn qemu_plugin_register_vcpu_mem_cb(
        insn: *mut Insn,
        cb: MemCb,
        flags: c_int,
        rw: c_int,
        udata: *mut c_void,
    );
    fn qemu_plugin_get_hwaddr(info: MemInfo, vaddr: u64) -> *mut HwAddr;
    fn qemu_plugin_hwaddr_is_io(haddr: *const HwAddr) -> bool;
    fn qemu_plugin_hwaddr_phys_addr(haddr: *const HwAddr) -> u64;
    fn qemu_plugin_mem_is_store(info: MemInfo) -> bool;
    fn qemu_plugin_outs(s: *const c_char);
}

/// The plugin API version this build declares: QEMU 7.2 loads plugins of version 1 at
/// most; QEMU 9 and later refuse versions below 2. The functions used here (callbacks,
/// no inline operations, whose functions changed in version 2) are the same in both, so
/// one source builds both (`--cfg 'sigbench_plugin_api="2"'`).
#[cfg(not(sigbench_plugin_api = "2"))]
#[unsafe(no_mangle)]
pub static qemu_plugin_version: c_int = 1;
#[cfg(sigbench_plugin_api = "2")]
#[unsafe(no_mangle)]
pub static qemu_plugin_version: c_int = 2;

/// Counted by the callbacks while the model is armed.
static INSNS: AtomicU64 = AtomicU64::new(0);
static STRING_ITERATIONS: AtomicU64 = AtomicU64::new(0);
static LOCKED: AtomicU64 = AtomicU64::new(0);

/// The most guest CPUs the model keeps caches for (more share them, modulo).
const MAX_CPUS: usize = 64;

/// Whether the model follows the guest now: from a case's `Arm` to its window's `Close`.
/// Outside (the boot, between cases) the callbacks return at once: a record's counters
/// are differenced within one armed stretch only.
static ARMED: AtomicBool = AtomicBool::new(false);

struct State {
    machine: Machine,
    out: std::fs::File,
    /// Code's host addresses named the same every boot.
    code: CodeRegions,
}

/// The model's state. QEMU's single-threaded TCG (the only kind sigbench loads this into:
/// `-accel tcg,thread=single`) calls every callback from one thread, so the state needs no
/// lock — a lock per memory access was a fifth of the model's time. The thread that first
/// asks owns it; another asking aborts QEMU with a message rather than race.
struct OneThread {
    owner: AtomicUsize,
    cell: UnsafeCell<Option<State>>,
}

// SAFETY: `cell` is reached only by `OneThread::with` on the owning thread (checked there)
// and by `install` before QEMU starts any guest CPU.
unsafe impl Sync for OneThread {}

static STATE: OneThread = OneThread {
    owner: AtomicUsize::new(0),
    cell: UnsafeCell::new(None),
};

thread_local! {
    static THREAD: u8 = const { 0 };
}

impl OneThread {
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let me = THREAD.with(|t| t as *const u8 as usize);
        let owner = self.owner.load(Relaxed);
        if owner != me
            && (owner != 0
                || self
                    .owner
                    .compare_exchange(0, me, Relaxed, Relaxed)
                    .is_err())
        {
            say(
                "callbacks from a second thread: load this plugin into a single-threaded TCG (-accel tcg,thread=single)",
            );
            std::process::abort();
        }
        // SAFETY: only the owning thread gets here (checked above), and no callback calls
        // another, so this is the only reference to the state while `f` runs.
        let state = unsafe { &mut *self.cell.get() };
        match state {
            Some(s) => f(s),
            None => {
                say("a callback before the plugin was installed");
                std::process::abort();
            }
        }
    }
}

fn say(msg: &str) {
    if let Ok(c) = std::ffi::CString::new(format!("sigbench-cost: {msg}\n")) {
        // SAFETY: a NUL-terminated string that lives across the call.
        unsafe { qemu_plugin_outs(c.as_ptr()) };
    }
}

/// `udata` of an I-side callback: the first line (host address >> 6: 41 bits), how many
/// lines (8 bits) and the instructions of the block in them (10 bits; a block has at
/// most 512).
fn pack_lines(first: u64, lines: u64, insns: u64) -> *mut c_void {
    ((first << 18) | (lines.min(255) << 10) | insns.min(1023)) as usize as *mut c_void
}

extern "C" fn fetched(cpu: c_uint, udata: *mut c_void) {
    if !ARMED.load(Relaxed) {
        return;
    }
    let v = udata as usize as u64;
    // One thread runs every guest CPU: a plain add, not a locked one.
    INSNS.store(INSNS.load(Relaxed) + (v & 1023), Relaxed);
    STATE.with(|s| s.machine.fetch(cpu as usize, v >> 18, (v >> 10) & 0xff));
}

/// A `rep` string instruction's iteration (`udata` 0) or a locked instruction (1).
extern "C" fn counted(_cpu: c_uint, udata: *mut c_void) {
    if !ARMED.load(Relaxed) {
        return;
    }
    let c = if udata.is_null() {
        &STRING_ITERATIONS
    } else {
        &LOCKED
    };
    c.store(c.load(Relaxed) + 1, Relaxed);
}

/// `udata` of a memory callback: its instruction's `Kind`, by number.
extern "C" fn accessed(cpu: c_uint, info: MemInfo, vaddr: u64, udata: *mut c_void) {
    if !ARMED.load(Relaxed) {
        return;
    }
    // SAFETY: `info` is the one QEMU passed to this callback, valid during it.
    let hw = unsafe { qemu_plugin_get_hwaddr(info, vaddr) };
    // SAFETY: `info` as above; `hw` is QEMU's own (or null, which the API accepts).
    let (store, io) = unsafe {
        (
            qemu_plugin_mem_is_store(info),
            !hw.is_null() && qemu_plugin_hwaddr_is_io(hw),
        )
    };
    if io || hw.is_null() {
        // A device's register: counted, not cached.
        STATE.with(|s| {
            if store {
                s.machine.counts.stores += 1;
            } else {
                s.machine.counts.loads += 1;
            }
        });
        return;
    }
    // SAFETY: `hw` is a RAM address QEMU returned for this access.
    let phys = unsafe { qemu_plugin_hwaddr_phys_addr(hw) };
    let kind = Kind::of_number(udata as usize);
    STATE.with(|s| s.machine.data(cpu as usize, phys, store, kind));
}

/// `udata` of a mark's callback: the mark's kind (3 bits) and the instructions its block
/// holds after it. The block's instructions are counted when it is entered (`fetched`), so
/// the count at the mark is the count then less those after it: exact whatever the shape
/// of the block (under icount QEMU cuts a block where the budget ends, so the block a mark
/// lies in differs with where the timer's interrupt fell).
fn pack_mark(mark: Mark, after: usize) -> *mut c_void {
    ((after << 3) | mark as usize) as *mut c_void
}

extern "C" fn marked(_cpu: c_uint, udata: *mut c_void) {
    let after = (udata as usize >> 3) as u64;
    let mark = match udata as usize & 7 {
        1 => Mark::Open,
        2 => Mark::Pause,
        3 => Mark::Resume,
        4 => Mark::Close,
        _ => Mark::Arm,
    };
    match mark {
        Mark::Arm => {
            ARMED.store(true, Relaxed);
            return;
        }
        Mark::Open => ARMED.store(true, Relaxed),
        Mark::Close => ARMED.store(false, Relaxed),
        Mark::Pause | Mark::Resume => {}
    }
    STATE.with(|s| {
        let mut counters = s.machine.counts;
        counters.insns = INSNS.load(Relaxed).saturating_sub(after);
        counters.string_iterations = STRING_ITERATIONS.load(Relaxed);
        counters.locked = LOCKED.load(Relaxed);
        let line = Record { mark, counters }.line();
        if let Err(e) = s.out.write_all(line.as_bytes()) {
            say(&format!("cannot write a record: {e}"));
        }
    });
}

/// The name of guest code at host address `host` the same every boot ([`CodeRegions`]);
/// the host address itself (said once) for code in no mapping the host lists.
fn code_name(host: u64) -> u64 {
    static SAID: AtomicBool = AtomicBool::new(false);
    let maps = || std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    STATE
        .with(|s| s.code.name(host, maps))
        .unwrap_or_else(|| {
            if !SAID.swap(true, Relaxed) {
                say(&format!("guest code at {host:#x} lies in no mapping of /proc/self/maps: its lines are named by host address, which varies between boots"));
            }
            host
        })
}

extern "C" fn translated(_id: PluginId, tb: *mut Tb) {
    // SAFETY: `tb` is the block QEMU is translating, valid during this callback, and so is
    // each of its instructions and their bytes.
    unsafe {
        let n = qemu_plugin_tb_n_insns(tb);
        // Runs of instruction lines contiguous in the host's copy of guest memory, each
        // with the instructions in it: (first line, last line, instructions).
        let mut run: Option<(u64, u64, u64)> = None;
        for k in 0..n {
            let insn = qemu_plugin_tb_get_insn(tb, k);
            let size = qemu_plugin_insn_size(insn);
            #[cfg(not(sigbench_plugin_api = "2"))]
            let bytes = std::slice::from_raw_parts(qemu_plugin_insn_data(insn).cast::<u8>(), size);
            // An x86 instruction is at most 15 bytes.
            #[cfg(sigbench_plugin_api = "2")]
            let mut buf = [0u8; 16];
            #[cfg(sigbench_plugin_api = "2")]
            let got = qemu_plugin_insn_data(insn, buf.as_mut_ptr().cast(), buf.len());
            #[cfg(sigbench_plugin_api = "2")]
            let bytes = &buf[..got.min(buf.len())];
            let host = code_name(qemu_plugin_insn_haddr(insn) as usize as u64);
            let (a, b) = (
                host >> LINE_SHIFT,
                (host + size.max(1) as u64 - 1) >> LINE_SHIFT,
            );
            run = match run {
                Some((first, last, insns)) if a >= first && a <= last + 1 => {
                    Some((first, last.max(b), insns + 1))
                }
                Some((first, last, insns)) => {
                    qemu_plugin_register_vcpu_tb_exec_cb(
                        tb,
                        fetched,
                        CB_NO_REGS,
                        pack_lines(first, last - first + 1, insns),
                    );
                    Some((a, b, 1))
                }
                None => Some((a, b, 1)),
            };
            if let Some(mark) = Mark::of_insn(bytes) {
                qemu_plugin_register_vcpu_insn_exec_cb(
                    insn,
                    marked,
                    CB_NO_REGS,
                    pack_mark(mark, n - k - 1),
                );
            }
            let kind = kind_of(bytes);
            match kind {
                Kind::RepString => {
                    qemu_plugin_register_vcpu_insn_exec_cb(
                        insn,
                        counted,
                        CB_NO_REGS,
                        std::ptr::null_mut(),
                    );
                }
                Kind::Locked => {
                    qemu_plugin_register_vcpu_insn_exec_cb(
                        insn,
                        counted,
                        CB_NO_REGS,
                        1usize as *mut c_void,
                    );
                }
                Kind::Plain => {}
            }
            qemu_plugin_register_vcpu_mem_cb(
                insn,
                accessed,
                CB_NO_REGS,
                MEM_RW,
                kind as usize as *mut c_void,
            );
        }
        if let Some((first, last, insns)) = run {
            qemu_plugin_register_vcpu_tb_exec_cb(
                tb,
                fetched,
                CB_NO_REGS,
                pack_lines(first, last - first + 1, insns),
            );
        }
    }
}

/// Called by QEMU when it loads the plugin: `out=PATH` names the record file, `cpus=N` the
/// guest's CPUs, `placement=SEED` (hexadecimal) where code lies within its pages
/// (`Machine::with_placement`; without it, as linked).
///
/// # Safety
/// QEMU passes `argc` NUL-terminated arguments in `argv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qemu_plugin_install(
    id: PluginId,
    _info: *const Info,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    let mut out = None;
    // The guest's CPUs (sigbench gives them): each has caches of its own, kept coherent
    // when there are several. Without it, the most the model keeps.
    let mut cpus = MAX_CPUS;
    let mut placement = 0;
    for k in 0..argc.max(0) as usize {
        // SAFETY: QEMU's `argv` holds `argc` valid C strings.
        let arg = unsafe { CStr::from_ptr(*argv.add(k)) }.to_string_lossy();
        if let Some(path) = arg.strip_prefix("out=") {
            out = Some(path.to_string());
        } else if let Some(n) = arg.strip_prefix("cpus=") {
            match n.parse::<usize>() {
                Ok(n) if (1..=MAX_CPUS).contains(&n) => cpus = n,
                _ => {
                    say(&format!("cpus={n}: give 1 to {MAX_CPUS}"));
                    return -1;
                }
            }
        } else if let Some(seed) = arg.strip_prefix("placement=") {
            match u64::from_str_radix(seed, 16) {
                Ok(p) => placement = p,
                Err(_) => {
                    say(&format!("placement={seed}: give a hexadecimal seed"));
                    return -1;
                }
            }
        }
    }
    let Some(path) = out else {
        say("give out=FILE");
        return -1;
    };
    let file = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) => {
            say(&format!("cannot open {path}: {e}"));
            return -1;
        }
    };
    // SAFETY: QEMU installs plugins before it runs any guest CPU: no callback can reach
    // the state yet.
    unsafe {
        *STATE.cell.get() = Some(State {
            machine: Machine::with_placement(cpus, placement),
            out: file,
            code: CodeRegions::default(),
        });
    }
    // SAFETY: `id` is this plugin's; the callback has the signature QEMU calls it with.
    unsafe { qemu_plugin_register_vcpu_tb_trans_cb(id, translated) };
    0
}
