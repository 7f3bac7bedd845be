//! The results store: every run appended to an SQLite database, one transaction per
//! finished case, so a killed run leaves the database as it was plus whole finished cases.
//!
//! Schema (versioned with `PRAGMA user_version`, migrated forward on open):
//! - `runs`: one row per run — its id (UUID), label, signature, filesystem, kernel,
//!   status, and the run document's metadata as JSON (everything but the cases);
//! - `cases`: one row per finished case — directory, N, repetition, warm-up flag, and the
//!   case as JSON.

use crate::results::{CaseResult, RunDocument, parse_documents};
use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};

/// Forward migrations; entry k takes the database from version k to k + 1.
const MIGRATIONS: &[&str] = &[
    // 1: runs and cases.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        uuid TEXT NOT NULL UNIQUE,
        label TEXT NOT NULL,
        started_at TEXT NOT NULL,
        signature TEXT NOT NULL,
        fs TEXT NOT NULL,
        kernel_release TEXT NOT NULL,
        status TEXT NOT NULL,
        meta TEXT NOT NULL
     );
     CREATE INDEX runs_label ON runs(label);
     CREATE TABLE cases (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        dir TEXT NOT NULL,
        n INTEGER NOT NULL,
        rep INTEGER NOT NULL,
        warmup INTEGER NOT NULL,
        data TEXT NOT NULL
     );
     CREATE INDEX cases_run ON cases(run_id);",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: usize = MIGRATIONS.len();

pub struct Store {
    conn: Connection,
    pub path: PathBuf,
}

/// One line of `sigbench runs`.
#[derive(Clone, Debug)]
pub struct RunRow {
    pub id: i64,
    pub uuid: String,
    pub label: String,
    pub started_at: String,
    pub signature: String,
    pub fs: String,
    pub kernel_release: String,
    pub status: String,
    pub ns: Vec<u64>,
    pub dirs: usize,
    pub cases: usize,
}

/// Which runs to read.
#[derive(Clone, Debug)]
pub enum Selector {
    All,
    Label(String),
    Run(i64),
}

fn wal_is_empty(db: &Path) -> bool {
    std::fs::metadata(format!("{}-wal", db.display())).map_or(true, |m| m.len() == 0)
}

/// `path` as the path part of an SQLite `file:` URI.
fn uri_path(p: &Path) -> String {
    let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    abs.display()
        .to_string()
        .replace('%', "%25")
        .replace('?', "%3f")
        .replace('#', "%23")
}

/// How long a statement waits for another process's write to finish.
const BUSY: std::time::Duration = std::time::Duration::from_secs(30);

fn open_err(path: &Path) -> String {
    format!(
        "cannot open the results database {} (--db to choose another)",
        path.display()
    )
}

