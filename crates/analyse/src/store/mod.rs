//! The results store: every run appended to a database, one transaction per finished
//! case, so a killed run leaves the database as it was plus whole finished cases. SQLite
//! (a file, the default) for one machine; PostgreSQL (`--db postgres://…`) for many
//! machines writing at once. Both hold the same schema and are read the same way.
//!
//! Schema (versioned — SQLite's `user_version`, PostgreSQL's `sigbench_schema` table —
//! and migrated forward when opened to write; a reader reads an older one as it is and
//! never writes):
//! - `runs`: one row per run — its id (UUID), label, signature, filesystem, kernel,
//!   status, and the run document's metadata as JSON (everything but the cases);
//! - `cases`: one row per finished case — directory, N, repetition, warm-up flag, and the
//!   case as JSON;
//! - `changes` (version 2): the change points `sigbench watch` found — series, metric,
//!   status, and the rest as JSON (`changes.rs`);
//! - `change_reports` (version 3): the reports `watch` wrote for them (text and HTML),
//!   whole — what `site` publishes.

pub mod backend;
pub mod changes;
pub mod location;
pub mod series;

use anyhow::{Context, Result, bail};
use backend::{Backend, MIGRATIONS, Postgres, Sqlite, Val};
pub use location::Location;
use model::results::{CaseResult, RunDocument, parse_documents};
use rusqlite::Connection;
use std::cell::RefCell;
use std::path::Path;

/// The schema version this build writes.
pub const SCHEMA_VERSION: usize = MIGRATIONS.len();

/// How often a case is written again after the connection to the database was lost, and
/// how long to wait before each attempt.
const RETRIES: u32 = 5;
const RETRY_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

pub struct Store {
    db: RefCell<Box<dyn Backend>>,
    pub location: Location,
    /// The schema version of what was opened: an older store opened to read is read as it
    /// is (reading never writes), so what a later version added reads as nothing.
    version: usize,
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
    /// The runs of a Slurm job's array tasks (`JOBID_TASK` in their metadata).
    SlurmJob(String),
}

/// As a person gives it: `--label x`, `--run 29` (never `Label("x")`, `Run(29)`).
impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selector::All => write!(f, "any run"),
            // A label that starts with `-` would read as an option after a space.
            Selector::Label(l) if l.starts_with('-') => {
                write!(f, "--label={}", model::shell::quote(l))
            }
            Selector::Label(l) => write!(f, "--label {}", model::shell::quote(l)),
            Selector::Run(r) => write!(f, "--run {r}"),
            Selector::SlurmJob(j) => write!(f, "Slurm job {j}"),
        }
    }
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

fn open_err(loc: &Location) -> String {
    format!("cannot open the results database {loc} (--db to choose another)")
}

/// "not a sigbench store", one line naming the file and what it is.
fn not_a_store(path: &Path, what: &str) -> String {
    not_a_store_at(&Location::Sqlite(path.to_path_buf()), what)
}

fn not_a_store_at(loc: &Location, what: &str) -> String {
    format!(
        "{loc} is not a sigbench store ({what}): --db names a store that `sigbench run` or `import` made"
    )
}

/// A store must be a database file (or one to create): a directory or a device is a clear
/// error here, not SQLite's "disk I/O error: Error code 266".
fn check_sqlite_path(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => bail!(
            "--db {} is a directory: give a database file in it (e.g. {})",
            path.display(),
            path.join("sigbench.db").display()
        ),
        Ok(m) if !m.is_file() => bail!(
            "--db {} is not a regular file: give a database file (--no-store not to store)",
            path.display()
        ),
        _ => Ok(()),
    }
}

/// A file with something in it must be a SQLite database (an empty one, or none, may
/// become one).
fn check_sqlite_header(path: &Path) -> Result<()> {
    use std::io::Read;
    let mut head = [0u8; 16];
    let Ok(f) = std::fs::File::open(path) else {
        return Ok(()); // not there, or not readable: SQLite says which
    };
    let n = f.take(16).read(&mut head).unwrap_or(0);
    if n > 0 && (n < 16 || &head != b"SQLite format 3\0") {
        bail!("{}", not_a_store(path, "not a SQLite database"));
    }
    Ok(())
}

