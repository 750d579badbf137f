//! The LMDB map's resident pages, given back after each transaction.
//!
//! LMDB reads by mapping its data file, and every page a transaction touches stays resident in the
//! process (file-backed RSS) until the kernel wants the memory back: a host that reads a 50 MB
//! session, item after item, would keep 50 MB resident. The map is shared and read-only (LMDB writes
//! through the file, never through the map, unless opened with `WRITEMAP`, which the store never
//! is), so its pages can be dropped at any moment without losing a byte: the page cache keeps them,
//! and the next read maps them again for the cost of a minor fault.
//!
//! The store counts the bytes of the records it reads ([`MapPages::read`]), and a few pages of
//! B-tree for every transaction ([`MapPages::transaction`]), and drops the pages whenever a few
//! MB have piled up, before the next record is read: whatever it reads (a search over a whole
//! session, a host running for days) it keeps a few MB of the map resident, not 50. A request that
//! reads little costs nothing: dropping pages takes a system call and the pages read next (the
//! B-trees' top pages) must be mapped again, so it is done only every few MB.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The pages are dropped whenever the records read since they last were pass this many bytes.
const RELEASE_EVERY_BYTES: usize = 4 * 1024 * 1024;

/// What a transaction (or one command of a group commit) is counted as reading besides its records:
/// the B-tree pages on its paths (a root-to-leaf path in each database it touches).
const TRANSACTION_BYTES: usize = 64 * 1024;

/// Finds the store's map in this process and drops its resident pages.
pub struct MapPages {
    /// The data file the map shows.
    file: PathBuf,
    /// The map size last looked for (a resize maps the file anew), and where the map was found then.
    found: Mutex<Option<(usize, Option<Mapping>)>>,
    /// Bytes of records read since the pages were last dropped.
    read_since: AtomicUsize,
}

/// Where the map lies in this process's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mapping {
    start: usize,
    len: usize,
}

impl MapPages {
    /// The map of the data file `file`.
    pub fn new(file: &Path) -> MapPages {
        MapPages { file: file.to_owned(), found: Mutex::new(None), read_since: AtomicUsize::new(0) }
    }

    /// Notes that a transaction is about to read `bytes` of records through the map, and drops the
    /// pages read before them once those pass [`RELEASE_EVERY_BYTES`]. The caller is inside a
    /// transaction, so the map stays where [`MapPages::locate`] last found it.
    pub fn read(&self, bytes: usize) {
        if self.read_since.fetch_add(bytes, Ordering::Relaxed) + bytes < RELEASE_EVERY_BYTES {
            return;
        }
        let found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, Some(mapping))) = *found {
            drop_pages(mapping);
        }
        self.read_since.store(0, Ordering::Relaxed);
    }

    /// Forgets where the map is: it is about to be resized, and may move; the next
    /// [`MapPages::locate`] finds it again.
    pub fn forget(&self) {
        *self.found.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Finds the map in this process's memory, unless it was found at this size already (a resize
    /// maps the file anew). `map_size` is the map's size now; the caller must keep the map from being
    /// moved or resized until the next [`MapPages::forget`] (the store holds its transaction gate
    /// around every transaction, and resizes only with it held exclusively).
    pub fn locate(&self, map_size: usize) {
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        if found.is_none_or(|(size, _)| size != map_size) {
            *found = Some((map_size, find_map(&self.file, map_size)));
        }
    }

    /// Counts the B-tree pages a transaction (or one command of a group commit) read, as
    /// [`MapPages::read`] counts records.
    pub fn transaction(&self) {
        self.read(TRANSACTION_BYTES);
    }
}

/// The shared, read-only mapping of `file` from its start, `map_size` bytes long, as
/// `/proc/self/maps` lists it: the file's device and inode, offset 0, and the size LMDB maps.
#[cfg(target_os = "linux")]
fn find_map(file: &Path, map_size: usize) -> Option<Mapping> {
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(file).ok()?.ino();
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let mut fields = line.split_ascii_whitespace();
        let (range, perms, offset) = (fields.next()?, fields.next()?, fields.next()?);
        let (_device, line_inode) = (fields.next()?, fields.next()?.parse::<u64>().ok()?);
        let (start, end) = range.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        let end = usize::from_str_radix(end, 16).ok()?;
        let mapping = Mapping { start, len: end.checked_sub(start)? };
        let shared = perms.as_bytes().get(3) == Some(&b's') && perms.as_bytes().get(1) == Some(&b'-');
        (line_inode == inode && shared && offset.bytes().all(|b| b == b'0') && mapping.len == map_size)
            .then_some(mapping)
    })
}

#[cfg(not(target_os = "linux"))]
fn find_map(_file: &Path, _map_size: usize) -> Option<Mapping> {
    None
}

/// Drops the resident pages of `mapping`, a shared read-only file mapping.
#[cfg(target_os = "linux")]
fn drop_pages(mapping: Mapping) {
    // SAFETY: `mapping` is LMDB's shared, read-only mapping of the store's data file (found by inode,
    // offset, sharing and size), and the caller keeps it mapped. MADV_DONTNEED on a shared file
    // mapping only unmaps its pages from this process: their contents stay in the page cache and the
    // file, and the next access maps them again. Nothing else lives in that range.
    let failed = unsafe { libc::madvise(mapping.start as *mut libc::c_void, mapping.len, libc::MADV_DONTNEED) } != 0;
    if failed {
        tracing::debug!(error = %std::io::Error::last_os_error(), "the map's pages could not be dropped");
    }
}

#[cfg(not(target_os = "linux"))]
fn drop_pages(_mapping: Mapping) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_map_of_another_size_is_not_taken_for_the_store() {
        let tmp = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open_with_map_size(tmp.path(), 1 << 24).unwrap();
        let file = tmp.path().join(crate::store_file::DATA_FILE);
        let mapping = find_map(&file, 1 << 24).expect("the store's map is found");
        assert_eq!(mapping.len, 1 << 24);
        assert_eq!(find_map(&file, 1 << 25), None);
        drop(store);
        assert_eq!(find_map(&file, 1 << 24), None, "a closed store's map is gone");
    }
}
