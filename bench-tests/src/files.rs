//! Where chbench's files are, and how one is written: the workspace and its `fixtures/`,
//! the folder the tool keeps between runs, paths as messages show them, and atomic writes.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The workspace root, known at compile time from this crate's manifest directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}

/// The `fixtures/` folder of this workspace.
pub fn fixtures_root() -> PathBuf {
    workspace_root().join("fixtures")
}

/// `<target dir>/chbench`: everything this tool keeps between runs (engine, datasets,
/// per-process storage). `CARGO_TARGET_DIR` moves it with the rest of the build.
pub fn chbench_dir() -> PathBuf {
    let target_dir =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"));
    target_dir.join("chbench")
}

/// Why `path` is not a plain file of `folder`'s own, if it is not: a symbolic link (SQL a
/// pull request may change could link to any file of the host, which a run would copy
/// into its bundle and quote in its errors), a path outside the folder once every link on
/// the way is resolved, or no plain file (a FIFO would block its read for good).
pub fn not_own_plain_file(folder: &Path, path: &Path) -> Option<NotOwn> {
    let Ok(metadata) = std::fs::symlink_metadata(path) else { return Some(NotOwn::Unreadable) };
    let inside = match (path.canonicalize(), folder.canonicalize()) {
        (Ok(file), Ok(folder)) => file.starts_with(folder),
        _ => false,
    };
    if metadata.file_type().is_symlink() {
        Some(NotOwn::Link)
    } else if !inside {
        Some(NotOwn::Outside)
    } else if !metadata.is_file() {
        Some(NotOwn::NotPlain)
    } else {
        None
    }
}

/// Why a file is not a plain file of its folder's own ([`not_own_plain_file`]), as the
/// end of a sentence that starts with its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotOwn {
    Unreadable,
    Link,
    Outside,
    NotPlain,
}

impl std::fmt::Display for NotOwn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotOwn::Unreadable => "cannot be read",
            NotOwn::Link => "is a symbolic link",
            NotOwn::Outside => "lies outside its folder",
            NotOwn::NotPlain => "is not a plain file (a FIFO, a device or a folder)",
        })
    }
}

/// A path as errors show it: relative to the workspace when it is inside it.
pub fn shown(path: &Path) -> String {
    let root = workspace_root();
    path.strip_prefix(&root).unwrap_or(path).display().to_string()
}

/// Writes a file whole or not at all: into a temporary file of its own in the same
/// folder, then renamed into place, so that a reader (or a kill) never sees half of it and
/// two writers at once do not trip over one temporary name. The file gets the permissions
/// any new file gets (0666 less the umask), as the files beside it do: a temporary file
/// alone would be the owner's only.
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;

    let folder = path.parent().unwrap_or(Path::new("."));
    // The kernel takes the umask off the mode asked for, as for `File::create`.
    let mut temporary = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(folder)
        .with_context(|| format!("cannot write into {}", folder.display()))?;
    temporary.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
    temporary.persist(path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The bytes a process may still write in `folder`'s file system (statvfs, which sees a
/// tmpfs too), `folder` being created if missing: its nearest existing parent says.
pub fn free_bytes(folder: &Path) -> Result<u64> {
    let existing = folder.ancestors().find(|parent| parent.exists()).unwrap_or(folder);
    let stat =
        rustix::fs::statvfs(existing).with_context(|| format!("cannot read the free space of {}", shown(existing)))?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// The files (inodes) a process may still create in `folder`'s file system, as
/// [`free_bytes`] finds it; `None` where the file system does not count them (statvfs
/// says 0 files in all, as btrfs does).
pub fn free_files(folder: &Path) -> Result<Option<u64>> {
    let existing = folder.ancestors().find(|parent| parent.exists()).unwrap_or(folder);
    let stat =
        rustix::fs::statvfs(existing).with_context(|| format!("cannot read the free space of {}", shown(existing)))?;
    Ok((stat.f_files > 0).then_some(stat.f_favail))
}

/// `path` relative to `fixtures/`, when it is a file there (links resolved); `None` for a
/// file elsewhere.
pub fn fixture_relative(path: &Path) -> Option<String> {
    let root = fixtures_root();
    let path = path.canonicalize().ok()?;
    let root = root.canonicalize().ok()?;
    path.strip_prefix(root).ok().map(|relative| relative.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn a_file_written_atomically_has_the_permissions_of_any_new_file() {
        let folder = tempfile::tempdir().unwrap();
        let plain = folder.path().join("samples.jsonl");
        std::fs::File::create(&plain).unwrap();
        let atomic = folder.path().join("results.json");
        write_atomically(&atomic, "{}").unwrap();
        // Rewritten, as results.json is after every step.
        write_atomically(&atomic, "{\"a\": 1}").unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(format!("{:o}", mode(&atomic)), format!("{:o}", mode(&plain)));
        assert_eq!(std::fs::read_to_string(&atomic).unwrap(), "{\"a\": 1}");
    }
}
