//! Every command the GitHub workflows run exists: each `cargo xtask` subcommand with its
//! flags and values, each `cargo` subcommand, each nextest profile, and every other program
//! (a shell builtin, or a program on PATH). A workflow cannot run here (no GitHub), so this
//! is what keeps it from naming a command that was renamed or never existed.
//!
//! The workflows are parsed as YAML (serde-saphyr, the parser the eks feature already
//! uses): `run: |` and `run: >` blocks, quoting and comments are YAML's business, and a
//! line-based reading would get them wrong. Each `run:` script is then split into simple
//! commands by a small shell lexer that understands what workflows use (line continuations,
//! quotes, `&&`, `||`, `|`, `;`, redirections, `$(...)`, `if`/`then`/`fi`, `{ }`, leading
//! `NAME=value` assignments, `${{ }}` expressions) and refuses the rest by name (here-docs,
//! backquotes, `case`, arithmetic), so that a construct it cannot read fails the test
//! instead of hiding a command.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

/// Shell builtins and words that need no program.
const BUILTINS: &[&str] =
    &[":", "[", "cd", "echo", "exit", "export", "false", "printf", "set", "shift", "test", "true"];

/// Programs the GitHub-hosted Ubuntu runner has that a machine of this project may lack.
const ON_THE_RUNNER: &[&str] = &["docker"];

/// What an argument that comes from a variable or an expression is checked as: it parses
/// as a path, a run id, a row count and a number.
const STAND_IN: &str = "1";

#[derive(Debug, Deserialize)]
struct Workflow {
    #[serde(default)]
    jobs: BTreeMap<String, Job>,
}

#[derive(Debug, Deserialize)]
struct Job {
    #[serde(default)]
    steps: Vec<Step>,
    /// The job's variables: `CHBENCH_TARGET` here chooses the target of every step.
    #[serde(default)]
    env: BTreeMap<String, String>,
    strategy: Option<Strategy>,
}

#[derive(Debug, Deserialize)]
struct Strategy {
    /// `name: [values]`, and `include`/`exclude` lists, which are read as values too.
    #[serde(default)]
    matrix: BTreeMap<String, serde_json::Value>,
}

impl Job {
    /// The values `CHBENCH_TARGET` takes in this job: written out, or each value of the
    /// matrix entry it names (`${{ matrix.target }}`). Any other expression cannot be
    /// checked, so it is an error.
    fn target_values(&self) -> Result<Vec<String>, String> {
        let Some(value) = self.env.get("CHBENCH_TARGET") else { return Ok(Vec::new()) };
        let Some(expression) = value.trim().strip_prefix("${{").and_then(|rest| rest.strip_suffix("}}")) else {
            return Ok(vec![value.clone()]);
        };
        let entry = expression.trim().strip_prefix("matrix.").ok_or_else(|| {
            format!("CHBENCH_TARGET is {value:?}: only a written value or a matrix entry can be checked")
        })?;
        let values = self
            .strategy
            .as_ref()
            .and_then(|strategy| strategy.matrix.get(entry))
            .and_then(|values| values.as_array())
            .ok_or_else(|| format!("CHBENCH_TARGET names matrix.{entry}, which is not a list in the job's matrix"))?;
        values
            .iter()
            .map(|value| value.as_str().map(str::to_string).ok_or_else(|| format!("matrix.{entry} holds {value}")))
            .collect()
    }
}

#[derive(Debug, Deserialize)]
struct Step {
    name: Option<String>,
    uses: Option<String>,
    run: Option<String>,
    shell: Option<String>,
}

/// One word of a command: its text with quotes removed, and whether any of it comes from
/// an expansion (`$VAR`, `$(...)`, `${{ }}`), whose value is not known here.
#[derive(Debug, Clone, PartialEq)]
struct Word {
    text: String,
    expanded: bool,
}

/// A simple command of a script: the `NAME=value` assignments before it, its words, and
/// the script line it starts on (1-based).
#[derive(Debug, Clone, PartialEq)]
struct ShellCommand {
    line: usize,
    env: Vec<(String, Word)>,
    words: Vec<Word>,
}

