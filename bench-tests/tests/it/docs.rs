//! The docs hold together: every doc under `docs/` is in `docs/README.md`, the index, and
//! every relative link in the README and the docs names a file that exists.

use std::path::{Path, PathBuf};

use chbench::files::workspace_root;

fn markdown_files(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(markdown_files(&path));
        } else if path.extension().is_some_and(|extension| extension == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The targets of a Markdown file's inline links, `[text](target)`, as written.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(after[..end].trim().to_string());
        rest = &after[end..];
    }
    targets
}

#[test]
fn every_doc_is_in_the_index() {
    let docs = workspace_root().join("docs");
    let index = std::fs::read_to_string(docs.join("README.md")).unwrap();
    let indexed = link_targets(&index);
    let missing: Vec<String> = markdown_files(&docs)
        .iter()
        .map(|path| path.strip_prefix(&docs).unwrap().display().to_string())
        .filter(|doc| doc != "README.md" && !indexed.contains(doc))
        .collect();
    assert!(missing.is_empty(), "docs/README.md lists no line for: {missing:?}");
}

#[test]
fn every_relative_link_in_the_readme_and_the_docs_names_a_file() {
    let root = workspace_root();
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    files.extend(markdown_files(&root.join("docs")));
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for target in link_targets(&text) {
            // Addresses elsewhere, and anchors within the page, are not files here.
            if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
                continue;
            }
            let path = target.split('#').next().unwrap_or("");
            if path.is_empty() || path.contains(' ') {
                continue;
            }
            if !file.parent().unwrap().join(path).exists() {
                broken.push(format!("{}: {target}", file.strip_prefix(&root).unwrap().display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:#?}");
}
