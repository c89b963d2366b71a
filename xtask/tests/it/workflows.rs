//! The `cargo` commands the GitHub workflows run exist as written: each `cargo xtask`
//! subcommand with its flags and values, each other cargo subcommand, each nextest
//! profile, and each `CHBENCH_TARGET` a job or a command sets. No workflow runs here, so
//! this keeps one from naming what was renamed or never existed. The shell itself is
//! actionlint's, which `.ci/run` runs and which runs shellcheck on every `run:` script.
//!
//! The workflows are read as YAML (serde-saphyr), which owns `run: |` and `run: >` blocks.
//! [`commands`] then cuts each script into simple commands, knowing only what finding
//! cargo's takes: line continuations, quotes, comments, separators (newline, `;`, `&`, `|`,
//! parentheses, so an unquoted `$(...)`'s commands too), redirections and `${{ }}`. A
//! cargo it cannot read (through a variable, another program or a shell, in a quoted
//! substitution or a here-document) fails the test by name.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{XTASK, cargo, workspace};

/// A word of a command: its text without quotes, the script line it begins on, and
/// whether it holds an expansion (`$VAR`, `$(...)`, `${{ }}`), whose value is unknown here.
#[derive(Clone, Default)]
struct Word {
    text: String,
    line: usize,
    expanded: bool,
}

/// A simple command's words, the `NAME=value` ones before its program included.
struct ShellCommand(Vec<Word>);

impl ShellCommand {
    /// Its `NAME=value` words, and its program and arguments.
    fn split(&self) -> (&[Word], &[Word]) {
        let name = |name: &str| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let assignment = |word: &&Word| word.text.split_once('=').is_some_and(|(before, _)| name(before));
        self.0.split_at(self.0.iter().take_while(assignment).count())
    }

    fn text(&self) -> String {
        let words: Vec<&str> = self.0.iter().map(|word| word.text.as_str()).collect();
        format!("line {}: `{}`", self.0[0].line, words.join(" "))
    }
}

/// The simple commands of `script`. A substitution in double quotes or backquotes stays
/// in its word, where [`cargo_args`] refuses one that names cargo.
fn commands(script: &str) -> Result<Vec<ShellCommand>, String> {
    let (mut commands, mut current, mut word) = (Vec::new(), Vec::new(), None);
    // The next word is a redirection's target, not an argument.
    let mut redirect = false;
    let mut quote: Option<(char, usize)> = None;
    let mut chars = script.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, next)| next);
        let line = script[..at].matches('\n').count() + 1;
        let new = move || Word { line, ..Word::default() };
        match (quote.map(|(open, _)| open), c) {
            (Some('\''), '\'') | (Some('"'), '"') => quote = None,
            (None, '\'' | '"') => {
                word.get_or_insert_with(new);
                quote = Some((c, line));
            }
            // A line continuation disappears, joining the lines.
            (None | Some('"'), '\\') if next == Some('\n') => _ = chars.next(),
            // A backslash keeps the next character as it is; in double quotes, only these.
            (None | Some('"'), '\\') if quote.is_none() || matches!(next, Some('"' | '\\' | '$' | '`')) => {
                word.get_or_insert_with(new).text.extend(chars.next().map(|(_, c)| c));
            }
            // A GitHub expression is one expansion, spaces and all.
            (None | Some('"'), '$') if script[at..].starts_with("${{") => {
                let end = script[at..].find("}}").map_or(script.len(), |end| at + end + 2);
                word.get_or_insert_with(new).text.push_str(&script[at..end]);
                while chars.next_if(|&(i, _)| i < end).is_some() {}
            }
            (Some(_), _) => word.get_or_insert_with(new).text.push(c),
            (None, ' ' | '\t') => end_word(&mut word, &mut redirect, &mut current),
            (None, '#') if word.is_none() => while chars.next_if(|&(_, c)| c != '\n').is_some() {},
            (None, '<') if next == Some('<') => return Err(format!("line {line}: a here-document is not read")),
            // A redirection and its target are no words of the command, nor is a
            // descriptor before it (`2>`).
            (None, '>' | '<' | '&') if c != '&' || next == Some('>') => {
                word = word.filter(|word: &Word| !word.text.chars().all(|c| c.is_ascii_digit()));
                end_word(&mut word, &mut redirect, &mut current);
                while chars.next_if(|&(_, c)| matches!(c, '>' | '<' | '&' | '|')).is_some() {}
                redirect = true;
            }
            // `&&` and `||` are two separators, which is the same here.
            (None, '\n' | ';' | '&' | '|' | '(' | ')') => {
                end_word(&mut word, &mut redirect, &mut current);
                commands.push(std::mem::take(&mut current));
            }
            (None, _) => word.get_or_insert_with(new).text.push(c),
        }
    }
    if let Some((open, line)) = quote {
        return Err(format!("line {line}: a {open} quote is not closed"));
    }
    end_word(&mut word, &mut redirect, &mut current);
    commands.push(current);
    Ok(commands.into_iter().filter(|words| !words.is_empty()).map(ShellCommand).collect())
}

