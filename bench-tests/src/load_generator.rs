//! The load generator a cluster runs beside its server, and what a results bundle keeps of
//! it: ClickHouse's own `clickhouse-benchmark`, from the server's image, as a Kubernetes
//! Job (ARCHITECTURE.md, "Where the load comes from"). Here what a level asks of it
//! ([`LoadLevel`]: its command line and its queries file), where its pod runs
//! ([`ClientPlacement`]), its final report parsed ([`LoadReport`]), and the level's record
//! beside the server's own count of the statements it finished ([`InClusterLoad`]). The
//! Job itself is `cluster::load`'s; the level's figures are `closed_loop`'s.
//!
//! The report is read as text, the form every version prints: the `--json` file of older
//! versions had wrong statistics (ClickHouse issue #619, fixed by PR #36473) and is gone
//! from the current source's options.

use std::fmt;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::settings::Settings;

/// The oldest server whose clickhouse-benchmark takes `--query_id_prefix`, which the
/// server's count of a level's statements needs (ClickHouse PR #63352, "Add option
/// `query_id_prefix` to `clickhouse-benchmark`", merged 2024-05-03: release 24.5).
pub const OLDEST_WITH_QUERY_ID_PREFIX: (u32, u32) = (24, 5);
/// The percentiles the generator prints, in order, in every version.
pub const PRINTED_PERCENTILES: [f64; 14] =
    [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.9, 99.99];
/// The server's native protocol port, which clickhouse-benchmark speaks.
pub const NATIVE_PORT: u16 = 9000;
/// Where the Job's pod finds the queries file (its ConfigMap, mounted).
pub const QUERIES_PATH: &str = "/etc/chbench-load/queries.tsv";

/// Where a load level's clients run; a bundle from before the choice ran them here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LoadFrom {
    /// As a Kubernetes Job beside the server (clickhouse-benchmark from its image).
    Cluster,
    /// On this machine, through the target's connection (a port-forward on a cluster).
    #[default]
    Local,
}

impl fmt::Display for LoadFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LoadFrom::Cluster => "cluster",
            LoadFrom::Local => "local",
        })
    }
}

// Where a kind's load levels run, as the command line asks (`bench throughput`, `bench
// writes`). A plain comment: clap would take a doc comment here for the description of
// every command that flattens it.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct LoadFlags {
    /// Where the clients run: `cluster`, clickhouse-benchmark from the server's image as a
    /// Kubernetes Job beside the server (the default on eks), or `local`, this tool's loop
    /// on this machine (the default elsewhere; on eks its figures include the port-forward)
    #[arg(long, value_enum)]
    pub load_from: Option<LoadFrom>,
    /// With the load in the cluster: the node type (instance type) of the clients' own
    /// node, e.g. c7g.4xlarge [default: any node without a chbench server]
    #[arg(long, value_name = "TYPE", conflicts_with = "client_beside_server")]
    pub client_node_type: Option<String>,
    /// With the load in the cluster: run the clients on the server's node, sharing its CPU
    #[arg(long)]
    pub client_beside_server: bool,
}

impl LoadFlags {
    /// Where the load's pods are asked to run.
    pub fn placement(&self) -> ClientPlacement {
        match self.client_beside_server {
            true => ClientPlacement::BesideServer,
            false => ClientPlacement::OwnNode { node_type: self.client_node_type.clone() },
        }
    }

    /// Flags that contradict each other, or a node type that is none, in one line.
    pub fn check(&self) -> Result<()> {
        if let Some(given) = self.placement_given()
            && self.load_from == Some(LoadFrom::Local)
        {
            bail!(
                "{given} places the clients in the cluster, and --load-from local runs them here: give one or the other"
            );
        }
        if let Some(node_type) = &self.client_node_type {
            check_node_type(node_type)?;
        }
        Ok(())
    }

    /// Where the clients run on a target that can run them beside its engine
    /// (`in_cluster_load`) or cannot, and, in the cluster, where their pods are asked to
    /// run: what a kind's workload records.
    pub fn chosen(&self, in_cluster_load: bool) -> (LoadFrom, Option<ClientPlacement>) {
        let load_from = self.load_from(in_cluster_load);
        (load_from, (load_from == LoadFrom::Cluster).then(|| self.placement()))
    }

    /// Where the clients run on a target that can run them beside its engine
    /// (`in_cluster_load`) or cannot.
    pub fn load_from(&self, in_cluster_load: bool) -> LoadFrom {
        match (self.load_from, in_cluster_load) {
            (Some(chosen), _) => chosen,
            (None, true) => LoadFrom::Cluster,
            (None, false) => LoadFrom::Local,
        }
    }

