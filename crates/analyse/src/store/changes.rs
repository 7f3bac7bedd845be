//! The change points `sigbench watch` keeps: one row per change of one metric of one
//! series, its status moving new → confirmed → bisected → culprit, or rejected, or
//! acknowledged.
//! Kept in the results store, so a nightly `watch` against the lab's PostgreSQL remembers
//! what it already said.

use super::Store;
use super::backend::Val;
use crate::stats::compare::MetricKey;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// What became of a change point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Found in the series, not yet measured again.
    New,
    /// Measured again, interleaved: the verdict engine calls the two kernels different.
    Confirmed,
    /// Confirmed and bisected over the kernels between: the first bad one is known.
    Bisected,
    /// Bisected further, over the commits between two releases (`watch --tree`): the
    /// culprit is a commit.
    Culprit,
    /// Measured again and not different: not a change.
    Rejected,
    /// Silenced by `watch --ack`.
    Acknowledged,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::Confirmed => "confirmed",
            Status::Bisected => "bisected",
            Status::Culprit => "culprit",
            Status::Rejected => "rejected",
            Status::Acknowledged => "acknowledged",
        }
    }

    /// Whether a change with this status alerted (confirmed, and maybe bisected).
    pub fn alerted(self) -> bool {
        matches!(self, Status::Confirmed | Status::Bisected | Status::Culprit)
    }

    fn parse(s: &str) -> Status {
        match s {
            "confirmed" => Status::Confirmed,
            "bisected" => Status::Bisected,
            "culprit" => Status::Culprit,
            "rejected" => Status::Rejected,
            "acknowledged" => Status::Acknowledged,
            _ => Status::New,
        }
    }
}

/// One change point as stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChangeRecord {
    /// The row id (0 before it is stored).
    #[serde(skip)]
    pub id: i64,
    /// The series: signature, plan and clock (`super::series::series_key`).
    #[serde(skip)]
    pub series: String,
    /// The case and metric (shown `DIR/N=… METRIC`; the store's `metric` column holds
    /// that text for people reading the table, the data the two parts).
    #[serde(default)]
    pub metric: MetricKey,
    #[serde(skip, default = "new")]
    pub status: Status,
    /// The last kernel before the change and the first after it (releases).
    pub last_good: String,
    pub first_bad: String,
    /// Medians of the two sides in the series.
    pub before: f64,
    pub after: f64,
    /// The detection's p-value (adjusted over the series' metrics).
    pub p: f64,
    /// The confirmation: the ratio first bad / last good with its 95 % interval, and the
    /// verdict engine's p-value, once measured again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<Confirmation>,
    /// The bisect's first bad kernel (its release), or with status culprit the first bad
    /// commit (`ID subject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<String>,
    /// Where its report was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// When it was first found (RFC 3339).
    pub found_at: String,
    /// What people said about it (`sigbench triage`), oldest first; the last is its state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triage: Vec<Triage>,
}

/// What a person decided about a change (`sigbench triage ID STATE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriageState {
    /// Not looked at (or looked at again).
    New,
    /// Real, and someone is on it: never alerts again.
    Acknowledged,
    /// Not a real change (noise, a broken machine, a test artefact): never alerts again,
    /// and hidden from the site's first screen.
    Invalid,
    /// Fixed in a later kernel.
    Fixed,
}

impl model::choice::Choice for TriageState {
    const ALL: &'static [TriageState] = &[
        TriageState::New,
        TriageState::Acknowledged,
        TriageState::Invalid,
        TriageState::Fixed,
    ];
    fn arg(self) -> &'static str {
        self.name()
    }
    fn about(self) -> &'static str {
        match self {
            TriageState::New => "Not looked at (or looked at again)",
            TriageState::Acknowledged => "Real, and someone is on it: never alerts again",
            TriageState::Invalid => {
                "Not a real change (noise, a broken machine, a test artefact): never alerts again, and hidden from the site's first screen"
            }
            TriageState::Fixed => "Fixed in a later kernel",
        }
    }
}

impl TriageState {
    pub fn name(self) -> &'static str {
        match self {
            TriageState::New => "new",
            TriageState::Acknowledged => "acknowledged",
            TriageState::Invalid => "invalid",
            TriageState::Fixed => "fixed",
        }
    }
}

