//! Run documents and exports as JSON (schemas in docs/json.md). Written whole, to a file
//! or stdout; nothing else may go to stdout when it does.

use anyhow::{Context, Result};
use serde::Serialize;
use std::io::Write;

/// Write `doc` to `dest`: a path, or `-` for stdout.
pub fn write<T: Serialize>(doc: &T, dest: &str) -> Result<()> {
    let mut text = serde_json::to_string_pretty(doc)?;
    text.push('\n');
    if dest == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .context("writing JSON to stdout")?;
        out.flush()?;
    } else if std::fs::metadata(dest).is_ok_and(|m| !m.is_file()) {
        // A device (the results port of a guest): write it straight through.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(dest)
            .with_context(|| format!("cannot open {dest}"))?;
        f.write_all(text.as_bytes())
            .with_context(|| format!("cannot write {dest}"))?;
        f.flush()?;
    } else {
        // Write beside the target and rename, so a reader never sees half a document.
        let tmp = format!("{dest}.tmp");
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {tmp}"))?;
        std::fs::rename(&tmp, dest).with_context(|| format!("cannot write {dest}"))?;
    }
    Ok(())
}