    /// Asking for the load in a cluster on target `kind`, which cannot run it there: one
    /// line, before anything runs.
    pub fn check_target(&self, in_cluster_load: bool, kind: &str) -> Result<()> {
        if in_cluster_load {
            return Ok(());
        }
        if self.load_from == Some(LoadFrom::Cluster) {
            bail!(
                "--load-from cluster: target {kind} runs no load beside its engine (a target deployed in a \
                 Kubernetes cluster does); leave --load-from out to run the clients here"
            );
        }
        if let Some(given) = self.placement_given() {
            bail!("{given} places the clients in a Kubernetes cluster, and target {kind} is not in one: leave it out");
        }
        Ok(())
    }

    /// The placement flag given, as the command line has it; `None` for the default.
    fn placement_given(&self) -> Option<&'static str> {
        match (self.client_beside_server, &self.client_node_type) {
            (true, _) => Some("--client-beside-server"),
            (false, Some(_)) => Some("--client-node-type"),
            (false, None) => None,
        }
    }
}

/// Where a level's clients ran, in words: `this tool's loop on this machine`,
/// `clickhouse-benchmark in the cluster, on a node of their own`.
pub fn clients_description(load_from: LoadFrom, placement: Option<&ClientPlacement>) -> String {
    match (load_from, placement) {
        (LoadFrom::Local, _) => "this tool's loop on this machine".to_string(),
        (LoadFrom::Cluster, Some(placement)) => format!("clickhouse-benchmark in the cluster, on {placement}"),
        (LoadFrom::Cluster, None) => "clickhouse-benchmark in the cluster".to_string(),
    }
}

/// The node the load Job's pod runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "on", rename_all = "snake_case")]
pub enum ClientPlacement {
    /// A node without the server's pod on it; of `node_type`
    /// (`node.kubernetes.io/instance-type`) when given.
    OwnNode { node_type: Option<String> },
    /// The server's own node: the clients share its CPU and memory.
    BesideServer,
}

impl fmt::Display for ClientPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientPlacement::OwnNode { node_type: Some(node_type) } => write!(f, "a {node_type} node of their own"),
            ClientPlacement::OwnNode { node_type: None } => f.write_str("a node of their own"),
            ClientPlacement::BesideServer => f.write_str("the server's node"),
        }
    }
}

/// A node type as a label value can be (`c7g.4xlarge`).
pub fn check_node_type(node_type: &str) -> Result<()> {
    let fine = !node_type.is_empty()
        && node_type.len() <= 63
        && node_type.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        && node_type.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && node_type.chars().last().is_some_and(|c| c.is_ascii_alphanumeric());
    if !fine {
        bail!(
            "--client-node-type {node_type:?} is not a node type: give 1 to 63 letters, digits, `.`, `-` or `_`, \
             starting and ending with a letter or digit, as c7g.4xlarge"
        );
    }
    Ok(())
}

/// What ends a level the generator runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadBound {
    /// No statement starts after this many seconds (`--timelimit`).
    Seconds(f64),
    /// This many statements in all clients together (`--iterations`).
    Statements(u64),
}

/// One level of one round, as the load generator runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadLevel {
    pub clients: u32,
    pub bound: LoadBound,
    /// The statements, in the order the generator hands them out (each in turn).
    pub queries: Vec<String>,
    /// The database the statements run in (the run's own).
    pub database: String,
    /// Every statement's query id starts with it and `_`, so that the server's
    /// `query_log` finds the level's statements: letters, digits and `-` only.
    pub query_id_prefix: String,
    /// In force for every statement.
    pub settings: Settings,
    pub placement: ClientPlacement,
}