/// One triage decision.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Triage {
    pub state: TriageState,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Who (the login behind sudo, else the user).
    pub user: String,
    /// When (RFC 3339).
    pub at: String,
}

/// The longest triage note, in characters.
pub const MAX_NOTE: usize = 2000;

fn new() -> Status {
    Status::New
}

/// The two kernels measured again, interleaved.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Confirmation {
    /// Medians of the last good and the first bad kernel.
    pub good: f64,
    pub bad: f64,
    /// The ratio's 95 % bootstrap interval (none from 0).
    #[serde(default)]
    pub ci: Option<(f64, f64)>,
    /// The verdict engine's p-value, Holm-adjusted over the metrics confirmed together.
    pub p: f64,
    pub repetitions: usize,
}

impl Confirmation {
    /// first bad / last good (none from 0).
    pub fn ratio(&self) -> Option<f64> {
        (self.good != 0.0).then(|| self.bad / self.good)
    }
}

impl ChangeRecord {
    /// Its triage state: the last decision, `new` without one (and `acknowledged` for a
    /// change silenced by `watch --ack` before triage existed).
    pub fn triage_state(&self) -> TriageState {
        match self.triage.last() {
            Some(t) => t.state,
            None if self.status == Status::Acknowledged => TriageState::Acknowledged,
            None => TriageState::New,
        }
    }

    /// Whether people silenced it (acknowledged or invalid): it never alerts again.
    pub fn silenced(&self) -> bool {
        matches!(
            self.triage_state(),
            TriageState::Acknowledged | TriageState::Invalid
        )
    }

    /// The change as a ratio: the confirmation's, else the series' (none from 0).
    pub fn ratio(&self) -> Option<f64> {
        match &self.confirmed {
            Some(k) => k.ratio(),
            None => (self.before != 0.0).then(|| self.after / self.before),
        }
    }

    /// The (from, to) values: the confirmation's, else the series'.
    pub fn values(&self) -> (f64, f64) {
        self.confirmed
            .as_ref()
            .map_or((self.before, self.after), |k| (k.good, k.bad))
    }

    /// Whether it went the bad way: a time or count that grew, a throughput that fell.
    pub fn regressed(&self) -> bool {
        let (from, to) = self.values();
        from != to && (to > from) != self.metric.name.higher_is_better()
    }
}

impl Store {
    /// The change points of a series (every series: `None`), oldest first.
    pub fn changes(&self, series: Option<&str>) -> Result<Vec<ChangeRecord>> {
        // A store of schema 1, read as it is, has no change points.
        if !self.has_schema(2) {
            return Ok(Vec::new());
        }
        let mut db = self.db.borrow_mut();
        let rows = match series {
            Some(s) => db.query(
                "SELECT id, series, metric, status, data FROM changes WHERE series = $1 ORDER BY id",
                &[Val::Text(s.to_string())],
            )?,
            None => db.query(
                "SELECT id, series, metric, status, data FROM changes ORDER BY id",
                &[],
            )?,
        };
        drop(db);
        rows.into_iter()
            .map(|r| self.record(r[0].int(), &r[1], &r[2], &r[3], &r[4]))
            .collect()
    }

    /// Store a change point: a new row when its id is 0 (the id is set), else the row
    /// updated.
    pub fn keep_change(&self, c: &mut ChangeRecord) -> Result<()> {
        let data = serde_json::to_string(&c)?;
        let now = model::stamp::now_rfc3339();
        let id = self.write("recording a change point", |db| {
            if c.id != 0 {
                db.exec(
                    "UPDATE changes SET status = $1, updated_at = $2, data = $3 WHERE id = $4",
                    &[
                        Val::Text(c.status.name().into()),
                        Val::Text(now.clone()),
                        Val::Text(data.clone()),
                        Val::Int(c.id),
                    ],
                )?;
                return Ok(c.id);
            }
            let rows = db.query(
                "INSERT INTO changes (series, metric, status, updated_at, data)
                 VALUES ($1, $2, $3, $4, $5) RETURNING id",
                &[
                    Val::Text(c.series.clone()),
                    Val::Text(c.metric.to_string()),
                    Val::Text(c.status.name().into()),
                    Val::Text(now.clone()),
                    Val::Text(data.clone()),
                ],
            )?;
            Ok(rows.first().map_or(0, |r| r[0].int()))
        })?;
        c.id = id;
        Ok(())
    }

