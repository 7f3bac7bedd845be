//! Options several subcommands share, defined once.

use std::path::PathBuf;

/// Where results are stored.
#[derive(clap::Args)]
pub struct StoreOptions {
    /// Results database
    #[arg(
        long,
        env = "SIGBENCH_DB",
        default_value = "sigbench.db",
        value_name = "PATH"
    )]
    pub db: PathBuf,
}

/// Where `run --kernel` keeps what it prepares.
#[derive(clap::Args)]
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
