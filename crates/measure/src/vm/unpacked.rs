//! A bzImage's kernel unpacked on the host, once, and booted through its PVH entry.
//!
//! Under TCG a bzImage's own decompressor costs 5–8 s of host time at every boot (Debian's
//! 6.1 unpacks 66 MB of xz before its first line), a third of a Debian kernel's boot
//! (docs/statistics.md, "What a state costs: a boot"). QEMU boots the unpacked ELF
//! directly when it has a PVH entry note (`XEN_ELFNOTE_PHYS32_ENTRY`; Debian's, Fedora's,
//! Arch's and openSUSE's kernels do).
//!
//! Only for the fixed state: the decompressor is also what places the kernel — KASLR of
//! its physical and virtual address and of its memory regions, drawn from a hash of the
//! boot parameters that hold the initramfs' size — and a sampled state samples that
//! placement, so a state's boot (and `--state SEED` again) keeps the bzImage. Which way a
//! run's kernel was entered is in its clock record (`boot`).
//!
//! The image is input like any other: the header's offsets are checked against the file,
//! the payload is decompressed by a capped child ([`crate::child::decompress`]) to exactly
//! the size the build appended, and the result is used only if it is an x86-64 ELF with
//! the PVH note; anything else boots the bzImage as before.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The most an unpacked kernel may be (Debian's 6.12: 74 MB with its relocations).
const MAX_UNPACKED: usize = 512 << 20;

/// The compression of a bzImage's payload, by its magic: those whose tool `make deps`
/// installs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compression {
    Xz,
    Zstd,
    Gzip,
}

impl Compression {
    fn of(data: &[u8]) -> Option<Compression> {
        if data.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Some(Compression::Xz)
        } else if data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else if data.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else {
            None
        }
    }

    /// The extension [`crate::child::decompress`] knows it by.
    fn extension(self) -> &'static str {
        match self {
            Compression::Xz => "xz",
            Compression::Zstd => "zst",
            Compression::Gzip => "gz",
        }
    }
}

fn le32(data: &[u8], at: usize) -> Option<usize> {
    let b: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(b) as usize)
}

/// A bzImage's compressed payload (boot protocol ≥ 2.08: `payload_offset` at 0x248 and
/// `payload_length` at 0x24c, counted from the protected-mode code `(setup_sects + 1) ×
/// 512` bytes in, `setup_sects` at 0x1f1 and 0 meaning 4) without the 4 bytes the build
/// appends to it, its compression, and the size those 4 bytes say it unpacks to. None for
/// anything else, or offsets outside the file.
fn payload(image: &[u8]) -> Option<(&[u8], Compression, usize)> {
    if image.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let version = u16::from_le_bytes(image.get(0x206..0x208)?.try_into().ok()?);
    if version < 0x0208 {
        return None;
    }
    let sects = match *image.get(0x1f1)? {
        0 => 4,
        n => n as usize,
    };
    let start = (sects + 1) * 512 + le32(image, 0x248)?;
    let len = le32(image, 0x24c)?;
    let whole = image.get(start..start.checked_add(len)?)?;
    let (data, size) = whole.split_at(whole.len().checked_sub(4)?);
    let unpacked = le32(size, 0)?;
    let how = Compression::of(data)?;
    (unpacked > 0 && unpacked <= MAX_UNPACKED).then_some((data, how, unpacked))
}

/// Whether `elf` is an x86-64 ELF with a PVH entry note (type 18 in the "Xen" notes).
fn has_pvh_entry(elf: &[u8]) -> bool {
    use object::read::elf::{ElfFile64, ProgramHeader};
    const XEN_ELFNOTE_PHYS32_ENTRY: u32 = 18;
    let Ok(file) = ElfFile64::<object::Endianness>::parse(elf) else {
        return false;
    };
    let endian = file.endian();
    if file.elf_header().e_machine.get(endian) != object::elf::EM_X86_64 {
        return false;
    }
    file.elf_program_headers().iter().any(|ph| {
        let Ok(Some(mut notes)) = ph.notes(endian, elf) else {
            return false;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == b"Xen" && note.n_type(endian) == XEN_ELFNOTE_PHYS32_ENTRY {
                return true;
            }
        }
        false
    })
}