impl Store {
    /// Open for writing (creating if needed) and migrate to the current schema. Safe when
    /// several processes open a new database at once: the schema is created under an
    /// immediate (write-locked) transaction that re-reads the version first, and every
    /// statement waits for a busy database instead of failing.
    pub fn open(path: &Path) -> Result<Store> {
        let conn = Connection::open(path).with_context(|| open_err(path))?;
        conn.busy_timeout(BUSY)?;
        // WAL: readers (`runs`, `compare`) do not block a run that is writing. Switching
        // to WAL needs the database to itself, and SQLite does not wait for that: retry.
        let start = std::time::Instant::now();
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy && start.elapsed() < BUSY =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                r => {
                    r.with_context(|| open_err(path))?;
                    break;
                }
            }
        }
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// Open an existing database for reading only (`runs`, `compare`, `export`, `report`):
    /// works on a read-only file or filesystem, never changes the file.
    pub fn open_read(path: &Path) -> Result<Store> {
        use rusqlite::OpenFlags;
        if !path.exists() {
            bail!(
                "there is no results database at {} (--db to choose another)",
                path.display()
            );
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).with_context(|| open_err(path))?;
        conn.busy_timeout(BUSY)?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        let version = match store.version() {
            Ok(v) => v,
            // A WAL database on a read-only filesystem (or in a directory this user cannot
            // write) cannot get its shared-memory file. With no write-ahead log left over
            // (sigbench checkpoints it on close), it is safe to read as immutable.
            Err(_) if wal_is_empty(path) => {
                let uri = format!("file:{}?immutable=1", uri_path(path));
                let conn = Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
                    .with_context(|| open_err(path))?;
                store.conn = conn;
                store.version().with_context(|| open_err(path))?
            }
            Err(e) => return Err(e).with_context(|| open_err(path)),
        };
        store.check_version(version)?;
        if version < SCHEMA_VERSION {
            bail!(
                "{} has schema version {version}, older than this sigbench ({SCHEMA_VERSION}): open it once for writing (e.g. `sigbench import` of nothing) to migrate it",
                path.display()
            );
        }
        Ok(store)
    }

    fn version(&self) -> Result<usize> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))? as usize)
    }

    fn check_version(&self, version: usize) -> Result<()> {
        if version > SCHEMA_VERSION {
            bail!(
                "{} has schema version {version}, newer than this sigbench ({SCHEMA_VERSION}): upgrade sigbench",
                self.path.display()
            );
        }
        Ok(())
    }

    fn migrate(&mut self) -> Result<()> {
        let version = self.version()?;
        self.check_version(version)?;
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // Another process may have migrated while this one waited for the lock.
        let version = tx.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))? as usize;
        for (k, sql) in MIGRATIONS.iter().enumerate().skip(version) {
            tx.execute_batch(sql).with_context(|| {
                format!(
                    "migrating {} to schema version {}",
                    self.path.display(),
                    k + 1
                )
            })?;
            tx.pragma_update(None, "user_version", (k + 1) as i64)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Record the start of a run (its metadata, no cases yet). Returns its row id.
    pub fn begin_run(&mut self, doc: &RunDocument) -> Result<i64> {
        insert_run(&self.conn, doc)
    }

    /// Append one finished case, atomically.
    pub fn add_case(&mut self, run: i64, seq: usize, case: &CaseResult) -> Result<()> {
        let tx = self.conn.transaction()?;
        insert_case(&tx, run, seq, case)?;
        tx.commit()?;
        Ok(())
    }

    /// Mark every run still `running` as `status` (`killed`): only when no sigbench is
    /// running, so these were stopped by SIGKILL or a crash. Returns how many.
    pub fn mark_running(&mut self, status: &str) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let ids: Vec<(i64, String)> = {
            let mut st = tx.prepare("SELECT id, meta FROM runs WHERE status = 'running'")?;
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?
        };
        for (id, meta) in &ids {
            // The metadata carries the status too (`export` shows it).
            let meta = match serde_json::from_str::<serde_json::Value>(meta) {
                Ok(mut v) => {
                    v["status"] = status.into();
                    v.to_string()
                }
                Err(_) => meta.clone(),
            };
            tx.execute(
                "UPDATE runs SET status = ?1, meta = ?2 WHERE id = ?3",
                params![status, meta, id],
            )?;
        }
        tx.commit()?;
        Ok(ids.len())
    }

    /// Update a run's metadata and status when it ends.
    pub fn finish_run(&mut self, run: i64, doc: &RunDocument) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?1, meta = ?2 WHERE id = ?3",
            params![doc.status, metadata(doc)?, run],
        )?;
        Ok(())
    }

    /// Add a whole run document (import), in one transaction. Returns false when a run
    /// with its id is already there.
    pub fn import(&mut self, doc: &RunDocument) -> Result<bool> {
        let exists: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE uuid = ?1",
                params![doc.id],
                |r| r.get(0),
            )
            .optional()?;
        if exists.is_some() {
            return Ok(false);
        }
        let tx = self.conn.transaction()?;
        let run = insert_run(&tx, doc)?;
        for (seq, case) in doc.cases.iter().enumerate() {
            insert_case(&tx, run, seq, case)?;
        }
        tx.commit()?;
        Ok(true)
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT r.id, r.uuid, r.label, r.started_at, r.signature, r.fs, r.kernel_release, r.status,
                    (SELECT group_concat(DISTINCT n) FROM cases c WHERE c.run_id = r.id),
                    (SELECT count(DISTINCT dir) FROM cases c WHERE c.run_id = r.id),
                    (SELECT count(*) FROM cases c WHERE c.run_id = r.id AND NOT warmup)
             FROM runs r ORDER BY r.id",
        )?;
        let rows = stmt.query_map([], |r| {
            let ns: Option<String> = r.get(8)?;
            let mut ns: Vec<u64> = ns
                .unwrap_or_default()
                .split(',')
                .filter_map(|s| s.parse().ok())
                .collect();
            ns.sort_unstable();
            Ok(RunRow {
                id: r.get(0)?,
                uuid: r.get(1)?,
                label: r.get(2)?,
                started_at: r.get(3)?,
                signature: r.get(4)?,
                fs: r.get(5)?,
                kernel_release: r.get(6)?,
                status: r.get(7)?,
                ns,
                dirs: r.get::<_, i64>(9)? as usize,
                cases: r.get::<_, i64>(10)? as usize,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Whole run documents (with their cases) for a selection, oldest first.
    pub fn load(&self, sel: &Selector) -> Result<Vec<RunDocument>> {
        let (sql, arg): (&str, Option<rusqlite::types::Value>) = match sel {
            Selector::All => ("SELECT id, meta FROM runs ORDER BY id", None),
            Selector::Label(l) => (
                "SELECT id, meta FROM runs WHERE label = ?1 ORDER BY id",
                Some(l.clone().into()),
            ),
            Selector::Run(id) => (
                "SELECT id, meta FROM runs WHERE id = ?1",
                Some((*id).into()),
            ),
        };
        let mut stmt = self.conn.prepare(sql)?;
        let map = |r: &rusqlite::Row| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?));
        let runs: Vec<(i64, String)> = match arg {
            Some(a) => stmt.query_map([a], map)?.collect::<rusqlite::Result<_>>()?,
            None => stmt.query_map([], map)?.collect::<rusqlite::Result<_>>()?,
        };
        let mut cases = self
            .conn
            .prepare("SELECT data FROM cases WHERE run_id = ?1 ORDER BY seq")?;
        let mut out = Vec::new();
        for (id, meta) in runs {
            let mut doc: RunDocument = serde_json::from_str(&meta).with_context(|| {
                format!("{}: run {id} has unreadable metadata", self.path.display())
            })?;
            for data in cases.query_map([id], |r| r.get::<_, String>(0))? {
                doc.cases
                    .push(serde_json::from_str(&data?).with_context(|| {
                        format!("{}: run {id} has an unreadable case", self.path.display())
                    })?);
            }
            out.push(doc);
        }
        Ok(out)
    }

    /// Labels in the store, in order of first use.
    pub fn labels(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT label FROM runs GROUP BY label ORDER BY min(id)")?;
        let v = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(v)
    }
}

/// A run document without its cases, as the `runs.meta` column holds it.
fn metadata(doc: &RunDocument) -> Result<String> {
    Ok(serde_json::to_string(&RunDocument {
        cases: Vec::new(),
        ..doc.clone()
    })?)
}

fn insert_run(conn: &Connection, doc: &RunDocument) -> Result<i64> {
    conn.execute(
        "INSERT INTO runs (uuid, label, started_at, signature, fs, kernel_release, status, meta)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            doc.id,
            doc.label,
            doc.started_at,
            doc.signature.name,
            doc.testbed.fs,
            doc.host.kernel_release,
            doc.status,
            metadata(doc)?
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

fn insert_case(conn: &Connection, run: i64, seq: usize, case: &CaseResult) -> Result<()> {
    conn.execute(
        "INSERT INTO cases (run_id, seq, dir, n, rep, warmup, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            run,
            seq as i64,
            case.dir,
            case.n as i64,
            case.rep as i64,
            case.warmup,
            serde_json::to_string(case)?
        ],
    )?;
    Ok(())
}

/// The runs an argument names: a JSON file (`run --json`, `export`), or a label in the
/// store at `db` (opened into `store` on first use). Returns the label to show.
pub fn runs_of(
    arg: &str,
    db: &Path,
    store: &mut Option<Store>,
) -> Result<(String, Vec<RunDocument>)> {
    let path = Path::new(arg);
    if path.is_file() {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {arg}"))?;
        let docs = parse_documents(&text, arg)?;
        let first = docs.first().map(|d| d.label.clone()).unwrap_or_default();
        let label = if !first.is_empty() && docs.iter().all(|d| d.label == first) {
            first
        } else {
            path.file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        };
        return Ok((label, docs));
    }
    if store.is_none() {
        if !db.exists() {
            bail!(
                "`{arg}` is not a file, and there is no results database at {} to find it as a label",
                db.display()
            );
        }
        *store = Some(Store::open_read(db)?);
    }
    let s = store.as_ref().expect("opened above");
    let runs = s.load(&Selector::Label(arg.to_string()))?;
    if runs.is_empty() {
        bail!(
            "no runs labelled `{arg}` in {} (labels there: {})",
            db.display(),
            s.labels()?.join(", ")
        );
    }
    Ok((arg.to_string(), runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let p =
            std::env::temp_dir().join(format!("sigbench-store-{name}-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn processes_creating_one_database_at_once_all_succeed() {
        let p = tmp("race");
        for _ in 0..5 {
            let _ = std::fs::remove_file(&p);
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let p = p.clone();
                    std::thread::spawn(move || {
                        Store::open(&p).map(|_| ()).map_err(|e| format!("{e:#}"))
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap().unwrap();
            }
            let s = Store::open_read(&p).unwrap();
            assert_eq!(s.version().unwrap(), SCHEMA_VERSION);
        }
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn creates_migrates_and_refuses_a_newer_schema() {
        let p = tmp("migrate");
        let s = Store::open(&p).unwrap();
        let v: i64 = s
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v as usize, SCHEMA_VERSION);
        assert!(s.runs().unwrap().is_empty());
        drop(s);
        // Opening again is a no-op.
        assert!(Store::open(&p).is_ok());
        let c = Connection::open(&p).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        drop(c);
        let e = Store::open(&p).err().unwrap().to_string();
        assert!(
            e.contains("schema version 99, newer than this sigbench"),
            "{e}"
        );
        let _ = std::fs::remove_file(&p);
    }
}