/// `word`, if any, into `words`, unless it is a redirection's target or a reserved word
/// before the program.
fn end_word(word: &mut Option<Word>, redirect: &mut bool, words: &mut Vec<Word>) {
    let reserved = ["if", "then", "elif", "else", "while", "until", "do", "!", "{", "time"];
    if let Some(mut word) = word.take()
        && !std::mem::take(redirect)
        && !(words.is_empty() && reserved.contains(&word.text.as_str()))
    {
        // In single quotes too: GitHub replaces an expression before the shell runs.
        word.expanded = word.text.contains(['$', '`']);
        words.push(word);
    }
}

/// The arguments after `cargo` when `command` runs cargo as written; `None` when it runs
/// something else; an error when it may run cargo in a way this test cannot read.
fn cargo_args(command: &ShellCommand) -> Result<Option<&[Word]>, String> {
    let mentions_cargo = |word: &Word| word.text.to_ascii_lowercase().contains("cargo");
    let substituted = |word: &&Word| mentions_cargo(word) && (word.text.contains("$(") || word.text.contains('`'));
    if let Some(word) = command.0.iter().find(substituted) {
        return Err(format!("{}: cargo in a quoted `$(...)` or in backquotes is not read", word.text));
    }
    let Some((program, args)) = command.split().1.split_first() else { return Ok(None) };
    if program.text == "cargo" {
        Ok(Some(args))
    } else if program.expanded || mentions_cargo(program) {
        Err(format!("the program {} is not `cargo` as written: it may be cargo, and cannot be checked", program.text))
    } else if args.iter().any(|word| word.text == "cargo")
        || matches!(&*program.text, "bash" | "sh" | "eval") && args.iter().any(mentions_cargo)
    {
        Err(format!("cargo through {}: run it as a command of its own, for it to be checked", program.text))
    } else {
        Ok(None)
    }
}

/// Why `command` would not run as written, if it would not: `Ok(true)` for a checked
/// cargo command, `Ok(false)` for any other, which is shellcheck's business.
fn check(command: &ShellCommand) -> Result<bool, String> {
    for word in command.split().0 {
        if let Some(value) = word.text.strip_prefix("CHBENCH_TARGET=") {
            if word.expanded {
                return Err("CHBENCH_TARGET comes from a variable: its value cannot be checked".to_string());
            }
            check_target(value)?;
        }
    }
    let Some(args) = cargo_args(command)? else { return Ok(false) };
    let Some(subcommand) = args.first().filter(|first| !first.expanded && !first.text.starts_with(['-', '+'])) else {
        return Err("cargo needs its subcommand first, as written text".to_string());
    };
    // An expansion's value is unknown: "1" parses as a path, a run id, a row count and a number.
    let texts: Vec<&str> = args.iter().map(|word| if word.expanded { "1" } else { word.text.as_str() }).collect();
    let cargo = cargo();
    match subcommand.text.as_str() {
        // Through the xtask binary built for this test.
        "xtask" => run_for_help(Path::new(XTASK), &texts[1..])?,
        "nextest" => {
            check_nextest_profiles(args)?;
            check_features(args)?;
            run_for_help(&cargo, &texts)?;
        }
        _ => {
            check_features(args)?;
            run_for_help(&cargo, &texts)?
        }
    }
    Ok(true)
}