    /// Remove change points recorded moments ago whose report could not be written: a
    /// change is kept as found only once its report exists, so the next watch raises it
    /// again.
    pub fn forget_changes(&self, ids: &[i64]) -> Result<()> {
        self.write("forgetting change points", |db| {
            for &id in ids {
                db.exec("DELETE FROM changes WHERE id = $1", &[Val::Int(id)])?;
                db.exec(
                    "DELETE FROM change_reports WHERE change_id = $1",
                    &[Val::Int(id)],
                )?;
            }
            Ok(())
        })
    }

    /// `watch --ack ID`: triage a change point acknowledged by `by` (a login).
    pub fn acknowledge(&self, id: i64, by: &str) -> Result<ChangeRecord> {
        self.triage(id, TriageState::Acknowledged, "", by)
    }

    /// `sigbench triage ID STATE`: record a decision about a change point (its history
    /// kept). The note is bounded and printable.
    pub fn triage(
        &self,
        id: i64,
        state: TriageState,
        note: &str,
        user: &str,
    ) -> Result<ChangeRecord> {
        let n = note.chars().count();
        if n > MAX_NOTE {
            bail!("a note of {n} characters: at most {MAX_NOTE}");
        }
        if let Err(e) = model::results::check_text_keeping(note, &['\n']) {
            bail!(
                "the note `{}` holds {e}: use printable text",
                model::shell::escape_controls(note, &[])
            );
        }
        let decision = Triage {
            state,
            note: note.to_string(),
            user: user.to_string(),
            at: model::stamp::now_rfc3339(),
        };
        // Read and rewritten in one transaction that keeps the row from changing between
        // (concurrent triages each append; none is lost).
        let found = self.write("recording a triage", |db| {
            let sql = format!(
                "SELECT series, metric, status, data FROM changes WHERE id = $1{}",
                db.for_update()
            );
            let Some(r) = db.query(&sql, &[Val::Int(id)])?.into_iter().next() else {
                return Ok(None);
            };
            let mut c = self.record(id, &r[0], &r[1], &r[2], &r[3])?;
            // Written again after a lost connection: the first attempt may have committed.
            if c.triage.last() != Some(&decision) {
                c.triage.push(decision.clone());
            }
            db.exec(
                "UPDATE changes SET updated_at = $1, data = $2 WHERE id = $3",
                &[
                    Val::Text(decision.at.clone()),
                    Val::Text(serde_json::to_string(&c)?),
                    Val::Int(id),
                ],
            )?;
            Ok(Some(c))
        })?;
        found.ok_or_else(|| {
            anyhow::anyhow!(
                "there is no change point {id} in {} (`sigbench watch --changes` lists them)",
                self.location
            )
        })
    }

    /// Keep the report `watch` wrote for change `id` in `format` (`txt`, `html`), replacing
    /// an earlier one.
    pub fn keep_report(&self, id: i64, format: &str, body: &str) -> Result<()> {
        self.write("keeping a change's report", |db| {
            db.exec(
                "DELETE FROM change_reports WHERE change_id = $1 AND format = $2",
                &[Val::Int(id), Val::Text(format.into())],
            )?;
            db.exec(
                "INSERT INTO change_reports (change_id, format, body) VALUES ($1, $2, $3)",
                &[
                    Val::Int(id),
                    Val::Text(format.into()),
                    Val::Text(body.into()),
                ],
            )?;
            Ok(())
        })
    }

    /// The formats of the reports kept for each change, by change id.
    pub fn report_formats(&self) -> Result<Vec<(i64, String)>> {
        if !self.has_schema(3) {
            return Ok(Vec::new());
        }
        let rows = self.db.borrow_mut().query(
            "SELECT change_id, format FROM change_reports ORDER BY change_id, format",
            &[],
        )?;
        Ok(rows
            .into_iter()
            .map(|r| (r[0].int(), r[1].text()))
            .collect())
    }

