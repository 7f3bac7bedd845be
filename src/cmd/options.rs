//! Options several subcommands share, defined once.

use std::path::PathBuf;

/// Where results are stored.
#[derive(clap::Args, Clone)]
pub struct StoreOptions {
    /// Results database: an SQLite file, or postgres://USER@HOST[:PORT]/DATABASE (the
    /// password from PGPASSWORD or ~/.pgpass; never shown)
    #[arg(
        long,
        env = "SIGBENCH_DB",
        default_value = "sigbench.db",
        value_name = "PATH|URL"
    )]
    pub db: sigbench::store::Location,
}

/// Where `run --kernel` keeps what it prepares.
#[derive(clap::Args, Clone)]
pub struct CacheOptions {
    /// Where unpacked kernels, initramfs images and the KVM verdict are kept
    #[arg(
        long,
        env = "SIGBENCH_CACHE",
        default_value = "/var/cache/sigbench",
        value_name = "DIR"
    )]
    pub cache_dir: PathBuf,
}
