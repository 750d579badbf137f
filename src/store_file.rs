//! The LMDB data file checked before it is mapped: a file cut short (a bad copy, a disk fault) would
//! otherwise kill the host with SIGBUS the moment LMDB touches a page past its end.
//!
//! LMDB keeps two meta pages at the start of `data.mdb`; the one with the higher transaction id is
//! current, and it records the last page in use. The file must reach the end of that page.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The name LMDB gives its data file.
pub const DATA_FILE: &str = "data.mdb";

/// LMDB's magic number, at the start of each meta page's body.
const MAGIC: u32 = 0xBEEF_C0DE;

/// Where the fields are in a meta page (LMDB 0.9, 64-bit): after the 16-byte page header come the
/// magic and version, the map address and size, two 48-byte database records (the first one's first
/// field holds the page size), the last page number and the transaction id.
const MAGIC_AT: usize = 16;
const PAGE_SIZE_AT: usize = 40;
const LAST_PAGE_AT: usize = 136;
const TXN_ID_AT: usize = 144;
const META_BYTES: usize = 152;

/// What the data file's header says, or why it can't be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileCheck {
    /// There is no file yet: LMDB creates a new store.
    Missing,
    /// The file is empty: LMDB takes it as a new store (so everything that was in it is gone).
    Empty,
    /// The file is whole as far as its header can tell.
    Whole,
    /// The file can't be used; the text says why.
    Damaged(String),
}

/// Checks the data file in the LMDB folder `dir`.
pub fn check(dir: &Path) -> FileCheck {
    let path = dir.join(DATA_FILE);
    let mut file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return FileCheck::Missing,
        Err(e) => return FileCheck::Damaged(format!("can't read {}: {e}", path.display())),
    };
    let len = match file.metadata() {
        Ok(meta) => meta.len(),
        Err(e) => return FileCheck::Damaged(format!("can't read {}: {e}", path.display())),
    };
    if len == 0 {
        return FileCheck::Empty;
    }
    let mut first = [0u8; META_BYTES];
    if file.read_exact(&mut first).is_err() || field32(&first, MAGIC_AT) != MAGIC {
        return FileCheck::Damaged(format!("{} ({len} bytes) doesn't start with an LMDB meta page", path.display()));
    }
    let page_size = u64::from(field32(&first, PAGE_SIZE_AT));
    if !(512..=65536).contains(&page_size) || !page_size.is_power_of_two() {
        return FileCheck::Damaged(format!("{}'s meta page names a page size of {page_size}", path.display()));
    }
    let mut second = [0u8; META_BYTES];
    let second_ok = std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(page_size)).is_ok()
        && file.read_exact(&mut second).is_ok()
        && field32(&second, MAGIC_AT) == MAGIC;
    let current = if second_ok && field64(&second, TXN_ID_AT) > field64(&first, TXN_ID_AT) { &second } else { &first };
    let needed = field64(current, LAST_PAGE_AT).saturating_add(1).saturating_mul(page_size);
    if len < needed.max(2 * page_size) {
        return FileCheck::Damaged(format!(
            "the store file {} is truncated: it has {len} bytes, and its last committed transaction needs {}",
            path.display(),
            needed.max(2 * page_size)
        ));
    }
    FileCheck::Whole
}

fn field32(page: &[u8; META_BYTES], at: usize) -> u32 {
    u32::from_ne_bytes([page[at], page[at + 1], page[at + 2], page[at + 3]])
}

fn field64(page: &[u8; META_BYTES], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&page[at..at + 8]);
    u64::from_ne_bytes(bytes)
}