    /// The report kept for change `id` in `format`.
    pub fn report(&self, id: i64, format: &str) -> Result<Option<String>> {
        if !self.has_schema(3) {
            return Ok(None);
        }
        let rows = self.db.borrow_mut().query(
            "SELECT body FROM change_reports WHERE change_id = $1 AND format = $2",
            &[Val::Int(id), Val::Text(format.into())],
        )?;
        Ok(rows.into_iter().next().map(|r| r[0].text()))
    }

    /// A change as stored, from its row's columns.
    fn record(
        &self,
        id: i64,
        series: &Val,
        metric: &Val,
        status: &Val,
        data: &Val,
    ) -> Result<ChangeRecord> {
        let unreadable = || format!("{}: change {id} has unreadable data", self.location);
        let mut raw: serde_json::Value =
            serde_json::from_str(&data.text()).with_context(unreadable)?;
        // Stored before the store kept the metric's parts: no `metric`, or an empty name.
        let legacy = raw
            .pointer("/metric/name")
            .and_then(|n| n.as_str())
            .is_none_or(str::is_empty);
        if legacy && let Some(o) = raw.as_object_mut() {
            o.remove("metric");
        }
        let mut c: ChangeRecord = serde_json::from_value(raw).with_context(unreadable)?;
        c.id = id;
        c.series = series.text();
        if legacy {
            c.metric = MetricKey::from_legacy_text(&metric.text())
                .map_err(anyhow::Error::msg)
                .with_context(unreadable)?;
        }
        c.status = Status::parse(&status.text());
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Location;

    #[test]
    fn change_points_are_kept_updated_and_acknowledged() {
        let p = std::env::temp_dir().join(format!("sigbench-changes-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let s = Store::open(&Location::Sqlite(p.clone())).unwrap();
        let mut c = ChangeRecord {
            id: 0,
            series: "s".into(),
            metric: MetricKey::from_legacy_text("d/N=1 wall_ms").unwrap(),
            status: Status::New,
            last_good: "6.1".into(),
            first_bad: "6.12".into(),
            before: 1.0,
            after: 2.0,
            p: 0.001,
            confirmed: None,
            culprit: None,
            report: None,
            found_at: "t".into(),
            triage: Vec::new(),
        };
        s.keep_change(&mut c).unwrap();
        assert!(c.id > 0);
        c.status = Status::Confirmed;
        s.keep_change(&mut c).unwrap();
        let back = s.changes(Some("s")).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(
            (back[0].status, back[0].first_bad.as_str()),
            (Status::Confirmed, "6.12")
        );
        assert!(s.changes(Some("other")).unwrap().is_empty());
        let acked = s.acknowledge(c.id, "ann").unwrap();
        assert_eq!(acked.triage_state(), TriageState::Acknowledged);
        assert!(acked.silenced());
        // Triage keeps its history; the last decision is the state.
        let t = s
            .triage(
                c.id,
                TriageState::Invalid,
                "noise: the runner was busy",
                "ann",
            )
            .unwrap();
        assert_eq!(t.triage.len(), 2);
        let back = &s.changes(Some("s")).unwrap()[0];
        assert_eq!(back.triage_state(), TriageState::Invalid);
        assert_eq!(back.triage[1].note, "noise: the runner was busy");
        assert_eq!(back.triage[1].user, "ann");
        assert_eq!(
            back.status,
            Status::Confirmed,
            "what the machine found stays"
        );
        let reopened = s.triage(c.id, TriageState::New, "", "bob").unwrap();
        assert!(!reopened.silenced());
        let e = s
            .triage(c.id, TriageState::Fixed, "a\x1b[31m", "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("control character"), "{e}");
        let long = "n".repeat(MAX_NOTE + 1);
        assert!(s.triage(c.id, TriageState::Fixed, &long, "x").is_err());
        let e = s.acknowledge(99, "ann").unwrap_err().to_string();
        assert!(e.contains("no change point 99"), "{e}");
        assert!(e.contains("`sigbench watch --changes` lists them"), "{e}");
        let _ = std::fs::remove_file(&p);
    }
}
