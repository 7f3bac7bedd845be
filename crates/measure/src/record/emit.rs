//! Stage 6 of recording: the signature file (format 1, docs/signatures.md).

use super::Options;
use super::phases::Common;
use super::toml_str;
use std::path::Path;

/// The signature file of a recording.
pub(super) fn signature(opts: &Options, name: &str, tree: &Path, c: &Common) -> String {
    let (n, k) = (c.files.len(), c.steps.len());
    let mut toml = String::new();
    let mut line = |s: String| {
        toml.push_str(&s);
        toml.push('\n');
    };
    line(format!(
        "# Recorded by sigbench {} from {}.",
        env!("CARGO_PKG_VERSION"),
        opts.source
    ));
    line(format!(
        "# Tree: {} — {n} files with the same {k} calls.",
        tree.display()
    ));
    line("format = 1".into());
    line(format!("name = {}", toml_str(name)));
    line(format!(
        "description = {}",
        toml_str(&format!(
            "Recorded from {}: {n} files under {}, {k} calls each in {} phase(s).",
            opts.source,
            tree.display(),
            c.phases.len()
        ))
    ));
    line(format!("n = {n}"));
    line("file = \"file_{i}\"".into());
    line("dirs = [\"recorded\"]".into());
    line("verb = \"replaying\"".into());
    line("unit = \"files\"".into());
    if let Some(size) = c.populate {
        line(format!(
            "\n[setup]\npopulate = {{ size = {size}, pattern = \"random\" }}"
        ));
    }
    for (p, &(a, b)) in c.phases.iter().enumerate() {
        line(format!("\n[[phase]]\nname = \"phase{}\"\nsteps = [", p + 1));
        for s in &c.steps[a..b] {
            // op, then the fields, the numbers, and pattern and expect last.
            let late = |k: &&str| *k == "expect" || *k == "pattern";
            let mut fields: Vec<String> = vec![format!("op = {}", toml_str(&s.op))];
            fields.extend(
                s.fields
                    .iter()
                    .filter(|(k, _)| !late(k))
                    .map(|(k, v)| format!("{k} = {v}")),
            );
            fields.extend(
                s.numbers
                    .iter()
                    .map(|(k, v)| format!("{k} = {}", v.max(&0))),
            );
            fields.extend(
                s.fields
                    .iter()
                    .filter(|(k, _)| late(k))
                    .map(|(k, v)| format!("{k} = {v}")),
            );
            line(format!("  {{ {} }},", fields.join(", ")));
        }
        line("]".into());
    }
    toml
}
