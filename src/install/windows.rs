//! The two things set-up needs on Windows that the standard library doesn't do: removing the running
//! binary (`uninstall` run from the installed copy) and telling whether the console window is this
//! program's own (it was double-clicked, and the window closes when the program exits).
//!
//! Windows refuses to delete an executable while it runs, but lets it be renamed. So `uninstall`
//! moves the running copy out of the install folder into the user's temp folder (its folders can then
//! go) and starts a hidden batch file beside it that deletes it once this process has exited, then
//! itself. That needs no administrator rights, unlike `MoveFileEx(..., MOVEFILE_DELAY_UNTIL_REBOOT)`,
//! which writes to HKLM. If the file outlives the batch file's tries (a minute), it is an inert file
//! in the temp folder, which Windows' own clean-up removes.

use std::io;
use std::os::windows::io::AsRawHandle;
use std::os::windows::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `CreateProcess`'s flag for a console program started without a console window.
const CREATE_NO_WINDOW: u32 = 0x0800_0000;

/// `SetHandleInformation`'s flag for a handle that child processes inherit.
const HANDLE_FLAG_INHERIT: u32 = 1;

/// The batch file that deletes the moved binary `{name}` in its own folder (`%~dp0`, so no path is
/// written into it), trying up to 60 times a second apart (the pause is `ping`'s, the usual way to
/// wait in a batch file) until the file is gone, and then deletes itself.
const HELPER: &str = "@echo off\r
for /l %%n in (1,1,60) do (\r
  del /f /q \"%~dp0{name}\" 2>nul\r
  if not exist \"%~dp0{name}\" goto done\r
  ping -n 2 127.0.0.1 >nul\r
)\r
:done\r
del \"%~f0\"\r
";

#[link(name = "kernel32")]
unsafe extern "system" {
    fn SetHandleInformation(handle: *mut std::ffi::c_void, mask: u32, flags: u32) -> i32;
    fn GetConsoleProcessList(list: *mut u32, count: u32) -> u32;
}

/// Whether `path` is this running program's own file.
pub fn is_running_binary(path: &Path) -> bool {
    let running = std::env::current_exe().and_then(|exe| exe.canonicalize());
    running.is_ok_and(|running| path.canonicalize().is_ok_and(|path| path == running))
}

/// Removes the running binary at `path` as Windows allows: moves it into the temp folder (or, when
/// that is on another drive, beside itself) and starts the helper that deletes it after this process
/// exits. Returns where it went.
///
/// # Errors
/// When it can't be renamed, or the helper can't be started (the file is then left renamed).
pub fn remove_running_binary(path: &Path) -> io::Result<PathBuf> {
    let name = format!("llm-cache-host-{}.removed", std::process::id());
    let in_temp = std::env::temp_dir().join(&name);
    let moved = match std::fs::rename(path, &in_temp) {
        Ok(()) => in_temp,
        Err(_) => {
            let beside = path.with_file_name(&name);
            std::fs::rename(path, &beside)?;
            beside
        }
    };
    let helper = moved.with_file_name(format!("{name}.cmd"));
    std::fs::write(&helper, HELPER.replace("{name}", &name))?;
    // The helper must not hold this process's own stdin, stdout or stderr open after it exits (a
    // caller reading our output to its end would wait for the helper): they stop being inheritable.
    for handle in [io::stdin().as_raw_handle(), io::stdout().as_raw_handle(), io::stderr().as_raw_handle()] {
        if !handle.is_null() {
            // SAFETY: the handle is one of this process's standard handles; a failure (a console
            // pseudo-handle, say) only leaves it as it was.
            unsafe { SetHandleInformation(handle, HANDLE_FLAG_INHERIT, 0) };
        }
    }
    // The standard library runs a batch file through the system's cmd.exe.
    Command::new(&helper)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .creation_flags(CREATE_NO_WINDOW)
        .spawn()?;
    Ok(moved)
}

/// Whether this program is the only one attached to its console: it was started by a double-click
/// (Explorer made a console for it), not from a prompt, so the window closes when it exits.
pub fn console_is_own() -> bool {
    let mut list = [0u32; 2];
    // SAFETY: the list has room for the count given; the call writes at most that many ids.
    let attached = unsafe { GetConsoleProcessList(list.as_mut_ptr(), list.len() as u32) };
    attached == 1
}
