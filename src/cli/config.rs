//! `config`: change a host's settings (`<data dir>/config.json`, [`crate::config`]) and nothing else:
//! it registers no browser, so it never writes a manifest that would hide a package's.

use std::io::Write;

use super::Outcome;
use super::flags::HostArg;
use crate::install::browsers::Platform;
use crate::install::install::set_store_quota;
use crate::install::{Failure, say};

/// Show or change the host's settings; registers nothing.
///
/// The settings are in <data dir>/config.json, which every host reads when it starts. This only
/// writes that file: it touches no manifest, so it is the way to set the store quota of a host a
/// package (the .deb) or `install --system` installed. Without --store-quota it prints the settings.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    host: HostArg,
    /// The most the whole cache store may hold, summed over every session of every extension
    /// (default 2GiB): bytes, or a number with KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB,
    /// TiB, e.g. 4GB or 500MB. Hosts started from then on use it.
    #[arg(long, value_name = "SIZE", value_parser = crate::config::parse_size)]
    store_quota: Option<u64>,
}

/// Records the settings given, or prints those in force.
pub fn run(args: Args, out: &mut dyn Write) -> Outcome {
    let platform = args.host.platform(Platform::current());
    if let Some(bytes) = args.store_quota {
        set_store_quota(bytes, &platform, out)?;
        return Ok(true);
    }
    let dir = platform.data_dir().ok_or_else(|| Failure("no data directory: set LLM_CACHE_DIR or HOME".into()))?;
    let path = crate::config::config_path(&dir);
    match crate::config::load(&dir) {
        Ok(config) => {
            let from = match config.store_quota_bytes {
                Some(_) => format!("recorded in {}", path.display()),
                None => "the default".to_owned(),
            };
            let bytes = config.store_quota();
            say(out, format!("store quota: {bytes} bytes ({}), {from}", crate::config::human_size(bytes)));
            Ok(true)
        }
        Err(why) => Err(Failure(format!("{why}; hosts use the default store quota until it is fixed or removed"))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Command;
    use super::super::tests::parse;

    #[test]
    fn flags_and_mistakes() {
        let Ok(Command::Config(args)) = parse(&["config", "--store-quota", "4GB"]) else { panic!() };
        assert_eq!(args.store_quota, Some(4_000_000_000));
        let Ok(Command::Config(args)) = parse(&["config", "--host-name", "com.example.mail_cache"]) else { panic!() };
        assert_eq!((args.store_quota, args.host.host_name.unwrap().as_str()), (None, "com.example.mail_cache"));
        for words in
            [&["config", "--store-quota", "0"][..], &["config", "--browser", "chromium"], &["config", "--system"]]
        {
            assert!(parse(words).is_err(), "{words:?}");
        }
    }
}
