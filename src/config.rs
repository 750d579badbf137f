//! The host's settings file, `<data dir>/config.json`: what its owner chose at install that the host
//! must know when a browser starts it (Chrome passes only the extension's origin).
//!
//! It holds one setting so far, the store quota: `{"storeQuotaBytes": 4000000000}`. `config
//! --store-quota` (and `install --store-quota`) writes it, owner-only (0600), beside the store it bounds; a test that points
//! `LLM_CACHE_DIR` at a folder of its own writes the same file. A host reads it when it starts. A file
//! that can't be read, isn't a regular file or holds nothing valid is not fatal: the host keeps the default limit and logs
//! why, and `doctor` says so.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::limits::{DEFAULT_STORE_QUOTA_BYTES, MAX_STORE_QUOTA_BYTES, STORE_NEARLY_FULL_PERCENT};

/// The settings file's name in the data directory.
pub const CONFIG_FILE: &str = "config.json";

/// The settings file's mode: the owner's alone, as everything in the data directory.
const CONFIG_MODE: u32 = 0o600;

/// The largest settings file read: a few settings need a few hundred bytes.
const MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// The settings, as the file holds them; a setting left out has its default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// The most the whole store may hold, in bytes ([`DEFAULT_STORE_QUOTA_BYTES`] when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_quota_bytes: Option<u64>,
}

impl Config {
    /// The store quota in force: the chosen one, or the default.
    pub fn store_quota(&self) -> u64 {
        self.store_quota_bytes.unwrap_or(DEFAULT_STORE_QUOTA_BYTES)
    }
}

/// The settings file of the data directory `data_dir`.
pub fn config_path(data_dir: &Path) -> PathBuf {
    data_dir.join(CONFIG_FILE)
}

/// Reads the settings of `data_dir`; no file means every default.
///
/// # Errors
/// A sentence naming the file and what is wrong with it.
pub fn load(data_dir: &Path) -> Result<Config, String> {
    let path = config_path(data_dir);
    let bad = |why: String| format!("{} {why}", path.display());
    let file = match open_without_waiting(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Config::default()),
        Err(error) => return Err(bad(format!("can't be read: {error}"))),
    };
    // Only a regular file is read: a FIFO would hold the host before its first reply until some
    // other process wrote to it, and a device may never end. The type is taken from the open handle,
    // so a file swapped after the check is never the one read.
    let kind = file.metadata().map_err(|error| bad(format!("can't be read: {error}")))?.file_type();
    if !kind.is_file() {
        return Err(bad(format!("is not a regular file (it is {})", describe_file_type(kind))));
    }
    let mut text = String::new();
    io::Read::read_to_string(&mut io::Read::take(file, MAX_CONFIG_BYTES + 1), &mut text)
        .map_err(|error| bad(format!("can't be read: {error}")))?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(bad(format!("is longer than {MAX_CONFIG_BYTES} bytes")));
    }
    let config: Config = serde_json::from_str(&text)
        .map_err(|error| bad(format!("is not a settings file like {{\"storeQuotaBytes\": 4000000000}}: {error}")))?;
    if let Some(bytes) = config.store_quota_bytes {
        check_store_quota(bytes).map_err(|why| bad(format!("has storeQuotaBytes {bytes}: {why}")))?;
    }
    Ok(config)
}

/// Opens `path` for reading without waiting for a writer: on Unix a FIFO's open blocks until one
/// comes, so the file is opened non-blocking and its type checked before any read.
fn open_without_waiting(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    options.open(path)
}

/// What kind of file something that isn't a regular file is, in a word a person knows.
fn describe_file_type(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    if kind.is_dir() { "a folder" } else { "not a file" }
}

/// The store quota for a host on `data_dir`: the configured one, or the default when there is none or
/// the file is unusable (logged, since a host has nobody to tell).
pub fn store_quota_for_host(data_dir: &Path) -> u64 {
    match load(data_dir) {
        Ok(config) => config.store_quota(),
        Err(why) => {
            tracing::warn!(%why, default = DEFAULT_STORE_QUOTA_BYTES, "the settings file is unusable; using the default store quota");
            DEFAULT_STORE_QUOTA_BYTES
        }
    }
}

/// Writes the settings of `data_dir`, owner-only, through a temporary file so that a crash leaves the
/// old file whole.
///
/// # Errors
/// Whatever writing or renaming returns.
pub fn save(data_dir: &Path, config: &Config) -> io::Result<()> {
    let mut text = serde_json::to_string_pretty(config).expect("settings always serialise");
    text.push('\n');
    crate::install::write_atomically(&config_path(data_dir), text.as_bytes(), CONFIG_MODE)
}

