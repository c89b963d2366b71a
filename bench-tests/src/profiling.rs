//! `--profile` on a target: the profilers chosen once for the run, put on the warm runs of
//! the measured queries (the kinds pass their settings through [`profiled`]; not the
//! direct-I/O run, warm-ups, ingest or a dataset's build), and after the run each profiled
//! query's samples read back from `system.trace_log` by those statements' query ids,
//! folded and drawn into the bundle's `profiles/` folder ([`gather`]). Only a target
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

/// `settings` of a warm run of a measured query, with the chosen profilers' (none when
/// none is chosen). The kinds record the result as the sample's settings.
pub fn profiled(settings: &Settings) -> Settings {
    match chosen() {
        Some(choice) => settings.merged(&choice.statement_settings()),
        None => settings.clone(),
    }
}

/// Refuses `--profile` beside settings that set the profilers themselves (`--setting`, an
/// A/B variant's): one of the two would be overridden without a word.
pub fn check_settings(choice: ProfileChoice, settings: &Settings, given_by: &str) -> Result<()> {
    let ours = choice.statement_settings();
    if let Some((name, _)) = settings.iter().find(|(name, _)| ours.get(name).is_some()) {
        bail!("--profile {choice} sets {name} itself, and {given_by} sets it too: drop one of the two");
    }
    Ok(())
}

/// The statements of one query (in one form) to profile together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfiledRuns {
    /// As a comparison labels it (`q1 (parts=1000)`).
    pub label: String,
    /// Its measured statements' query ids.
    pub query_ids: Vec<String>,
}

/// How many query ids one lookup names: a few tens of kilobytes of SQL, well under the
/// server's `max_query_size` (256 KiB by default).
const IDS_PER_LOOKUP: usize = 1000;

/// How far before the run's start (this machine's clock) trace_log is read: the server's
/// clock may be behind this one's (a laptop against a cluster, a VM after a sleep).
const CLOCK_MARGIN_SECONDS: i64 = 3600;

/// The lookup of `query_ids`' samples of the profilers' trace types since `since` (the
/// run's start, less [`CLOCK_MARGIN_SECONDS`]: trace_log is bounded by its date and time,
/// as a long-lived server keeps months of it; the query ids choose the rows), one row per
/// distinct stack, its addresses symbolized (introspection is allowed for this statement
/// only).
pub fn stacks_lookup(query_ids: &[String], since: jiff::Timestamp) -> String {
    let ids: Vec<String> = query_ids.iter().map(|id| sql_string(id)).collect();
    let seconds = since.as_second() - CLOCK_MARGIN_SECONDS;
    format!(
        "SELECT toString(trace_type) AS trace_type, arrayMap(address -> demangle(addressToSymbol(address)), trace) \
         AS symbols, count() AS samples FROM system.trace_log WHERE event_date >= toDate(toDateTime({seconds})) AND \
         event_time >= toDateTime({seconds}) AND trace_type IN ('CPU', 'Real') AND query_id IN ({}) GROUP BY \
         trace_type, trace SETTINGS allow_introspection_functions = 1",
        ids.join(", ")
    )
}

