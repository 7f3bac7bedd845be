//! Property tests standing in for fuzz targets (they run in CI for a bounded number of
//! cases): the strace parser, the signature parser and the name templates must never
//! panic, whatever they are given — only return errors.

use measure::record::strace;
use measure::signature::{Signature, Template};
use proptest::prelude::*;

/// Real lines, in every shape the parser accepts, to mutate.
const TRACE_CORPUS: &[&str] = &[
    r#"22865 19:51:20.268284 openat(12</tmp/r/usr/share/s>, "data_7.bin;6b0347b8", O_WRONLY|O_CREAT|O_EXCL, 0200) = 11</tmp/r/usr/share/s/data_7.bin;6b0347b8> <0.000009>"#,
    r#"[pid  4242] 1795377094.802653 newfstatat(AT_FDCWD</tmp/d>, "/a b", {st_mode=S_IFREG|0644, st_size=507, ...}, AT_SYMLINK_NOFOLLOW) = 0"#,
    r#"rmdir("/x.dpkg-new") = -1 ENOENT (No such file or directory) <0.000005>"#,
    r#"write(13</f>, "G\333\251\n\"q\\"..., 507) = 507"#,
    r#"[pid 10] openat(AT_FDCWD, "/a", O_RDONLY <unfinished ...>"#,
    "[pid 10] <... openat resumed>) = 5",
    "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---",
    "1234 +++ exited with 0 +++",
    "utimensat(11, NULL, [{tv_sec=1, tv_nsec=0}, {tv_sec=1, tv_nsec=0}], 0) = 0",
    "exit_group(0) = ?",
];

fn mutate(seed: &str, edits: &[(usize, u8, u8)]) -> String {
    let mut b = seed.as_bytes().to_vec();
    for &(pos, kind, byte) in edits {
        let at = if b.is_empty() { 0 } else { pos % (b.len() + 1) };
        match kind % 3 {
            0 => b.insert(at, byte),
            1 if at < b.len() => {
                b.remove(at);
            }
            _ if at < b.len() => b[at] = byte,
            _ => {}
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn strace_parser_never_panics_on_mutated_lines(
        picks in proptest::collection::vec(0..TRACE_CORPUS.len(), 1..6),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), prop_oneof![any::<u8>(), Just(b'"'), Just(b'('), Just(b')'), Just(b'<'), Just(b'>'), Just(b'\\'), Just(b',')]), 0..8),
        lenient in any::<bool>(),
    ) {
        let text: Vec<String> = picks.iter().map(|&k| mutate(TRACE_CORPUS[k], &edits)).collect();
        let text = text.join("\n");
        let _ = strace::parse(&text, lenient);
    }

    #[test]
    fn strace_parser_never_panics_on_arbitrary_text(text in any::<String>()) {
        let _ = strace::parse(&text, false);
        let _ = strace::parse(&text, true);
    }

    #[test]
    fn recorder_never_panics_on_parsed_mutations(
        picks in proptest::collection::vec(0..TRACE_CORPUS.len(), 1..12),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 0..4),
    ) {
        let text: Vec<String> = picks.iter().map(|&k| mutate(TRACE_CORPUS[k], &edits)).collect();
        if let Ok((calls, _)) = strace::parse(&text.join("\n"), true) {
            let _ = measure::record::record(&calls, &Default::default());
        }
    }

    #[test]
    fn signature_parser_never_panics(
        which in 0..2usize,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), prop_oneof![any::<u8>(), Just(b'{'), Just(b'}'), Just(b'"'), Just(b'='), Just(b'['), Just(b'\n')]), 0..6),
    ) {
        let seed = [include_str!("../signatures/s3e-test4.toml"), include_str!("../signatures/btrfs-rename-log.toml")][which];
        let _ = Signature::parse(&mutate(seed, &edits), "fuzz.toml");
    }

    #[test]
    fn templates_never_panic(text in any::<String>()) {
        if let Ok(t) = Template::parse(&text) {
            let name = Template::parse("file_{i}").unwrap();
            let _ = t.render_string(&measure::signature::Vars { i: 7, n: 9, seed: 1, name: &name });
        }
        let _ = Template::parse_link_target(&text);
    }
}