fn open_sqlite(path: &Path) -> Result<Sqlite> {
    check_sqlite_path(path)?;
    check_sqlite_header(path)?;
    let loc = Location::Sqlite(path.to_path_buf());
    let conn = Connection::open(path).with_context(|| open_err(&loc))?;
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
                r.with_context(|| open_err(&loc))?;
                break;
            }
        }
    }
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(Sqlite { conn })
}

/// An existing SQLite database, read-only: works on a read-only file or filesystem,
/// never changes the file.
fn open_sqlite_read(path: &Path) -> Result<Sqlite> {
    use rusqlite::OpenFlags;
    let loc = Location::Sqlite(path.to_path_buf());
    if !path.exists() {
        bail!(
            "there is no results database at {} (--db to choose another)",
            path.display()
        );
    }
    check_sqlite_path(path)?;
    check_sqlite_header(path)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).with_context(|| open_err(&loc))?;
    conn.busy_timeout(BUSY)?;
    let mut db = Sqlite { conn };
    if db.version().is_err() && wal_is_empty(path) {
        // A WAL database on a read-only filesystem (or in a directory this user cannot
        // write) cannot get its shared-memory file. With no write-ahead log left over
        // (sigbench checkpoints it on close), it is safe to read as immutable.
        let uri = format!("file:{}?immutable=1", uri_path(path));
        db.conn = Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
            .with_context(|| open_err(&loc))?;
    }
    Ok(db)
}

impl Store {
    /// Open for writing (creating if needed) and migrate to the current schema. Safe when
    /// several processes open a new database at once: the schema is created under the
    /// database's write lock after the version is read again, and SQLite statements wait
    /// for a busy database instead of failing.
    pub fn open(loc: &Location) -> Result<Store> {
        let db: Box<dyn Backend> = match loc {
            Location::Sqlite(p) => Box::new(open_sqlite(p)?),
            Location::Postgres(url) => Box::new(Postgres::connect(url)?),
        };
        let mut store = Store {
            db: RefCell::new(db),
            location: loc.clone(),
            version: SCHEMA_VERSION,
        };
        store.migrate()?;
        store.version = SCHEMA_VERSION;
        Ok(store)
    }

    /// An existing store, to read and write (`watch --series`, `--ack`: they record change
    /// points in what is there); a SQLite file that is not there is an error, never created.
    pub fn open_existing(loc: &Location) -> Result<Store> {
        if let Location::Sqlite(p) = loc {
            if !p.exists() {
                bail!(
                    "there is no results database at {} (--db to choose another)",
                    p.display()
                );
            }
            // What is there must be a store already: an empty file is not made one.
            check_sqlite_path(p)?;
            if std::fs::metadata(p).is_ok_and(|m| m.len() == 0) {
                bail!("{}", not_a_store(p, "an empty file"));
            }
        }
        let store = Store::open(loc)?;
        Ok(store)
    }

    /// Open an existing database for reading only (`runs`, `compare`, `export`, `report`,
    /// `site`, `watch --changes`). An older schema is read as it is — never migrated here:
    /// reading does not write (a read-only mount, a 0444 file, someone else's store) —; the
    /// tables a later version added read as empty. A write (`run`, `import`, `watch`)
    /// migrates it.
    pub fn open_read(loc: &Location) -> Result<Store> {
        let db: Box<dyn Backend> = match loc {
            Location::Sqlite(p) => Box::new(open_sqlite_read(p)?),
            Location::Postgres(url) => Box::new(Postgres::connect(url)?),
        };
        let mut store = Store {
            db: RefCell::new(db),
            location: loc.clone(),
            version: SCHEMA_VERSION,
        };
        let version = store.version().with_context(|| open_err(loc))?;
        store.check_version(version)?;
        if version == 0 {
            // No schema: an empty file, another program's database, /proc/self/status.
            let what = match loc {
                Location::Sqlite(p) if std::fs::metadata(p).is_ok_and(|m| m.len() == 0) => {
                    "an empty file"
                }
                _ => "no sigbench schema in it",
            };
            bail!("{}", not_a_store_at(loc, what));
        }
        store.version = version;
        Ok(store)
    }