impl LoadLevel {
    /// The generator's arguments (after `clickhouse benchmark`), for the server at `host` as `user`
    /// (whose password comes from the deployment's Secret, in the pod's environment, never
    /// on its command line). The report
    /// comes once, at the end (`--delay 0`); a failed statement is counted and its client
    /// goes on (`--ignore-error`), as this tool's own loop does; latency is the client's
    /// wall time around the statement (`--client-side-time`), as a local run measures it,
    /// not the server's.
    pub fn arguments(&self, host: &str, user: &str) -> Result<Vec<String>> {
        self.check()?;
        let mut arguments = vec![
            format!("--host={host}"),
            format!("--port={NATIVE_PORT}"),
            format!("--user={user}"),
            format!("--database={}", self.database),
            format!("--concurrency={}", self.clients),
            "--delay=0".to_string(),
            "--ignore-error".to_string(),
            "--client-side-time".to_string(),
            format!("--query_id_prefix={}", self.query_id_prefix),
        ];
        match self.bound {
            LoadBound::Seconds(seconds) if seconds.is_finite() && seconds > 0.0 => {
                arguments.push(format!("--timelimit={seconds}"))
            }
            LoadBound::Seconds(seconds) => bail!("a load level cannot run for {seconds} s"),
            LoadBound::Statements(statements) => arguments.push(format!("--iterations={statements}")),
        }
        arguments.extend(self.settings.iter().map(|(name, value)| format!("--{name}={value}")));
        Ok(arguments)
    }

    /// The queries as the generator reads them from its standard input: one a line,
    /// escaped as TabSeparated text is (its reader unescapes `\\`, `\n`, `\t`), so that a
    /// statement of several lines, comments included, reaches the server as written.
    pub fn queries_file(&self) -> String {
        let mut file = String::new();
        for query in &self.queries {
            for character in query.trim().chars() {
                match character {
                    '\\' => file.push_str("\\\\"),
                    '\n' => file.push_str("\\n"),
                    '\t' => file.push_str("\\t"),
                    '\r' => file.push_str("\\r"),
                    other => file.push(other),
                }
            }
            file.push('\n');
        }
        file
    }

    fn check(&self) -> Result<()> {
        let plain = |text: &str| !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !plain(&self.query_id_prefix) {
            bail!("a load level's query id prefix {:?} is not letters, digits and -", self.query_id_prefix);
        }
        if self.clients == 0 || self.queries.is_empty() {
            bail!("a load level needs a client and a query");
        }
        for (name, value) in self.settings.iter() {
            if value.chars().any(char::is_control) {
                bail!("setting {name}: a value with a control character cannot be given on a command line");
            }
        }
        Ok(())
    }
}

/// What a load level run beside the engine printed ([`LoadReport`] is read from `log`),
/// and where it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadRun {
    /// The generator and the image it came from.
    pub generator: String,
    pub log: String,
    pub pod: String,
    pub node: Option<String>,
}

/// The final report of one clickhouse-benchmark run, as it prints it (on its standard
/// error, which the pod's log holds): the statements executed, then the server's line and
/// the latency percentiles. Times are printed to the millisecond.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// Queries it read from its input ("Loaded N queries."); unknown when the log no
    /// longer holds its first line (a long log of errors is rotated by the kubelet).
    pub loaded: Option<u64>,
    /// Statements that ended, completed or failed ("Queries executed: N").
    pub executed: u64,
    /// Statements that completed.
    pub completed: u64,
    /// Statements that failed.
    pub errors: u64,
    /// Completed statements per second of its run's wall time; unknown with none completed.
    pub qps: Option<f64>,
    /// Rows read per second (its "RPS").
    pub rows_per_second: Option<f64>,
    /// Latency of the completed statements as printed: 0 % to 90 % by tens, then 95, 99,
    /// 99.9 and 99.99 % (nearest rank, over a reservoir sample of 65,536 statements when
    /// more completed).
    pub percentiles: Vec<Percentile>,
    /// The first failure it said, on one line, when any did: also those the server never
    /// logged (a refused connection).
    pub first_error: Option<String>,
}

/// One latency percentile as the generator printed it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    pub percent: f64,
    pub ms: f64,
}

