//! Reading an input file whole (a signature, a run document or export): a regular file
//! no larger than the limit for its kind, said in one line — `/dev/zero` or a 300 MB
//! "signature" is refused before memory is spent on it.

use anyhow::{Context, Result, bail};
use std::io::Read;
use std::path::Path;

/// The largest signature file: the biggest built-in is 3 KB, a recorded one tens of KB.
pub const MAX_SIGNATURE_BYTES: u64 = 1 << 20;
/// The largest run document or export read at once (an export of 1,000 runs with
/// profiles is ~200 MB).
pub const MAX_DOCUMENT_BYTES: u64 = 1 << 30;

/// The text of `path`, `what` naming it in errors ("the signature"): refused when it is
/// not a regular file, larger than `max` bytes, or not UTF-8.
pub fn read_text(path: &Path, what: &str, max: u64) -> Result<String> {
    let shown = path.display();
    let f = std::fs::File::open(path).with_context(|| format!("cannot read {what} {shown}"))?;
    let meta = f
        .metadata()
        .with_context(|| format!("cannot read {what} {shown}"))?;
    if !meta.is_file() {
        bail!("{what} {shown} is not a regular file: give a file");
    }
    let too_big = |n: u64| {
        anyhow::anyhow!(
            "{what} {shown} has {n} bytes, over the limit of {}",
            human(max)
        )
    };
    if meta.len() > max {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(max + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {what} {shown}"))?;
    // A file that grew while it was read.
    if bytes.len() as u64 > max {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{what} {shown}: byte {} is not UTF-8",
            e.utf8_error().valid_up_to() + 1
        )
    })
}

fn human(n: u64) -> String {
    if n >= 1 << 30 {
        format!("{} GiB", n >> 30)
    } else {
        format!("{} MiB", n >> 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39, 9: `validate /dev/zero`, `import /dev/zero` grew until out of memory.
    #[test]
    fn devices_and_oversized_files_are_refused_in_one_line() {
        let e = read_text(Path::new("/dev/zero"), "the signature", 1 << 20)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the signature /dev/zero is not a regular file: give a file"
        );
        let p = std::env::temp_dir().join(format!("sigbench-input-{}", std::process::id()));
        std::fs::write(&p, vec![b'x'; 2 << 20]).unwrap();
        let e = read_text(&p, "the signature", 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("has 2097152 bytes, over the limit of 1 MiB"),
            "{e}"
        );
        std::fs::write(&p, b"ok").unwrap();
        assert_eq!(read_text(&p, "the signature", 1 << 20).unwrap(), "ok");
        std::fs::remove_file(&p).unwrap();
    }
}
