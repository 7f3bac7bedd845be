//! Property tests standing in for fuzz targets (they run in CI for a bounded number of
//! cases): the strace parser, the signature parser and the name templates must never
//! panic, whatever they are given — only return errors.

use proptest::prelude::*;
use sigbench::record::strace;
use sigbench::signature::{Signature, Template};

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
            let _ = sigbench::record::record(&calls, &Default::default());
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
            let _ = t.render_string(&sigbench::signature::Vars { i: 7, n: 9, seed: 1, name: &name });
        }
        let _ = Template::parse_link_target(&text);
    }
}
