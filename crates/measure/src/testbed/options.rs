//! Checking `--mkfs-opts` and `--mount-opts`: they may tune the filesystem sigbench makes,
//! never name another device or file. mkfs gets its options, then `--`, then the device
//! sigbench proved to be scratch, last; it runs in the run's empty workspace, so no
//! relative name resolves to anything. Mount options are handed to mount(2) for the
//! device sigbench chose.

use super::Fs;
use anyhow::{Result, bail};

/// mkfs options that take a value in the next argument, per tool (short options; long
/// options must be written `--name=value`).
fn takes_value(fs: Fs) -> &'static str {
    match fs {
        // mkfs.btrfs: -b -d -m -n -s -L -U -O -R -c(--csum)
        Fs::Btrfs => "bdmnsLUORc",
        // mke2fs: -b -C -E -e -G -g -i -I -L -m -M -N -o -O -r -t -T -U
        Fs::Ext4 => "bCEeGgiILmMNoOrtTU",
        // mkfs.xfs: -b -d -i -l -L -m -n -r -s
        Fs::Xfs => "bdilLmnrs",
        Fs::Tmpfs => "",
    }
}

/// Options that name a file or another device: a root directory to copy in, an external
/// journal or log, a bad-blocks list, an undo file, a prototype file.
fn forbidden(fs: Fs) -> &'static [&'static str] {
    match fs {
        Fs::Btrfs => &["-r", "--rootdir", "--device-uuid"],
        Fs::Ext4 => &["-d", "-J", "-l", "-z"],
        Fs::Xfs => &["-p"],
        Fs::Tmpfs => &[],
    }
}

/// Split and check `--mkfs-opts` for `fs`. Errors are one line saying what to do.
pub fn mkfs_options(fs: Fs, text: &str) -> Result<Vec<String>> {
    if fs.mkfs_tool().is_none() && !text.trim().is_empty() {
        bail!(
            "{} is not made with mkfs: drop --mkfs-opts (use --mount-opts)",
            fs.name()
        );
    }
    let tokens: Vec<String> = text.split_whitespace().map(String::from).collect();
    let values = takes_value(fs);
    let mut expect_value = false;
    for t in &tokens {
        if t.contains('/') {
            bail!(
                "--mkfs-opts: `{t}` names a file or device; sigbench formats only the scratch device it checked (use --device for that)"
            );
        }
        if expect_value {
            expect_value = false;
            continue;
        }
        if !t.starts_with('-') || t == "-" || t == "--" {
            bail!(
                "--mkfs-opts: `{t}` is not an option (a device or file?); sigbench passes the device itself, last"
            );
        }
        let name = t.split('=').next().unwrap_or(t);
        let short = (!t.starts_with("--")).then(|| &t[..2.min(t.len())]);
        if forbidden(fs).contains(&name) || short.is_some_and(|s| forbidden(fs).contains(&s)) {
            bail!(
                "--mkfs-opts: `{name}` makes mkfs read or write another file or device; sigbench does not allow it"
            );
        }
        if let Some(s) = short
            && t.len() == 2
            && values.contains(&s[1..])
        {
            expect_value = true;
        }
    }
    if expect_value {
        bail!(
            "--mkfs-opts: `{}` needs a value",
            tokens.last().map(String::as_str).unwrap_or_default()
        );
    }
    Ok(tokens)
}

/// Mount options that name another device or file.
const MOUNT_FORBIDDEN: &[&str] = &[
    "device",
    "logdev",
    "rtdev",
    "journal_path",
    "journal_dev",
    "loop",
    "offset",
    "sizelimit",
];

/// Check `--mount-opts`: no option may name another device or a file.
pub fn mount_options(text: &str) -> Result<()> {
    for o in text.split(',').filter(|o| !o.is_empty()) {
        let (key, value) = o.split_once('=').unwrap_or((o, ""));
        if MOUNT_FORBIDDEN.contains(&key) || value.contains('/') {
            bail!(
                "--mount-opts: `{o}` names another device or a file; sigbench mounts only its scratch filesystem"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkfs_options_tune_but_never_name_a_device() {
        assert_eq!(
            mkfs_options(Fs::Btrfs, "-O no-holes -R free-space-tree").unwrap(),
            ["-O", "no-holes", "-R", "free-space-tree"]
        );
        assert!(mkfs_options(Fs::Ext4, "-E lazy_itable_init=0,nodiscard -b 4096 -q").is_ok());
        assert!(mkfs_options(Fs::Xfs, "-m crc=1 -i size=512").is_ok());
        for (fs, bad) in [
            (Fs::Btrfs, "/dev/loop1"),
            (Fs::Btrfs, "-f loop1"),
            (Fs::Ext4, "-q victim.img"),
            (Fs::Ext4, "-J device=/dev/sdb"),
            (Fs::Ext4, "-d rootdir"),
            (Fs::Ext4, "-z undo"),
            (Fs::Btrfs, "--rootdir=x"),
            (Fs::Btrfs, "-r x"),
            (Fs::Xfs, "-p proto"),
            (Fs::Btrfs, "-O"),
            (Fs::Btrfs, "--"),
            (Fs::Ext4, "-L ../x"),
        ] {
            assert!(mkfs_options(fs, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mount_options_cannot_name_devices() {
        assert!(mount_options("noatime,compress=zstd:3,size=1m,nr_inodes=500").is_ok());
        for bad in [
            "device=/dev/loop1",
            "logdev=x",
            "noatime,journal_path=/x",
            "x=/y",
        ] {
            assert!(mount_options(bad).is_err(), "{bad}");
        }
    }
}
