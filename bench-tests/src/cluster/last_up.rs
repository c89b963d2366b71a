//! The deployment the last `cargo xtask eks up` of this checkout brought up, remembered
//! until `cargo xtask eks down` takes it away: with no target given, `bench`, `measure`
//! and the tests run on it (`cargo xtask eks up && cargo xtask bench`), and the other
//! `eks` commands default to its namespace. Kept in `target/chbench/eks/last-up.json`
//! (with the build, as everything chbench keeps between runs): which namespace, variant
//! and run, and when. Nothing secret: the password stays in the namespace's Secret.
//!
//! Always built (choosing a target needs it); talking to the cluster is the `eks`
//! feature's.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use clap::ValueEnum as _;

use super::{DEFAULT_NAMESPACE, Variant, check_namespace, eks_command};

/// The deployment `up` brought up last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastUp {
    /// The API server `up` brought it up through, as the kubeconfig named it then (scheme,
    /// host and port): another cluster's namespace of the same name is not this one.
    pub cluster: String,
    pub namespace: String,
    /// `eks-gp3`, `eks-nvme` or `kind`.
    pub variant: String,
    /// The run `up` stamped on the namespace.
    pub run: String,
    pub brought_up_at: jiff::Timestamp,
}

/// Where the record is.
pub fn record_path() -> PathBuf {
    crate::files::chbench_dir().join("eks").join("last-up.json")
}

/// Whether a record is there, read or not: with no target given, its presence chooses
/// the eks target, whose opener reads it (and says in one line what is wrong with it). A
/// folder there is no record (`up` could not have written one).
pub fn is_recorded() -> bool {
    record_path().is_file()
}

impl LastUp {
    /// The record, if `up` left one; one that cannot be read is one line naming the file
    /// and what to do.
    pub fn recall() -> Result<Option<LastUp>> {
        recall_from(&record_path())
    }

    /// Remembers `self` in place of any earlier record.
    pub fn remember(&self) -> Result<()> {
        self.remember_at(&record_path())
    }

    /// Forgets the record when it is of `namespace` (a `down` of another namespace leaves
    /// it); returns the record forgotten.
    pub fn forget(namespace: &str) -> Result<Option<LastUp>> {
        forget_at(&record_path(), namespace)
    }

    /// Why a record read back is not one `up` could have written, if it is not: each field
    /// is said in messages, so none may hold a control character (a line of its own).
    fn check(&self) -> std::result::Result<(), String> {
        check_namespace(&self.namespace).map_err(|error| format!("{error:#}"))?;
        let printable = |text: &str| !text.is_empty() && text.len() <= 256 && !text.chars().any(char::is_control);
        if !printable(&self.cluster) || !(self.cluster.starts_with("https://") || self.cluster.starts_with("http://")) {
            return Err(format!("cluster {:?} is not an API server's address", self.cluster));
        }
        if !Variant::value_variants().iter().any(|variant| variant.folder() == self.variant) {
            return Err(format!("variant {:?} is not one of eks-gp3, eks-nvme, kind", self.variant));
        }
        if !printable(&self.run) || !self.run.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!("run {:?} is not a run id", self.run));
        }
        Ok(())
    }

    /// This deployment, where it is remembered, and how to choose another target: the
    /// context of an error on the way to it.
    pub fn way_out(&self) -> String {
        format!(
            "{self}, remembered in {} (delete it, or give --target, to choose another target)",
            record_path().display()
        )
    }

    /// The `up` that brings this deployment up again: its variant, its namespace.
    pub fn up_command(&self) -> String {
        match self.variant.as_str() {
            "eks-gp3" => eks_command("up", &self.namespace),
            variant => eks_command(&format!("up --variant {variant}"), &self.namespace),
        }
    }

    /// What a command that forgot this record says.
    pub fn forgotten_line(&self) -> String {
        format!("forgot {self}: `cargo xtask bench` with no target chooses as before")
    }

    fn remember_at(&self, path: &Path) -> Result<()> {
        let folder = path.parent().context("the record's path has no folder")?;
        std::fs::create_dir_all(folder).with_context(|| format!("cannot create {}", folder.display()))?;
        let text = serde_json::to_string_pretty(self).context("cannot write the record of the deployment")?;
        crate::files::write_atomically(path, &format!("{text}\n"))
    }

    /// The line a run that chose this deployment for want of a target says first.
    pub fn chosen_line(&self) -> String {
        format!(
            "no target given: {self}, until `{}` (--target or CHBENCH_TARGET chooses another: embedded, container, \
             url)",
            eks_command("down", &self.namespace)
        )
    }

    /// The one line for a deployment that is no longer in its cluster, with what was found
    /// (`why`).
    pub fn gone(&self, why: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "{self} is gone from its cluster ({why}): `{}` brings it up again, `{}` takes away what is left of it \
             and forgets it, or choose another target with --target",
            self.up_command(),
            eks_command("down", &self.namespace)
        )
    }

    /// Refuses a cluster other than the record's (`cluster`, the API server the kubeconfig
    /// names now) in one line: its namespace of the same name is not this deployment.
    pub fn check_cluster(&self, cluster: &str) -> anyhow::Result<()> {
        if self.cluster != cluster {
            anyhow::bail!(
                "{self}, and the kubeconfig now names the cluster at {cluster}: switch back to its context (kubectl \
                 config use-context), or choose another target with --target"
            );
        }
        Ok(())
    }
}

