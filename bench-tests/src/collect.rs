//! `cargo xtask eks collect`: what a run on a deployment leaves behind, copied out before
//! `down` removes the deployment, into `<results>/eks/<namespace>-<run id>/`:
//!
//! - `deployment.json`: the server (version, time zone) and the deployment as
//!   [`deployment::read`] finds it: the pod (image and its digest), the node (instance
//!   type, architecture, zone, capacity), the data volume and, when it is a claim, the
//!   claim, its volume and its class (type, size, IOPS, throughput), or why there are none;
//! - `query_log.jsonl`: the `system.query_log` rows of chbench's measured statements
//!   (their `log_comment` is a [`StatementTag`]) since the Namespace was made;
//! - `bundles/`: copies of the finished results bundles `cargo xtask bench` wrote for this
//!   deployment since then.
//!
//! Only when all of it is written, and no bundle of the deployment is unfinished (a bench
//! still running, or killed), is the Namespace annotated as collected: the run
//! ([`COLLECTED_ANNOTATION`]) and when this collect started ([`COLLECTED_AT_ANNOTATION`]).
//! A step that fails leaves what the others wrote, says what failed, and leaves the
//! annotations as they were. The `eks` target stamps [`LAST_USED_ANNOTATION`] when a
//! bench opens and closes it ([`stamp_last_used`]); `down` refuses unless the collected
//! run is the run and the collect started after the last use
//! ([`Run::used_since_collect`](deployment::Run::used_since_collect)). The
//! password is never read here: the ClickHouse half goes through the `eks` target.
//!
//! The cluster half ([`describe_deployment`], [`mark_collected`]) is async, on kube's
//! client; the ClickHouse half ([`server_facts`], [`query_log`]) takes a [`Target`];
//! [`collect`] is blocking and runs both.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use kube::Client;
use serde::{Deserialize, Serialize};

use crate::cluster::annotations::mark_collected;
use crate::cluster::deploy::{ClusterConnection, Kubeconfig};
use crate::cluster::deployment::{
    self, ClaimFacts, ClassFacts, DataVolume, Deployment, NodeFacts, PodFacts, Presence, VolumeFacts,
};
use crate::cluster::{RUN_ANNOTATION, check_namespace};
use crate::files::write_atomically;
use crate::results::{RESULTS_FILE, check_run_id};
use crate::settings::Settings;
use crate::sql::sql_string;
use crate::stats::StatementTag;
use crate::target_info::TargetInfo;
use crate::targets::{Target, eks};

pub const DEPLOYMENT_FILE: &str = "deployment.json";
pub const QUERY_LOG_FILE: &str = "query_log.jsonl";
pub const BUNDLES_FOLDER: &str = "bundles";

/// What the cluster says about a deployment: the cluster half of `deployment.json`, the
/// [`Deployment`] with every part collect cannot record without present.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectedDeployment {
    pub namespace: String,
    /// The Namespace's [`RUN_ANNOTATION`], stamped by `up`.
    pub run_id: String,
    /// The Namespace's creationTimestamp: the deployment's runs are the ones after it.
    pub namespace_created_at: jiff::Timestamp,
    pub pod: PodFacts,
    pub node: NodeFacts,
    pub data_volume: DataVolume,
    /// Present when the data is on a claim; absent, saying why, when it is not (eks-nvme).
    pub claim: Presence<ClaimFacts>,
    pub volume: Presence<VolumeFacts>,
    pub class: Presence<ClassFacts>,
}

