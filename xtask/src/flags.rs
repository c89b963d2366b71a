//! The whole command line, in one place; each benchmark kind's own flags are declared in
//! the kind's folder and added here from the registry.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use chbench::benchmarks::kinds::{self, Kind};
use chbench::target_info::{TARGET_ENV, TargetKind};
use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, ArgMatches, Args, FromArgMatches, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "Measure how ClickHouse behaves on your schema, node and storage")]
pub struct Xtask {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fetch and verify the pinned embedded engine (libchdb) and print its ClickHouse version
    /// (`--engine-version` for another pinned version).
    Setup(Setup),
    /// Run a benchmark (the logs benchmark unless another kind is named) on the chosen
    /// target, write a results bundle and its report.
    Bench(Box<Bench>),
    /// Render a results bundle's report again: report.md, its SVG charts and report.html.
    Report(Report),
    /// Compare two results bundles of one kind (A, the baseline, then B), or the variants
    /// of one A/B bundle (`bench logs --variant ...`): per query the medians, their ratio
    /// and a verdict (faster, slower, unchanged, unstable, untestable), why a query changed,
    /// and totals; writes compare.md, compare.html, its charts and compare.json
    /// (docs/compare.md).
    Compare(Compare),
    /// A kind's runs in the order they started (every bundle of one kind under
    /// --results-dir, or the runs given): per query each run's median and spread, its
    /// engine and machine, and compare's verdict against the run before, a break where
    /// their inputs differ; writes history.md, history.svg and history.html (docs/compare.md).
    History(History),
    /// Measure one statement and print a summary (`--json`: its full record): the last
    /// statement of each SQL file, or a scenario pack's query on the pack's dataset.
    #[command(
        override_usage = "cargo xtask measure [--target TARGET] [--json] FILE.sql...\n       \
                          cargo xtask measure [--target TARGET] [--json] PACK QUERY [--design D] [--rows N]",
        after_long_help = MEASURE_FORMS
    )]
    Measure(Measure),
    /// Write a minimal scenario pack to fixtures/NAME (one design, a generator, one query,
    /// claims with comments) that passes as written once its first snapshots are accepted.
    NewPack(NewPack),
    /// A ClickHouse deployment on Kubernetes (EKS, or kind): up, status, baseline, collect, down.
    Eks(Eks),
    /// Remove the `container` target's containers whose run or process has ended (what
    /// every open of the target does first), so that none is left running after a run.
    CleanContainers(CleanContainers),
    /// The embedded engine of one version in a process of its own, run by another chbench
    /// process over pipes (`chbench::targets::worker`); not for people.
    #[command(hide = true)]
    EngineWorker(EngineWorker),
}

/// This process's command line, parsed; on a mistake, clap's error (exit code 2), said
/// in the user's terms where clap's own words would mislead (see [`in_the_users_terms`]).
pub fn parse() -> Xtask {
    let args: Vec<OsString> = std::env::args_os().collect();
    Xtask::try_parse_from(&args).unwrap_or_else(|error| in_the_users_terms(error, &args).exit())
}

