//! The flags several commands share, and the checks of their values, each defined once.

use std::path::PathBuf;

use clap::Args;

use crate::host_name::HostName;
use crate::install::Selection;
use crate::install::browsers::{Browser, Platform, Scope};
use crate::install::manifest::{FIREFOX_ID_RULE, is_chrome_extension_id, is_firefox_extension_id};

/// `--json`, for the commands that show the cache.
#[derive(Debug, Args)]
pub struct Output {
    /// Print JSON (one document) instead of lines, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// `--origin`, for the commands that name a session.
#[derive(Debug, Args)]
pub struct OriginArg {
    /// Only this extension's session (chrome-extension://<id>/ or moz-extension:<add-on id>); by default
    /// every extension that has a session of that id.
    #[arg(long)]
    pub origin: Option<String>,
}

/// `--host-name`, for the commands that set a host up or check it.
#[derive(Debug, Args)]
pub struct HostArg {
    /// The host name extensions pass to connectNative, e.g. com.example.mail_cache: its manifests,
    /// registry keys, installed copy (<data dir>/bin/<host name>), command (com.example.mail-cache) and data
    /// directory (~/.local/share/<host name>) are its own [default: this binary's, com.browserx.llm_cache
    /// unless it was built or installed for another].
    #[arg(long = "host-name", value_name = "NAME", value_parser = HostName::parse)]
    pub host_name: Option<HostName>,
}

impl HostArg {
    /// The platform for the host named, or this binary's own.
    pub fn platform(self, platform: Platform) -> Platform {
        match self.host_name {
            Some(host) => platform.with_host(host),
            None => platform,
        }
    }
}

/// The flags `install` and `doctor` share.
#[derive(Debug, Args)]
pub struct Flags {
    #[command(flatten)]
    pub host: HostArg,
    /// A browser to register with or check (repeatable) [default: those found installed].
    #[arg(long = "browser", value_enum, value_name = "BROWSER")]
    pub browsers: Vec<Browser>,
    /// A Chrome extension id to allow, as chrome-extension://<ID>/ in allowed_origins (repeatable);
    /// install adds it to those allowed already [default: the demo extension's, when none is]; doctor
    /// checks it [default: the ones installed].
    #[arg(long = "extension-id", value_name = "ID", value_parser = chrome_id)]
    pub extension_ids: Vec<String>,
    /// A Firefox add-on id to allow in allowed_extensions (repeatable), as --extension-id.
    // A Firefox id may start with `-` (`-x@y` is one), so the word after the flag is always its value.
    #[arg(long = "firefox-extension-id", value_name = "ID", value_parser = firefox_id, allow_hyphen_values = true)]
    pub firefox_extension_ids: Vec<String>,
    /// For every user: system folders (HKLM on Windows); needs root or an administrator.
    #[arg(long)]
    pub system: bool,
    /// A Chromium profile started with --user-data-dir=DIR: the manifest goes in DIR/NativeMessagingHosts
    /// (repeatable; Linux and macOS).
    #[arg(long = "user-data-dir", value_name = "DIR")]
    pub user_data_dirs: Vec<PathBuf>,
}

impl Flags {
    /// The selection, and the platform for the host named.
    pub fn split(self, platform: Platform) -> (Selection, Platform) {
        let platform = self.host.platform(platform);
        let selection = Selection {
            browsers: self.browsers,
            user_data_dirs: self.user_data_dirs,
            extension_ids: self.extension_ids,
            firefox_extension_ids: self.firefox_extension_ids,
            scope: scope(self.system),
        };
        (selection, platform)
    }
}

/// The scope `--system` asks for.
pub fn scope(system: bool) -> Scope {
    if system { Scope::System } else { Scope::User }
}

/// A Chrome extension id, checked.
pub fn chrome_id(id: &str) -> Result<String, String> {
    if is_chrome_extension_id(id) {
        Ok(id.to_owned())
    } else {
        Err("a Chrome extension id is 32 letters from a to p, as chrome://extensions shows it".into())
    }
}

/// A Firefox add-on id, checked.
pub fn firefox_id(id: &str) -> Result<String, String> {
    if is_firefox_extension_id(id) { Ok(id.to_owned()) } else { Err(FIREFOX_ID_RULE.into()) }
}

/// An absolute path: browsers start the host without a shell or PATH.
pub fn absolute_path(path: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(path);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err("browsers start the host without a shell or PATH, so the path must be absolute, e.g. /usr/bin/llm-cache-host"
            .into())
    }
}
