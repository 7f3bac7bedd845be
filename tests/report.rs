//! `sigbench report` end to end: a real sweep of two labels rendered in headless
//! Chromium, checked for console errors, network requests, plots and a non-blank page.

mod common;

use common::*;

#[test]
fn report_of_a_real_sweep_renders_offline_in_chromium() {
    let dir = std::env::temp_dir().join(format!("sigbench-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("r.db");
    for (fs, label) in [("ext4", "ext4-sweep"), ("btrfs", "btrfs-sweep")] {
        let out = run(&[
            "run",
            "--fs",
            fs,
            "--dir",
            "a",
            "-n",
            "50,100,250,500,1000",
            "-r",
            "3",
            "--label",
            label,
            "--db",
            db.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let html = dir.join("report.html");
    let out = run(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).unwrap();

    // Self-contained: no scripts, no external resources.
    assert!(!page.contains("<script"), "no JavaScript");
    for needle in ["src=", "<link", "@import", "url("] {
        assert!(!page.contains(needle), "external resource: {needle}");
    }
    // One plot per metric — time, system CPU, inode evictions — each with both labels in its legend.
    let figures: Vec<&str> = page.split("<figure id=").skip(1).collect();
    let ids: Vec<&str> = figures
        .iter()
        .map(|f| f.split('"').nth(1).unwrap())
        .collect();
    assert_eq!(ids, ["wall_ms", "sys_ms", "inode_evictions"]);
    for f in &figures {
        let svg = &f[f.find("<svg").unwrap()..f.find("</svg>").unwrap()];
        assert!(
            svg.contains("\next4-sweep\n") && svg.contains("\nbtrfs-sweep\n"),
            "legend lacks a label"
        );
        assert!(
            svg.contains("\nlinear\n")
                && svg.contains("\nlog-log\n")
                && svg.contains("\nN (files)\n")
        );
    }
    assert!(
        page.contains("btrfs-sweep compared to ext4-sweep"),
        "the comparison tables are there"
    );
    assert!(page.contains("per-syscall latency"));
    assert!(page.contains("scaling with N"));

    // Headless Chromium: no console errors, no network requests, a non-blank screenshot.
    let shot = dir.join("shot.png");
    let (console, requests) = render_in_chromium(&html, &shot, &dir);
    assert!(console.is_empty(), "console messages: {console:?}");
    assert!(
        requests.is_empty(),
        "the page made network requests: {requests:?}"
    );
    let (colours, inked, w, h) = png_stats(&shot);
    assert_eq!((w, h), (1200, 3000));
    assert!(colours > 20, "screenshot has {colours} colours");
    assert!(
        inked > 10_000,
        "screenshot is nearly blank ({inked} dark pixels)"
    );
    let _ = std::fs::copy(
        &shot,
        std::env::temp_dir().join("sigbench-report-screenshot.png"),
    );

    // Markdown: the same report with the plots as SVG files beside it.
    let md = dir.join("report.md");
    let out = run(&[
        "report",
        "ext4-sweep",
        "btrfs-sweep",
        "--db",
        db.to_str().unwrap(),
        "--format",
        "markdown",
        "-o",
        md.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&md).unwrap();
    for id in ["wall_ms", "sys_ms", "inode_evictions"] {
        assert!(text.contains(&format!("(report-{id}.svg)")), "{text}");
        assert!(
            std::fs::read_to_string(dir.join(format!("report-{id}.svg")))
                .unwrap()
                .starts_with("<svg")
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