/// clap's error for `args`, or a clearer one for the mistakes clap words in its own
/// terms: a bad `CHBENCH_TARGET` (clap names `--target`, which was not given), an unknown
/// benchmark kind (clap lists none), and a kind's flags before its name (clap says they
/// "cannot be used with" it).
fn in_the_users_terms(error: clap::Error, args: &[OsString]) -> clap::Error {
    let context = |kind| match error.get(kind) {
        Some(ContextValue::String(text)) => Some(text.clone()),
        _ => None,
    };
    // What the user typed after `cargo xtask`, up to a `--`.
    let given: Vec<&str> = args.iter().skip(1).map_while(|arg| arg.to_str()).take_while(|arg| *arg != "--").collect();
    let bench = given.first() == Some(&"bench");
    let reworded = match error.kind() {
        ErrorKind::ValueValidation
            if context(ContextKind::InvalidArg).is_some_and(|arg| arg.starts_with("--target"))
                && !given.iter().any(|arg| *arg == "--target" || arg.starts_with("--target=")) =>
        {
            // The value came from the variable, `--target`'s default.
            let value = context(ContextKind::InvalidValue).unwrap_or_default();
            let why = parse_target(&value).err().unwrap_or_default();
            format!("{TARGET_ENV}={value:?}: {why}; set {TARGET_ENV} to one of them, or unset it")
        }
        ErrorKind::ValueValidation
            if context(ContextKind::InvalidArg).is_some_and(|arg| arg.starts_with("--engine-version"))
                && !given.iter().any(|arg| *arg == "--engine-version" || arg.starts_with("--engine-version=")) =>
        {
            // The value came from the variable, as for `--target`.
            let value = context(ContextKind::InvalidValue).unwrap_or_default();
            let why = parse_engine_version(&value).err().unwrap_or_default();
            let variable = chbench::engine::ENGINE_VERSION_ENV;
            format!("{variable}={value:?}: {why}; set {variable} to one of them, or unset it")
        }
        ErrorKind::InvalidSubcommand if bench => {
            let name = context(ContextKind::InvalidSubcommand).unwrap_or_default();
            let kinds: Vec<&str> = kinds::KINDS.iter().map(|kind| kind.name).collect();
            format!(
                "{name:?} is not a benchmark kind; the kinds: {} (`cargo xtask bench KIND --help` lists a kind's flags)",
                kinds.join(", ")
            )
        }
        // A kind's flags before its name: clap names the kind as the subcommand it conflicts
        // with (two of a kind's own flags are the general case below).
        ErrorKind::ArgumentConflict
            if bench
                && context(ContextKind::InvalidSubcommand).is_some_and(|name| kinds::kind_named(&name).is_some()) =>
        {
            let kind = context(ContextKind::InvalidSubcommand).unwrap_or_default();
            let mut flags: Vec<&str> = given[1..].to_vec();
            if let Some(at) = flags.iter().position(|arg| *arg == kind.as_str()) {
                flags.remove(at);
            }
            format!("a kind's flags follow its name: cargo xtask bench {kind} {}", flags.join(" "))
        }
        // A flag the kind does not take: clap's tip is the nearest spelling of any flag
        // (`--parts` on logs: "--target"), where the kind that has it is the answer.
        ErrorKind::UnknownArgument if bench => {
            let flag = context(ContextKind::InvalidArg).unwrap_or_default();
            let kind = given.get(1).and_then(|name| kinds::kind_named(name)).unwrap_or_else(kinds::default_kind);
            not_a_flag_of(kind, &flag)
        }
        // A value outside a flag's list (`--durability sometimes`): the values it takes.
        ErrorKind::InvalidValue if context(ContextKind::InvalidValue).is_some_and(|value| !value.is_empty()) => {
            // `--durability <DURABILITY>`: the flag alone.
            let arg = context(ContextKind::InvalidArg).unwrap_or_default();
            let arg = arg.split(' ').next().unwrap_or_default();
            let value = context(ContextKind::InvalidValue).unwrap_or_default();
            let valid: Vec<String> = error
                .get(ContextKind::ValidValue)
                .map(|valid| match valid {
                    clap::error::ContextValue::Strings(values) => values.clone(),
                    other => vec![other.to_string()],
                })
                .unwrap_or_default();
            match valid.is_empty() {
                true => format!("{arg} {value:?} is not a value it takes; `--help` lists the flags"),
                false => format!("{arg} {value:?} is not one of its values: {}", valid.join(", ")),
            }
        }
        // A flag another needs (`--design` without `--pack`): clap lists them on lines of
        // their own, then the usage.
        ErrorKind::MissingRequiredArgument => {
            let missing: Vec<String> = match error.get(ContextKind::InvalidArg) {
                Some(ContextValue::Strings(args)) => args.clone(),
                Some(other) => vec![other.to_string()],
                None => Vec::new(),
            };
            format!("{} is needed by a flag given; `--help` lists the flags", missing.join(", "))
        }
        // A flag's value its parser refused, or two flags that exclude each other: clap's
        // first line says which and why; the usage after it would make it several.
        ErrorKind::ValueValidation | ErrorKind::ArgumentConflict | ErrorKind::InvalidValue => {
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or_default();
            format!("{}; `--help` lists the flags", first.strip_prefix("error: ").unwrap_or(first))
        }
        _ => return error,
    };
    clap::Error::raw(error.kind(), format!("{reworded}\n"))
}

