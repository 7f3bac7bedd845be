//! The two database engines behind [`super::Store`]: the same statements (written with
//! `$1, $2, …` parameters in order, which SQLite and PostgreSQL both read), values as
//! [`Val`], and per engine only what differs — the schema's column types, how the schema
//! version is kept, the write lock for migrations, and reconnecting after a lost
//! connection (PostgreSQL).

use super::location::{pg_config, redact};
use anyhow::Result;

/// A value going into or coming out of a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Int(i64),
    Text(String),
    Null,
}

impl Val {
    pub fn int(&self) -> i64 {
        match self {
            Val::Int(i) => *i,
            Val::Text(t) => t.parse().unwrap_or(0),
            Val::Null => 0,
        }
    }

    pub fn text(&self) -> String {
        match self {
            Val::Int(i) => i.to_string(),
            Val::Text(t) => t.clone(),
            Val::Null => String::new(),
        }
    }
}

pub trait Backend: Send {
    /// Statements without parameters or results (schema, BEGIN, COMMIT).
    fn batch(&mut self, sql: &str) -> Result<()>;
    fn exec(&mut self, sql: &str, args: &[Val]) -> Result<u64>;
    fn query(&mut self, sql: &str, args: &[Val]) -> Result<Vec<Vec<Val>>>;
    /// Begin a transaction for a write that may read first (a case, an import).
    fn begin(&mut self) -> Result<()>;
    /// Begin a transaction that holds the database's write lock (schema migrations).
    fn begin_exclusive(&mut self) -> Result<()>;
    /// What a `SELECT` in a write transaction ends with to keep the rows it read from
    /// changing before the transaction ends (a read-modify-write): PostgreSQL's
    /// `FOR UPDATE`; nothing in SQLite, whose write transactions hold the database.
    fn for_update(&self) -> &'static str;
    /// The schema version (0: no schema yet).
    fn version(&mut self) -> Result<usize>;
    /// Inside a transaction: record the schema version.
    fn set_version(&mut self, v: usize) -> Result<()>;
    /// The statements of migration `k` (from version k to k + 1) in this engine's types.
    fn migration(&self, k: usize) -> String;
    /// After a failed statement: true when the connection was lost and trying again may
    /// help (a new connection is attempted here).
    fn recover(&mut self) -> bool;
}

/// Forward migrations: entry k takes the database from version k to k + 1. One text for
/// both engines: `{id}` is the row id column and `{int}` an integer column, in each
/// engine's types ([`Backend::migration`]).
pub const MIGRATIONS: &[&str] = &[
    // 1: runs and cases.
    "CREATE TABLE runs (
        id {id},
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
        id {id},
        run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq {int} NOT NULL,
        dir TEXT NOT NULL,
        n {int} NOT NULL,
        rep {int} NOT NULL,
        warmup {int} NOT NULL,
        data TEXT NOT NULL
     );
     CREATE INDEX cases_run ON cases(run_id);",
    // 2: change points `watch` found, with what became of them.
    "CREATE TABLE changes (
        id {id},
        series TEXT NOT NULL,
        metric TEXT NOT NULL,
        status TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        data TEXT NOT NULL
     );
     CREATE INDEX changes_series ON changes(series);",
    // 3: the reports `watch` wrote for its change points, kept whole: `site` publishes
    // these, never a file a stored path names.
    "CREATE TABLE change_reports (
        change_id {int} NOT NULL,
        format TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (change_id, format)
     );",
];

/// Migration `k` with the engine's types filled in.
fn migration_in(k: usize, id: &str, int: &str) -> String {
    MIGRATIONS[k].replace("{id}", id).replace("{int}", int)
}

pub struct Sqlite {
    pub conn: rusqlite::Connection,
}

fn sqlite_val(v: rusqlite::types::ValueRef) -> Val {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Integer(i) => Val::Int(i),
        ValueRef::Text(t) | ValueRef::Blob(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Real(r) => Val::Text(r.to_string()),
        ValueRef::Null => Val::Null,
    }
}

fn sqlite_params(args: &[Val]) -> Vec<rusqlite::types::Value> {
    use rusqlite::types::Value;
    args.iter()
        .map(|a| match a {
            Val::Int(i) => Value::Integer(*i),
            Val::Text(t) => Value::Text(t.clone()),
            Val::Null => Value::Null,
        })
        .collect()
}

impl Backend for Sqlite {
    fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.conn.execute_batch(sql)?)
    }

    fn exec(&mut self, sql: &str, args: &[Val]) -> Result<u64> {
        let n = self
            .conn
            .execute(sql, rusqlite::params_from_iter(sqlite_params(args)))?;
        Ok(n as u64)
    }

    fn query(&mut self, sql: &str, args: &[Val]) -> Result<Vec<Vec<Val>>> {
        let mut st = self.conn.prepare_cached(sql)?;
        let cols = st.column_count();
        let rows = st.query_map(rusqlite::params_from_iter(sqlite_params(args)), |r| {
            (0..cols)
                .map(|i| r.get_ref(i).map(sqlite_val))
                .collect::<rusqlite::Result<Vec<Val>>>()
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn begin(&mut self) -> Result<()> {
        // Write-locked from the start: a deferred transaction that reads and then writes
        // cannot wait for another writer (SQLite answers "database is locked" at once,
        // without its busy handler); an immediate one waits up to the busy timeout.
        Ok(self.conn.execute_batch("BEGIN IMMEDIATE")?)
    }

    fn begin_exclusive(&mut self) -> Result<()> {
        self.begin()
    }

    fn for_update(&self) -> &'static str {
        ""
    }

    fn version(&mut self) -> Result<usize> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))? as usize)
    }

    fn set_version(&mut self, v: usize) -> Result<()> {
        Ok(self.conn.pragma_update(None, "user_version", v as i64)?)
    }

    fn migration(&self, k: usize) -> String {
        migration_in(k, "INTEGER PRIMARY KEY", "INTEGER")
    }

    fn recover(&mut self) -> bool {
        false
    }
}