/// Whether `bytes` can be a store quota: at least one byte, at most what the store can ever hold.
///
/// # Errors
/// What the allowed range is.
pub fn check_store_quota(bytes: u64) -> Result<u64, String> {
    if (1..=MAX_STORE_QUOTA_BYTES).contains(&bytes) {
        Ok(bytes)
    } else {
        Err(format!("a store quota is from 1 byte to {MAX_STORE_QUOTA_BYTES} bytes (1 TiB)"))
    }
}

/// Reads a size as a person writes it: bytes (`500000000`), or a number with a unit: `KB`, `MB`, `GB`,
/// `TB` (powers of 1000) or `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024), case-insensitive, with or
/// without a space; `4GB` is 4,000,000,000 bytes. The result must be a valid store quota.
///
/// # Errors
/// A sentence saying what was expected.
pub fn parse_size(text: &str) -> Result<u64, String> {
    const UNITS: [(&str, u64); 9] = [
        ("b", 1),
        ("kb", 1000),
        ("mb", 1000 * 1000),
        ("gb", 1000 * 1000 * 1000),
        ("tb", 1000 * 1000 * 1000 * 1000),
        ("kib", 1 << 10),
        ("mib", 1 << 20),
        ("gib", 1 << 30),
        ("tib", 1 << 40),
    ];
    let wanted =
        || format!("`{text}` is not a size: write bytes (500000000) or a number and a unit (500MB, 4GB, 2GiB)");
    let lower = text.trim().to_ascii_lowercase();
    let digits = lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len());
    let (number, unit) = lower.split_at(digits);
    let number: u64 = number.parse().map_err(|_| wanted())?;
    let unit = unit.trim();
    let scale = if unit.is_empty() {
        1
    } else {
        UNITS.iter().find(|(name, _)| *name == unit).map(|(_, scale)| *scale).ok_or_else(wanted)?
    };
    let bytes = number.checked_mul(scale).ok_or_else(|| check_store_quota(u64::MAX).unwrap_err())?;
    check_store_quota(bytes)
}

/// The store's use of its quota as one phrase ("1.5 MiB of the store-wide quota of 2.0 GiB used (0%)")
/// and whether it is nearly full (at [`STORE_NEARLY_FULL_PERCENT`] or more), for `doctor` and
/// `sessions`.
pub fn store_use(used: u64, quota: u64) -> (String, bool) {
    let percent = u128::from(used) * 100 / u128::from(quota.max(1));
    let phrase = format!("{} of the store-wide quota of {} used ({percent}%)", human_size(used), human_size(quota));
    (phrase, percent >= u128::from(STORE_NEARLY_FULL_PERCENT))
}

/// A size in the largest binary unit under it, with one decimal: 512 B, 1.5 MiB, 2.0 GiB.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        for (text, bytes) in [
            ("4GB", 4_000_000_000),
            ("500MB", 500_000_000),
            ("500 mb", 500_000_000),
            ("2GiB", 2 << 30),
            ("1048576", 1 << 20),
            ("1", 1),
            ("10kb", 10_000),
            ("1TiB", 1 << 40),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for text in ["", "GB", "4 GBs", "-1", "1.5GB", "0", "0GB", "2TiB", "99999999999999999999", "4e9"] {
            assert!(parse_size(text).is_err(), "{text}");
        }
        assert!(parse_size("4 parsecs").unwrap_err().contains("500MB, 4GB"));
        assert!(parse_size("0").unwrap_err().contains("from 1 byte"));
    }

    #[test]
    fn store_use_reads_plainly() {
        assert_eq!(
            store_use(0, DEFAULT_STORE_QUOTA_BYTES),
            ("0 B of the store-wide quota of 2.0 GiB used (0%)".into(), false)
        );
        assert_eq!(store_use(3 << 19, 4 << 20).0, "1.5 MiB of the store-wide quota of 4.0 MiB used (37%)");
        assert!(store_use(90, 100).1 && !store_use(89, 100).1 && store_use(200, 100).1);
        assert_eq!(human_size(u64::MAX), "16777216.0 TiB");
    }

    #[test]
    fn settings_round_trip_and_bad_files_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(load(tmp.path()), Ok(Config::default()));
        assert_eq!(Config::default().store_quota(), DEFAULT_STORE_QUOTA_BYTES);
        let config = Config { store_quota_bytes: Some(1234) };
        save(tmp.path(), &config).unwrap();
        assert_eq!(load(tmp.path()), Ok(config));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(config_path(tmp.path())).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        for bad in ["{", r#"{"storeQuotaBytes": 0}"#, r#"{"storeQuotaBytes": "4GB"}"#, r#"{"other": 1}"#] {
            std::fs::write(config_path(tmp.path()), bad).unwrap();
            let why = load(tmp.path()).unwrap_err();
            assert!(why.contains(CONFIG_FILE), "{bad}: {why}");
            assert_eq!(store_quota_for_host(tmp.path()), DEFAULT_STORE_QUOTA_BYTES);
        }
    }
}