/// The line for `flag`, which `kind` does not take: the kinds that take it, with the
/// command line to use, or else the flags `kind` takes.
fn not_a_flag_of(kind: &Kind, flag: &str) -> String {
    let name = flag.split_once('=').map_or(flag, |(name, _)| name);
    let long = name.strip_prefix("--");
    let flags_of = |kind: &Kind| -> Vec<String> {
        let command = (kind.flags)(RunFlags::augment_args(clap::Command::new(kind.name)));
        command.get_arguments().filter_map(|arg| arg.get_long()).map(|long| format!("--{long}")).collect()
    };
    let others: Vec<&str> = kinds::KINDS
        .iter()
        .filter(|other| other.name != kind.name && flags_of(other).iter().any(|known| Some(&known[2..]) == long))
        .map(|other| other.name)
        .collect();
    let this = kind.name;
    match others.as_slice() {
        [] => format!("{name} is not a flag of bench {this}; its flags: {}", flags_of(kind).join(", ")),
        [other] => {
            format!("{name} is not a flag of bench {this} but of bench {other}: cargo xtask bench {other} {name} ...")
        }
        _ => format!(
            "{name} is not a flag of bench {this} but of bench {}: e.g. cargo xtask bench {} {name} ...",
            others.join(", bench "),
            others[0]
        ),
    }
}

/// `cargo xtask eks <command>`. Built with the `eks` feature, which the first `eks`
/// command compiles (a laptop that never runs one never does).
#[derive(Debug, Args)]
pub struct Eks {
    #[command(subcommand)]
    pub command: EksCommand,
}

#[derive(Debug, Subcommand)]
pub enum EksCommand {
    /// Render and check the variant's manifests, apply them (server-side, with a password
    /// Secret made once) to the cluster your kubeconfig names, and wait for the pod.
    Up(EksUp),
    /// Show the deployment: its run and whether it was collected, the pod (image digest,
    /// restarts), its node (instance type, architecture, zone), the volume and its class.
    Status(EksStatus),
    /// Measure the storage ClickHouse uses with fio (sequential read MiB/s, random read
    /// IOPS and latency, direct I/O) on its node, and keep the result in the namespace,
    /// where every results bundle of the eks target reads it. `up` runs it too.
    Baseline(EksBaseline),
    /// Copy what a run on the deployment leaves out of the cluster: deployment.json (server,
    /// pod, node, volume), the run's system.query_log rows, and the bench bundles of its eks
    /// target; then mark the run collected, which down checks.
    Collect(EksCollect),
    /// Delete what up made (the namespace with everything in it, and the StorageClass
    /// unless another chbench namespace remains) and wait until it is gone. Refused until
    /// the run's results are collected, unless --force.
    Down(EksDown),
}

#[derive(Debug, Clone, Args)]
pub struct EksStatus {
    /// The deployment's namespace [default: the last `eks up`'s, until its `down`; else chbench].
    #[arg(long, env = chbench::targets::eks::NAMESPACE_ENV)]
    pub namespace: Option<String>,
    /// Print JSON (a part that is absent is {"absent": "why"}) instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct EksDown {
    /// The deployment's namespace [default: the last `eks up`'s, until its `down`; else chbench].
    #[arg(long, env = chbench::targets::eks::NAMESPACE_ENV)]
    pub namespace: Option<String>,
    /// Delete even when the run's results were not collected (they are lost with it).
    #[arg(long)]
    pub force: bool,
    /// List what would be deleted and kept, and whether a down would be refused; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// How long to wait for the namespace and the volume to be gone, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_seconds: u64,
}

