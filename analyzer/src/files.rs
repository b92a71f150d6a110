//! Every file the tool writes goes through here, because it runs as root in
//! folders others may write to (a textfile-collector folder owned by a
//! service account, a shared dataset). Before, a predictable temporary name
//! (`.NAME.PID.tmp`) followed a planted symlink and root's run overwrote
//! whatever it pointed to; a device node given as the target was replaced
//! by a regular file (issue 23).
//!
//! - A target that exists and is not a regular file (a symlink, a device
//!   node, a FIFO, a socket, a folder) is refused: [`check_target`].
//! - Files written whole ([`AtomicFile`]: `--metrics-out`, `--stats-out`,
//!   the dataset's parts) are written under a temporary name in the
//!   target's folder, made of [`TEMP_PREFIX`] and 16 random characters,
//!   created exclusively (`O_CREAT|O_EXCL`: never through a symlink, never
//!   an existing file), then renamed over the target: readers never see
//!   half a file.
//! - Streams a reader may follow while they grow, or that must keep what
//!   was written when the run is killed (`live --write`'s pcapng, `live
//!   --json-out`), are opened in place ([`create_in_place`]) without
//!   following a symlink, and refused if what was opened is not a regular
//!   file with a single link (a hard link planted to another file).
//! - A temporary file of ours that a killed run left is removed by the next
//!   run into the same folder ([`remove_stale`]): one with our prefix, owned
//!   by this user, a regular file, unchanged for [`STALE_AFTER`], and not
//!   locked (a running writer holds an `flock` on its file).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How the name of every temporary file of ours begins.
pub const TEMP_PREFIX: &str = ".rdma-analyzer-tmp-";
/// How the name of every temporary file of ours ends.
pub const TEMP_SUFFIX: &str = ".tmp";
/// A temporary file unchanged for this long, and not locked, is a killed
/// run's.
pub const STALE_AFTER: Duration = Duration::from_secs(60);

/// `path`'s kind, said for an error message.
fn kind_of(m: &std::fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a folder"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

fn refused(path: &Path, kind: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {kind}: refusing to write there (only a new name or a regular file is replaced; links are not followed); give another path",
            path.display()
        ),
    )
}

/// Whether `path` may be written: absent, or a regular file (not through a
/// symlink).
///
/// # Errors
/// When it is anything else, or cannot be looked at.
pub fn check_target(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => Ok(()),
        Ok(m) => Err(refused(path, kind_of(&m))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("{}: cannot look at it: {e}", path.display()),
        )),
    }
}

fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The null device (character device 1:3) opened for writing, when
/// `target` is one; `None` for anything else.
fn null_device(target: &Path) -> io::Result<Option<File>> {
    const MEM_MAJOR: u64 = 1;
    const NULL_MINOR: u64 = 3;
    let Ok(m) = std::fs::symlink_metadata(target) else {
        return Ok(None);
    };
    let rdev = m.rdev();
    // Linux's dev_t: major in bits 8-19 (and 32-43), minor in 0-7 (and 20-31).
    let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
    let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
    if !m.file_type().is_char_device() || major != MEM_MAJOR || minor != NULL_MINOR {
        return Ok(None);
    }
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(target)?;
    // Checked again on what was opened: the path may have been swapped.
    let m = f.metadata()?;
    if m.file_type().is_char_device() && m.rdev() == rdev {
        Ok(Some(f))
    } else {
        Err(refused(target, kind_of(&m)))
    }
}