impl CollectedDeployment {
    /// The parts of `deployment` (in `namespace`) that collect records; one it cannot do
    /// without that is absent is the error, its reason naming it and what to do. The
    /// claim, its volume and class are required when the data is on a claim.
    pub fn of(namespace: &str, deployment: Deployment) -> Result<CollectedDeployment> {
        let doing = || format!("cannot collect the deployment in namespace {namespace}");
        let facts = deployment.namespace.required(doing)?;
        let run_id = facts.run.id.required(doing)?;
        // The run id names the output folder: it must be a safe folder name.
        check_run_id(&format!("{namespace}-{run_id}"))
            .with_context(|| format!("namespace {namespace}: annotation {RUN_ANNOTATION}"))?;
        let data_volume = deployment.data_volume.required(doing)?;
        let (claim, volume, class) = match &data_volume {
            DataVolume::Claim { .. } => (
                Presence::Present(deployment.claim.required(doing)?),
                Presence::Present(deployment.volume.required(doing)?),
                Presence::Present(deployment.class.required(doing)?),
            ),
            DataVolume::EmptyDir { .. } | DataVolume::Other { .. } => {
                (deployment.claim, deployment.volume, deployment.class)
            }
        };
        Ok(CollectedDeployment {
            namespace: facts.name,
            run_id,
            namespace_created_at: facts.created_at.required(doing)?,
            pod: deployment.pod.required(doing)?,
            node: deployment.node.required(doing)?,
            data_volume,
            claim,
            volume,
            class,
        })
    }
}

/// What ClickHouse says about itself: the server half of `deployment.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerFacts {
    pub version: String,
    pub timezone: String,
}

/// Reads the deployment in `namespace` ([`deployment::read`]) for collect: what
/// [`CollectedDeployment::of`] requires of it.
pub async fn describe_deployment(client: &Client, namespace: &str) -> Result<CollectedDeployment> {
    CollectedDeployment::of(namespace, deployment::read(client, namespace).await?)
}

/// `version()` and `timezone()` of the server.
pub fn server_facts(target: &mut Target) -> Result<ServerFacts> {
    let timezone = target.query_text("SELECT timezone()").context("cannot read the server's time zone")?;
    Ok(ServerFacts { version: target.info().engine_version.clone(), timezone: timezone.trim().to_string() })
}

/// The query that reads the run's rows: chbench's measured statements (their
/// `log_comment` is a [`StatementTag`]) since `since`, oldest first.
pub fn query_log_sql(since: jiff::Timestamp) -> String {
    let seconds = since.as_second();
    format!(
        "SELECT * FROM system.query_log WHERE event_date >= toDate(toDateTime({seconds})) AND event_time >= \
         toDateTime({seconds}) AND match(log_comment, {}) ORDER BY event_time_microseconds",
        sql_string(StatementTag::PATTERN)
    )
}

/// The run's `system.query_log` rows as JSON lines (one row each), logs flushed first so
/// that the last statements are in.
pub fn query_log(target: &mut Target, since: jiff::Timestamp) -> Result<String> {
    target.execute("SYSTEM FLUSH LOGS").context("cannot flush the query log")?;
    // Unquoted 64-bit integers, as the measurement core reads them.
    let settings = Settings::new().with("output_format_json_quote_64bit_integers", 0);
    let output = target.run(&query_log_sql(since), &settings, "JSONEachRow").context("cannot read system.query_log")?;
    Ok(output.body)
}

/// What a bundle's `results.json` says of where and when it ran; the rest is not read.
#[derive(Deserialize)]
struct BundleHead {
    started_at: jiff::Timestamp,
    /// Set when the bench ended in its process (done, failed or interrupted); none while
    /// it runs, or when it was killed.
    finished_at: Option<jiff::Timestamp>,
    target: TargetInfo,
}

/// The bundles of a deployment, by folder name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Bundles {
    /// Written to the end: what collect copies.
    pub finished: Vec<PathBuf>,
    /// Without a finished time: a bench still running, or killed.
    pub unfinished: Vec<PathBuf>,
    /// Of the `eks` target, but naming no deployment (written before bundles did): maybe
    /// this deployment's, which nothing in them can tell.
    pub unnamed: Vec<PathBuf>,
}

