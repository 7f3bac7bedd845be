//! Where the store is: an SQLite file (the default, one machine) or a PostgreSQL database
//! (`postgres://…` / `postgresql://…`, many machines). A PostgreSQL URL is never shown
//! with its password; the password comes from the URL, `PGPASSWORD` or `~/.pgpass`
//! (`PGPASSFILE`), as libpq does.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// The URL as given (it may hold a password: print it with `Display`, which drops it).
    Postgres(String),
}

impl std::str::FromStr for Location {
    type Err = String;
    /// Refused here, as clap parses `--db`: an empty name (`--db ''` read as a file
    /// named "" gave "no results database at  (…)").
    fn from_str(s: &str) -> std::result::Result<Location, Self::Err> {
        if s.trim().is_empty() {
            return Err("empty: give a database file or a postgres:// URL".into());
        }
        Ok(Location::parse(s))
    }
}

impl Location {
    pub fn parse(s: &str) -> Location {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            Location::Postgres(s.to_string())
        } else {
            Location::Sqlite(PathBuf::from(s))
        }
    }

    /// Whether there is something to read (a PostgreSQL server is asked when opened).
    pub fn exists(&self) -> bool {
        match self {
            Location::Sqlite(p) => p.exists(),
            Location::Postgres(_) => true,
        }
    }

    /// The SQLite file, if that is what this is.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Location::Sqlite(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }
}

/// A store travels (in a Slurm task's run options) as its text without a password: a
/// task finds the password where libpq does, in PGPASSWORD or ~/.pgpass.
impl serde::Serialize for Location {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Location {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Location, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => write!(f, "{}", redact(url)),
        }
    }
}

/// The URL without a password: neither `user:PASSWORD@` nor a `password=` parameter.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => format!("{}@{host}", user.split(':').next().unwrap_or("")),
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|kv| !kv.starts_with("password="))
                .collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The connection settings of a PostgreSQL URL, the password filled in from `PGPASSWORD`
/// or the password file when the URL has none.
pub fn pg_config(url: &str) -> Result<postgres::Config> {
    let mut c: postgres::Config = url
        .parse()
        .with_context(|| format!("--db {}: not a PostgreSQL URL", redact(url)))?;
    if c.get_user().is_none() {
        let user = std::env::var("PGUSER")
            .or_else(|_| std::env::var("USER"))
            .unwrap_or_else(|_| "root".into());
        c.user(&user);
    }
    if c.get_hosts().is_empty() {
        c.host(&std::env::var("PGHOST").unwrap_or_else(|_| "localhost".into()));
    }
    if c.get_password().is_none() {
        if let Ok(p) = std::env::var("PGPASSWORD") {
            c.password(p);
        } else if let Some(p) = pgpass_password(&c)? {
            c.password(p);
        }
    }
    Ok(c)
}

fn pgpass_password(c: &postgres::Config) -> Result<Option<String>> {
    let file = match std::env::var_os("PGPASSFILE") {
        Some(f) => PathBuf::from(f),
        None => match std::env::var_os("HOME") {
            Some(h) => Path::new(&h).join(".pgpass"),
            None => return Ok(None),
        },
    };
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Ok(None);
    };
    let host = match c.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        Some(postgres::config::Host::Unix(_)) | None => "localhost".to_string(),
    };
    let port = c.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = c.get_user().unwrap_or_default();
    let db = c.get_dbname().unwrap_or(user);
    Ok(pgpass_lookup(&text, &host, &port, db, user))
}

/// The password of the first `host:port:database:user:password` line that matches (`*`
/// matches anything; `\:` and `\\` are a literal colon and backslash).
pub fn pgpass_lookup(text: &str, host: &str, port: &str, db: &str, user: &str) -> Option<String> {
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut chars = line.chars();
        while let Some(ch) = chars.next() {
            match ch {
                '\\' => {
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                }
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut cur)),
                _ => cur.push(ch),
            }
        }
        fields.push(cur);
        if fields.len() != 5 {
            continue;
        }
        let want = [host, port, db, user];
        if fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

/// Refuse a URL that names no database (it would silently use the user's).
pub fn check_pg_url(url: &str) -> Result<()> {
    let c = pg_config(url)?;
    if c.get_dbname().is_none() {
        bail!(
            "--db {}: name the database (postgres://USER@HOST[:PORT]/DATABASE)",
            redact(url)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_files_from_urls_and_never_shows_a_password() {
        assert_eq!(
            Location::parse("results.db"),
            Location::Sqlite("results.db".into())
        );
        let l = Location::parse(
            "postgres://lab:s3cret@db.example:5433/sigbench?sslmode=disable&password=x",
        );
        assert!(matches!(l, Location::Postgres(_)));
        let shown = l.to_string();
        assert_eq!(
            shown,
            "postgres://lab@db.example:5433/sigbench?sslmode=disable"
        );
        assert!(!shown.contains("s3cret"));
        assert_eq!(
            redact("postgresql://u@127.0.0.1/d"),
            "postgresql://u@127.0.0.1/d"
        );
        assert_eq!(redact("postgresql://h/d?password=p"), "postgresql://h/d");
    }

    #[test]
    fn reads_the_password_file_as_libpq_does() {
        let f =
            "# comment\nother:5432:*:*:no\nlocalhost:5433:sigbench:lab:pa\\:ss\n*:*:*:*:fallback\n";
        assert_eq!(
            pgpass_lookup(f, "localhost", "5433", "sigbench", "lab").as_deref(),
            Some("pa:ss")
        );
        assert_eq!(
            pgpass_lookup(f, "db", "5432", "x", "y").as_deref(),
            Some("fallback")
        );
        assert_eq!(pgpass_lookup("a:b:c\n", "a", "b", "c", "d"), None);
    }
}