impl LoadReport {
    /// The last report in `log` (a pod's log: the report, and before it any errors the
    /// generator said as it went). A log without one, or with one that does not read as
    /// the generator's, is an error quoting the line.
    pub fn parse(log: &str) -> Result<LoadReport> {
        let lines: Vec<&str> = log.lines().collect();
        let loaded = lines
            .iter()
            .rev()
            .find_map(|line| line.trim().strip_prefix("Loaded ")?.strip_suffix(" queries.")?.parse::<u64>().ok());
        let start = lines
            .iter()
            .rposition(|line| line.trim_start().starts_with("Queries executed:"))
            .context("no \"Queries executed\" line: the generator ended before its report")?;
        let executed_line = lines[start].trim();
        let executed = executed_line
            .strip_prefix("Queries executed:")
            .and_then(|rest| rest.trim().split(['.', ' ']).next())
            .and_then(|count| count.parse::<u64>().ok())
            .with_context(|| format!("cannot read the count of {executed_line:?}"))?;
        let first_error = lines[..start]
            .iter()
            .map(|line| line.trim())
            .find(|line| line.starts_with("Code: ") || line.contains("Exception"))
            .map(str::to_string);
        let mut report = LoadReport {
            loaded,
            executed,
            completed: 0,
            errors: executed,
            qps: None,
            rows_per_second: None,
            percentiles: Vec::new(),
            first_error,
        };
        for line in &lines[start + 1..] {
            let line = line.trim();
            if line.contains("QPS:") {
                report.read_server_line(line)?;
            } else if let Some(percentile) = percentile(line)? {
                report.percentiles.push(percentile);
            }
        }
        // With no statement completed, the generator prints no server line, nor percentiles.
        if report.completed == 0 && (report.qps.is_some() || !report.percentiles.is_empty()) {
            bail!("the report counts no completed statement but gives a QPS or a latency: it is not whole");
        }
        if report.completed + report.errors != report.executed {
            bail!(
                "the report's {} executed are not its {} completed and {} failed: it is not whole",
                report.executed,
                report.completed,
                report.errors
            );
        }
        let printed: Vec<f64> = report.percentiles.iter().map(|at| at.percent).collect();
        if report.completed > 0 && printed != PRINTED_PERCENTILES {
            bail!("the report's percentiles are {printed:?}, not the 14 the generator prints: it is not whole");
        }
        Ok(report)
    }

    /// `host:port, queries: 10, errors: 2, QPS: 6.772, RPS: 67904487.440, ...` (the
    /// current source), or `queries 10,` (without colons, as its documentation shows).
    fn read_server_line(&mut self, line: &str) -> Result<()> {
        let mut errors = 0;
        let mut completed = None;
        for field in line.split(", ").map(str::trim) {
            let field = field.trim_end_matches('.');
            let (name, value) = match field.split_once(": ") {
                Some(pair) => pair,
                None => match field.split_once(' ') {
                    Some((name @ ("queries" | "errors"), value)) => (name, value),
                    _ => continue,
                },
            };
            let number = || {
                value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|number| number.is_finite() && *number >= 0.0)
                    .with_context(|| format!("{name} {value:?} in {line:?} is not a count or rate"))
            };
            match name {
                "queries" => completed = Some(number()? as u64),
                "errors" => errors = number()? as u64,
                "QPS" => self.qps = Some(number()?),
                "RPS" => self.rows_per_second = Some(number()?),
                _ => {}
            }
        }
        self.completed = completed.with_context(|| format!("no count of queries in {line:?}"))?;
        self.errors = errors;
        if self.qps.is_none() {
            bail!("no QPS in {line:?}");
        }
        Ok(())
    }

    /// The latency at `percent` in milliseconds, as printed.
    pub fn percentile(&self, percent: f64) -> Option<f64> {
        self.percentiles.iter().find(|at| (at.percent - percent).abs() < 1e-9).map(|at| at.ms)
    }
}

/// The last `lines` lines of `log`, indented, for an error that quotes it.
pub fn log_tail(log: &str, lines: usize) -> String {
    let all: Vec<&str> = log.lines().filter(|line| !line.trim().is_empty()).collect();
    let tail = &all[all.len().saturating_sub(lines)..];
    if tail.is_empty() {
        return "(the log is empty)".to_string();
    }
    tail.iter().map(|line| format!("  {line}")).collect::<Vec<_>>().join("\n")
}

/// `50%\t\t0.148 sec.` (the current source) or `50.000%     0.148 sec.` (the
/// documentation's); `None` for any other line.
fn percentile(line: &str) -> Result<Option<Percentile>> {
    let Some((percent, rest)) = line.split_once('%') else { return Ok(None) };
    let Ok(percent) = percent.trim().parse::<f64>() else { return Ok(None) };
    let Some(seconds) = rest.trim().strip_suffix("sec.") else { return Ok(None) };
    // One column per server: this tool names one.
    let seconds = seconds.split("sec.").next().unwrap_or(seconds).trim();
    let seconds = seconds
        .parse::<f64>()
        .ok()
        .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
        .with_context(|| format!("cannot read the latency of {line:?}"))?;
    Ok(Some(Percentile { percent, ms: seconds * 1e3 }))
}