#[derive(Debug, Clone, Args)]
pub struct EksCollect {
    /// The deployment's namespace [default: the last `eks up`'s, until its `down`; else chbench].
    #[arg(long, env = chbench::targets::eks::NAMESPACE_ENV)]
    pub namespace: Option<String>,
    /// Where the files go [default: RESULTS_DIR/eks/NAMESPACE-RUN, RUN the id `up` stamped
    /// on the namespace].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where `cargo xtask bench` wrote its bundles (its --results-dir).
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct EksBaseline {
    /// The namespace of the deployment to measure [default: the last `eks up`'s, until its
    /// `down`; else chbench].
    #[arg(long, env = chbench::targets::eks::NAMESPACE_ENV)]
    pub namespace: Option<String>,
    /// How long to wait for fio, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_seconds: u64,
}

#[derive(Debug, Clone, Args)]
pub struct EksUp {
    /// Where ClickHouse runs: eks-gp3 (the source's setup), eks-nvme (local NVMe) or kind.
    #[arg(long, value_enum, default_value = "eks-gp3")]
    pub variant: chbench::cluster::Variant,
    /// The namespace every object goes in (and `down` removes).
    #[arg(long, env = chbench::targets::eks::NAMESPACE_ENV, default_value = chbench::cluster::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// EKS only: the benchmark node's instance type [default: m5.xlarge; m6id.xlarge for eks-nvme].
    #[arg(long)]
    pub node_type: Option<String>,
    /// The server image, pinned by tag or digest.
    #[arg(long, default_value = "clickhouse/clickhouse-server:26.3.33.24")]
    pub image: String,
    /// The data volume in GiB, at most 65536 on eks-gp3 [default: 100; 10 on kind].
    #[arg(long)]
    pub volume_gib: Option<u32>,
    /// eks-gp3 only: the volume's provisioned IOPS, 3000 to 80000 [default: 3000].
    #[arg(long)]
    pub iops: Option<u32>,
    /// eks-gp3 only: the volume's provisioned throughput in MiB/s, 125 to 2000 [default: 125].
    #[arg(long)]
    pub throughput_mibps: Option<u32>,
    /// How long to wait for the pod to be Ready, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_seconds: u64,
    /// Render and check the manifests and print them; send nothing to a cluster.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not measure the storage baseline (fio) once the pod is Ready; `cargo xtask eks
    /// baseline` measures it later.
    #[arg(long)]
    pub no_baseline: bool,
}

/// The two forms of `measure`, spelt out under `measure --help`.
const MEASURE_FORMS: &str = "\
The first argument decides the form: an existing file, or a name ending in .sql, means SQL
files; anything else is the name of a scenario pack (a folder with a claims.toml under
fixtures/, or under CHBENCH_PACKS_DIR when it is set, as the tests find packs).

  cargo xtask measure FILE.sql...
      Runs each file's statements: every statement but the last is set-up, the last is
      measured. Prints its answer, rows, bytes, granules and parts read, and times; with
      --json one JSON document per file: {\"file\", \"answer\", \"stats\"}. When the last
      statement is an EXPLAIN, the index stages of the query it explains are read as for a
      pack (\"index_stages\"), and its read_rows are the plan's lines (said in \"notes\",
      which also says when the answer has no rows). A file takes no parameters: a {name}
      left in it is an error.

  cargo xtask measure PACK QUERY [--design D] [--rows N]
      Builds the pack's dataset (designs/D.sql, or broken/D.sql, filled with N rows by the
      pack's generator), or reuses it when it was built before, then measures
      queries/QUERY.sql there. Prints the answer, rows and granules read, the index stages
      as a table (the parts and granules each stage of EXPLAIN indexes = 1 started with and
      kept), the table's parts and its column sizes; with --json one JSON document:
      {\"pack\", \"query\", \"design\", \"rows\", \"answer\" (its lines sorted), \"table\",
      \"active_parts\", \"stats\", \"index_stages\"} (and \"notes\" when the answer has no
      rows). Every name is checked before the engine starts. Progress goes to stderr.

Examples:
  cargo xtask measure setup_and_query.sql
  cargo xtask measure --json setup_and_query.sql | jq .stats.read_rows
  cargo xtask measure primary_key one_device_one_hour --rows 1M
  cargo xtask measure tenants one_tenant_one_hour --design time_first";

// Which target to run on; the same names and variable as the tests. (A `//` comment: a
// doc comment would become the about text of the commands that take it.)
#[derive(Debug, Clone, Args)]
pub struct TargetFlag {
    /// The engine to run on.
    #[arg(long, env = TARGET_ENV, value_parser = TargetParser, default_value = "auto")]
    pub target: TargetKind,
}

/// `--target`'s parser: the strict parse `CHBENCH_TARGET` gets in the tests (empty means
/// auto), with the possible values, and their help, from the enum itself.
#[derive(Debug, Clone, Copy)]
struct TargetParser;

impl TypedValueParser for TargetParser {
    type Value = TargetKind;

    fn parse_ref(&self, command: &clap::Command, arg: Option<&Arg>, value: &OsStr) -> Result<TargetKind, clap::Error> {
        TypedValueParser::parse_ref(&parse_target, command, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(TargetKind::value_variants().iter().filter_map(ValueEnum::to_possible_value)))
    }
}

// Which pinned embedded engine to load. (A `//` comment: a doc comment would become the
// about text of the commands that take it.)
#[derive(Debug, Clone, Args)]
pub struct EngineVersionFlag {
    /// The embedded engine's version: an npm version of @chdb/lib-<platform> the project
    /// pins (26.7.3-stable.1, the default, or 26.5.3), fetched and checked once, cached
    /// beside the others.
    #[arg(long, env = chbench::engine::ENGINE_VERSION_ENV, value_name = "V", value_parser = parse_engine_version)]
    pub engine_version: Option<&'static chbench::engine::EngineVersion>,
}

impl EngineVersionFlag {
    /// Chooses the asked version for this process before the engine loads; refused in one
    /// line when `target` runs no engine in this process (a server has its own version).
    pub fn choose_for(&self, target: TargetKind) -> anyhow::Result<()> {
        let Some(engine) = self.engine_version else { return Ok(()) };
        let kind = chbench::targets::resolve_kind(target);
        if !chbench::targets::spec(kind).capabilities.engine_in_process {
            anyhow::bail!(
                "--engine-version {} (or {}) chooses the embedded engine's version, and the target is {kind}, a \
                 server with a version of its own: drop it, or use --target embedded",
                engine.npm_version,
                chbench::engine::ENGINE_VERSION_ENV
            );
        }
        chbench::engine::choose_engine_version(engine)
    }
}

// Where an engine in this process keeps its data. (A `//` comment: a doc comment would
// become the about text of the commands that take it.)
#[derive(Debug, Clone, Args)]
pub struct StorageFlag {
    /// Where the embedded engine keeps its data: local (the machine's own disk), gp3 (a
    /// volume of its own held to 3000 IOPS and 125 MiB/s), or limits like iops=500,mibps=20
    /// (read_iops, write_iops, read_mibps, write_mibps for one direction); a volume needs
    /// Linux and root (docs/storage-profiles.md)
    #[arg(long, env = chbench::targets::volume::PROFILE_ENV, value_name = "PROFILE",
          value_parser = chbench::targets::volume::parse_profile, default_value = "local")]
    pub storage: chbench::targets::volume::StorageProfile,
}