impl ShellCommand {
    fn text(&self) -> String {
        let env = self.env.iter().map(|(name, value)| format!("{name}={}", value.text));
        env.chain(self.words.iter().map(|word| word.text.clone())).collect::<Vec<_>>().join(" ")
    }
}

#[derive(Debug)]
enum Token {
    Word(Word, usize),
    /// Newline, `;`, `&&`, `||`, `|`, `&`, and the parentheses of a subshell.
    Separator,
    /// `>`, `>>`, `<`, `>&`, `&>`...: the next word is its target, not an argument.
    Redirect,
}

/// Splits a script into its simple commands, those inside `$(...)` included.
fn shell_commands(script: &str) -> Result<Vec<ShellCommand>, String> {
    let chars: Vec<char> = script.chars().collect();
    let mut lexer = Lexer { chars: &chars, at: 0, line: 1, substitutions: Vec::new() };
    let tokens = lexer.lex(false)?;
    let mut commands = group(tokens)?;
    commands.append(&mut lexer.substitutions);
    commands.sort_by_key(|command| command.line);
    Ok(commands)
}

struct Lexer<'a> {
    chars: &'a [char],
    at: usize,
    line: usize,
    /// The commands of every `$(...)` met so far.
    substitutions: Vec<ShellCommand>,
}

