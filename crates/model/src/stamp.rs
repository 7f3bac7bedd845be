//! Times as sigbench writes them: UTC in RFC 3339 (run documents, the store) and RFC 5322
//! (a mail's Date:), without a date library.

/// Current UTC time as RFC 3339 (`2026-11-22T19:24:00Z`), without a date library.
pub fn now_rfc3339() -> String {
    rfc3339(now_secs())
}

/// Current UTC time as a mail's Date: (RFC 5322: `Fri, 27 Nov 2026 20:41:07 +0000`).
pub fn now_rfc5322() -> String {
    rfc5322(now_secs())
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn rfc5322(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, m, d) = civil(secs);
    let rem = secs % 86_400;
    format!(
        "{}, {d} {} {y:04} {:02}:{:02}:{:02} +0000",
        DAYS[(secs / 86_400 % 7) as usize],
        MONTHS[(m - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn rfc3339(secs: u64) -> String {
    let (y, m, d) = civil(secs);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The UTC date (year, month, day) of `secs` since the epoch.
fn civil(secs: u64) -> (i64, i64, i64) {
    let days = (secs / 86_400) as i64;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        // `date -u -d @1795375440 +%FT%TZ`
        assert_eq!(super::rfc3339(1_795_375_440), "2026-11-22T19:24:00Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::rfc5322(0), "Thu, 1 Jan 1970 00:00:00 +0000");
        assert_eq!(
            super::rfc5322(1_795_375_440),
            "Sun, 22 Nov 2026 19:24:00 +0000"
        );
    }
}