/// Text with what hostile input carries: control characters, quotes, shell syntax,
/// non-ASCII, and now and then a great deal of it.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<String>(),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("\u{1b}[2J\u{1b}]0;x\u{7}".to_string()),
        Just("$(touch /tmp/sigbench-fuzz-pwned)".to_string()),
        Just("`id`".to_string()),
        Just("'\"\\".to_string()),
        Just("../".repeat(40)),
        Just("x".repeat(70_000)),
    ];
    proptest::collection::vec(piece, 0..4).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Issue 39: labels are bounded and printable, or refused in one line; what is
    /// printed of any text reaches a terminal without control characters.
    #[test]
    fn labels_are_refused_or_safe(label in hostile_text()) {
        use present::report::table;
        use model::shell;
        match model::results::check_label(&label) {
            Ok(()) => {
                prop_assert!(label.chars().count() <= model::results::MAX_LABEL);
                prop_assert!(!label.chars().any(char::is_control));
            }
            Err(e) => {
                let e = e.to_string();
                prop_assert!(!e.contains('\n') && e.len() < 1_000, "{e}");
            }
        }
        prop_assert!(!table::escape_control(&label).chars().any(char::is_control));
        prop_assert!(!shell::printable(&label).chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
        let q = shell::command(&["sigbench", "compare", &label]);
        prop_assert!(!q.chars().any(|c| c.is_control() && c != '\n'), "{q:?}");
    }

    /// Issue 56: a printed command is read back word for word by every POSIX shell —
    /// dash (Debian's `sh`) as well as bash — and runs nothing else, whatever the words.
    #[test]
    fn printed_commands_read_back_in_every_shell(
        words in proptest::collection::vec(hostile_text().prop_map(|w| w.replace('\0', "").chars().take(300).collect::<String>()), 1..4),
    ) {
        let line = model::shell::command(&words);
        prop_assert!(!line.chars().any(|c| model::shell::is_hidden(c) && c != '\n'), "{line:?}");
        for shell in ["dash", "bash"] {
            let out = std::process::Command::new(shell)
                .arg("-c")
                .arg(format!("printf '%s\\0' {line}"))
                .output()
                .unwrap();
            prop_assert!(out.status.success(), "{shell}: {line:?}");
            let mut back: Vec<String> = out.stdout.split(|&b| b == 0).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
            back.pop();
            prop_assert_eq!(&back, &words, "{}: {:?}", shell, line);
        }
        prop_assert!(!std::path::Path::new("/tmp/sigbench-fuzz-pwned").exists());
    }

    /// Any file name (control characters, 70,000 bytes, `..`) is written whole or refused,
    /// never panics and never leaves a temporary file beside it.
    #[test]
    fn any_output_name_is_written_or_refused(name in hostile_text(), body in any::<Vec<u8>>()) {
        let dir = std::env::temp_dir().join(format!("sigbench-fuzz-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let name = name.replace(['/', '\0'], "_");
        let target = dir.join(if name.is_empty() { "x" } else { &name });
        if measure::outputs::write_file(&target, &body).is_ok() {
            prop_assert_eq!(std::fs::read(&target).unwrap(), body);
            std::fs::remove_file(&target).unwrap();
        }
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
        prop_assert!(left.is_empty(), "{left:?}");
    }

    /// A package's file list, however deep, long or strange its paths, gives one release
    /// or none; a --kernel argument gives a spec or a one-line error.
    #[test]
    fn package_contents_and_kernel_specs_never_panic(
        files in proptest::collection::vec(hostile_text(), 0..20),
        depth in 0..400usize,
        spec in hostile_text(),
    ) {
        let mut files = files;
        files.push(format!("lib/modules/6.1.0-1-amd64/{}", "d/".repeat(depth)));
        let _ = measure::vm::package::release_in(files.iter().map(String::as_str));
        if let Err(e) = measure::vm::kernel::KernelSpec::parse(&spec) {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    /// Run documents and exports of any shape: parsed or refused, never a panic — also
    /// with huge numbers and deep nesting.
    #[test]
    fn documents_never_panic(
        text in hostile_text(),
        depth in 0..200usize,
        big in any::<u64>(),
    ) {
        let _ = model::results::parse_documents(&text, "fuzz.json");
        let nested = format!(
            r#"{{"schema":"sigbench.export","version":1,"runs":[{}{big}{}]}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let _ = model::results::parse_documents(&nested, "fuzz.json");
    }
}

/// A loadfile timestamp as hostile input writes one: any float's text, huge exponents,
/// infinities, signs, digits without end.
fn timestamp_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<f64>().prop_map(|f| f.to_string()),
        any::<f64>().prop_map(|f| format!("{f:e}")),
        (0u32..400, any::<bool>())
            .prop_map(|(e, neg)| format!("{}1e{e}", if neg { "-" } else { "" })),
        Just("inf".to_string()),
        Just("1e-400".to_string()),
        "[0-9]{1,40}(\\.[0-9]{0,20})?",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Issue 45, item 1: a loadfile's times compile to a pacing every client can wait for
    /// (finite, within a day, a `Duration`), or are refused in one line naming the line.
    #[test]
    fn loadfile_times_are_bounded_or_refused(
        times in proptest::collection::vec(timestamp_text(), 1..6),
    ) {
        let text: String = times
            .iter()
            .map(|t| format!("{t} Mkdir \"\\clients\" NT_STATUS_OK\n"))
            .collect();
        match measure::loadfile::parse(&text, "fuzz.txt") {
            Ok(script) => {
                for t in script.pace.unwrap_or_default() {
                    prop_assert!(t.is_finite() && (0.0..=measure::loadfile::MAX_PACE_SECS).contains(&t), "{t}");
                    prop_assert!(std::time::Duration::try_from_secs_f64(t).is_ok());
                }
            }
            Err(e) => {
                let e = format!("{e:#}");
                prop_assert!(e.starts_with("fuzz.txt:") && !e.contains('\n'), "{e}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Issue 45, item 14: any text in any field of an imported run — the hostname, the
    /// kernel's version string, a directory — is refused in one line, or is text that
    /// displays as it reads (no control or bidirectional formatting character).
    #[test]
    fn imported_text_fields_display_as_they_read(
        text in hostile_text(),
        field in 0..4usize,
        bidi in proptest::sample::select(vec!['\u{202e}', '\u{2066}', '\u{200f}', 'x']),
    ) {
        let text = format!("{text}{bidi}");
        let mut doc = serde_json::json!({
            "schema": "sigbench.run", "version": 1, "id": "f", "label": "l", "tool": "t",
            "status": "complete", "started_at": "2026-11-26T00:00:00Z",
            "host": {"hostname": "h", "kernel_release": "r", "kernel_version": "v",
                     "kernel_cmdline": "", "arch": "x86_64", "cpu_model": "c", "cpus": 1,
                     "mem_total_kib": 1},
        });
        let at = ["hostname", "kernel_version", "kernel_cmdline", "cpu_model"][field];
        doc["host"][at] = text.clone().into();
        match model::results::parse_documents(&doc.to_string(), "fuzz.json") {
            Ok(runs) => {
                for r in runs {
                    for s in [&r.host.hostname, &r.host.kernel_version, &r.host.kernel_cmdline, &r.host.cpu_model] {
                        prop_assert!(!s.chars().any(model::shell::is_hidden), "{s:?}");
                    }
                }
            }
            Err(e) => {
                let e = e.to_string();
                prop_assert!(!e.contains('\n') && !e.chars().any(model::shell::is_hidden), "{e:?}");
            }
        }
    }

    /// Issue 45, item 4: a site's directory and page names, however hostile, are written
    /// inside the directory as regular files or refused — never through a link, never
    /// outside it.
    #[test]
    fn site_directories_hold_only_their_own_files(
        name in hostile_text(),
        sub in hostile_text(),
        link_sub in any::<bool>(),
    ) {
        let base = std::env::temp_dir().join(format!("sigbench-fuzz-site-{}", std::process::id()));
        let outside = base.join("outside");
        let site = base.join("site");
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(&site).unwrap();
        let sub = sub.replace('\0', "_");
        if link_sub && !sub.is_empty() && !sub.contains('/') && sub != "." && sub != ".." {
            let _ = std::os::unix::fs::symlink(&outside, site.join(&sub));
        }
        if let Ok(dir) = measure::outputs::OutDir::open("-o", &site, None) {
            if let Ok(d) = dir.sub(&sub) {
                let _ = d.write(&name, b"page");
            }
            let _ = dir.write(&name, b"page");
        }
        prop_assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        std::fs::remove_dir_all(&base).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Issue 56, item 12: whatever a stored report row holds, the site publishes no markup
    /// of it: HTML is escaped into a sandboxed frame (no `<` of the row survives), a format
    /// the site does not know is not published.
    #[test]
    fn stored_report_rows_publish_no_markup(
        body in hostile_text().prop_map(|t| format!("{t}<script>x()</script><svg onload=y()>\"'")),
        format in proptest::sample::select(vec!["html", "txt", "svg", "xhtml", "eml", "repro.c", "../x"]),
    ) {
        match present::site::published(7, format, &body, &["txt", "repro.c"]) {
            Some(page) if format == "html" => {
                prop_assert!(page.contains("<iframe sandbox "));
                let inner = page.split_once("srcdoc=\"").unwrap().1.rsplit_once("\"></iframe>").unwrap().0;
                prop_assert!(!inner.contains('<') && !inner.contains('"'), "{inner:?}");
                prop_assert_eq!(page.matches("<script").count(), 0);
            }
            Some(text) => {
                prop_assert!(["txt", "eml", "repro.c"].contains(&format));
                prop_assert_eq!(text, body);
            }
            None => prop_assert!(!["html", "txt", "eml", "repro.c"].contains(&format)),
        }
    }

    /// Issue 56, item 1: hostile names (control characters, comment and string
    /// delimiters, trigraphs, `%`) in a signature's name, description, file template and
    /// directory reach the C reproducer only inside string literals (octal escapes) and
    /// comments (delimiters broken, no trigraph): the program's text outside them is
    /// sigbench's own.
    #[test]
    fn hostile_names_stay_inside_the_reproducers_literals_and_comments(
        name in "[a-z]{1,8}",
        text in hostile_text().prop_map(|t| t.chars().filter(|c| *c != '\0').take(200).collect::<String>()),
        piece in proptest::sample::select(vec!["*/", "??/", "\"", "%n", "\\", "\n#include <evil.h>\n", "/*"]),
    ) {
        let hostile = format!("{text}{piece}");
        let escaped = serde_json::to_string(&hostile).unwrap();
        let file = serde_json::to_string(&format!("f{{i}}{}", hostile.replace(['/', '{', '}', '\0'], "_").chars().take(100).collect::<String>())).unwrap();
        let src = format!("format = 1\nname = \"{name}\"\ndescription = {escaped}\nfile = {file}\nverb = {escaped}\n[[phase]]\nname = {escaped}\nsteps = [{{ op = \"stat\", path = \"{{name}}\", expect = \"any\" }}]\n");
        let sig = measure::signature::Signature::parse(&src, "fuzz.toml");
        prop_assume!(sig.is_ok(), "{:?}", sig.err());
        let sig = sig.unwrap();
        let fs = measure::testbed::Fs::Ext4;
        let dirs = vec![measure::testbed::DirSpec::parse("d", fs).unwrap()];
        let c = present::repro::Repro::new(sig, fs, dirs).unwrap().c_source();
        // Outside comments and literals, no text of the signature's.
        let code = c_code_only(&c);
        prop_assert!(!code.contains("evil.h"), "{code}");
        prop_assert!(!code.contains("??/"));
        prop_assert!(!c.contains("??/"), "a trigraph");
    }
}

/// `c` without its comments and string and character literals.
fn c_code_only(c: &str) -> String {
    let b: Vec<char> = c.chars().collect();
    let mut out = String::new();
    let mut k = 0;
    while k < b.len() {
        if b[k] == '/' && b.get(k + 1) == Some(&'*') {
            let end = (k + 2..b.len().saturating_sub(1))
                .find(|&j| b[j] == '*' && b[j + 1] == '/')
                .map_or(b.len(), |j| j + 2);
            k = end;
        } else if b[k] == '"' || b[k] == '\'' {
            let q = b[k];
            k += 1;
            while k < b.len() && b[k] != q {
                if b[k] == '\\' {
                    k += 1;
                }
                k += 1;
            }
            k += 1;
        } else {
            out.push(b[k]);
            k += 1;
        }
    }
    out
}