impl Lexer<'_> {
    fn peek(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    /// Takes `inner`, a character inside quotes, into `quoted` as it is, counting lines.
    fn take_quoted(&mut self, quoted: &mut Word, inner: char) {
        if inner == '\n' {
            self.line += 1;
        }
        quoted.text.push(inner);
        self.at += 1;
    }

    /// Tokens up to the end of the script, or (inside `$(...)`) up to its closing `)`.
    fn lex(&mut self, in_substitution: bool) -> Result<Vec<Token>, String> {
        let mut tokens = Vec::new();
        let mut word: Option<(Word, usize)> = None;
        let mut subshells = 0usize;
        fn open(word: &mut Option<(Word, usize)>, line: usize) -> &mut Word {
            &mut word.get_or_insert_with(|| (Word { text: String::new(), expanded: false }, line)).0
        }
        fn flush(word: &mut Option<(Word, usize)>, tokens: &mut Vec<Token>) {
            if let Some((word, line)) = word.take() {
                tokens.push(Token::Word(word, line));
            }
        }
        let line = self.line;
        while let Some(c) = self.peek(0) {
            // A word's line is the line of its first character.
            let here = self.line;
            match c {
                // A line continuation disappears, joining the lines.
                '\\' if self.peek(1) == Some('\n') => {
                    self.at += 2;
                    self.line += 1;
                }
                '\\' => {
                    let text = &mut open(&mut word, here).text;
                    text.extend(self.peek(1));
                    self.at += 2;
                }
                ' ' | '\t' => {
                    flush(&mut word, &mut tokens);
                    self.at += 1;
                }
                '\n' => {
                    flush(&mut word, &mut tokens);
                    tokens.push(Token::Separator);
                    self.line += 1;
                    self.at += 1;
                }
                '#' if word.is_none() => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.at += 1;
                    }
                }
                ';' | '|' => {
                    flush(&mut word, &mut tokens);
                    tokens.push(Token::Separator);
                    self.at += if matches!(self.peek(1), Some('|' | '&')) && c == '|' { 2 } else { 1 };
                    if c == ';' && self.peek(0) == Some(';') {
                        return Err("`;;` (case) is not understood".to_string());
                    }
                }
                '&' if self.peek(1) == Some('>') => {
                    flush(&mut word, &mut tokens);
                    tokens.push(Token::Redirect);
                    self.at += if self.peek(2) == Some('>') { 3 } else { 2 };
                }
                '&' => {
                    flush(&mut word, &mut tokens);
                    tokens.push(Token::Separator);
                    self.at += if self.peek(1) == Some('&') { 2 } else { 1 };
                }
                '>' | '<' => {
                    if c == '<' && self.peek(1) == Some('<') {
                        return Err(format!("line {}: here-documents and here-strings are not understood", self.line));
                    }
                    // `2>`: the digits are the descriptor, not a word.
                    if word.as_ref().is_some_and(|(w, _)| !w.expanded && w.text.chars().all(|d| d.is_ascii_digit())) {
                        word = None;
                    }
                    flush(&mut word, &mut tokens);
                    tokens.push(Token::Redirect);
                    self.at += 1;
                    if matches!(self.peek(0), Some('>' | '&')) {
                        self.at += 1;
                    }
                }
                '(' if word.is_none() => {
                    if self.peek(1) == Some('(') {
                        return Err(format!("line {}: `((` (arithmetic) is not understood", self.line));
                    }
                    subshells += 1;
                    tokens.push(Token::Separator);
                    self.at += 1;
                }
                ')' => {
                    flush(&mut word, &mut tokens);
                    self.at += 1;
                    if subshells == 0 {
                        if in_substitution {
                            return Ok(tokens);
                        }
                        return Err(format!("line {}: a `)` closes nothing", self.line));
                    }
                    subshells -= 1;
                    tokens.push(Token::Separator);
                }
                '\'' => {
                    let quoted = open(&mut word, here);
                    self.at += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err(format!("line {here}: a single quote is not closed")),
                            Some('\'') => break,
                            Some(inner) => self.take_quoted(quoted, inner),
                        }
                    }
                    self.at += 1;
                }
                '"' => {
                    let quoted = open(&mut word, here);
                    self.at += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err(format!("line {here}: a double quote is not closed")),
                            Some('"') => break,
                            Some('\\') if matches!(self.peek(1), Some('"' | '\\' | '$' | '`')) => {
                                quoted.text.extend(self.peek(1));
                                self.at += 2;
                            }
                            Some('\\') if self.peek(1) == Some('\n') => {
                                self.at += 2;
                                self.line += 1;
                            }
                            Some('$') => self.dollar(quoted)?,
                            Some('`') => return Err(format!("line {}: backquotes: use $(...)", self.line)),
                            Some(inner) => self.take_quoted(quoted, inner),
                        }
                    }
                    self.at += 1;
                }
                '$' => self.dollar(open(&mut word, here))?,
                '`' => return Err(format!("line {}: backquotes: use $(...)", self.line)),
                other => {
                    open(&mut word, here).text.push(other);
                    self.at += 1;
                }
            }
        }
        if in_substitution {
            return Err(format!("line {line}: a `$(` is not closed"));
        }
        if subshells > 0 {
            return Err(format!("line {line}: a `(` is not closed"));
        }
        flush(&mut word, &mut tokens);
        Ok(tokens)
    }

    /// An expansion at `$`: its text goes into `word`, which is marked as expanded; the
    /// commands of a `$(...)` are kept.
    fn dollar(&mut self, word: &mut Word) -> Result<(), String> {
        let begin = self.at;
        match (self.peek(1), self.peek(2)) {
            (Some('('), Some('(')) => return Err(format!("line {}: `$((` (arithmetic) is not understood", self.line)),
            (Some('('), _) => {
                self.at += 2;
                let tokens = self.lex(true)?;
                self.substitutions.extend(group(tokens)?);
            }
            // A GitHub expression, replaced before the shell runs: up to its `}}`.
            (Some('{'), Some('{')) => {
                while self.peek(0).is_some() && !(self.peek(0) == Some('}') && self.peek(1) == Some('}')) {
                    self.at += 1;
                }
                self.at = (self.at + 2).min(self.chars.len());
            }
            (Some('{'), _) => {
                while self.peek(0).is_some_and(|c| c != '}') {
                    self.at += 1;
                }
                self.at = (self.at + 1).min(self.chars.len());
            }
            (Some(c), _) if c.is_ascii_alphanumeric() || c == '_' => {
                self.at += 1;
                while self.peek(0).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    self.at += 1;
                }
            }
            (Some('?' | '#' | '@' | '*' | '!' | '-'), _) => self.at += 2,
            // A lone `$` is itself.
            _ => {
                word.text.push('$');
                self.at += 1;
                return Ok(());
            }
        }
        word.text.extend(&self.chars[begin..self.at]);
        word.expanded = true;
        Ok(())
    }
}