/// Reads every `runs`' samples of `choice`'s trace types since `since` from the target's
/// trace_log (after one flush of the server's logs), and writes each one's folded stacks
/// and flame graph under `bundle_dir/profiles/`. What cannot be read is the reason, a
/// query's or the whole record's, never an error of the run: its measurements stand
/// without profiles. A stop request ends it with the queries not reached said so; the
/// caller sees the request.
pub fn gather(
    target: &mut Target,
    runs: &[ProfiledRuns],
    choice: ProfileChoice,
    since: jiff::Timestamp,
    bundle_dir: &Path,
    progress: &dyn Fn(&str),
) -> ProfileRecord {
    let mut record =
        ProfileRecord { choice, period_ns: crate::profiles::PERIOD_NS, queries: Vec::new(), unknown: None };
    let folder = bundle_dir.join(PROFILES_DIR);
    let ready = target
        .execute("SYSTEM FLUSH LOGS")
        .context("cannot flush the server's logs")
        .and_then(|()| std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display())));
    if let Err(error) = ready {
        record.unknown = Some(format!("{error:#}"));
        return record;
    }
    for (index, profiled) in runs.iter().enumerate() {
        if crate::interrupt::requested() {
            record.unknown = Some(format!(
                "stopped ({}) before the samples of {} of {} queries were read",
                crate::interrupt::SIGNALS,
                runs.len() - index,
                runs.len()
            ));
            break;
        }
        progress(&format!("profiles: {} ({} statements)", profiled.label, profiled.query_ids.len()));
        let stem = format!("{:02}-{}", index + 1, file_stem(&profiled.label));
        match read_stacks(target, profiled, since) {
            Ok(rows) => {
                for trace_type in choice.trace_types() {
                    record.queries.push(write_profile(&folder, &stem, profiled, &rows, trace_type));
                }
            }
            Err(error) => {
                for trace_type in choice.trace_types() {
                    let mut profile =
                        QueryProfile::without_samples(&profiled.label, trace_type, profiled.query_ids.len());
                    profile.unknown = Some(format!("{error:#}"));
                    record.queries.push(profile);
                }
            }
        }
    }
    record
}

/// `profiled`'s stacks, a lookup per [`IDS_PER_LOOKUP`] of its statements.
fn read_stacks(target: &mut Target, profiled: &ProfiledRuns, since: jiff::Timestamp) -> Result<Vec<StackRow>> {
    let mut rows = Vec::new();
    for ids in profiled.query_ids.chunks(IDS_PER_LOOKUP) {
        crate::interrupt::check()?;
        let found: Vec<StackRow> = target
            .query_rows(&stacks_lookup(ids, since))
            .with_context(|| format!("cannot read the samples of {} from system.trace_log", profiled.label))?;
        rows.extend(found);
    }
    Ok(rows)
}

/// One query's profile of one trace type: its files written when it has samples; what
/// could not be drawn or written is its reason.
fn write_profile(
    folder: &Path,
    stem: &str,
    profiled: &ProfiledRuns,
    rows: &[StackRow],
    trace_type: TraceType,
) -> QueryProfile {
    let (folded, samples, stacks) = fold(rows, trace_type);
    let mut profile = QueryProfile::without_samples(&profiled.label, trace_type, profiled.query_ids.len());
    (profile.samples, profile.stacks) = (samples, stacks);
    if samples == 0 {
        return profile;
    }
    let name = format!("{stem}.{}", trace_type.name().to_lowercase());
    let title =
        format!("{} - {} ({samples} samples of {} statements)", profiled.label, trace_type.name(), profile.statements);
    let written = flame_graph_svg(&folded, &title).and_then(|svg| {
        for (extension, text) in [("folded", &folded), ("svg", &svg)] {
            crate::files::write_atomically(&folder.join(format!("{name}.{extension}")), text)?;
        }
        Ok(())
    });
    match written {
        Ok(()) => {
            profile.folded = Some(format!("{PROFILES_DIR}/{name}.folded"));
            profile.svg = Some(format!("{PROFILES_DIR}/{name}.svg"));
        }
        Err(error) => profile.unknown = Some(format!("{error:#}")),
    }
    profile
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
        let since: jiff::Timestamp = "2026-12-06T19:40:12Z".parse().unwrap();
        let sql = stacks_lookup(&["0b7c-1".to_string(), "it's".to_string()], since);
        assert!(sql.contains("query_id IN ('0b7c-1', 'it\\'s')"), "{sql}");
        // Bounded by the run's start, by the partition's date and the row's time.
        assert!(
            // An hour before it: the server's clock may be behind this machine's.
            sql.contains("event_date >= toDate(toDateTime(1796582412)) AND event_time >= toDateTime(1796582412)"),
            "{sql}"
        );
        assert!(sql.ends_with("GROUP BY trace_type, trace SETTINGS allow_introspection_functions = 1"), "{sql}");
    }

    #[test]
    fn a_label_becomes_a_file_stem() {
        assert_eq!(file_stem("q1 (parts=1000, clients=4)"), "q1_parts_1000_clients_4");
        assert_eq!(file_stem("../etc"), "etc");
    }
}
