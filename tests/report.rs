//! `sigbench report` end to end: a real sweep of two labels rendered in headless
//! Chromium, checked for console errors, network requests, plots and a non-blank page.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

/// Decode a PNG and count its distinct colours and non-white pixels.
fn png_stats(path: &Path) -> (usize, usize, u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let mut colours = std::collections::HashSet::new();
    let mut inked = 0;
    for p in buf[..info.buffer_size()].chunks(px) {
        colours.insert(p[..3].to_vec());
        if p[..3].iter().any(|&c| c < 200) {
            inked += 1;
        }
    }
    (colours.len(), inked, info.width, info.height)
}

/// URLs the page itself requested, from Chromium's net log: requests whose initiator is a
/// document. (Chromium's own background requests, "not an origin", are not the page's.)
fn page_requests(netlog: &Path) -> Vec<String> {
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(netlog).unwrap()).unwrap();
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .unwrap();
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .filter(|e| e["params"]["url"].is_string() && e["params"]["initiator"] != "not an origin")
        .map(|e| e["params"]["url"].as_str().unwrap().to_string())
        .collect()
}

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
    let netlog = dir.join("net.json");
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,3000",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs (scripts/deps.sh installs it)");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let requests = page_requests(&netlog);
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
