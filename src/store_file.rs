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
    check_with(dir, || {})
}

/// [`check`], running `between` after the meta pages are read and before the file's length is taken:
/// where another host process's commit may land (the tests make one land there).
///
/// The length is taken last. LMDB writes a transaction's pages before the meta page that names them,
/// and never shrinks the file, so a length taken after the meta page is read covers every page it
/// names, whatever other hosts commit meanwhile. Taken first, it could miss the pages of a commit
/// that lands between the two looks, and a whole file being written to would look truncated: a host
/// started beside a busy one would then refuse its store for its whole life.
fn check_with(dir: &Path, between: impl FnOnce()) -> FileCheck {
    let path = dir.join(DATA_FILE);
    let mut file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return FileCheck::Missing,
        Err(e) => return FileCheck::Damaged(format!("can't read {}: {e}", path.display())),
    };
    let mut first = [0u8; META_BYTES];
    let first_ok = file.read_exact(&mut first).is_ok() && field32(&first, MAGIC_AT) == MAGIC;
    let page_size = u64::from(field32(&first, PAGE_SIZE_AT));
    let page_size_ok = (512..=65536).contains(&page_size) && page_size.is_power_of_two();
    let mut second = [0u8; META_BYTES];
    let second_ok = first_ok
        && page_size_ok
        && std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(page_size)).is_ok()
        && file.read_exact(&mut second).is_ok()
        && field32(&second, MAGIC_AT) == MAGIC;
    between();
    let len = match file.metadata() {
        Ok(meta) => meta.len(),
        Err(e) => return FileCheck::Damaged(format!("can't read {}: {e}", path.display())),
    };
    if len == 0 {
        return FileCheck::Empty;
    }
    if !first_ok {
        return FileCheck::Damaged(format!("{} ({len} bytes) doesn't start with an LMDB meta page", path.display()));
    }
    if !page_size_ok {
        return FileCheck::Damaged(format!("{}'s meta page names a page size of {page_size}", path.display()));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use heed::types::Bytes;
    use heed::{CommitOrAbort, Database, Env, EnvOpenOptions, WithoutTls};

    /// A real LMDB store in `dir` (as the host opens one, with durable commits) and a database in it.
    fn store(dir: &Path) -> (Env<WithoutTls>, Database<'static, Bytes, Bytes>) {
        let mut options = EnvOpenOptions::new().read_txn_without_tls();
        options.map_size(64 << 20).max_dbs(1);
        // SAFETY: the test's own folder, opened once, through LMDB only.
        let env = unsafe { options.open(dir) }.unwrap();
        let txn = env.write_txn().unwrap();
        let db = env
            .create_databases_and_commit(txn, |opener, txn| -> heed::Result<_> {
                Ok(CommitOrAbort::<_, ()>::Commit(opener.create_database(txn, Some("records"))?))
            })
            .unwrap()
            .unwrap_commit();
        (env, db)
    }

    /// Commits a record of 256 KiB under `key`: new pages past the file's end, then the meta page naming them.
    fn commit(env: &Env<WithoutTls>, db: Database<'static, Bytes, Bytes>, key: &str) {
        let mut txn = env.write_txn().unwrap();
        db.put(&mut txn, key.as_bytes(), &vec![7u8; 256 * 1024]).unwrap();
        txn.commit().unwrap();
    }

    fn length(dir: &Path) -> u64 {
        std::fs::metadata(dir.join(DATA_FILE)).unwrap().len()
    }

    #[test]
    fn a_commit_that_lands_while_the_file_is_checked_leaves_it_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let (env, db) = store(tmp.path());
        commit(&env, db, "first");
        let before = length(tmp.path());
        // Another host commits between the check's look at the meta pages and its look at the length.
        let found = check_with(tmp.path(), || commit(&env, db, "second"));
        assert!(length(tmp.path()) > before, "the commit grew the file, as the race needs");
        assert_eq!(found, FileCheck::Whole);
        assert_eq!(check(tmp.path()), FileCheck::Whole, "and the next check sees the new transaction whole");
    }

    #[test]
    fn a_file_cut_short_of_its_last_transaction_is_damaged_and_an_empty_one_is_new() {
        let tmp = tempfile::tempdir().unwrap();
        let (env, db) = store(tmp.path());
        commit(&env, db, "first");
        drop(env);
        let file = std::fs::OpenOptions::new().write(true).open(tmp.path().join(DATA_FILE)).unwrap();
        file.set_len(length(tmp.path()) - 4096).unwrap();
        assert!(matches!(check(tmp.path()), FileCheck::Damaged(why) if why.contains("is truncated")));
        file.set_len(0).unwrap();
        assert_eq!(check(tmp.path()), FileCheck::Empty);
        file.set_len(100).unwrap();
        assert!(
            matches!(check(tmp.path()), FileCheck::Damaged(why) if why.contains("doesn't start with an LMDB meta page"))
        );
    }
}