pub struct Postgres {
    client: postgres::Client,
    config: postgres::Config,
}

impl Postgres {
    pub fn connect(url: &str) -> Result<Postgres> {
        let config = pg_config(url)?;
        let client = config
            .connect(postgres::NoTls)
            .map_err(|e| anyhow::anyhow!("cannot connect to {}: {}", redact(url), pg_error(&e)))?;
        Ok(Postgres { client, config })
    }
}

/// The server's message when there is one ("relation … does not exist"), else the
/// client's ("connection refused").
fn pg_error(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => d.message().to_string(),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(c) = src {
                s = format!("{s}: {c}");
                src = c.source();
            }
            s
        }
    }
}

fn pg_params(args: &[Val]) -> Vec<Box<dyn postgres::types::ToSql + Sync>> {
    args.iter()
        .map(|a| -> Box<dyn postgres::types::ToSql + Sync> {
            match a {
                Val::Int(i) => Box::new(*i),
                Val::Text(t) => Box::new(t.clone()),
                Val::Null => Box::new(Option::<String>::None),
            }
        })
        .collect()
}

fn pg_val(row: &postgres::Row, i: usize) -> Result<Val> {
    use postgres::types::Type;
    let t = row.columns()[i].type_().clone();
    Ok(if t == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?
            .map_or(Val::Null, Val::Int)
    } else if t == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?
            .map_or(Val::Null, |v| Val::Int(v as i64))
    } else if t == Type::INT2 {
        row.try_get::<_, Option<i16>>(i)?
            .map_or(Val::Null, |v| Val::Int(v as i64))
    } else if t == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)?
            .map_or(Val::Null, |v| Val::Int(v as i64))
    } else {
        row.try_get::<_, Option<String>>(i)?
            .map_or(Val::Null, Val::Text)
    })
}

impl Backend for Postgres {
    fn batch(&mut self, sql: &str) -> Result<()> {
        self.client
            .batch_execute(sql)
            .map_err(|e| anyhow::anyhow!("{}", pg_error(&e)))
    }

    fn exec(&mut self, sql: &str, args: &[Val]) -> Result<u64> {
        let p = pg_params(args);
        let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
            p.iter().map(|b| b.as_ref()).collect();
        self.client
            .execute(sql, &refs)
            .map_err(|e| anyhow::anyhow!("{}", pg_error(&e)))
    }

    fn query(&mut self, sql: &str, args: &[Val]) -> Result<Vec<Vec<Val>>> {
        let p = pg_params(args);
        let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
            p.iter().map(|b| b.as_ref()).collect();
        let rows = self
            .client
            .query(sql, &refs)
            .map_err(|e| anyhow::anyhow!("{}", pg_error(&e)))?;
        rows.iter()
            .map(|r| (0..r.len()).map(|i| pg_val(r, i)).collect())
            .collect()
    }

    fn begin(&mut self) -> Result<()> {
        self.batch("BEGIN")
    }

    fn begin_exclusive(&mut self) -> Result<()> {
        // One lock for every sigbench creating or migrating this database at once.
        // (Two statements, not one string: in a multi-statement simple query the lock would
        // belong to the string's implicit transaction and be released at its end.)
        self.batch("BEGIN")?;
        self.batch("SELECT pg_advisory_xact_lock(71512026)")
    }

    fn for_update(&self) -> &'static str {
        " FOR UPDATE"
    }

    fn version(&mut self) -> Result<usize> {
        // From the catalog tables under this statement's snapshot, not `to_regclass`: a
        // name looked up before is answered from the session's cache, which does not yet
        // know a table another session created while this one waited for the lock.
        let exists = self.query(
            "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = 'sigbench_schema'",
            &[],
        )?;
        if exists.first().and_then(|r| r.first()).map_or(0, Val::int) == 0 {
            return Ok(0);
        }
        let v = self.query("SELECT max(version) FROM sigbench_schema", &[])?;
        Ok(v.first().and_then(|r| r.first()).map_or(0, Val::int) as usize)
    }

    fn set_version(&mut self, v: usize) -> Result<()> {
        self.batch("CREATE TABLE IF NOT EXISTS sigbench_schema (version BIGINT NOT NULL); DELETE FROM sigbench_schema")?;
        self.exec(
            "INSERT INTO sigbench_schema (version) VALUES ($1)",
            &[Val::Int(v as i64)],
        )
        .map(|_| ())
    }

    fn migration(&self, k: usize) -> String {
        migration_in(k, "BIGSERIAL PRIMARY KEY", "BIGINT")
    }

    fn recover(&mut self) -> bool {
        if !self.client.is_closed() {
            return false;
        }
        if let Ok(c) = self.config.connect(postgres::NoTls) {
            self.client = c;
        }
        true
    }
}
