//! The engine file: missing, text, empty, truncated, not libchdb; npm missing when one must be fetched.

use super::*;

#[test]
fn a_missing_engine_file_is_named_with_what_to_do() {
    let output = xtask(&["setup"], &[("CHBENCH_LIBCHDB", "/nonexistent/libchdb.so")]);
    let line = error_line(&output);
    assert!(line.contains("CHBENCH_LIBCHDB=/nonexistent/libchdb.so is not a file"), "{line}");
}

/// The advice for a file the user chose: theirs, so never "delete it".
const CHOSEN_FILE_ADVICE: &str = "point it at a complete libchdb.so, or unset CHBENCH_LIBCHDB to use the pinned engine";

/// Runs `cargo xtask setup` with `CHBENCH_LIBCHDB` set to `library`; returns its error line.
fn setup_with_library(library: &Path) -> String {
    let line = error_line(&xtask(&["setup"], &[("CHBENCH_LIBCHDB", library.to_str().unwrap())]));
    assert!(line.contains(&format!("CHBENCH_LIBCHDB={} ", library.display())), "{line}");
    assert!(line.ends_with(CHOSEN_FILE_ADVICE) && !line.contains("delete"), "{line}");
    line
}

#[test]
fn a_text_file_as_the_engine_is_named_with_what_to_do() {
    let folder = tempfile::tempdir().unwrap();
    let text = folder.path().join("libchdb.so");
    std::fs::write(&text, b"not a shared library").unwrap();
    let line = setup_with_library(&text);
    assert!(line.contains("is not a libchdb.so (it is not an ELF file)"), "{line}");
}

#[test]
fn an_empty_engine_file_is_named_with_what_to_do() {
    let folder = tempfile::tempdir().unwrap();
    let empty = folder.path().join("libchdb.so");
    std::fs::write(&empty, b"").unwrap();
    let line = setup_with_library(&empty);
    assert!(line.contains("is not a complete libchdb.so (the file is empty)"), "{line}");
}

#[test]
fn a_truncated_engine_is_refused_before_it_is_loaded() {
    // Loading it would map segments past the end of the file: a bus error, no message.
    chbench::engine::provision(&|_| {}).expect("cannot provision the engine");
    let cached = std::fs::File::open(chbench::engine::cache_dir().join("libchdb.so")).unwrap();
    let mut head = Vec::new();
    cached.take(1_000_000).read_to_end(&mut head).unwrap();
    let folder = tempfile::tempdir().unwrap();
    let truncated = folder.path().join("libchdb.so");
    std::fs::write(&truncated, &head).unwrap();
    let line = setup_with_library(&truncated);
    assert!(line.contains("is not a complete libchdb.so (segment "), "{line}");
    assert!(line.contains("the file has 1000000 bytes)"), "{line}");
}

#[test]
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
fn a_library_that_is_not_libchdb_is_named_with_what_to_do() {
    let libm = Path::new("/lib/x86_64-linux-gnu/libm.so.6");
    assert!(libm.is_file(), "this test needs {}", libm.display());
    let line = setup_with_library(libm);
    assert!(line.contains("is not a libchdb.so (it has no symbol chdb_"), "{line}");
}

#[test]
fn a_missing_npm_says_what_to_do() {
    // An empty cache (a fresh target dir) and no npm on the PATH.
    let fresh_target = tempfile::tempdir().unwrap();
    let output =
        xtask(&["setup"], &[("CARGO_TARGET_DIR", fresh_target.path().to_str().unwrap()), ("PATH", "/nonexistent")]);
    let line = error_line(&output);
    assert!(line.contains("`npm` is required to fetch the embedded engine"), "{line}");
    assert!(line.contains("CHBENCH_LIBCHDB"), "{line}");
}