/// "the deployment `cargo xtask eks up` brought up on CLUSTER in namespace N (variant, run
/// R) at T".
impl fmt::Display for LastUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the deployment `cargo xtask eks up` brought up on {} in namespace {} ({}, run {}) at {}",
            self.cluster,
            self.namespace,
            self.variant,
            self.run,
            self.brought_up_at.strftime("%Y-%m-%d %H:%M UTC")
        )
    }
}

/// The largest record read: `up` writes a few hundred bytes.
const LARGEST_RECORD: u64 = 64 << 10;

/// [`LastUp::recall`] from `path`.
fn recall_from(path: &Path) -> Result<Option<LastUp>> {
    let unusable = |why: String| {
        anyhow::anyhow!(
            "{} is not the record of a deployment `cargo xtask eks up` brought up ({why}): delete it (bench then \
             chooses its target as before), or run `cargo xtask eks up` again",
            path.display()
        )
    };
    // Looked at before it is opened: a FIFO would block the read, a huge file fill memory.
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(unusable(format!("cannot read it: {error}"))),
        Ok(metadata) if !metadata.is_file() => return Err(unusable("not a plain file".to_string())),
        Ok(metadata) if metadata.len() > LARGEST_RECORD => {
            return Err(unusable(format!("{} bytes, where a record has a few hundred", metadata.len())));
        }
        Ok(_) => {}
    }
    let text = std::fs::read_to_string(path).map_err(|error| unusable(format!("cannot read it: {error}")))?;
    let record: LastUp = serde_json::from_str(&text).map_err(|error| unusable(error.to_string()))?;
    record.check().map_err(unusable)?;
    Ok(Some(record))
}

/// [`LastUp::forget`] of the record at `path`.
fn forget_at(path: &Path, namespace: &str) -> Result<Option<LastUp>> {
    let remove = || std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()));
    match recall_from(path) {
        Ok(Some(record)) if record.namespace != namespace => Ok(None),
        Ok(Some(record)) => remove().map(|()| Some(record)),
        Ok(None) => Ok(None),
        // A file that is no deployment's record names none to keep.
        Err(_) => remove().map(|()| None),
    }
}