/// The values `args` give flag `long` (`--flag VALUE`, `--flag=VALUE`) or `short` (`-F VALUE`).
fn flag_values(args: &[Word], long: &str, short: &str) -> Vec<Word> {
    let spaced = args.iter().zip(&args[1..]).filter(|(flag, _)| flag.text == long || flag.text == short);
    let prefix = format!("{long}=");
    let joined =
        args.iter().filter_map(|word| Some(Word { text: word.text.strip_prefix(&prefix)?.into(), ..word.clone() }));
    spaced.map(|(_, value)| value.clone()).chain(joined).collect()
}

/// Each feature `args` name (`--features chbench/eks,xtask/eks`, `-F`, `--features=`) is a
/// feature of the workspace package it names: cargo's `--help` checks none.
fn check_features(args: &[Word]) -> Result<(), String> {
    for features in flag_values(args, "--features", "-F") {
        if features.expanded {
            return Err("the features come from a variable: they cannot be checked".to_string());
        }
        for feature in features.text.split([',', ' ']).filter(|feature| !feature.is_empty()) {
            let (package, name) = feature.split_once('/').ok_or(format!("feature {feature:?} names no package"))?;
            let folder = match package {
                "chbench" => "bench-tests",
                "xtask" => "xtask",
                other => return Err(format!("feature {feature:?}: {other} is not a package of the workspace")),
            };
            let manifest = std::fs::read_to_string(workspace().join(folder).join("Cargo.toml")).unwrap();
            let manifest: toml::Table = toml::from_str(&manifest).unwrap();
            let defined = manifest.get("features").and_then(toml::Value::as_table);
            if !defined.is_some_and(|features| features.contains_key(name)) {
                return Err(format!("feature {feature:?} is not in {folder}/Cargo.toml"));
            }
        }
    }
    Ok(())
}

/// Each profile nextest's `args` name (`--profile NAME`, `-P NAME`, `--profile=NAME`) is
/// in `.config/nextest.toml`, or is nextest's own `default`.
fn check_nextest_profiles(args: &[Word]) -> Result<(), String> {
    let config = std::fs::read_to_string(workspace().join(".config/nextest.toml")).expect("cannot read nextest.toml");
    let config: toml::Table = toml::from_str(&config).expect("nextest.toml is not TOML");
    let defined = config.get("profile").and_then(toml::Value::as_table).map(|profiles| profiles.keys().cloned());
    let mut known: Vec<String> = defined.into_iter().flatten().chain(["default".to_string()]).collect();
    known.sort();
    known.dedup();
    for profile in flag_values(args, "--profile", "-P") {
        if profile.expanded {
            return Err("the nextest profile comes from a variable: it cannot be checked".to_string());
        } else if !known.contains(&profile.text) {
            let known = known.join(", ");
            return Err(format!("nextest profile {:?} is not in .config/nextest.toml (there: {known})", profile.text));
        }
    }
    Ok(())
}

/// The same parse as the tests and xtask make of a target's name.
fn check_target(name: &str) -> Result<(), String> {
    run_for_help(Path::new(XTASK), &["bench", "--target", name])
}

/// Runs `program ARGS --help` (`--help` before any `--`), which parses every argument
/// before it and then only prints help: it fails on an unknown subcommand, flag or value,
/// and runs nothing.
fn run_for_help(program: &Path, args: &[&str]) -> Result<(), String> {
    let split = args.iter().position(|arg| *arg == "--").unwrap_or(args.len());
    let with_help = [&args[..split], &["--help"]].concat();
    let output = Command::new(program)
        .args(&with_help)
        .current_dir(workspace())
        .env_remove("CHBENCH_TARGET")
        .output()
        .map_err(|error| format!("cannot run {}: {error}", program.display()))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reason = stderr.trim().lines().next().unwrap_or("no message");
    Err(format!("`{} {}` fails: {reason}", program.display(), with_help.join(" ")))
}

