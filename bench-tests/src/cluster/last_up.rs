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

use super::{DEFAULT_NAMESPACE, check_namespace, eks_command};

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
            eks_command("up", &self.namespace),
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

/// [`LastUp::recall`] from `path`.
fn recall_from(path: &Path) -> Result<Option<LastUp>> {
    let unusable = |why: String| {
        anyhow::anyhow!(
            "{} is not the record of a deployment `cargo xtask eks up` brought up ({why}): delete it (bench then \
             chooses its target as before), or run `cargo xtask eks up` again",
            path.display()
        )
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(unusable(format!("cannot read it: {error}"))),
    };
    let record: LastUp = serde_json::from_str(&text).map_err(|error| unusable(error.to_string()))?;
    check_namespace(&record.namespace).map_err(|error| unusable(format!("{error:#}")))?;
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
/// record when the namespace is the record's, for the messages that name it.
pub fn namespace_for(given: Option<&str>) -> Result<(String, Option<LastUp>)> {
    if let Some(namespace) = given {
        check_namespace(namespace)?;
        let record = LastUp::recall()?.filter(|record| record.namespace == namespace);
        return Ok((namespace.to_string(), record));
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
        for text in ["", &whole[..whole.len() / 2], "[1, 2]", &bad_namespace] {
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
    }
}
