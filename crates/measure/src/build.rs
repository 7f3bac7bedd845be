//! This binary's identity: the GNU build ID the linker wrote into it (`--build-id=sha1`,
//! .cargo/config.toml), read from /proc/self/exe's notes — a few hundred bytes, so a guest
//! under emulation reads it as cheaply as the host. Two builds of one version (the dev
//! and release profiles, another toolchain, a change not yet committed) are two executors:
//! their code and its place differ, which under the icount clock and the cost model alone
//! moves instructions and cache misses. A run document names its build (`tool.build`).

use std::os::unix::fs::FileExt;

/// ELF's note type of the GNU build ID.
const NT_GNU_BUILD_ID: u32 = 3;
/// The most of a note segment read: ours hold the ABI tag and the build ID (~60 bytes).
const MAX_NOTES: u64 = 64 << 10;
/// The most program headers looked at.
const MAX_PHDRS: u64 = 256;

/// The build ID of the running binary in hexadecimal, or None where it has none or it
/// cannot be read (then nothing else is affected). Read once a process: the binary does
/// not change under it (a bisect asks for every step it resumes).
pub fn current() -> Option<String> {
    static ID: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let f = std::fs::File::open("/proc/self/exe").ok()?;
        build_id(&|at, len| {
            let mut b = vec![0u8; len];
            f.read_exact_at(&mut b, at).ok().map(|_| b)
        })
    })
    .clone()
}

/// The build ID of the ELF file `read` reads (`read(offset, len)`: exactly `len` bytes at
/// `offset`, or None), in hexadecimal: the first note named `GNU` of type
/// `NT_GNU_BUILD_ID` in a PT_NOTE segment of a 64-bit little-endian file. Anything
/// malformed is None, never a panic.
pub fn build_id(read: &dyn Fn(u64, usize) -> Option<Vec<u8>>) -> Option<String> {
    let h = read(0, 64)?;
    if h[..4] != *b"\x7fELF" || h[4] != 2 || h[5] != 1 {
        return None;
    }
    let (phoff, phentsize, phnum) = (u64_at(&h, 32)?, u16_at(&h, 54)?, u16_at(&h, 56)?);
    if phentsize < 56 || u64::from(phnum) > MAX_PHDRS {
        return None;
    }
    for i in 0..u64::from(phnum) {
        let at = phoff.checked_add(i * u64::from(phentsize))?;
        let ph = read(at, 56)?;
        if u32_at(&ph, 0)? != 4 {
            continue; // not PT_NOTE
        }
        let (offset, size) = (u64_at(&ph, 8)?, u64_at(&ph, 32)?);
        if size > MAX_NOTES {
            continue;
        }
        if let Some(id) = read(offset, size as usize).and_then(|n| gnu_build_id(&n)) {
            return Some(id);
        }
    }
    None
}

/// The GNU build ID among the notes `n` (each: name size, descriptor size, type, the name
/// and the descriptor, each padded to 4 bytes).
fn gnu_build_id(n: &[u8]) -> Option<String> {
    let pad = |x: usize| x.checked_add(3).map(|v| v & !3);
    let mut at = 0usize;
    while at.checked_add(12)? <= n.len() {
        let (namesz, descsz) = (u32_at(n, at)? as usize, u32_at(n, at + 4)? as usize);
        let kind = u32_at(n, at + 8)?;
        let name_at = at + 12;
        let desc_at = name_at.checked_add(pad(namesz)?)?;
        let end = desc_at.checked_add(pad(descsz)?)?;
        let desc = n.get(desc_at..desc_at.checked_add(descsz)?)?;
        if kind == NT_GNU_BUILD_ID
            && n.get(name_at..name_at + namesz)? == b"GNU\0"
            && !desc.is_empty()
        {
            return Some(desc.iter().map(|b| format!("{b:02x}")).collect());
        }
        at = end;
    }
    None
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF: header, one PT_NOTE program header, the ABI tag and a build ID.
    fn elf(id: &[u8]) -> Vec<u8> {
        let mut notes = Vec::new();
        let mut note = |name: &[u8], kind: u32, desc: &[u8]| {
            notes.extend((name.len() as u32).to_le_bytes());
            notes.extend((desc.len() as u32).to_le_bytes());
            notes.extend(kind.to_le_bytes());
            notes.extend(name);
            notes.resize(notes.len().next_multiple_of(4), 0);
            notes.extend(desc);
            notes.resize(notes.len().next_multiple_of(4), 0);
        };
        note(
            b"GNU\0",
            1,
            &[0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0],
        );
        note(b"GNU\0", NT_GNU_BUILD_ID, id);
        let mut f = vec![0u8; 64 + 56];
        f[..6].copy_from_slice(b"\x7fELF\x02\x01");
        f[32..40].copy_from_slice(&64u64.to_le_bytes());
        f[54..56].copy_from_slice(&56u16.to_le_bytes());
        f[56..58].copy_from_slice(&1u16.to_le_bytes());
        f[64..68].copy_from_slice(&4u32.to_le_bytes());
        f[72..80].copy_from_slice(&120u64.to_le_bytes());
        f[96..104].copy_from_slice(&(notes.len() as u64).to_le_bytes());
        f.extend(notes);
        f
    }

    fn of(f: &[u8]) -> Option<String> {
        build_id(&|at, len| {
            let at = usize::try_from(at).ok()?;
            f.get(at..at.checked_add(len)?).map(<[u8]>::to_vec)
        })
    }

    #[test]
    fn reads_the_gnu_build_id_note() {
        assert_eq!(
            of(&elf(&[0xd6, 0x6f, 0x17, 0x94])).as_deref(),
            Some("d66f1794")
        );
        assert_eq!(of(b"#!/bin/sh\n"), None);
    }

    /// Hostile files: every truncation and every single-byte change of a valid file is
    /// read without a panic (and the untouched file still gives its ID).
    #[test]
    fn a_malformed_file_is_none_never_a_panic() {
        let good = elf(&[1; 20]);
        for len in 0..good.len() {
            let _ = of(&good[..len]);
        }
        for i in 0..good.len() {
            for v in [0u8, 1, 3, 0x7f, 0xff] {
                let mut bad = good.clone();
                bad[i] = v;
                let _ = of(&bad);
            }
        }
        assert_eq!(of(&good).map(|s| s.len()), Some(40));
    }

    /// This test binary was linked like sigbench: it has a 160-bit build ID.
    #[test]
    fn this_binary_has_one() {
        let id = current().expect("a build ID (.cargo/config.toml: --build-id=sha1)");
        assert_eq!(id.len(), 40, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