/// A job's `CHBENCH_TARGET`, written out or each value of the matrix entry it names
/// (`${{ matrix.target }}`), is a target. Any other expression cannot be checked.
fn check_job_target(job: &Value) -> Result<(), String> {
    let Some(value) = job["env"]["CHBENCH_TARGET"].as_str() else { return Ok(()) };
    let Some(expression) = value.trim().strip_prefix("${{").and_then(|rest| rest.strip_suffix("}}")) else {
        return check_target(value).map_err(|error| format!("CHBENCH_TARGET={value}: {error}"));
    };
    let Some(entry) = expression.trim().strip_prefix("matrix.") else {
        return Err(format!("CHBENCH_TARGET is {value:?}: only a written value or a matrix entry can be checked"));
    };
    let values = job["strategy"]["matrix"][entry]
        .as_array()
        .ok_or_else(|| format!("CHBENCH_TARGET names matrix.{entry}, which is not a list in the job's matrix"))?;
    let values: Vec<&str> = values
        .iter()
        .map(|value| value.as_str().ok_or(format!("matrix.{entry} holds {value}")))
        .collect::<Result<_, _>>()?;
    values.iter().try_for_each(|value| check_target(value).map_err(|error| format!("CHBENCH_TARGET={value}: {error}")))
}

/// Each cargo command of `script` that passes, and each problem, as `line N: ...`; or the
/// problem in reading it.
fn check_script(script: &str) -> Vec<Result<String, String>> {
    let outcome = |command: &ShellCommand| match check(command) {
        Ok(cargo) => cargo.then(|| Ok(command.text())),
        Err(error) => Some(Err(format!("{}: {error}", command.text()))),
    };
    commands(script).map_or_else(|error| vec![Err(error)], |commands| commands.iter().filter_map(outcome).collect())
}

/// Every problem in one workflow, each naming where it is (file, job, step and script
/// line); and how many cargo commands were checked.
fn problems_in(file: &str, text: &str) -> (Vec<String>, usize) {
    let workflow: Value = serde_saphyr::from_str(text).unwrap_or_else(|error| panic!("{file} is not YAML: {error}"));
    let (mut problems, mut checked) = (Vec::new(), 0);
    for (id, job) in workflow["jobs"].as_object().into_iter().flatten() {
        problems.extend(check_job_target(job).err().map(|problem| format!("{file}: job {id}: {problem}")));
        for (index, step) in job["steps"].as_array().into_iter().flatten().enumerate() {
            let Some(script) = step["run"].as_str() else { continue };
            let step_name = step["name"].as_str().map_or((index + 1).to_string(), |name| format!("{name:?}"));
            let shell = step["shell"].as_str().unwrap_or("bash");
            let outcomes = match shell.split_whitespace().next() {
                Some("bash" | "sh") => check_script(script),
                _ => vec![Err(format!("runs its script with {shell}: only bash and sh scripts are read"))],
            };
            for outcome in outcomes {
                match outcome {
                    Ok(_) => checked += 1,
                    Err(problem) => problems.push(format!("{file}: job {id}, step {step_name}, {problem}")),
                }
            }
        }
    }
    (problems, checked)
}

#[test]
fn every_cargo_command_the_workflows_run_exists() {
    let folder = workspace().join(".github/workflows");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder).unwrap().map(|entry| entry.unwrap().path()).collect();
    files.retain(|path| path.extension().is_some_and(|ext| ext == "yml" || ext == "yaml"));
    files.sort();
    assert!(!files.is_empty(), "no workflow in {}", folder.display());
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let name = format!(".github/workflows/{}", file.file_name().unwrap().display());
        let (found, checked) = problems_in(&name, &text);
        // A misreading (a renamed YAML key, say) must not pass by finding nothing.
        assert!(checked > 0 || !found.is_empty() || !text.contains("cargo"), "{name}: no cargo command found");
        problems.extend(found);
    }
    assert!(problems.is_empty(), "cargo commands in the workflows that would not run:\n{}", problems.join("\n"));
}