/// Words before the program that are not part of any command.
const RESERVED: &[&str] = &["if", "then", "else", "elif", "fi", "while", "until", "do", "done", "!", "{", "}", "time"];

/// Tokens into simple commands: redirections and their targets dropped, leading reserved
/// words dropped, leading assignments kept apart.
fn group(tokens: Vec<Token>) -> Result<Vec<ShellCommand>, String> {
    let mut commands = Vec::new();
    let mut current: Vec<(Word, usize)> = Vec::new();
    let mut redirect_target = false;
    let mut finish = |current: &mut Vec<(Word, usize)>| -> Result<(), String> {
        let mut words = std::mem::take(current).into_iter().peekable();
        let mut env = Vec::new();
        let mut line = None;
        while let Some((word, at)) = words.peek() {
            line.get_or_insert(*at);
            if RESERVED.contains(&word.text.as_str()) && !word.expanded {
                words.next();
            } else if let Some((name, value)) = assignment(word) {
                env.push((name, value));
                words.next();
            } else {
                break;
            }
        }
        let words: Vec<Word> = words.map(|(word, _)| word).collect();
        if let Some(first) = words.first()
            && !first.expanded
            && matches!(first.text.as_str(), "case" | "for" | "select" | "function")
        {
            return Err(format!("`{}` is not understood", first.text));
        }
        if !words.is_empty() || !env.is_empty() {
            commands.push(ShellCommand { line: line.unwrap_or(1), env, words });
        }
        Ok(())
    };
    for token in tokens {
        match token {
            Token::Separator => finish(&mut current)?,
            Token::Redirect => redirect_target = true,
            Token::Word(word, line) => {
                if !std::mem::take(&mut redirect_target) {
                    current.push((word, line));
                }
            }
        }
    }
    finish(&mut current)?;
    Ok(commands)
}

/// `NAME=value`, as the shell reads it before a command.
fn assignment(word: &Word) -> Option<(String, Word)> {
    let (name, value) = word.text.split_once('=')?;
    let mut chars = name.chars();
    let identifier = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    identifier.then(|| (name.to_string(), Word { text: value.to_string(), expanded: word.expanded }))
}

/// What a command's check knows of the workspace.
struct Checker {
    workspace: PathBuf,
    nextest_profiles: BTreeSet<String>,
}

impl Checker {
    fn new() -> Checker {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        let config = std::fs::read_to_string(workspace.join(".config/nextest.toml")).expect("cannot read nextest.toml");
        let config: toml::Table = toml::from_str(&config).expect("nextest.toml is not TOML");
        let mut nextest_profiles: BTreeSet<String> = match config.get("profile") {
            Some(toml::Value::Table(profiles)) => profiles.keys().cloned().collect(),
            _ => BTreeSet::new(),
        };
        // nextest's own, there whether or not the file names it.
        nextest_profiles.insert("default".to_string());
        Checker { workspace, nextest_profiles }
    }

    /// Why `command` would not run as written, if it would not.
    fn check(&self, command: &ShellCommand) -> Result<(), String> {
        for (name, value) in &command.env {
            if name == "CHBENCH_TARGET" {
                if value.expanded {
                    return Err("CHBENCH_TARGET comes from a variable: its value cannot be checked".to_string());
                }
                // The same parse as the tests and xtask make of it.
                self.run_for_help(Path::new(env!("CARGO_BIN_EXE_xtask")), &["bench", "--target", &value.text])?;
            }
        }
        let Some(program) = command.words.first() else { return Ok(()) };
        if program.expanded {
            return Err(format!("the program {} comes from a variable: it cannot be checked", program.text));
        }
        let args: Vec<&Word> = command.words[1..].iter().collect();
        match program.text.as_str() {
            name if BUILTINS.contains(&name) => Ok(()),
            "cargo" => self.check_cargo(&args),
            name if ON_THE_RUNNER.contains(&name) => Ok(()),
            name if self.exists(name) => Ok(()),
            name => Err(format!("{name} is not a shell builtin, not known to be on the runner, and not on PATH")),
        }
    }