impl StorageFlag {
    /// Makes the profile's volume for this process before the engine opens, sized for
    /// `needed` bytes of the run's data when the run estimates them, its storage baseline
    /// measured by fio where installed and `use_fio`, and returns what removes it (kept for
    /// as long as the engine's folder is used); refused in one line when `target` keeps its
    /// data on a machine of its own.
    pub fn activate_for(
        &self,
        target: TargetKind,
        needed: Option<u64>,
        use_fio: bool,
    ) -> anyhow::Result<Option<chbench::targets::volume::VolumeGuard>> {
        if self.storage == chbench::targets::volume::StorageProfile::Local {
            return Ok(None);
        }
        let kind = chbench::targets::resolve_kind(target);
        if !chbench::targets::spec(kind).capabilities.engine_in_process {
            anyhow::bail!(
                "--storage (or {}) puts the embedded engine's folder on a volume of its own, and the target is \
                 {kind}, whose data is on its own machine: drop it, or use --target embedded",
                chbench::targets::volume::PROFILE_ENV
            );
        }
        chbench::targets::volume::activate(&self.storage, needed, use_fio)
    }
}

/// `--engine-version`'s parser: a pinned npm version, or one line listing them.
fn parse_engine_version(text: &str) -> Result<&'static chbench::engine::EngineVersion, String> {
    chbench::engine::engine_version_named(text).map_err(|error| error.to_string())
}

#[derive(Debug, Args)]
pub struct Setup {
    #[command(flatten)]
    pub engine: EngineVersionFlag,
}

#[derive(Debug, Args)]
pub struct CleanContainers {}

