//! stdin and stdout as non-blocking pipes that tokio's reactor polls directly.
//!
//! tokio's own `stdin()` and `stdout()` hand every read and write to a blocking thread and copy it
//! through a buffer there (a thread hand-off and a futex wake per 64 KiB pipe read). A browser gives
//! its host pipes, which epoll can watch, so the host reads and writes them itself: [`stdio`] sets
//! them non-blocking and registers them, and a read or write is one system call on the runtime's own
//! thread. Anything epoll can't watch (a regular file, `/dev/null`) keeps tokio's versions.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The buffer asked for each pipe: one reply frame's worth.
#[cfg(target_os = "linux")]
const PIPE_BYTES: libc::c_int = crate::limits::MAX_REPLY_FRAME_BYTES as libc::c_int;

/// One of the process's standard streams, non-blocking while this value lives.
pub struct Pipe {
    fd: AsyncFd<StdFd>,
    /// The file status flags it had, put back on drop: the terminal or pipe may be shared.
    flags: libc::c_int,
}

/// A standard stream's descriptor, which this process doesn't own and never closes.
struct StdFd(RawFd);

impl AsRawFd for StdFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// stdin and stdout as [`Pipe`]s, or `None` when either can't be (then neither is changed).
///
/// Must be called inside a tokio runtime with IO enabled.
pub fn stdio() -> Option<(Pipe, Pipe)> {
    let stdin = Pipe::new(libc::STDIN_FILENO).ok()?;
    let stdout = Pipe::new(libc::STDOUT_FILENO).ok()?;
    Some((stdin, stdout))
}

impl Pipe {
    fn new(fd: RawFd) -> io::Result<Pipe> {
        // SAFETY: fcntl on a descriptor number only reads or sets its flags; a closed one fails.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // A pipe holds 64 KiB by default, so a 5 MB request or reply crosses in 80 wake-ups of each
        // side; one of a frame's size (the most an unprivileged process may ask for, by default)
        // takes a few. Where it can't be had, the pipe works as it was.
        // SAFETY: as above; F_SETPIPE_SZ only resizes the pipe's buffer, or fails.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES);
        }
        // SAFETY: the standard streams stay open for the whole process, so the descriptor stays valid
        // as long as the registration does.
        match unsafe { AsyncFd::register(StdFd(fd)) } {
            Ok(fd) => Ok(Pipe { fd, flags }),
            Err(error) => {
                // SAFETY: as above; puts back the flags read before.
                unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
                Err(error.into())
            }
        }
    }

    /// Runs `io` (one read or write system call) when the reactor says the stream is ready, again
    /// after a spurious wake-up, and retries an interrupted call.
    fn poll_io(
        &self,
        cx: &mut Context<'_>,
        write: bool,
        mut io: impl FnMut(RawFd) -> isize,
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard =
                if write { ready!(self.fd.poll_write_ready(cx))? } else { ready!(self.fd.poll_read_ready(cx))? };
            let result = guard.try_io(|fd| {
                loop {
                    let n = io(fd.as_raw_fd());
                    if n >= 0 {
                        return Ok(n as usize);
                    }
                    let error = io::Error::last_os_error();
                    if error.kind() != io::ErrorKind::Interrupted {
                        return Err(error);
                    }
                }
            });
            match result {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => continue,
            }
        }
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // SAFETY: see `Pipe::new`.
        unsafe { libc::fcntl(self.fd.get_ref().0, libc::F_SETFL, self.flags) };
    }
}

impl AsyncRead for Pipe {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let unfilled = buf.initialize_unfilled();
        let (at, room) = (unfilled.as_mut_ptr(), unfilled.len());
        // SAFETY: reads at most `room` bytes into the initialised, unfilled part of `buf`.
        let read = ready!(self.poll_io(cx, false, |fd| unsafe { libc::read(fd, at.cast(), room) }))?;
        buf.advance(read);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Pipe {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        // SAFETY: writes at most `bytes.len()` bytes from `bytes`.
        self.poll_io(cx, true, |fd| unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) })
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Every write goes straight to the pipe.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
