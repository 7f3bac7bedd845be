//! A writer for the "newc" cpio format the kernel unpacks as an initramfs
//! (Documentation/driver-api/early-userspace/buffer-format.rst). Uncompressed: the kernel
//! copies it, so an uncompressed archive boots fastest under emulation.

use std::io::{self, Write};

/// An archive being written; entries are written in the order added.
pub struct Cpio<W: Write> {
    out: W,
    ino: u32,
    written: u64,
}

const MODE_DIR: u32 = 0o040000;
const MODE_FILE: u32 = 0o100000;
const MODE_LINK: u32 = 0o120000;
const MODE_CHR: u32 = 0o020000;

impl<W: Write> Cpio<W> {
    pub fn new(out: W) -> Cpio<W> {
        Cpio {
            out,
            ino: 1,
            written: 0,
        }
    }

    fn pad(&mut self) -> io::Result<()> {
        let pad = (4 - (self.written % 4) as usize) % 4;
        self.out.write_all(&[0u8; 3][..pad])?;
        self.written += pad as u64;
        Ok(())
    }

    fn header(&mut self, name: &str, mode: u32, size: usize, rdev: (u32, u32)) -> io::Result<()> {
        let name = name.trim_start_matches('/');
        let h = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0, // uid
            0, // gid
            1, // nlink
            0, // mtime
            size,
            0, // dev major
            0, // dev minor
            rdev.0,
            rdev.1,
            name.len() + 1,
            0 // check
        );
        self.ino += 1;
        self.out.write_all(h.as_bytes())?;
        self.out.write_all(name.as_bytes())?;
        self.out.write_all(&[0])?;
        self.written += (h.len() + name.len() + 1) as u64;
        self.pad()
    }

    pub fn dir(&mut self, path: &str) -> io::Result<()> {
        self.header(path, MODE_DIR | 0o755, 0, (0, 0))
    }

    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) -> io::Result<()> {
        self.header(path, MODE_FILE | (perm & 0o7777), data.len(), (0, 0))?;
        self.out.write_all(data)?;
        self.written += data.len() as u64;
        self.pad()
    }

    pub fn symlink(&mut self, path: &str, target: &str) -> io::Result<()> {
        self.header(path, MODE_LINK | 0o777, target.len(), (0, 0))?;
        self.out.write_all(target.as_bytes())?;
        self.written += target.len() as u64;
        self.pad()
    }

    pub fn char_device(&mut self, path: &str, perm: u32, major: u32, minor: u32) -> io::Result<()> {
        self.header(path, MODE_CHR | (perm & 0o7777), 0, (major, minor))
    }

    /// Write the trailer and return the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.header("TRAILER!!!", 0, 0, (0, 0))?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpio_reads_back_what_was_written() {
        let mut c = Cpio::new(Vec::new());
        c.dir("/etc").unwrap();
        c.file("/etc/x", 0o644, b"hello").unwrap();
        c.symlink("/bin/sh", "busybox").unwrap();
        c.char_device("/dev/console", 0o600, 5, 1).unwrap();
        let bytes = c.finish().unwrap();
        assert_eq!(bytes.len() % 4, 0);
        // GNU cpio, if present, lists it exactly.
        let dir = std::env::temp_dir().join(format!("sigbench-cpio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let archive = dir.join("a.cpio");
        std::fs::write(&archive, &bytes).unwrap();
        // GNU cpio (installed by scripts/deps.sh) lists it exactly.
        let listed = std::process::Command::new("cpio")
            .args(["-it", "--quiet", "-F"])
            .arg(&archive)
            .output()
            .expect("cpio runs");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            listed.status.success(),
            "{}",
            String::from_utf8_lossy(&listed.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&listed.stdout),
            "etc\netc/x\nbin/sh\ndev/console\n"
        );
    }
}