/// `engine-worker`: the arguments `chbench::targets::worker::WorkerCommand::worker_args` writes.
#[derive(Debug, Args)]
pub struct EngineWorker {
    #[command(flatten)]
    pub engine: EngineVersionFlag,
    /// Work on a hard-linked copy of this folder (in the worker's own folder).
    #[arg(long, value_name = "DIR", conflicts_with = "build")]
    pub copy_of: Option<PathBuf>,
    /// Work in this folder, kept after the worker ends.
    #[arg(long, value_name = "DIR")]
    pub build: Option<PathBuf>,
    /// The parent's storage profile volume, mounted here: the worker's folder goes on it.
    #[arg(long, value_name = "DIR")]
    pub volume: Option<PathBuf>,
    /// The parent run's session settings (its `--setting`s), for every statement here too.
    #[arg(long = "setting", id = "setting", value_name = "NAME=VALUE")]
    pub settings: Vec<String>,
}

/// `cargo xtask bench [KIND] [FLAGS]`: a kind's flags follow its name; without a kind,
/// the flags are the default kind's. The kinds and their flags are the library's
/// registry (`chbench::benchmarks::kinds::KINDS`), each kind's flags declared in its folder;
/// every kind takes [`RunFlags`] too.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Bench {
    #[command(subcommand)]
    pub kind: Option<ChosenKind>,
    #[command(flatten)]
    pub default_kind: DefaultKindFlags,
    /// Run the variants of a matrix file (TOML: a kind, its flags, then variants) one
    /// after another, each a bundle of its own under RESULTS_DIR/RUN_ID, then compare the
    /// first with each other one (docs/matrix.md); --run-id names the matrix.
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
    /// With --matrix: stop at the first variant that fails (by default the others run).
    #[arg(long, requires = "matrix")]
    pub fail_fast: bool,
}

/// A kind named after `bench`, and its flags as clap parsed them (the kind reads its own).
#[derive(Debug, Clone)]
pub struct ChosenKind {
    pub kind: &'static Kind,
    pub matches: ArgMatches,
}