    /// Whether the schema opened has the tables of `version` (an older store read as it
    /// is has not).
    pub(crate) fn has_schema(&self, version: usize) -> bool {
        self.version >= version
    }

    fn version(&self) -> Result<usize> {
        self.db.borrow_mut().version()
    }

    fn check_version(&self, version: usize) -> Result<()> {
        if version > SCHEMA_VERSION {
            bail!(
                "{} has schema version {version}, newer than this sigbench ({SCHEMA_VERSION}): upgrade sigbench",
                self.location
            );
        }
        Ok(())
    }

    fn migrate(&self) -> Result<()> {
        let version = self.version()?;
        self.check_version(version)?;
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        let mut db = self.db.borrow_mut();
        db.begin_exclusive()?;
        let r = (|| -> Result<()> {
            // Another process may have migrated while this one waited for the lock.
            let version = db.version()?;
            for k in version..SCHEMA_VERSION {
                let sql = db.migration(k);
                db.batch(&sql).with_context(|| {
                    format!("migrating {} to schema version {}", self.location, k + 1)
                })?;
                db.set_version(k + 1)?;
            }
            db.batch("COMMIT")
        })();
        if r.is_err() {
            let _ = db.batch("ROLLBACK");
        }
        r
    }

    /// Run `f` in a transaction: all of it or nothing.
    fn tx<T>(&self, f: impl FnOnce(&mut dyn Backend) -> Result<T>) -> Result<T> {
        let mut db = self.db.borrow_mut();
        db.begin()?;
        match f(&mut **db) {
            Ok(v) => {
                db.batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = db.batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Run a write, again after a lost connection (up to [`RETRIES`] times). The write
    /// must be one transaction that is safe to repeat.
    fn write<T>(&self, what: &str, f: impl Fn(&mut dyn Backend) -> Result<T>) -> Result<T> {
        let mut attempt = 0;
        loop {
            match self.tx(&f) {
                Ok(v) => return Ok(v),
                Err(e) => {
                    attempt += 1;
                    if attempt > RETRIES || !self.db.borrow_mut().recover() {
                        if attempt > 1 {
                            bail!(
                                "{what}: lost the connection to {} and {} attempts to write again failed: {e:#}",
                                self.location,
                                attempt - 1
                            );
                        }
                        return Err(e);
                    }
                    std::thread::sleep(RETRY_WAIT);
                }
            }
        }
    }

    /// Record the start of a run (its metadata, no cases yet). Returns its row id.
    pub fn begin_run(&mut self, doc: &RunDocument) -> Result<i64> {
        let meta = metadata(doc)?;
        self.write("recording the run", |db| {
            if let Some(id) = run_id(db, &doc.id)? {
                return Ok(id);
            }
            insert_run(db, doc, &meta)
        })
    }

    /// Append one finished case, atomically (a case already there is not added twice:
    /// after a lost connection the first attempt may have been committed).
    pub fn add_case(&mut self, run: i64, seq: usize, case: &CaseResult) -> Result<()> {
        let data = serde_json::to_string(case)?;
        self.write("storing a case", |db| {
            let there = db.query(
                "SELECT 1 FROM cases WHERE run_id = $1 AND seq = $2",
                &[Val::Int(run), Val::Int(seq as i64)],
            )?;
            if there.is_empty() {
                insert_case(db, run, seq, case, &data)?;
            }
            Ok(())
        })
    }

    /// Mark every run still `running` as `status` (`killed`): only when no sigbench is
    /// running, so these were stopped by SIGKILL or a crash. Returns how many.
    pub fn mark_running(&mut self, status: &str) -> Result<usize> {
        self.tx(|db| {
            let ids = db.query("SELECT id, meta FROM runs WHERE status = 'running'", &[])?;
            for row in &ids {
                let meta = row[1].text();
                // The metadata carries the status too (`export` shows it).
                let meta = match serde_json::from_str::<serde_json::Value>(&meta) {
                    Ok(mut v) => {
                        v["status"] = status.into();
                        v.to_string()
                    }
                    Err(_) => meta,
                };
                db.exec(
                    "UPDATE runs SET status = $1, meta = $2 WHERE id = $3",
                    &[Val::Text(status.into()), Val::Text(meta), row[0].clone()],
                )?;
            }
            Ok(ids.len())
        })
    }

    /// Update a run's metadata and status when it ends.
    pub fn finish_run(&mut self, run: i64, doc: &RunDocument) -> Result<()> {
        let meta = metadata(doc)?;
        self.write("finishing the run", |db| {
            db.exec(
                "UPDATE runs SET status = $1, meta = $2 WHERE id = $3",
                &[
                    Val::Text(doc.status.clone()),
                    Val::Text(meta.clone()),
                    Val::Int(run),
                ],
            )
            .map(|_| ())
        })
    }

    /// Add a whole run document (import), in one transaction. Returns false when the run
    /// is already there in full. A run stored in part (its store failed mid-run) gets the
    /// cases it lacks and the document's status: importing the run's JSON recovers it.
    pub fn import(&mut self, doc: &RunDocument) -> Result<bool> {
        let meta = metadata(doc)?;
        let cases: Vec<String> = doc
            .cases
            .iter()
            .map(serde_json::to_string)
            .collect::<serde_json::Result<_>>()?;
        self.write("importing a run", |db| {
            let (run, have) = match run_id(db, &doc.id)? {
                Some(run) => {
                    let have: std::collections::BTreeSet<i64> = db
                        .query("SELECT seq FROM cases WHERE run_id = $1", &[Val::Int(run)])?
                        .iter()
                        .map(|r| r[0].int())
                        .collect();
                    let status =
                        db.query("SELECT status FROM runs WHERE id = $1", &[Val::Int(run)])?;
                    let same_status =
                        status.first().map(|r| r[0].text()) == Some(doc.status.clone());
                    if same_status && have.len() >= doc.cases.len() {
                        return Ok(false);
                    }
                    db.exec(
                        "UPDATE runs SET status = $1, meta = $2 WHERE id = $3",
                        &[
                            Val::Text(doc.status.clone()),
                            Val::Text(meta.clone()),
                            Val::Int(run),
                        ],
                    )?;
                    (run, have)
                }
                None => (insert_run(db, doc, &meta)?, Default::default()),
            };
            for (seq, (case, data)) in doc.cases.iter().zip(&cases).enumerate() {
                if !have.contains(&(seq as i64)) {
                    insert_case(db, run, seq, case, data)?;
                }
            }
            Ok(true)
        })
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunRow>> {
        let mut db = self.db.borrow_mut();
        let rows = db.query(
            "SELECT r.id, r.uuid, r.label, r.started_at, r.signature, r.fs, r.kernel_release, r.status,
                    (SELECT count(DISTINCT dir) FROM cases c WHERE c.run_id = r.id),
                    (SELECT count(*) FROM cases c WHERE c.run_id = r.id AND c.warmup = 0)
             FROM runs r ORDER BY r.id",
            &[],
        )?;
        let mut ns: std::collections::BTreeMap<i64, Vec<u64>> = Default::default();
        for r in db.query("SELECT DISTINCT run_id, n FROM cases", &[])? {
            ns.entry(r[0].int()).or_default().push(r[1].int() as u64);
        }
        Ok(rows
            .into_iter()
            .map(|r| {
                let mut n = ns.remove(&r[0].int()).unwrap_or_default();
                n.sort_unstable();
                RunRow {
                    id: r[0].int(),
                    uuid: r[1].text(),
                    label: r[2].text(),
                    started_at: r[3].text(),
                    signature: r[4].text(),
                    fs: r[5].text(),
                    kernel_release: r[6].text(),
                    status: r[7].text(),
                    ns: n,
                    dirs: r[8].int() as usize,
                    cases: r[9].int() as usize,
                }
            })
            .collect())
    }

    /// Whole run documents (with their cases) for a selection, oldest first.
    pub fn load(&self, sel: &Selector) -> Result<Vec<RunDocument>> {
        let mut db = self.db.borrow_mut();
        let runs = match sel {
            Selector::All => db.query("SELECT id, meta FROM runs ORDER BY id", &[])?,
            Selector::Label(l) => db.query(
                "SELECT id, meta FROM runs WHERE label = $1 ORDER BY id",
                &[Val::Text(l.clone())],
            )?,
            Selector::Run(id) => {
                db.query("SELECT id, meta FROM runs WHERE id = $1", &[Val::Int(*id)])?
            }
            // Narrowed in the database (`_` matches any one character: the test below
            // is exact), so a lab's store is not read whole.
            Selector::SlurmJob(job) => db.query(
                "SELECT id, meta FROM runs WHERE meta LIKE $1 ORDER BY id",
                &[Val::Text(format!("%\"slurm_job\":\"{job}_%"))],
            )?,
        };
        let mut out = Vec::new();
        for r in runs {
            let id = r[0].int();
            let mut doc: RunDocument = serde_json::from_str(&r[1].text())
                .with_context(|| format!("{}: run {id} has unreadable metadata", self.location))?;
            if let Selector::SlurmJob(job) = sel {
                let task = doc
                    .slurm_job
                    .as_deref()
                    .and_then(|j| j.strip_prefix(job.as_str()));
                if !task.is_some_and(|t| t.starts_with('_')) {
                    continue;
                }
            }
            for c in db.query(
                "SELECT data FROM cases WHERE run_id = $1 ORDER BY seq",
                &[Val::Int(id)],
            )? {
                doc.cases
                    .push(serde_json::from_str(&c[0].text()).with_context(|| {
                        format!("{}: run {id} has an unreadable case", self.location)
                    })?);
            }
            out.push(doc);
        }
        Ok(out)
    }

    /// Labels in the store, in order of first use.
    pub fn labels(&self) -> Result<Vec<String>> {
        let rows = self.db.borrow_mut().query(
            "SELECT label FROM runs GROUP BY label ORDER BY min(id)",
            &[],
        )?;
        Ok(rows.into_iter().map(|r| r[0].text()).collect())
    }
}

/// A run document without its cases, as the `runs.meta` column holds it.
fn metadata(doc: &RunDocument) -> Result<String> {
    Ok(serde_json::to_string(&RunDocument {
        cases: Vec::new(),
        ..doc.clone()
    })?)
}

fn run_id(db: &mut dyn Backend, uuid: &str) -> Result<Option<i64>> {
    let r = db.query(
        "SELECT id FROM runs WHERE uuid = $1",
        &[Val::Text(uuid.to_string())],
    )?;
    Ok(r.first().map(|r| r[0].int()))
}

fn insert_run(db: &mut dyn Backend, doc: &RunDocument, meta: &str) -> Result<i64> {
    let r = db.query(
        "INSERT INTO runs (uuid, label, started_at, signature, fs, kernel_release, status, meta)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        &[
            Val::Text(doc.id.clone()),
            Val::Text(doc.label.clone()),
            Val::Text(doc.started_at.clone()),
            Val::Text(doc.signature.name.clone()),
            Val::Text(doc.testbed.fs.clone()),
            Val::Text(doc.host.kernel_release.clone()),
            Val::Text(doc.status.clone()),
            Val::Text(meta.to_string()),
        ],
    )?;
    r.first()
        .map(|r| r[0].int())
        .context("the database returned no id for the new run")
}

fn insert_case(
    db: &mut dyn Backend,
    run: i64,
    seq: usize,
    case: &CaseResult,
    data: &str,
) -> Result<()> {
    db.exec(
        "INSERT INTO cases (run_id, seq, dir, n, rep, warmup, data) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            Val::Int(run),
            Val::Int(seq as i64),
            Val::Text(case.dir.clone()),
            Val::Int(case.n as i64),
            Val::Int(case.rep as i64),
            Val::Int(case.warmup as i64),
            Val::Text(data.to_string()),
        ],
    )?;
    Ok(())
}

/// Of `runs` (named `arg`), the complete ones — a run interrupted, killed, failed or
/// still running measured only part of its plan — unless `incomplete` (`--incomplete`),
/// when every run is kept and the label shown says how many did not complete. What was
/// left out is said on stderr; none complete is an error naming the flag.
pub fn keep_complete(
    arg: &str,
    label: String,
    runs: Vec<RunDocument>,
    incomplete: bool,
) -> Result<(String, Vec<RunDocument>)> {
    let others: Vec<&str> = runs
        .iter()
        .filter(|r| r.status != "complete")
        .map(|r| r.status.as_str())
        .collect();
    if others.is_empty() {
        return Ok((label, runs));
    }
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for s in &others {
        *counts.entry(s).or_default() += 1;
    }
    let said = counts
        .iter()
        .map(|(s, n)| format!("{n} {s}"))
        .collect::<Vec<_>>()
        .join(", ");
    if incomplete {
        return Ok((format!("{label} (incl. {said})"), runs));
    }
    let complete: Vec<RunDocument> = runs
        .into_iter()
        .filter(|r| r.status == "complete")
        .collect();
    if complete.is_empty() {
        bail!("`{arg}` has no complete runs ({said}): give --incomplete to use them anyway");
    }
    model::say!("sigbench: `{arg}`: left out {said} run(s) (--incomplete to include them)");
    Ok((label, complete))
}

/// The runs an argument names: a JSON file (`run --json`, `export`), or a label in the
/// store at `db` (opened into `store` on first use) — complete runs only unless
/// `incomplete` ([`keep_complete`]). Returns the label to show.
pub fn runs_of(
    arg: &str,
    db: &Location,
    store: &mut Option<Store>,
    incomplete: bool,
) -> Result<(String, Vec<RunDocument>)> {
    let (label, runs) = all_runs_of(arg, db, store)?;
    keep_complete(arg, label, runs, incomplete)
}

/// Every run an argument names, whatever its status.
pub fn all_runs_of(
    arg: &str,
    db: &Location,
    store: &mut Option<Store>,
) -> Result<(String, Vec<RunDocument>)> {
    let path = Path::new(arg);
    if path.is_file() {
        let text = model::input::read_text(path, "the document", model::input::MAX_DOCUMENT_BYTES)?;
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
                "`{arg}` is not a file, and there is no results database at {db} to find it as a label"
            );
        }
        *store = Some(Store::open_read(db)?);
    }
    let s = store.as_ref().expect("opened above");
    let runs = s.load(&Selector::Label(arg.to_string()))?;
    if runs.is_empty() {
        bail!(
            "no runs labelled `{arg}` in {db} (labels there: {})",
            s.labels()?.join(", ")
        );
    }
    Ok((arg.to_string(), runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> Location {
        let p =
            std::env::temp_dir().join(format!("sigbench-store-{name}-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&p);
        Location::Sqlite(p)
    }

    #[test]
    fn processes_creating_one_database_at_once_all_succeed() {
        let p = tmp("race");
        for _ in 0..5 {
            let _ = std::fs::remove_file(p.path().unwrap());
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
        let _ = std::fs::remove_file(p.path().unwrap());
    }

    #[test]
    fn creates_migrates_and_refuses_a_newer_schema() {
        let p = tmp("migrate");
        let s = Store::open(&p).unwrap();
        assert_eq!(s.version().unwrap(), SCHEMA_VERSION);
        assert!(s.runs().unwrap().is_empty());
        drop(s);
        // Opening again is a no-op.
        assert!(Store::open(&p).is_ok());
        let c = Connection::open(p.path().unwrap()).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        drop(c);
        let e = Store::open(&p).err().unwrap().to_string();
        assert!(
            e.contains("schema version 99, newer than this sigbench"),
            "{e}"
        );
        let _ = std::fs::remove_file(p.path().unwrap());
    }

    /// Issue 56, item 13: reading never writes. A store of schema 1 (before change
    /// points) is read as it is — its runs listed, no change points — and left byte for
    /// byte as it was (it was migrated by every reader, even as a 0444 file, and could not
    /// be read at all on a read-only mount); a write migrates it.
    #[test]
    fn an_old_store_is_read_as_it_is_and_migrated_only_by_a_write() {
        let p = tmp("old-schema");
        let path = p.path().unwrap().to_path_buf();
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                &backend::MIGRATIONS[0]
                    .replace("{id}", "INTEGER PRIMARY KEY")
                    .replace("{int}", "INTEGER"),
            )
            .unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
        }
        {
            let mut s = Store::open(&p).unwrap();
            s.import(&model::results::fixtures::doc("old", &[1.0], &[0]))
                .unwrap();
        }
        // Back to schema 1, as a store written by an older sigbench is.
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch("DROP TABLE change_reports; DROP TABLE changes;")
                .unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
            c.pragma_update(None, "journal_mode", "DELETE").unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let s = Store::open_read(&p).unwrap();
        assert_eq!(s.runs().unwrap().len(), 1);
        assert!(s.changes(None).unwrap().is_empty());
        assert!(s.report_formats().unwrap().is_empty());
        drop(s);
        assert_eq!(std::fs::read(&path).unwrap(), before, "a reader wrote");
        let s = Store::open(&p).unwrap();
        assert_eq!(s.version().unwrap(), SCHEMA_VERSION);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_slurm_jobs_runs_are_found_and_no_others() {
        let p = tmp("slurm");
        let mut s = Store::open(&p).unwrap();
        for (k, job) in [
            Some("12_0"),
            Some("12_3"),
            Some("123_0"),
            Some("1x2_0"),
            None,
        ]
        .into_iter()
        .enumerate()
        {
            let mut d = model::results::fixtures::doc("l", &[1.0], &[0]);
            d.id = format!("run-{k}");
            d.slurm_job = job.map(str::to_string);
            s.import(&d).unwrap();
        }
        let found: Vec<Option<String>> = s
            .load(&Selector::SlurmJob("12".into()))
            .unwrap()
            .into_iter()
            .map(|d| d.slurm_job)
            .collect();
        assert_eq!(found, [Some("12_0".into()), Some("12_3".into())]);
        let _ = std::fs::remove_file(p.path().unwrap());
    }
}

#[cfg(test)]
mod complete_tests {
    use super::*;
    use model::results::fixtures;

    /// Issue 39, 13: compare and report pooled runs of any status without a word.
    #[test]
    fn only_complete_runs_unless_asked() {
        let run = |status: &str| {
            let mut d = fixtures::doc("x", &[1.0], &[0]);
            d.status = status.into();
            d
        };
        let runs = vec![
            run("complete"),
            run("interrupted"),
            run("killed"),
            run("complete"),
        ];
        let (label, kept) = keep_complete("x", "x".into(), runs.clone(), false).unwrap();
        assert_eq!((label.as_str(), kept.len()), ("x", 2));
        let (label, kept) = keep_complete("x", "x".into(), runs, true).unwrap();
        assert_eq!(
            (label.as_str(), kept.len()),
            ("x (incl. 1 interrupted, 1 killed)", 4)
        );
        let e = keep_complete("x", "x".into(), vec![run("failed")], false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "`x` has no complete runs (1 failed): give --incomplete to use them anyway"
        );
    }
}