/// The bundle folders under `results_dir` that `cargo xtask bench` wrote for the `eks`
/// target in `namespace` (as [`TargetInfo::deployment`] says) since `since`. A folder
/// whose `results.json` does not read as a bundle is not one of them.
pub fn bundles_of(results_dir: &Path, namespace: &str, since: jiff::Timestamp) -> Result<Bundles> {
    let entries = match fs::read_dir(results_dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Bundles::default()),
        Err(error) => return Err(error).with_context(|| format!("cannot list {}", results_dir.display())),
    };
    let mut bundles = Bundles::default();
    for entry in entries {
        let folder = entry.with_context(|| format!("cannot list {}", results_dir.display()))?.path();
        let Ok(text) = fs::read_to_string(folder.join(RESULTS_FILE)) else { continue };
        let Ok(head) = serde_json::from_str::<BundleHead>(&text) else { continue };
        if !crate::targets::spec(head.target.kind).capabilities.deployed_by_chbench || head.started_at < since {
            continue;
        }
        match (&head.target.deployment, head.finished_at) {
            (None, _) => bundles.unnamed.push(folder),
            (Some(deployment), _) if deployment.namespace != namespace => {}
            (Some(_), Some(_)) => bundles.finished.push(folder),
            (Some(_), None) => bundles.unfinished.push(folder),
        }
    }
    bundles.finished.sort();
    bundles.unfinished.sort();
    bundles.unnamed.sort();
    Ok(bundles)
}

/// Copies a folder's files and folders (a bundle has nothing else) into `to`, replacing
/// what a previous collect copied there.
fn copy_folder(from: &Path, to: &Path) -> Result<()> {
    match fs::remove_dir_all(to) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            return Err(error).with_context(|| format!("cannot replace {}", to.display()));
        }
        _ => {}
    }
    fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", from.display()))?;
        let kind = entry.file_type().with_context(|| format!("cannot read {}", entry.path().display()))?;
        let destination = to.join(entry.file_name());
        if kind.is_dir() {
            copy_folder(&entry.path(), &destination)?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &destination)
                .with_context(|| format!("cannot copy {} to {}", entry.path().display(), destination.display()))?;
        }
    }
    Ok(())
}

/// What [`collect`] wrote.
#[derive(Debug, Clone)]
pub struct Collected {
    pub folder: PathBuf,
    pub run_id: String,
    pub query_log_rows: usize,
    /// The bundles copied, by folder name.
    pub bundles: Vec<String>,
}

/// `deployment.json`: what the cluster and the server say, and when it was collected.
#[derive(Serialize)]
struct DeploymentRecord<'a> {
    #[serde(flatten)]
    cluster: &'a CollectedDeployment,
    clickhouse: &'a ServerFacts,
    collected_at: jiff::Timestamp,
}

/// `cargo xtask eks collect`: describes the deployment in `namespace`, writes its files
/// into `out` (default `<results_dir>/eks/<namespace>-<run id>/`), copies the bundles
/// found under `results_dir`, then marks the Namespace collected. `progress` hears each
/// step.
pub fn collect(
    namespace: &str,
    results_dir: &Path,
    out: Option<&Path>,
    progress: impl FnMut(&str),
) -> Result<Collected> {
    collect_through(&Kubeconfig, &mut read_server, namespace, results_dir, out, progress)
}

/// What collect reads from ClickHouse: the server's facts, and the run's query_log rows
/// (or why they could not be read, which leaves the facts written).
pub type ServerReads = (ServerFacts, Result<String>);

/// The ClickHouse half of [`collect`]: through the `eks` target of the deployment in
/// `namespace`, its query_log since `since`.
pub fn read_server(namespace: &str, since: jiff::Timestamp) -> Result<ServerReads> {
    let mut target = eks::open_in(namespace)?;
    let server = server_facts(&mut target)?;
    Ok((server, query_log(&mut target, since)))
}