impl FromArgMatches for ChosenKind {
    fn from_arg_matches(matches: &ArgMatches) -> Result<ChosenKind, clap::Error> {
        let (name, flags) = matches.subcommand().ok_or_else(|| clap::Error::new(ErrorKind::MissingSubcommand))?;
        let kind = kinds::kind_named(name).ok_or_else(|| clap::Error::new(ErrorKind::InvalidSubcommand))?;
        Ok(ChosenKind { kind, matches: flags.clone() })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = ChosenKind::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Subcommand for ChosenKind {
    fn augment_subcommands(command: clap::Command) -> clap::Command {
        // The run flags first, as `--help` has always listed them.
        kinds::KINDS.iter().fold(command, |command, kind| {
            command.subcommand((kind.flags)(RunFlags::augment_args(clap::Command::new(kind.name).about(kind.about))))
        })
    }

    fn augment_subcommands_for_update(command: clap::Command) -> clap::Command {
        ChosenKind::augment_subcommands(command)
    }

    fn has_subcommand(name: &str) -> bool {
        kinds::kind_named(name).is_some()
    }
}

/// The default kind's flags and [`RunFlags`], for `bench` without a kind.
#[derive(Debug, Clone)]
pub struct DefaultKindFlags {
    pub matches: ArgMatches,
}

impl FromArgMatches for DefaultKindFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<DefaultKindFlags, clap::Error> {
        Ok(DefaultKindFlags { matches: matches.clone() })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.matches = matches.clone();
        Ok(())
    }
}

impl Args for DefaultKindFlags {
    fn augment_args(command: clap::Command) -> clap::Command {
        (kinds::default_kind().flags)(RunFlags::augment_args(command))
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        DefaultKindFlags::augment_args(command)
    }
}

// What every benchmark kind takes: where to run and where the bundle goes. (A `//`
// comment: a doc comment would become the about text of every kind's command.)
#[derive(Debug, Clone, Args)]
pub struct RunFlags {
    #[command(flatten)]
    pub target: TargetFlag,
    #[command(flatten)]
    pub engine: EngineVersionFlag,
    #[command(flatten)]
    pub storage: StorageFlag,
    /// Where results bundles go (one folder per run).
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// The run's folder name: 1 to 100 letters, digits, `.`, `_`, `-` (default: UTC time,
    /// target, kind and scale, with `-2`, `-3`... if another run took it in the same second).
    #[arg(long)]
    pub run_id: Option<String>,
    /// A session setting for every statement of the run, recorded in the bundle's
    /// session_settings; repeat it for more (--setting max_threads=1).
    #[arg(long = "setting", id = "setting", value_name = "NAME=VALUE")]
    pub settings: Vec<String>,
}

#[derive(Debug, Args)]
pub struct NewPack {
    /// The pack's name: lowercase letters, digits and _, starting with a letter (its
    /// folder, and the first part of its tests' names).
    pub name: String,
    /// The folder the pack goes in [default: the workspace's fixtures/, where the tests
    /// find it]; elsewhere, its tests run with CHBENCH_PACKS_DIR=DIR.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct Report {
    /// The run's id (its folder's name under the results directory), or the bundle's folder.
    pub run_id: String,
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct Compare {
    /// One A/B bundle, or two bundles (A, then B): run ids under --results-dir, or folders.
    #[arg(required = true, num_args = 1..=2, value_name = "A [B]")]
    pub bundles: Vec<String>,
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// One A/B bundle only: the two variants to compare, baseline first [default: its first two].
    #[arg(long, value_name = "A,B")]
    pub variants: Option<String>,
    /// Compare bundles that were asked to do different things (dataset, SQL text, session
    /// settings); the report opens with what differs.
    #[arg(long)]
    pub force: bool,
    /// Print the comparison as JSON on stdout (the files are written too).
    #[arg(long)]
    pub json: bool,
    /// Exit non-zero when more than N queries (or throughput levels) are slower, failed or answer differently: a
    /// workflow's gate.
    #[arg(long, value_name = "N")]
    pub fail_on_slower: Option<usize>,
    /// A's node price, USD per hour (for price-performance; the embedded engine has none)
    #[arg(long, value_name = "USD_PER_HOUR", value_parser = parse_price, allow_negative_numbers = true)]
    pub price_a: Option<f64>,
    /// B's node price, USD per hour
    #[arg(long, value_name = "USD_PER_HOUR", value_parser = parse_price, allow_negative_numbers = true)]
    pub price_b: Option<f64>,
    /// A node type's price, TYPE=USD_PER_HOUR, over the built-in table (on-demand,
    /// us-east-1); repeat for several types
    #[arg(long, value_name = "TYPE=USD_PER_HOUR", value_parser = parse_node_price)]
    pub node_price: Vec<(String, f64)>,
    /// Where compare.md, medians.svg and compare.json go [default: RESULTS_DIR/compare-A-vs-B,
    /// A and B the bundles' folder names; compare-RUN-A-vs-B for one A/B bundle's variants].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct History {
    /// The runs: run ids under --results-dir, or bundle folders [default: every bundle
    /// under --results-dir, of --kind when its bundles are of several kinds].
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    /// The benchmark kind whose runs to take from --results-dir (logs, throughput...).
    #[arg(long, value_name = "K")]
    pub kind: Option<String>,
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// Where history.md, history.svg and history.html go [default: RESULTS_DIR/history-KIND].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct Measure {
    #[command(flatten)]
    pub target: TargetFlag,
    #[command(flatten)]
    pub engine: EngineVersionFlag,
    #[command(flatten)]
    pub storage: StorageFlag,
    /// SQL files (the first one must exist or end in .sql; every statement but the last
    /// is set-up, the last is measured), or a pack's name and one of its queries.
    #[arg(required = true, value_name = "FILE.sql | PACK QUERY")]
    pub args: Vec<PathBuf>,
    /// Pack form only: the design to measure on, from designs/ or broken/ [default: the
    /// query's first design].
    #[arg(long, value_name = "D")]
    pub design: Option<String>,
    /// Pack form only: rows in the table (K, M and G suffixes work: 250K) [default: the
    /// query's smallest scale; for a broken design its largest, where its test runs].
    // Parsed by `run`, not by clap: a bad count is then one `error:` line and exit code 1,
    // like every other mistake in a pack command line.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub rows: Option<String>,
    /// Print the full record as JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// The same strict parse as `CHBENCH_TARGET` gets in the tests.
fn parse_price(text: &str) -> Result<f64, String> {
    chbench::node_prices::parse_usd_per_hour(text).map_err(|error| error.to_string())
}

fn parse_node_price(text: &str) -> Result<(String, f64), String> {
    chbench::node_prices::parse_node_price(text).map_err(|error| error.to_string())
}

fn parse_target(text: &str) -> Result<TargetKind, String> {
    TargetKind::parse(text).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_parsed_by_clap_into_its_kind() {
        let target = |name: &str| {
            Xtask::try_parse_from(["xtask", "measure", "--target", name, "q.sql"]).map(|flags| match flags.command {
                Command::Measure(measure) => measure.target.target,
                other => panic!("parsed as {other:?}"),
            })
        };
        assert_eq!(target("embedded").unwrap(), TargetKind::Embedded);
        assert_eq!(target("url").unwrap(), TargetKind::Url);
        assert_eq!(target("auto").unwrap(), TargetKind::Auto);
        assert_eq!(target("eks").unwrap(), TargetKind::Eks);
        // As CHBENCH_TARGET in the tests: empty means auto.
        assert_eq!(target("").unwrap(), TargetKind::Auto);
        for wrong in ["Embedded", "kubernetes", "EKS"] {
            let error = target(wrong).unwrap_err();
            assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation, "{wrong}: {error}");
            assert!(error.to_string().contains(&format!("choose one of {}", TargetKind::names())), "{error}");
        }
    }

    #[test]
    fn eks_status_and_down_take_their_flags_and_leave_the_namespace_to_be_chosen() {
        let eks = |args: &[&str]| match Xtask::try_parse_from(["xtask", "eks"].iter().chain(args)).unwrap().command {
            Command::Eks(eks) => eks.command,
            other => panic!("parsed as {other:?}"),
        };
        match eks(&["status"]) {
            EksCommand::Status(status) => assert_eq!((status.namespace.as_deref(), status.json), (None, false)),
            other => panic!("parsed as {other:?}"),
        }
        match eks(&["status", "--namespace", "bench-2", "--json"]) {
            EksCommand::Status(status) => {
                assert_eq!((status.namespace.as_deref(), status.json), (Some("bench-2"), true))
            }
            other => panic!("parsed as {other:?}"),
        }
        match eks(&["down"]) {
            EksCommand::Down(down) => {
                assert_eq!(
                    (down.namespace.as_deref(), down.force, down.dry_run, down.timeout_seconds),
                    (None, false, false, 600)
                )
            }
            other => panic!("parsed as {other:?}"),
        }
        match eks(&["down", "--force", "--dry-run", "--timeout-seconds", "30", "--namespace", "x"]) {
            EksCommand::Down(down) => {
                assert_eq!(
                    (down.namespace.as_deref(), down.force, down.dry_run, down.timeout_seconds),
                    (Some("x"), true, true, 30)
                )
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_engine_version_is_a_pinned_one_on_every_command_that_loads_the_engine() {
        let engine = |args: &[&str]| match Xtask::try_parse_from(args).map(|flags| flags.command) {
            Ok(Command::Setup(setup)) => Ok(setup.engine.engine_version),
            Ok(Command::Measure(measure)) => Ok(measure.engine.engine_version),
            Ok(Command::Bench(bench)) => {
                let matches = bench.kind.map_or(bench.default_kind.matches, |chosen| chosen.matches);
                Ok(RunFlags::from_arg_matches(&matches).unwrap().engine.engine_version)
            }
            Ok(other) => panic!("parsed as {other:?}"),
            Err(error) => Err(error),
        };
        let older = chbench::engine::engine_version_named("26.5.3").unwrap();
        assert_eq!(engine(&["xtask", "setup", "--engine-version", "26.5.3"]).unwrap(), Some(older));
        assert_eq!(engine(&["xtask", "measure", "--engine-version", "26.5.3", "q.sql"]).unwrap(), Some(older));
        assert_eq!(engine(&["xtask", "bench", "--engine-version", "26.5.3", "--rows", "100K"]).unwrap(), Some(older));
        assert_eq!(engine(&["xtask", "bench", "parts", "--engine-version", "26.5.3"]).unwrap(), Some(older));
        let error = engine(&["xtask", "setup", "--engine-version", "25.1"]).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::ValueValidation);
        assert!(error.to_string().contains("the pinned ones: 26.7.3-stable.1 (default), 26.5.3"), "{error}");
        // A server has its own version: the flag is refused before anything opens.
        let flag = EngineVersionFlag { engine_version: Some(older) };
        let refused = flag.choose_for(TargetKind::Url).unwrap_err().to_string();
        assert!(refused.starts_with("--engine-version 26.5.3 (or CHBENCH_ENGINE_VERSION) chooses"), "{refused}");
        assert!(refused.contains("the target is url"), "{refused}");
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Xtask::command().debug_assert();
    }
}