    /// A program on PATH, or a path in the workspace.
    fn exists(&self, name: &str) -> bool {
        if name.contains('/') {
            return self.workspace.join(name).is_file();
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path).any(|dir| dir.join(name).is_file())
    }

    /// `cargo SUBCOMMAND ARGS`: the subcommand exists and takes these flags and values
    /// (`cargo xtask` through the xtask binary built for this test); a nextest profile is
    /// in `.config/nextest.toml`.
    fn check_cargo(&self, args: &[&Word]) -> Result<(), String> {
        let Some(subcommand) = args.first() else { return Err("cargo without a subcommand".to_string()) };
        if subcommand.expanded || subcommand.text.starts_with(['-', '+']) {
            return Err("the cargo subcommand must come first, as written text".to_string());
        }
        let texts: Vec<&str> =
            args.iter().map(|word| if word.expanded { STAND_IN } else { word.text.as_str() }).collect();
        match subcommand.text.as_str() {
            "xtask" => self.run_for_help(Path::new(env!("CARGO_BIN_EXE_xtask")), &texts[1..]),
            "nextest" => {
                self.check_nextest_profile(args)?;
                self.run_for_help(&cargo(), &texts)
            }
            _ => self.run_for_help(&cargo(), &texts),
        }
    }

    fn check_nextest_profile(&self, args: &[&Word]) -> Result<(), String> {
        for (index, word) in args.iter().enumerate() {
            let profile = match word.text.as_str() {
                "--profile" | "-P" => args.get(index + 1).copied(),
                text if text.starts_with("--profile=") => Some(*word),
                _ => continue,
            };
            let Some(profile) = profile else { return Err("--profile without a value".to_string()) };
            if profile.expanded {
                return Err("the nextest profile comes from a variable: it cannot be checked".to_string());
            }
            let name = profile.text.strip_prefix("--profile=").unwrap_or(&profile.text);
            if !self.nextest_profiles.contains(name) {
                return Err(format!(
                    "nextest profile {name:?} is not in .config/nextest.toml (there: {})",
                    self.nextest_profiles.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Runs `program ARGS --help` (`--help` before any `--`), which parses every argument
    /// before it and then only prints help: it fails on an unknown subcommand, flag or
    /// value, and runs nothing.
    fn run_for_help(&self, program: &Path, args: &[&str]) -> Result<(), String> {
        let split = args.iter().position(|arg| *arg == "--").unwrap_or(args.len());
        let mut with_help: Vec<&str> = args[..split].to_vec();
        with_help.push("--help");
        let output = Command::new(program)
            .args(&with_help)
            .current_dir(&self.workspace)
            .env_remove("CHBENCH_TARGET")
            .output()
            .map_err(|error| format!("cannot run {}: {error}", program.display()))?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let reason = stderr.lines().find(|line| !line.trim().is_empty()).unwrap_or("no message").trim().to_string();
        Err(format!("`{} {}` fails: {reason}", program.display(), with_help.join(" ")))
    }
}

/// The cargo running this test, as nextest and cargo say; else the one on PATH.
fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("cargo"))
}

/// What a workflow runs: each `run:` step (where it is, job and step, and its script) and
/// each job's values of `CHBENCH_TARGET` (where, and the values).
struct Runs {
    steps: Vec<(String, String)>,
    targets: Vec<(String, Vec<String>)>,
}

/// Every `run:` step of a workflow and every job's target values.
fn run_steps(text: &str) -> Result<Runs, String> {
    let workflow: Workflow = serde_saphyr::from_str(text).map_err(|error| format!("not a workflow: {error}"))?;
    let mut steps = Vec::new();
    let mut targets = Vec::new();
    for (job_id, job) in &workflow.jobs {
        targets.push((format!("job {job_id}"), job.target_values().map_err(|error| format!("job {job_id}: {error}"))?));
        for (index, step) in job.steps.iter().enumerate() {
            let Some(script) = &step.run else { continue };
            let place = match &step.name {
                Some(name) => format!("job {job_id}, step {name:?}"),
                None => format!("job {job_id}, step {}", index + 1),
            };
            if step.uses.is_some() {
                return Err(format!("{place} has both `uses` and `run`"));
            }
            if let Some(shell) = &step.shell
                && !matches!(shell.split_whitespace().next(), Some("bash" | "sh"))
            {
                return Err(format!("{place} runs its script with {shell}: only bash and sh scripts are checked"));
            }
            steps.push((place, script.clone()));
        }
    }
    Ok(Runs { steps, targets })
}

/// Every problem in one workflow's commands, each naming where it is; and how many
/// commands were checked.
fn problems_in(checker: &Checker, file: &str, text: &str) -> (Vec<String>, usize) {
    let Runs { steps, targets } = match run_steps(text) {
        Ok(found) => found,
        Err(error) => return (vec![format!("{file}: {error}")], 0),
    };
    let mut problems = Vec::new();
    let mut checked = 0;
    for (place, values) in targets {
        for value in values {
            // The same parse as the tests and xtask make of it.
            if let Err(problem) =
                checker.run_for_help(Path::new(env!("CARGO_BIN_EXE_xtask")), &["bench", "--target", &value])
            {
                problems.push(format!("{file}: {place}: CHBENCH_TARGET={value}: {problem}"));
            }
        }
    }
    for (place, script) in steps {
        let commands = match shell_commands(&script) {
            Ok(commands) => commands,
            Err(error) => {
                problems.push(format!("{file}: {place}: {error}"));
                continue;
            }
        };
        for command in commands {
            checked += 1;
            if let Err(problem) = checker.check(&command) {
                problems.push(format!("{file}: {place}, line {}: `{}`: {problem}", command.line, command.text()));
            }
        }
    }
    (problems, checked)
}

#[test]
fn every_command_the_workflows_run_exists() {
    let checker = Checker::new();
    let folder = checker.workspace.join(".github/workflows");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", folder.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yml" || ext == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no workflow in {}", folder.display());
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let name = file.strip_prefix(&checker.workspace).unwrap().display().to_string();
        let (found, checked) = problems_in(&checker, &name, &text);
        assert!(checked > 0 || !found.is_empty(), "{name}: no command found in any run step");
        problems.extend(found);
    }
    assert!(problems.is_empty(), "commands in the workflows that would not run:\n{}", problems.join("\n"));
}

/// The words of each command, for the lexer tests.
fn words(script: &str) -> Vec<Vec<String>> {
    let commands = shell_commands(script).unwrap_or_else(|error| panic!("{error}"));
    commands
        .iter()
        .map(|command| {
            let env = command.env.iter().map(|(name, value)| format!("{name}={}", value.text));
            env.chain(command.words.iter().map(|word| word.text.clone())).collect()
        })
        .collect()
}

#[test]
fn commands_are_found_in_blocks_continuations_and_substitutions() {
    let workflow = r#"
on: push
jobs:
  one:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@0000000000000000000000000000000000000000 # v0
      - name: Block
        run: |
          # a comment, then a continued line
          CHBENCH_TARGET=container cargo nextest run \
            --profile ci
          changed="$(git status --porcelain -- snapshots/ | sort)"
          if [ -n "$changed" ]; then
            echo "changed: $changed" >&2
            exit 1
          fi
          { echo '## Bench'; grep -v '^!\[' "$report"; } >> "$GITHUB_STEP_SUMMARY"
          cargo xtask bench --run-id ${{ github.run_id }} 2>&1 | tee log && cat log || true
      - name: Folded
        run: >
          cargo fmt
          --check
"#;
    let steps = run_steps(workflow).unwrap().steps;
    assert_eq!(steps.len(), 2);
    assert_eq!(
        words(&steps[0].1),
        [
            vec!["CHBENCH_TARGET=container", "cargo", "nextest", "run", "--profile", "ci"],
            vec!["changed=$(git status --porcelain -- snapshots/ | sort)"],
            vec!["git", "status", "--porcelain", "--", "snapshots/"],
            vec!["sort"],
            vec!["[", "-n", "$changed", "]"],
            vec!["echo", "changed: $changed"],
            vec!["exit", "1"],
            vec!["echo", "## Bench"],
            vec!["grep", "-v", "^!\\[", "$report"],
            vec!["cargo", "xtask", "bench", "--run-id", "${{ github.run_id }}"],
            vec!["tee", "log"],
            vec!["cat", "log"],
            vec!["true"],
        ]
    );
    let first = &shell_commands(&steps[0].1).unwrap()[0];
    assert_eq!((first.line, first.env[0].0.as_str()), (2, "CHBENCH_TARGET"));
    assert_eq!(words(&steps[1].1), [vec!["cargo", "fmt", "--check"]]);
    for unreadable in ["cat <<EOF\nx\nEOF", "echo `date`", "case $x in a) ;; esac", "echo $((1 + 2))", "echo $(date"] {
        assert!(shell_commands(unreadable).is_err(), "{unreadable:?} was read");
    }
}

#[test]
fn a_jobs_target_is_checked_from_its_matrix() {
    let checker = Checker::new();
    let workflow = |target: &str, matrix: &str| {
        format!(
            "jobs:\n  tests:\n    strategy:\n      matrix:\n        target: {matrix}\n    env:\n      CHBENCH_TARGET: \
             {target}\n    steps:\n      - run: cargo fmt --check\n"
        )
    };
    let problems = |text: String| problems_in(&checker, "w.yml", &text).0;
    assert_eq!(problems(workflow("${{ matrix.target }}", "[embedded, container]")), Vec::<String>::new());
    assert_eq!(problems(workflow("embedded", "[x]")), Vec::<String>::new());
    let found = problems(workflow("${{ matrix.target }}", "[embedded, containr]"));
    assert!(found.len() == 1 && found[0].contains("CHBENCH_TARGET=containr"), "{found:?}");
    let found = problems(workflow("${{ matrix.other }}", "[embedded]"));
    assert!(found.len() == 1 && found[0].contains("not a list in the job's matrix"), "{found:?}");
    let found = problems(workflow("${{ inputs.target }}", "[embedded]"));
    assert!(found.len() == 1 && found[0].contains("only a written value or a matrix entry"), "{found:?}");
}

#[test]
fn a_missing_subcommand_flag_value_profile_or_program_is_refused() {
    let checker = Checker::new();
    let check = |script: &str| {
        let commands = shell_commands(script).unwrap();
        assert_eq!(commands.len(), 1, "{script}");
        checker.check(&commands[0])
    };
    for good in [
        "cargo xtask bench --rows 1M --target container --results-dir \"$RUNNER_TEMP/bench\"",
        "cargo xtask measure --target embedded q.sql",
        "CHBENCH_TARGET=container INSTA_UPDATE=no cargo nextest run --profile ci",
        "cargo fmt --check",
        "git status --porcelain",
        "echo hello",
    ] {
        assert_eq!(check(good), Ok(()), "{good}");
    }
    for (bad, expected) in [
        ("cargo xtask bnch", "unrecognized subcommand 'bnch'"),
        ("cargo xtask bench --rowz 1M", "unexpected argument '--rowz'"),
        ("cargo xtask bench --rows many", "is not a row count"),
        ("cargo xtask bench --target containr", "choose one of auto, embedded, container, url"),
        ("CHBENCH_TARGET=containr cargo nextest run", "choose one of auto, embedded, container, url"),
        ("cargo nextest run --profile nope", "nextest profile \"nope\" is not in .config/nextest.toml"),
        ("cargo nextest run --no-such-flag", "unexpected argument '--no-such-flag'"),
        ("cargo no-such-subcommand", "no such command"),
        ("no-such-program-here --version", "not on PATH"),
        ("$TOOL run", "comes from a variable"),
    ] {
        let problem = check(bad).expect_err(bad);
        assert!(problem.contains(expected), "{bad}: {problem}");
    }
}