/// `flock(fd, LOCK_EX | LOCK_NB)`: whether the lock was taken.
#[allow(unsafe_code)]
fn try_lock(f: &File) -> bool {
    // SAFETY: flock on a descriptor this `File` owns; no memory is passed.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

#[allow(unsafe_code)]
fn euid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Removes the temporary files of killed runs in `folder` (see the module
/// doc for which), and returns the ones removed. Best effort: what cannot
/// be looked at is left alone.
pub fn remove_stale(folder: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(folder) else {
        return removed;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(TEMP_PREFIX) || !name.ends_with(TEMP_SUFFIX) {
            continue;
        }
        let path = entry.path();
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old = m
            .modified()
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if !m.file_type().is_file() || m.uid() != euid() || !old {
            continue;
        }
        // Opened without following a link, and checked to be the file
        // looked at: a swap in between is left alone.
        let Ok(f) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        else {
            continue;
        };
        let same = f
            .metadata()
            .is_ok_and(|o| o.ino() == m.ino() && o.dev() == m.dev() && o.file_type().is_file());
        if same && try_lock(&f) && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

fn say_removed(removed: &[PathBuf]) {
    for p in removed {
        eprintln!(
            "rdma-analyzer: removed {}, a temporary file an earlier run left when it was stopped",
            p.display()
        );
    }
}

/// A file written whole under a temporary name, then renamed over its
/// target by [`AtomicFile::commit`]. Dropped without a commit, the
/// temporary file is removed.
#[derive(Debug)]
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    target: PathBuf,
}

impl AtomicFile {
    /// Starts writing `target`: checks it, removes stale temporary files
    /// of ours beside it, creates a new temporary file there.
    ///
    /// # Errors
    /// When `target` exists and is not a regular file, or the temporary
    /// file cannot be created (the folder is missing or not writable).
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        check_target(target)?;
        let folder = folder_of(target);
        say_removed(&remove_stale(folder));
        let tmp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .suffix(TEMP_SUFFIX)
            .rand_bytes(16)
            // As File::create: what the umask allows, so that a collector
            // running as another user can read the result.
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(folder)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "{}: cannot create a temporary file in {}: {e}",
                        target.display(),
                        folder.display()
                    ),
                )
            })?;
        // Held until the file is closed: the next run's clean-up sees it is
        // ours and in use.
        try_lock(tmp.as_file());
        Ok(AtomicFile {
            tmp,
            target: target.to_path_buf(),
        })
    }

    /// The temporary file's path (for messages).
    pub fn temp_path(&self) -> &Path {
        self.tmp.path()
    }

    /// The target's path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Syncs the file and renames it over the target, which is checked
    /// again (it may have been replaced by a link meanwhile).
    ///
    /// # Errors
    /// When the target is no longer writable as such, or the sync or the
    /// rename fails; the temporary file is then removed.
    pub fn commit(self) -> io::Result<()> {
        self.tmp.as_file().sync_all()?;
        self.commit_unsynced()
    }

    /// [`AtomicFile::commit`] without the sync: for many small files whose
    /// set is only whole when the run ends (a dataset's parts, where a sync
    /// each made an export over 4,739 days 3.7 times slower), not for a file
    /// that replaces one a reader relies on.
    ///
    /// # Errors
    /// As [`AtomicFile::commit`].
    pub fn commit_unsynced(self) -> io::Result<()> {
        check_target(&self.target)?;
        let target = self.target;
        self.tmp.persist(&target).map_err(|e| {
            io::Error::new(
                e.error.kind(),
                format!("renaming into {}: {}", target.display(), e.error),
            )
        })?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.tmp.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

/// Writes `bytes` to `target` through an [`AtomicFile`].
///
/// # Errors
/// As [`AtomicFile::create`] and [`AtomicFile::commit`], and when the
/// write fails (a full disk).
pub fn write_whole(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = AtomicFile::create(target)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Opens `target` for a stream written in place: created if absent,
/// emptied if a regular file with one link; never through a symlink.
///
/// # Errors
/// When `target` is anything but a new name or a regular file with one
/// link, or cannot be opened.
pub fn create_in_place(target: &Path) -> io::Result<File> {
    // The null device is the one target that is not a regular file a
    // stream may have (`--json-out /dev/null`: a benchmark that pays for
    // the JSON without keeping it): it is written in place, so nothing is
    // replaced, and it keeps nothing. Asked by its path, never through a
    // link.
    if let Some(f) = null_device(target)? {
        return Ok(f);
    }
    check_target(target)?;
    // O_NONBLOCK: a FIFO swapped in after the check fails to open (no
    // reader) instead of blocking; it changes nothing for a regular file.
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(target)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                refused(target, "a symbolic link")
            } else {
                io::Error::new(e.kind(), format!("{}: {e}", target.display()))
            }
        })?;
    let m = f.metadata()?;
    if !m.file_type().is_file() {
        return Err(refused(target, kind_of(&m)));
    }
    if m.nlink() > 1 {
        return Err(refused(
            target,
            "a regular file with other names (a hard link)",
        ));
    }
    f.set_len(0)?;
    Ok(f)
}