/// The namespace an `eks` command or the eks target uses: the one given (`--namespace`,
/// `CHBENCH_NAMESPACE`), else the last `up`'s, else [`DEFAULT_NAMESPACE`]. With it, the
/// record when the namespace came from it, which its cluster is then held to: a namespace
/// given is whatever namespace of that name the kubeconfig's cluster has.
pub fn namespace_for(given: Option<&str>) -> Result<(String, Option<LastUp>)> {
    if let Some(namespace) = given {
        check_namespace(namespace)?;
        return Ok((namespace.to_string(), None));
    }
    match LastUp::recall()? {
        Some(record) => Ok((record.namespace.clone(), Some(record))),
        None => Ok((DEFAULT_NAMESPACE.to_string(), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(namespace: &str) -> LastUp {
        LastUp {
            cluster: "https://ABC.gr7.ap-northeast-2.eks.amazonaws.com".to_string(),
            namespace: namespace.to_string(),
            variant: "eks-gp3".to_string(),
            run: "2f1c".to_string(),
            brought_up_at: "2026-12-06T19:40:12Z".parse().unwrap(),
        }
    }

    #[test]
    fn the_lines_name_the_namespace_when_and_the_ways_on() {
        let line = record("bench-2").chosen_line();
        assert_eq!(
            line,
            "no target given: the deployment `cargo xtask eks up` brought up on \
             https://ABC.gr7.ap-northeast-2.eks.amazonaws.com in namespace bench-2 (eks-gp3, run 2f1c) at 2026-12-06 \
             19:40 UTC, until `cargo xtask eks down --namespace bench-2` (--target or CHBENCH_TARGET chooses another: \
             embedded, container, url)"
        );
        let gone = record("chbench").gone("no secret chbench/clickhouse-password").to_string();
        assert!(
            gone.contains("namespace chbench (eks-gp3, run 2f1c) at 2026-12-06 19:40 UTC is gone from its cluster")
        );
        assert!(gone.contains("`cargo xtask eks down` takes away what is left of it and forgets it"), "{gone}");
        assert!(!gone.contains('\n'));
        let elsewhere = record("chbench").check_cluster("https://127.0.0.1:6443").unwrap_err().to_string();
        assert!(
            elsewhere.ends_with(
                "and the kubeconfig now names the cluster at https://127.0.0.1:6443: switch back to its context \
                 (kubectl config use-context), or choose another target with --target"
            ),
            "{elsewhere}"
        );
        record("chbench").check_cluster("https://ABC.gr7.ap-northeast-2.eks.amazonaws.com").unwrap();
    }

    #[test]
    fn a_record_is_remembered_recalled_and_forgotten_only_for_its_namespace() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("eks/last-up.json");
        assert_eq!(recall_from(&path).unwrap(), None);
        record("bench-2").remember_at(&path).unwrap();
        assert_eq!(recall_from(&path).unwrap(), Some(record("bench-2")));
        record("bench-3").remember_at(&path).unwrap();
        assert_eq!(recall_from(&path).unwrap(), Some(record("bench-3")));
        assert_eq!(forget_at(&path, "bench-2").unwrap(), None);
        assert!(path.exists(), "a down of another namespace forgot the record");
        assert_eq!(forget_at(&path, "bench-3").unwrap(), Some(record("bench-3")));
        assert!(!path.exists());
        assert_eq!(forget_at(&path, "bench-3").unwrap(), None);
    }

    #[test]
    fn a_record_that_is_empty_truncated_or_not_one_is_one_line_and_down_removes_it() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("last-up.json");
        let whole = serde_json::to_string(&record("bench-2")).unwrap();
        let bad_namespace = whole.replace("bench-2", "Bench_2");
        let two_lines = whole.replace("2f1c", "2f1c\\nerror: a line of its own");
        let bad_variant = whole.replace("eks-gp3", "whatever");
        let bad_cluster = whole.replace("https://ABC.gr7.ap-northeast-2.eks.amazonaws.com", "ABC");
        let not_utf8 = String::from_utf8_lossy(&[0xff, 0xfe]).to_string();
        for text in ["", &whole[..whole.len() / 2], "[1, 2]", &bad_namespace, &two_lines, &bad_variant, &bad_cluster] {
            std::fs::write(&path, text).unwrap();
            let error = format!("{:#}", recall_from(&path).unwrap_err());
            assert!(error.contains("is not the record of a deployment `cargo xtask eks up` brought up ("), "{error}");
            assert!(
                error.ends_with(
                    "delete it (bench then chooses its target as before), or run `cargo xtask eks up` again"
                ),
                "{error}"
            );
            assert!(!error.contains('\n'), "{error}");
            assert_eq!(forget_at(&path, "bench-2").unwrap(), None);
            assert!(!path.exists());
        }
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(format!("{:#}", recall_from(&path).unwrap_err()).contains("cannot read it"), "{not_utf8}");
        // Looked at before it is read: too large a file, a folder, a FIFO (which would block).
        std::fs::File::create(&path).unwrap().set_len(LARGEST_RECORD + 1).unwrap();
        assert!(format!("{:#}", recall_from(&path).unwrap_err()).contains("bytes, where a record has a few hundred"));
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(format!("{:#}", recall_from(&path).unwrap_err()).contains("(not a plain file)"));
        std::fs::remove_dir(&path).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        assert!(format!("{:#}", recall_from(&path).unwrap_err()).contains("(not a plain file)"));
    }

    #[test]
    fn up_again_names_the_variant_it_was_brought_up_with() {
        assert_eq!(record("chbench").up_command(), "cargo xtask eks up");
        let mut on_kind = record("bench-2");
        on_kind.variant = "kind".to_string();
        assert_eq!(on_kind.up_command(), "cargo xtask eks up --variant kind --namespace bench-2");
    }
}
