//! Paths only this user can reach: the directories sdnlab keeps what it
//! runs (peer launchers, virtual environments) and its secrets in (keys,
//! tokens). Another local user must not be able to plant a file, a
//! directory or a symlink that sdnlab then runs or writes through, so:
//! a temporary directory is always new, with a random name and mode 0700
//! (`tempfile`, i.e. mkdtemp); a directory kept across runs (a cache, a
//! credentials directory) is made 0700, and one that exists is used only
//! when it is a real directory (not a symlink) owned by this user and
//! writable by no one else; a secret is created anew (O_EXCL, never
//! through a symlink) with mode 0600.

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use tempfile::TempDir;

/// A new private temporary directory `PREFIX` + random, under the system's
/// temporary directory; removed when dropped.
pub fn temp_dir(prefix: &str) -> io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    // tempfile's directories follow the umask (0755 as a rule) unless told.
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

fn refuse(path: &Path, why: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, format!("{}: {why}", path.display()))
}

/// `path` as a directory only this user may write into: made (mode 0700,
/// its missing parents as umask allows) when missing; refused when it is a
/// symlink, not a directory, owned by another user, or writable by group or others.
pub fn dir(path: &Path) -> io::Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)?;
            }
            match std::fs::DirBuilder::new().mode(0o700).create(path) {
                Ok(()) => {}
                // Made by someone else in between: checked below.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    check_dir(path)?;
    Ok(path.to_path_buf())
}

/// Whether an existing `path` is a directory only this user may write into.
pub fn check_dir(path: &Path) -> io::Result<()> {
    let m = std::fs::symlink_metadata(path)?;
    if m.file_type().is_symlink() {
        return Err(refuse(path, "is a symbolic link: give the directory itself".into()));
    }
    if !m.is_dir() {
        return Err(refuse(path, "is not a directory".into()));
    }
    let me = nix::unistd::geteuid().as_raw();
    if m.uid() != me {
        return Err(refuse(
            path,
            format!(
                "belongs to user {} (this is user {me}): use a directory of your own",
                m.uid()
            ),
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(refuse(
            path,
            format!(
                "others may write into it (mode {:o}): chmod go-w it, or use another directory",
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Writes a new file `path` readable by this user only (0600); refused if
/// anything (a file, a symlink) is already there.
pub fn write_secret(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_new(path, bytes, 0o600)
}

/// Writes a new file `path` with `mode`; refused if anything (a file, a
/// symlink) is already there.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                refuse(path, "already exists: remove it or choose another place".into())
            } else {
                e
            }
        })?;
    f.write_all(bytes)
}

/// The per-user cache directory for `what` (`sdnlab/WHAT`): under
/// `$XDG_CACHE_HOME` or `$HOME/.cache`; with neither, root's goes to
/// `/var/cache/sdnlab`, and another user's is refused (never a
/// world-writable place such as /tmp). Every directory from the cache's
/// own on is private ([`dir`]).
pub fn cache_dir(what: &str) -> io::Result<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(|v| PathBuf::from(v).join("sdnlab"))
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache/sdnlab"))
        });
    let base = match base {
        Some(b) => b,
        None if nix::unistd::geteuid().is_root() => PathBuf::from("/var/cache/sdnlab"),
        None => {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no cache directory: set HOME or XDG_CACHE_HOME",
            ))
        }
    };
    dir(&base)?;
    dir(&base.join(what))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_dir_is_made_0700_and_a_planted_one_refused() {
        let t = temp_dir("sdnlab-private-test-").unwrap();
        assert_eq!(std::fs::metadata(t.path()).unwrap().permissions().mode() & 0o777, 0o700);
        let d = t.path().join("a/b");
        dir(&d).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().permissions().mode() & 0o777, 0o700);
        // Again: it is ours, so it is taken.
        dir(&d).unwrap();
        // Writable by others: refused.
        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(dir(&open).unwrap_err().to_string().contains("others may write"));
        // A symlink to a directory of ours: refused.
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(dir(&link).unwrap_err().to_string().contains("symbolic link"));
    }

    #[test]
    fn a_secret_is_0600_and_never_written_through_a_symlink() {
        let t = temp_dir("sdnlab-private-test-").unwrap();
        let s = t.path().join("token");
        write_secret(&s, b"x").unwrap();
        assert_eq!(std::fs::metadata(&s).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(write_secret(&s, b"y").is_err());
        let victim = t.path().join("victim");
        std::fs::write(&victim, "theirs").unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(write_secret(&link, b"mine").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "theirs");
    }
}