/// [`collect`] with the cluster `connection` reaches and ClickHouse read by `server`: a
/// matrix run's steps use the same; a test gives its mocked API server and, since no
/// ClickHouse answers there, reads of its own.
pub fn collect_through(
    connection: &impl ClusterConnection,
    server: &mut dyn FnMut(&str, jiff::Timestamp) -> Result<ServerReads>,
    namespace: &str,
    results_dir: &Path,
    out: Option<&Path>,
    mut progress: impl FnMut(&str),
) -> Result<Collected> {
    // Bad input ends here, before a cluster is asked.
    check_namespace(namespace)?;
    for (folder, flag) in [(Some(results_dir), "--results-dir"), (out, "--out")] {
        if let Some(folder) = folder
            && folder.exists()
            && !folder.is_dir()
        {
            bail!("{} is not a folder; give {flag} a folder", folder.display());
        }
    }
    // What down compares with the last bench's use: a bench that opens the target from
    // now on used the deployment after this collect.
    let started = jiff::Timestamp::now();
    // The cluster half on a runtime of its own, twice: the ClickHouse half in between
    // blocks on the eks target's runtimes, which cannot run inside another's block_on.
    let facts = connection.on_cluster(|client| async move { describe_deployment(&client, namespace).await })?;
    let folder = match out {
        Some(out) => out.to_path_buf(),
        None => results_dir.join("eks").join(format!("{namespace}-{}", facts.run_id)),
    };
    fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
    progress(&format!("run {} of namespace {namespace}: writing {}", facts.run_id, folder.display()));

    // Each step is tried whatever the others did: a failure leaves the rest written.
    let mut failures = Vec::new();
    let mut query_log_rows = 0;
    let from_server = (|| {
        let (server, rows) = server(namespace, facts.namespace_created_at)?;
        let record = DeploymentRecord { cluster: &facts, clickhouse: &server, collected_at: jiff::Timestamp::now() };
        let json = serde_json::to_string_pretty(&record).context("cannot serialise the deployment's facts")?;
        write_atomically(&folder.join(DEPLOYMENT_FILE), &(json + "\n"))?;
        progress(&format!("{DEPLOYMENT_FILE}: ClickHouse {}, node {}", server.version, facts.node.name));
        let rows = rows?;
        query_log_rows = rows.lines().filter(|line| !line.trim().is_empty()).count();
        write_atomically(&folder.join(QUERY_LOG_FILE), &rows)?;
        progress(&format!("{QUERY_LOG_FILE}: {query_log_rows} rows"));
        Ok::<_, anyhow::Error>(())
    })();
    if let Err(error) = from_server {
        failures.push(format!("from ClickHouse: {error:#}"));
    }
    let mut bundles = Vec::new();
    let name_of =
        |bundle: &Path| bundle.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let copied = bundles_of(results_dir, namespace, facts.namespace_created_at).and_then(|found| {
        for bundle in &found.finished {
            let name = name_of(bundle);
            copy_folder(bundle, &folder.join(BUNDLES_FOLDER).join(&name))?;
            bundles.push(name);
        }
        Ok(found)
    });
    progress(&format!("{BUNDLES_FOLDER}: {} from {}", bundles.len(), results_dir.display()));
    // Told, not a failure: nothing says whose they are, and a collect must be able to end.
    if let Ok(found) = &copied
        && !found.unnamed.is_empty()
    {
        let names: Vec<String> = found.unnamed.iter().map(|bundle| name_of(bundle)).collect();
        progress(&format!(
            "not copied: bundle {} of the eks target names no deployment (an older chbench wrote it); copy it by \
             hand if it ran on this one",
            names.join(", ")
        ));
    }
    let copied = copied.map(|found| found.unfinished);
    match copied {
        Err(error) => failures.push(format!("copying bundles: {error:#}")),
        Ok(unfinished) if !unfinished.is_empty() => {
            let names: Vec<String> = unfinished.iter().map(|bundle| name_of(bundle)).collect();
            failures.push(format!(
                "bundle {} in {} has no finished time, so it was not copied: if its bench is still running, wait \
                 for it to end; if it was killed, it stays unfinished: move it out of {} and collect again, or down --force",
                names.join(", "),
                results_dir.display(),
                results_dir.display()
            ));
        }
        Ok(_) => {}
    }
    if !failures.is_empty() {
        bail!(
            "collect did not finish ({}); what it wrote is in {}; namespace {namespace} is not marked collected, so \
             down keeps refusing: run collect again",
            failures.join("; "),
            folder.display()
        );
    }
    let run_id = &facts.run_id;
    connection.on_cluster(|client| async move { mark_collected(&client, namespace, run_id, started).await })?;
    Ok(Collected { folder, run_id: facts.run_id, query_log_rows, bundles })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target_info::TargetKind;
    use crate::target_info::{KubernetesDeployment, TargetInfo};

    #[test]
    fn the_query_log_is_read_from_the_deployments_start_for_chbench_tags_only() {
        let since = jiff::Timestamp::from_second(1_796_007_599).unwrap();
        let sql = query_log_sql(since);
        assert!(sql.contains("event_time >= toDateTime(1796007599)"), "{sql}");
        assert!(sql.contains("match(log_comment, '^[^/]+/[^/]+/[^/]+/[0-9]+$')"), "{sql}");
    }

    #[test]
    fn the_bundles_of_a_deployment_are_the_eks_targets_in_its_namespace_since_it_was_made() {
        let results = tempfile::tempdir().unwrap();
        let since = jiff::Timestamp::from_second(1_000_000).unwrap();
        let write_head = |name: &str, target: serde_json::Value, started: i64, finished: bool| {
            let folder = results.path().join(name);
            fs::create_dir_all(folder.join("sql")).unwrap();
            let head = serde_json::json!({
                "schema_version": 2, "run_id": name, "target": target,
                "started_at": jiff::Timestamp::from_second(started).unwrap(),
                "finished_at": finished.then(|| jiff::Timestamp::from_second(started + 60).unwrap()),
            });
            fs::write(folder.join(RESULTS_FILE), head.to_string()).unwrap();
            fs::write(folder.join("sql").join("q.sql"), "SELECT 1").unwrap();
        };
        let in_namespace = |namespace: &str| KubernetesDeployment {
            namespace: namespace.into(),
            pod: "clickhouse".into(),
            image: "ch:1".into(),
            image_id: None,
            node: "ip-10-0-1-5.ec2.internal".into(),
            instance_type: None,
        };
        let write_bundle =
            |name: &str, kind: TargetKind, deployment: Option<KubernetesDeployment>, started, finished| {
                let endpoint = match &deployment {
                    Some(deployment) => eks::endpoint(deployment, "http://127.0.0.1:5"),
                    None => "http://127.0.0.1:8123".to_string(),
                };
                let target =
                    TargetInfo { kind, engine_version: "26.3.1.1".into(), endpoint, deployment, storage: None };
                write_head(name, serde_json::to_value(target).unwrap(), started, finished);
            };
        let write = |name: &str, kind: TargetKind, deployment: Option<KubernetesDeployment>, started: i64| {
            write_bundle(name, kind, deployment, started, true)
        };
        write("a-ours", TargetKind::Eks, Some(in_namespace("chbench")), 1_000_001);
        write("b-before-up", TargetKind::Eks, Some(in_namespace("chbench")), 999_999);
        write("c-other-namespace", TargetKind::Eks, Some(in_namespace("other")), 1_000_001);
        write("d-url", TargetKind::Url, None, 1_000_001);
        fs::create_dir_all(results.path().join("eks")).unwrap();
        fs::write(results.path().join("e-not-a-bundle"), "x").unwrap();
        // A bench still running (or killed) has no finished time: not copied, but told.
        write_bundle("f-running", TargetKind::Eks, Some(in_namespace("chbench")), 1_000_002, false);
        // Written before bundles named their deployment: it reads, as no deployment's (the
        // endpoint is for display, never parsed).
        let before_the_field = serde_json::json!({"kind": "eks", "engine_version": "26.3.1.1",
            "endpoint": "pod chbench/clickhouse (ch:1) through a port-forward at http://127.0.0.1:5"});
        assert_eq!(serde_json::from_value::<TargetInfo>(before_the_field.clone()).unwrap().deployment, None);
        write_head("g-before-the-field", before_the_field, 1_000_001, true);
        let all = bundles_of(results.path(), "chbench", since).unwrap();
        assert_eq!(all.unfinished, [results.path().join("f-running")]);
        assert_eq!(all.unnamed, [results.path().join("g-before-the-field")]);
        let found = all.finished;
        assert_eq!(found, [results.path().join("a-ours")]);

        let copy = results.path().join("eks").join("copy");
        copy_folder(&found[0], &copy).unwrap();
        fs::write(copy.join("stale"), "from an earlier collect").unwrap();
        copy_folder(&found[0], &copy).unwrap();
        assert!(copy.join(RESULTS_FILE).is_file() && copy.join("sql").join("q.sql").is_file());
        assert!(!copy.join("stale").exists(), "a copy replaces the earlier one");
        assert_eq!(bundles_of(&results.path().join("nothing-here"), "chbench", since).unwrap(), Bundles::default());
    }
}