/// What a level run by the load generator keeps beside its figures: where it ran, what
/// the generator reported, and the server's own count of the statements it finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InClusterLoad {
    /// The generator and the image it came from.
    pub generator: String,
    /// The Job's pod, and the node it ran on (unknown when the pod did not say).
    pub pod: String,
    pub node: Option<String>,
    pub placement: ClientPlacement,
    /// Every statement's query id starts with it and `_`.
    pub query_id_prefix: String,
    /// The generator's report, as it printed it.
    pub report: LoadReport,
    /// Statements of the level the server's `query_log` shows finished (`QueryFinish`),
    /// and failed; unknown with the reason when the log could not be read.
    pub server_finished: Option<u64>,
    pub server_failed: Option<u64>,
    pub server_unknown: Option<String>,
    /// How the generator's count and the server's differ, when they do.
    pub mismatch: Option<String>,
}

impl InClusterLoad {
    /// Sets the server's counts and says how they differ from the generator's.
    pub fn cross_check(&mut self, server_finished: u64, server_failed: u64) {
        self.server_finished = Some(server_finished);
        self.server_failed = Some(server_failed);
        let report = &self.report;
        self.mismatch = (server_finished != report.completed || server_failed != report.errors).then(|| {
            format!(
                "clickhouse-benchmark counted {} completed and {} failed, the server's query_log {server_finished} \
                 finished and {server_failed} failed",
                report.completed, report.errors
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level() -> LoadLevel {
        LoadLevel {
            clients: 4,
            bound: LoadBound::Seconds(2.0),
            queries: vec!["SELECT 1".to_string(), "-- top\nSELECT\tcount()\nFROM t WHERE s = 'a\\b'".to_string()],
            database: "chbench_run".to_string(),
            query_id_prefix: "chbench-3f1c0e2a-r1-c4".to_string(),
            settings: Settings::new().with("max_threads", 2),
            placement: ClientPlacement::BesideServer,
        }
    }

    #[test]
    fn node_types_are_label_values() {
        for fine in ["c7g.4xlarge", "m5.xlarge", "a"] {
            assert!(check_node_type(fine).is_ok(), "{fine}");
        }
        for bad in ["", ".c7g", "c7g 4xlarge", "c7g/4xlarge", &"x".repeat(64)] {
            assert!(check_node_type(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_level_is_the_generators_command_line_without_a_password() {
        let arguments = level().arguments("10.0.1.7", "chbench").unwrap();
        assert_eq!(
            arguments,
            [
                "--host=10.0.1.7",
                "--port=9000",
                "--user=chbench",
                "--database=chbench_run",
                "--concurrency=4",
                "--delay=0",
                "--ignore-error",
                "--client-side-time",
                "--query_id_prefix=chbench-3f1c0e2a-r1-c4",
                "--timelimit=2",
                "--max_threads=2",
            ]
        );
        assert!(!arguments.iter().any(|argument| argument.contains("password")));
        let iterations = LoadLevel { bound: LoadBound::Statements(500), ..level() };
        assert!(iterations.arguments("h", "u").unwrap().contains(&"--iterations=500".to_string()));
    }

    #[test]
    fn a_prefix_or_value_the_command_line_would_change_is_refused() {
        for prefix in ["", "a_b", "a b", "x;y"] {
            let bad = LoadLevel { query_id_prefix: prefix.to_string(), ..level() };
            assert!(bad.arguments("h", "u").is_err(), "{prefix:?}");
        }
        let bad = LoadLevel { settings: Settings::new().with("log_comment", "a\nb"), ..level() };
        assert!(bad.arguments("h", "u").unwrap_err().to_string().contains("log_comment"));
    }

    #[test]
    fn the_queries_file_holds_one_statement_a_line_escaped_as_tab_separated_text() {
        assert_eq!(level().queries_file(), "SELECT 1\n-- top\\nSELECT\\tcount()\\nFROM t WHERE s = 'a\\\\b'\n");
    }

    /// The example of ClickHouse's documentation ("clickhouse-benchmark", Operations >
    /// Utilities, ClickHouse docs, docs/en/operations/utilities/clickhouse-benchmark.md),
    /// with the "Loaded" line its comparison example shows.
    const DOCUMENTED: &str = "Loaded 1 queries.

Queries executed: 10.

localhost:9000, queries 10, QPS: 6.772, RPS: 67904487.440, MiB/s: 518.070, result RPS: 67721584.984, result MiB/s: 516.675.

0.000%      0.145 sec.
10.000%     0.146 sec.
20.000%     0.146 sec.
30.000%     0.146 sec.
40.000%     0.147 sec.
50.000%     0.148 sec.
60.000%     0.148 sec.
70.000%     0.148 sec.
80.000%     0.149 sec.
90.000%     0.150 sec.
95.000%     0.150 sec.
99.000%     0.150 sec.
99.900%     0.150 sec.
99.990%     0.150 sec.
";

    #[test]
    fn the_documented_report_is_read() {
        let report = LoadReport::parse(DOCUMENTED).unwrap();
        assert_eq!((report.loaded, report.executed, report.completed, report.errors), (Some(1), 10, 10, 0));
        assert_eq!(report.first_error, None);
        assert_eq!(report.qps, Some(6.772));
        assert_eq!(report.rows_per_second, Some(67904487.44));
        assert_eq!(report.percentiles.len(), 14);
        assert_eq!(report.percentile(50.0), Some(148.0));
        assert_eq!(report.percentile(99.99), Some(150.0));
    }

    #[test]
    fn the_current_sources_report_with_errors_is_read() {
        let log =
            std::fs::read_to_string(crate::files::workspace_root().join("fixtures/load/clickhouse-benchmark.log"))
                .unwrap();
        let report = LoadReport::parse(&log).unwrap();
        assert_eq!((report.loaded, report.executed, report.completed, report.errors), (Some(2), 1207, 1205, 2));
        assert!(report.first_error.as_deref().unwrap().starts_with("Code: 60. DB::Exception: Received from"));
        assert_eq!(report.qps, Some(602.183));
        assert_eq!(report.percentile(0.0), Some(1.0));
        assert_eq!(report.percentile(90.0), Some(9.0));
        assert_eq!(report.percentile(99.9), Some(31.0));
    }

    #[test]
    fn a_level_where_nothing_completed_has_no_qps() {
        let log = "Loaded 1 queries.\nCode: 60. DB::Exception: Unknown table\n\nQueries executed: 7.\n\n";
        let report = LoadReport::parse(log).unwrap();
        assert_eq!((report.executed, report.completed, report.errors, report.qps), (7, 0, 7, None));
        assert_eq!(report.first_error.as_deref(), Some("Code: 60. DB::Exception: Unknown table"));
        // A log whose first lines the kubelet rotated away still has its report.
        let rotated = LoadReport::parse(&DOCUMENTED.replace("Loaded 1 queries.", "")).unwrap();
        assert_eq!((rotated.loaded, rotated.completed), (None, 10));
    }

    #[test]
    fn a_log_that_is_not_a_report_is_one_line_saying_what_is_missing() {
        let server_line = "localhost:9000, queries: 3, QPS: 1.0, RPS: 1.0.";
        let cut_percentiles = format!("Loaded 2 queries.\nQueries executed: 3.\n{server_line}\n0%\t\t0.001 sec.\n");
        let miscounted = DOCUMENTED.replace("Queries executed: 10.", "Queries executed: 12.");
        let no_server_line = "Loaded 2 queries.\nQueries executed: 3.\n50%\t\t0.001 sec.\n";
        for (log, says) in [
            ("", "Queries executed"),
            ("Loaded 2 queries.\n", "Queries executed"),
            (cut_percentiles.as_str(), "not the 14 the generator prints"),
            (miscounted.as_str(), "12 executed are not its 10 completed and 0 failed"),
            (no_server_line, "no completed statement but gives a QPS or a latency"),
            ("Loaded 2 queries.\nQueries executed: many.\n", "cannot read the count"),
            ("Loaded 2 queries.\nQueries executed: 3.\nlocalhost:9000, queries: x, QPS: 1.0.\n", "queries"),
            ("Loaded 2 queries.\nQueries executed: 3.\n50%\t\tfast sec.\n", "latency"),
            ("Loaded 2 queries.\nQueries executed: 3.\nh:9000, queries: 3, QPS: inf.\n", "is not a count or rate"),
        ] {
            let error = format!("{:#}", LoadReport::parse(log).unwrap_err());
            assert!(error.contains(says), "{log:?}: {error}");
        }
    }

    #[test]
    fn the_servers_count_is_held_against_the_generators() {
        let mut load = InClusterLoad {
            generator: "clickhouse-benchmark".to_string(),
            pod: "chbench-load-x".to_string(),
            node: None,
            placement: ClientPlacement::BesideServer,
            query_id_prefix: "p".to_string(),
            report: LoadReport::parse(DOCUMENTED).unwrap(),
            server_finished: None,
            server_failed: None,
            server_unknown: None,
            mismatch: None,
        };
        load.cross_check(10, 0);
        assert_eq!(load.mismatch, None);
        load.cross_check(9, 0);
        assert!(load.mismatch.as_deref().unwrap().contains("10 completed and 0 failed"), "{load:?}");
    }
}