/// The kernel of `image` unpacked for a PVH boot, kept in `dir` (the kernel's cache
/// directory) as `vmlinux`; None when it cannot be booted that way. What the image is (no
/// payload this host unpacks, no PVH note) is kept in `dir/vmlinux.none`, so the next run
/// does not try again; a decompression that failed is not (it may be the host's doing: a
/// tool missing, a full disk), and an interruption is the run's error.
pub fn pvh_kernel(image: &Path, dir: &Path) -> Result<Option<PathBuf>> {
    let done = dir.join("vmlinux");
    let none = dir.join("vmlinux.none");
    if done.is_file() {
        return Ok(Some(done));
    }
    if none.is_file() {
        return Ok(None);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    match unpack(image, dir)? {
        Unpacked::Elf(elf) => {
            let part = dir.join("vmlinux.partial");
            std::fs::write(&part, elf)
                .with_context(|| format!("cannot write {}", part.display()))?;
            std::fs::rename(&part, &done)?;
            Ok(Some(done))
        }
        Unpacked::Not(why) => {
            std::fs::write(&none, format!("{why}\n"))
                .with_context(|| format!("cannot write {}", none.display()))?;
            Ok(None)
        }
        Unpacked::Failed => Ok(None),
    }
}

/// What unpacking an image gave.
enum Unpacked {
    /// The ELF to boot through PVH.
    Elf(Vec<u8>),
    /// The image cannot be booted that way, and why.
    Not(String),
    /// The decompression failed (not remembered).
    Failed,
}

/// Unpack `image` in `dir`; an error when the cache cannot be written or the run was
/// interrupted.
fn unpack(image: &Path, dir: &Path) -> Result<Unpacked> {
    let Ok(data) = std::fs::read(image) else {
        return Ok(Unpacked::Failed);
    };
    let Some((compressed, how, size)) = payload(&data) else {
        return Ok(Unpacked::Not(
            "no payload this host can unpack (boot protocol < 2.08, or not xz, zstd or gzip)"
                .into(),
        ));
    };
    let file = dir.join(format!("vmlinux.payload.{}", how.extension()));
    std::fs::write(&file, compressed)
        .with_context(|| format!("cannot write {}", file.display()))?;
    let elf = crate::child::decompress(&file, size, "a kernel's payload");
    let _ = std::fs::remove_file(&file);
    crate::interrupt::check()?;
    Ok(match elf {
        Ok(elf) if elf.len() != size => Unpacked::Not(format!(
            "the payload unpacked to {} bytes, not the {size} its image says",
            elf.len()
        )),
        Ok(elf) if !has_pvh_entry(&elf) => Unpacked::Not("no PVH entry note".into()),
        Ok(elf) => Unpacked::Elf(elf),
        Err(_) => Unpacked::Failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bzImage header of protocol 2.15 with `setup_sects` 3 and the payload at `offset`
    /// into the protected-mode code, followed by `payload` (its 4-byte size included).
    fn image(offset: usize, payload: &[u8], length: usize) -> Vec<u8> {
        let mut v = vec![0u8; 4 * 512 + offset];
        v[0x1f1] = 3;
        v[0x202..0x206].copy_from_slice(b"HdrS");
        v[0x206..0x208].copy_from_slice(&0x020fu16.to_le_bytes());
        v[0x248..0x24c].copy_from_slice(&(offset as u32).to_le_bytes());
        v[0x24c..0x250].copy_from_slice(&(length as u32).to_le_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn xz_payload(body: &[u8], size: u32) -> Vec<u8> {
        let mut p = vec![0xfd, b'7', b'z', b'X', b'Z', 0];
        p.extend_from_slice(body);
        p.extend_from_slice(&size.to_le_bytes());
        p
    }

    #[test]
    fn the_payload_is_found_by_the_header_and_its_size_taken_off() {
        let p = xz_payload(b"compressed", 66_000_000);
        let img = image(100, &p, p.len());
        let (data, how, size) = payload(&img).unwrap();
        assert_eq!(how, Compression::Xz);
        assert_eq!(size, 66_000_000);
        assert_eq!(data, &p[..p.len() - 4]);
        // setup_sects 0 means 4.
        let mut img = image(0, &p, p.len());
        img[0x1f1] = 0;
        img.splice(4 * 512..4 * 512, std::iter::repeat_n(0u8, 512));
        assert_eq!(payload(&img).unwrap().0, &p[..p.len() - 4]);
    }

    #[test]
    fn a_header_that_points_outside_the_file_or_lies_is_no_payload() {
        let p = xz_payload(b"compressed", 1000);
        // Longer than the file, and an offset past its end.
        assert!(payload(&image(0, &p, p.len() + 1)).is_none());
        assert!(payload(&image(0, &p, usize::MAX >> 32)).is_none());
        let mut img = image(0, &p, p.len());
        img[0x248..0x24c].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(payload(&img).is_none());
        // Too short to hold its size; an unpacked size of 0 or past the cap.
        assert!(payload(&image(0, &p[..3], 3)).is_none());
        assert!(payload(&image(0, &xz_payload(b"x", 0), 11)).is_none());
        let big = xz_payload(b"x", (MAX_UNPACKED + 1) as u32);
        assert!(payload(&image(0, &big, big.len())).is_none());
        // Unknown compression (lz4), an old protocol, no header.
        let mut lz4 = vec![0x02, 0x21, 0x4c, 0x18, 1, 2];
        lz4.extend_from_slice(&10u32.to_le_bytes());
        assert!(payload(&image(0, &lz4, lz4.len())).is_none());
        let mut old = image(0, &p, p.len());
        old[0x206..0x208].copy_from_slice(&0x0207u16.to_le_bytes());
        assert!(payload(&old).is_none());
        assert!(payload(&[0u8; 0x300]).is_none());
        assert!(payload(&[]).is_none());
    }

    #[test]
    fn only_an_x86_64_elf_with_the_pvh_note_boots_that_way() {
        assert!(!has_pvh_entry(b"not an elf"));
        assert!(!has_pvh_entry(&[]));
        // This test binary: an x86-64 ELF without a Xen note.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(!has_pvh_entry(&me));
    }

    proptest::proptest! {
        /// Issue 39's rule for every parser of input: any bytes give an answer, never a panic.
        #[test]
        fn any_image_bytes_give_an_answer(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..4096),
                                          offset in 0usize..2048, length in 0usize..4096) {
            let _ = payload(&bytes);
            let mut img = image(offset, &bytes, length);
            let _ = payload(&img);
            img.truncate(img.len() / 2);
            let _ = payload(&img);
            let _ = has_pvh_entry(&bytes);
        }
    }
}
