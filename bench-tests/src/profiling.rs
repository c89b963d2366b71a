//! `--profile` on a target: the profilers chosen once for the run, put on every measured
//! statement ([`crate::measure`] merges [`statement_settings`]), and after the run each
//! profiled query's samples read back from `system.trace_log` by its statements' query
//! ids, folded and drawn into the bundle's `profiles/` folder ([`gather`]). Only a target
//! with [`Capabilities::query_profiler`](crate::targets::Capabilities::query_profiler)
//! can: the embedded engine's library is stripped and keeps no trace_log.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};

use crate::profiles::{ProfileChoice, ProfileRecord, QueryProfile, StackRow, TraceType, flame_graph_svg, fold};
use crate::settings::Settings;
use crate::sql::sql_string;
use crate::target_info::TargetKind;
use crate::targets::Target;

/// The folder of a bundle the flame graphs go in.
pub const PROFILES_DIR: &str = "profiles";

static CHOSEN: OnceLock<ProfileChoice> = OnceLock::new();

/// Refuses `--profile` on a target of `kind` without the query profiler, in one line
/// saying why and where to profile instead.
pub fn check_target(choice: ProfileChoice, kind: TargetKind) -> Result<()> {
    if !crate::targets::spec(kind).capabilities.query_profiler {
        bail!(
            "--profile {choice}: target {kind} cannot sample stacks (the embedded engine's library has no symbols, \
             and it keeps no system.trace_log); profile on a server: --target url, container or eks"
        );
    }
    Ok(())
}

/// Profiles every statement this process measures from now on, once, before the first
/// is measured; a second call with another choice is refused.
pub fn choose(choice: ProfileChoice) -> Result<()> {
    if *CHOSEN.get_or_init(|| choice) != choice {
        bail!("this process's profilers were chosen already; a run chooses them once");
    }
    Ok(())
}

/// The profilers chosen, if any.
pub fn chosen() -> Option<ProfileChoice> {
    CHOSEN.get().copied()
}

/// What a measured statement runs with for the chosen profilers: nothing when none is.
pub fn statement_settings() -> Settings {
    chosen().map(ProfileChoice::statement_settings).unwrap_or_default()
}

/// The statements of one query (in one form) to profile together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfiledRuns {
    /// As a comparison labels it (`q1 (parts=1000)`).
    pub label: String,
    /// Its measured statements' query ids.
    pub query_ids: Vec<String>,
}

/// The lookup of `query_ids`' samples of the profilers' trace types, one row per distinct
/// stack, its addresses symbolized (introspection is allowed for this statement only).
pub fn stacks_lookup(query_ids: &[String]) -> String {
    let ids: Vec<String> = query_ids.iter().map(|id| sql_string(id)).collect();
    format!(
        "SELECT toString(trace_type) AS trace_type, arrayMap(address -> demangle(addressToSymbol(address)), trace) \
         AS symbols, count() AS samples FROM system.trace_log WHERE trace_type IN ('CPU', 'Real') AND query_id IN \
         ({}) GROUP BY trace_type, trace SETTINGS allow_introspection_functions = 1",
        ids.join(", ")
    )
}

/// Reads every `runs`' samples of `choice`'s trace types from the target's trace_log
/// (after one flush of the server's logs), and writes each one's folded stacks and flame
/// graph under `bundle_dir/profiles/`. What cannot be read is the record's reason, never
/// an error of the run: its measurements stand without profiles.
pub fn gather(
    target: &mut Target,
    runs: &[ProfiledRuns],
    choice: ProfileChoice,
    bundle_dir: &Path,
    progress: &dyn Fn(&str),
) -> ProfileRecord {
    let mut record =
        ProfileRecord { choice, period_ns: crate::profiles::PERIOD_NS, queries: Vec::new(), unknown: None };
    let gathered = (|| -> Result<Vec<QueryProfile>> {
        target.execute("SYSTEM FLUSH LOGS").context("cannot flush the server's logs")?;
        let folder = bundle_dir.join(PROFILES_DIR);
        std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
        let mut profiles = Vec::new();
        for (index, profiled) in runs.iter().enumerate() {
            crate::interrupt::check()?;
            progress(&format!("profiles: {} ({} statements)", profiled.label, profiled.query_ids.len()));
            let rows: Vec<StackRow> = if profiled.query_ids.is_empty() {
                Vec::new()
            } else {
                target
                    .query_rows(&stacks_lookup(&profiled.query_ids))
                    .with_context(|| format!("cannot read the samples of {} from system.trace_log", profiled.label))?
            };
            let stem = format!("{:02}-{}", index + 1, file_stem(&profiled.label));
            for trace_type in choice.trace_types() {
                profiles.push(write_profile(&folder, &stem, profiled, &rows, trace_type)?);
            }
        }
        Ok(profiles)
    })();
    match gathered {
        Ok(profiles) => record.queries = profiles,
        Err(error) => record.unknown = Some(format!("{error:#}")),
    }
    record
}

/// One query's profile of one trace type: its files written when it has samples.
fn write_profile(
    folder: &Path,
    stem: &str,
    profiled: &ProfiledRuns,
    rows: &[StackRow],
    trace_type: TraceType,
) -> Result<QueryProfile> {
    let (folded, samples, stacks) = fold(rows, trace_type);
    let mut profile = QueryProfile {
        label: profiled.label.clone(),
        trace_type,
        statements: profiled.query_ids.len(),
        samples,
        stacks,
        folded: None,
        svg: None,
    };
    if samples == 0 {
        return Ok(profile);
    }
    let name = format!("{stem}.{}", trace_type.name().to_lowercase());
    let title =
        format!("{} - {} ({samples} samples of {} statements)", profiled.label, trace_type.name(), profile.statements);
    let svg = flame_graph_svg(&folded, &title)?;
    for (extension, text) in [("folded", &folded), ("svg", &svg)] {
        crate::files::write_atomically(&folder.join(format!("{name}.{extension}")), text)?;
    }
    profile.folded = Some(format!("{PROFILES_DIR}/{name}.folded"));
    profile.svg = Some(format!("{PROFILES_DIR}/{name}.svg"));
    Ok(profile)
}

/// A label as a file name's stem: letters, digits, `-` and `_` kept, runs of anything else
/// one `_`.
fn file_stem(label: &str) -> String {
    let mut stem = String::new();
    for character in label.chars() {
        if character.is_ascii_alphanumeric() || character == '-' || character == '_' {
            stem.push(character);
        } else if !stem.ends_with('_') {
            stem.push('_');
        }
    }
    stem.trim_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lookup_quotes_its_query_ids_and_allows_introspection_for_itself() {
        let sql = stacks_lookup(&["0b7c-1".to_string(), "it's".to_string()]);
        assert!(sql.contains("query_id IN ('0b7c-1', 'it\\'s')"), "{sql}");
        assert!(sql.ends_with("GROUP BY trace_type, trace SETTINGS allow_introspection_functions = 1"), "{sql}");
    }

    #[test]
    fn a_label_becomes_a_file_stem() {
        assert_eq!(file_stem("q1 (parts=1000, clients=4)"), "q1_parts_1000_clients_4");
        assert_eq!(file_stem("../etc"), "etc");
    }
}