#[test]
fn cargo_commands_are_found_and_checked_and_one_that_cannot_be_read_is_refused() {
    let script = r#"# a comment, then a continued line
CHBENCH_TARGET=container cargo nextest run \
  --profile ci -E 'binary(it) | test(/^eks::/)'
changed="$(git status --porcelain -- snapshots/ | sort)"
if cargo fmt --check; then
  echo "cargo xtask bench printed: $changed" >&2
fi
{ echo '## Bench'; grep -v '^!\[' "$report"; } >> "$GITHUB_STEP_SUMMARY"
cargo xtask bench --run-id ${{ github.run_id }} 2>&1 | tee log && cargo xtask report "$(cat log)" || true
version=$(cargo xtask clean-containers)
"#;
    assert_eq!(
        check_script(script).into_iter().collect::<Result<Vec<_>, _>>().unwrap(),
        [
            "line 2: `CHBENCH_TARGET=container cargo nextest run --profile ci -E binary(it) | test(/^eks::/)`",
            "line 5: `cargo fmt --check`",
            "line 9: `cargo xtask bench --run-id ${{ github.run_id }}`",
            "line 9: `cargo xtask report $(cat log)`",
            "line 10: `cargo xtask clean-containers`",
        ]
    );
    for (script, expected) in [
        ("cargo xtask bnch", "unrecognized subcommand 'bnch'"),
        ("cargo xtask bench --rowz 1M", "--rowz is not a flag of bench logs"),
        ("cargo xtask bench --rows many", "is not a row count"),
        ("cargo xtask bench --target containr", "is not a target; choose one of"),
        ("CHBENCH_TARGET=containr cargo nextest run", "is not a target; choose one of"),
        ("CHBENCH_TARGET=$T cargo nextest run", "CHBENCH_TARGET comes from a variable"),
        ("cargo nextest run --profile nope", "nextest profile \"nope\" is not in .config/nextest.toml"),
        ("cargo nextest run --profile=\"$P\"", "the nextest profile comes from a variable"),
        ("cargo nextest run --no-such-flag", "unexpected argument '--no-such-flag'"),
        (
            "cargo nextest run --features chbench/containr",
            "feature \"chbench/containr\" is not in bench-tests/Cargo.toml",
        ),
        ("cargo clippy --features=xtask/nope", "feature \"xtask/nope\" is not in xtask/Cargo.toml"),
        ("cargo nextest run -F container", "feature \"container\" names no package"),
        ("cargo +nightly fmt", "cargo needs its subcommand first"),
        ("cargo no-such-subcommand", "no such command"),
        ("echo ok\ncat <<EOF\ncargo xtask bnch\nEOF", "line 2: a here-document is not read"),
        ("timeout 60 cargo xtask bench", "cargo through timeout"),
        ("bash -c 'cargo xtask bench'", "cargo through bash"),
        ("\"$CARGO\" xtask bench", "the program $CARGO is not `cargo` as written"),
        ("v=\"$(cargo xtask --version)\"", "$(cargo xtask --version): cargo in a quoted `$(...)`"),
        ("echo `cargo xtask --version`", "in backquotes is not read"),
        ("echo ok\necho 'cargo", "line 2: a ' quote is not closed"),
    ] {
        let found = check_script(script);
        assert!(matches!(&found[..], [Err(problem)] if problem.contains(expected)), "{script}: {found:?}");
    }
}

#[test]
fn a_jobs_target_is_checked_from_its_matrix() {
    let problems = |target: &str, matrix: &str| {
        let job = format!("strategy: {{matrix: {{target: {matrix}}}}}, env: {{CHBENCH_TARGET: '{target}'}}");
        problems_in("w.yml", &format!("jobs:\n  tests: {{{job}, steps: [{{run: cargo fmt --check}}]}}\n"))
    };
    assert_eq!(problems("embedded", "[x]"), (Vec::new(), 1));
    for (target, matrix, expected) in [
        ("${{ matrix.target }}", "[embedded, containr]", "w.yml: job tests: CHBENCH_TARGET=containr: "),
        ("${{ matrix.other }}", "[embedded]", "w.yml: job tests: CHBENCH_TARGET names matrix.other, which is not"),
        ("${{ inputs.target }}", "[embedded]", "only a written value or a matrix entry can be checked"),
    ] {
        let found = problems(target, matrix).0;
        assert!(found.len() == 1 && found[0].contains(expected), "{target}: {found:?}");
    }
}
