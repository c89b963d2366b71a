//! Finding packs under `fixtures/` and loading one: the claims file read and parsed, the
//! folder's SQL files listed, each query's designs, scales, claims and broken designs
//! resolved and checked, and every SQL file rendered. Nothing runs, and every mistake is
//! one line naming its file (and line).

use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use toml::Spanned;

use super::claims::{self, Claim, ClaimsFile, DeclaredTable, QuerySection};
use super::{AlsoMeasure, CLAIMS_FILE, ExpectedError, Pack, Query, SqlFile};
use crate::files::{fixtures_root, shown};
use crate::fixtures::{Fixture, Params};

/// Every pack under `fixtures/`, loaded: each folder with a `claims.toml`, by name. A pack
/// that fails its checks is returned as its error, so the others still run.
pub fn discover() -> Result<Vec<(String, Result<Pack>)>> {
    discover_in(&fixtures_root())
}

/// Every pack under `root`, as [`discover`] finds those under `fixtures/`.
pub fn discover_in(root: &Path) -> Result<Vec<(String, Result<Pack>)>> {
    Ok(pack_names_in(root)?.into_iter().map(|name| (name.clone(), Pack::load(&root.join(&name)))).collect())
}

/// The names of the packs under `fixtures/` (folders with a `claims.toml`), sorted;
/// nothing is loaded.
pub fn pack_names() -> Result<Vec<String>> {
    pack_names_in(&fixtures_root())
}

fn pack_names_in(root: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(root).with_context(|| format!("cannot list {}", shown(root)))? {
        let folder = entry.with_context(|| format!("cannot list {}", shown(root)))?.path();
        if folder.join(CLAIMS_FILE).is_file() {
            names.push(folder.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default());
        }
    }
    names.sort();
    Ok(names)
}

/// The pack names for an error message: `logs, tenants`, or `none`.
pub fn known_packs() -> Result<String> {
    known_packs_in(&fixtures_root())
}

/// The pack names under `root` for an error message, as [`known_packs`] gives them.
pub fn known_packs_in(root: &Path) -> Result<String> {
    let names = pack_names_in(root)?;
    Ok(if names.is_empty() { "none".to_string() } else { names.join(", ") })
}

/// Where a pack named on the command line is: under `CHBENCH_PACKS_DIR` when it is set
/// (a pack tried out of the tree, as `new-pack --dir` writes one and the packs harness
/// runs it), else under `fixtures/`.
pub fn packs_root() -> PathBuf {
    match std::env::var_os(super::PACKS_DIR_ENV) {
        Some(folder) if !folder.is_empty() => PathBuf::from(folder),
        _ => fixtures_root(),
    }
}

impl Pack {
    /// `fixtures/<name>/`.
    pub fn named(name: &str) -> Result<Pack> {
        let folder = fixtures_root().join(name);
        if !folder.join(CLAIMS_FILE).is_file() {
            bail!("no pack {name}: {} has no {CLAIMS_FILE} (packs here: {})", shown(&folder), known_packs()?);
        }
        Pack::load(&folder)
    }

    /// Reads and checks a pack folder; nothing runs. Every error is one line naming the
    /// file (and line) at fault.
    pub fn load(folder: &Path) -> Result<Pack> {
        let name = folder.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        check_name(&name, &format!("the pack folder {}", shown(folder)))?;
        if crate::guard::ENGINE_DATABASES.contains(&name.as_str()) {
            bail!(
                "the pack folder {}: {name:?} is a database the engine has of its own ({}), and a pack's tables go \
                 in a database named after the pack: name the pack otherwise",
                shown(folder),
                crate::guard::ENGINE_DATABASES.join(", ")
            );
        }
        // Before anything of it is read: a link's target would be quoted in the errors.
        check_own_folder(folder)?;
        check_own_file(folder, &folder.join(CLAIMS_FILE))?;
        let source = ClaimsSource::read(folder)?;
        let parsed = claims::parse(&source.file, &source.text)?;
        let found = FolderFiles::list(folder)?;
        let generator = generator_files(folder, parsed.generator.as_ref(), &source)?;
        let sql = found.designs.iter().chain(&found.broken).chain(&found.queries).map(|file| &file.path);
        for path in sql.chain(&generator) {
            check_own_file(folder, path)?;
        }
        found.check_names()?;
        let designs = chosen_designs(&found.designs, parsed.designs.as_ref(), &source)?;
        let design_names: Vec<String> = designs.iter().map(|design| design.name.clone()).collect();
        let scales = check_scales(parsed.scales.get_ref(), &source.at(parsed.scales.span()))?;
        let declared = declared_tables(&designs)?;
        let table_claims = table_claims(&parsed, &design_names, &source)?;
        let defaults = PackDefaults {
            designs: &design_names,
            scales: &scales,
            broken: &found.broken,
            source: &source,
            table_claims: &table_claims,
            declared: &declared,
        };
        let queries = defaults.queries(&found.queries, &parsed)?;
        let pack = Pack { name, folder: folder.to_path_buf(), designs, broken: found.broken, generator, queries };
        check_sql_files(&pack)?;
        Ok(pack)
    }
}

/// The claims file's name, as errors show it, and its text: what turns a span of it into
/// `file:line`.
struct ClaimsSource {
    file: String,
    text: String,
}

impl ClaimsSource {
    fn read(folder: &Path) -> Result<ClaimsSource> {
        let path = folder.join(CLAIMS_FILE);
        let file = shown(&path);
        let text = fs::read_to_string(&path).with_context(|| format!("cannot read {file}"))?;
        Ok(ClaimsSource { file, text })
    }

    fn line(&self, span: Range<usize>) -> usize {
        claims::line_of(&self.text, span.start)
    }

    fn at(&self, span: Range<usize>) -> String {
        format!("{}:{}", self.file, self.line(span))
    }
}

/// The SQL files of a pack folder's `designs/`, `broken/` and `queries/`.
struct FolderFiles {
    designs: Vec<SqlFile>,
    broken: Vec<SqlFile>,
    queries: Vec<SqlFile>,
}

impl FolderFiles {
    /// Lists the three folders: at least one design and one query, and no design in both
    /// `designs/` and `broken/`.
    fn list(folder: &Path) -> Result<FolderFiles> {
        let found = FolderFiles {
            designs: sql_files(&folder.join("designs"))?,
            broken: sql_files(&folder.join("broken"))?,
            queries: sql_files(&folder.join("queries"))?,
        };
        if found.designs.is_empty() {
            bail!("{} holds no design: put each CREATE TABLE in designs/<design>.sql", shown(folder));
        }
        if found.queries.is_empty() {
            bail!("{} holds no query: put each SELECT in queries/<query>.sql", shown(folder));
        }
        // A case names its design alone: one name in both folders would run the good
        // schema where the broken one was meant.
        let in_both = found.broken.iter().find(|broken| found.designs.iter().any(|design| design.name == broken.name));
        if let Some(both) = in_both {
            bail!(
                "{}: design {} is in both designs/ and broken/; give the broken one another name",
                shown(folder),
                both.name
            );
        }
        Ok(found)
    }

    /// Every file's name can name a test, a dataset and a snapshot.
    fn check_names(&self) -> Result<()> {
        for file in self.designs.iter().chain(&self.broken).chain(&self.queries) {
            check_name(&file.name, &shown(&file.path))?;
        }
        Ok(())
    }
}

/// The designs queries run on unless they say otherwise: those the claims file lists, in
/// its order, else every file in `designs/`.
fn chosen_designs(
    found: &[SqlFile],
    listed: Option<&Spanned<Vec<Spanned<String>>>>,
    source: &ClaimsSource,
) -> Result<Vec<SqlFile>> {
    let Some(listed) = listed else { return Ok(found.to_vec()) };
    let mut designs = Vec::new();
    for design in checked_design_list(listed, source)? {
        let name = design.get_ref();
        let file = found
            .iter()
            .find(|file| file.name == *name)
            .with_context(|| format!("{}: design {name} has no file designs/{name}.sql", source.at(design.span())))?;
        designs.push(file.clone());
    }
    Ok(designs)
}

/// What each query's section is resolved against: the pack's designs and scales, the
/// files in `broken/`, and the claims file, for errors.
struct PackDefaults<'a> {
    designs: &'a [String],
    scales: &'a [u64],
    broken: &'a [SqlFile],
    source: &'a ClaimsSource,
    /// The `[table]` section's claims, which every query's cases check.
    table_claims: &'a [Claim],
    /// Each design's CREATE TABLE, by design (`None`: no column list to check names by).
    declared: &'a [(String, Option<DeclaredTable>)],
}

impl PackDefaults<'_> {
    /// A query per file in `queries/`, by name; then every section of the claims file
    /// must have had its file.
    fn queries(&self, files: &[SqlFile], parsed: &ClaimsFile) -> Result<Vec<Query>> {
        let mut queries = Vec::new();
        for file in files {
            let section = parsed.queries.iter().find(|(name, _)| *name.get_ref() == file.name);
            queries.push(self.query(file, section.map(|(_, section)| section))?);
        }
        for name in parsed.queries.keys() {
            if !files.iter().any(|file| file.name == *name.get_ref()) {
                bail!(
                    "{}: query {} has no file queries/{}.sql",
                    self.source.at(name.span()),
                    name.get_ref(),
                    name.get_ref()
                );
            }
        }
        Ok(queries)
    }

    /// The query of `file`, as its section (if any) says.
    fn query(&self, file: &SqlFile, section: Option<&QuerySection>) -> Result<Query> {
        let mut query = Query {
            name: file.name.clone(),
            file: file.path.clone(),
            designs: self.designs.to_vec(),
            scales: self.scales.to_vec(),
            claims: Vec::new(),
            broken: Vec::new(),
            answer_varies: false,
            answer_may_be_empty: false,
            expected_error: None,
            expected_errors_on: Vec::new(),
        };
        let Some(section) = section else {
            self.add_table_claims(&mut query)?;
            self.check_claims_fit(&query)?;
            return Ok(query);
        };
        if let Some(listed) = &section.designs {
            query.designs = self.query_designs(listed)?;
        }
        if let Some(scales) = &section.scales {
            query.scales = check_scales(scales.get_ref(), &self.source.at(scales.span()))?;
        }
        let line = |span: Range<usize>| self.source.line(span);
        query.claims = claims::flatten(section, &line).map_err(|error| anyhow!("{}:{error}", self.source.file))?;
        query.answer_varies = section.answer_varies.as_ref().is_some_and(|varies| *varies.get_ref());
        query.answer_may_be_empty = section.answer_may_be_empty.as_ref().is_some_and(|may| *may.get_ref());
        if let Some(error) = &section.error {
            query.expected_error = Some(self.expected_error(error, &query, section)?);
            // Nothing is measured of a statement that fails: no claim, not even the table's.
            return Ok(query);
        }
        for (design, on) in &section.on {
            if let Some(error) = &on.get_ref().error {
                let expected = self.expected_error_on(error, &query, design)?;
                query.expected_errors_on.push(expected);
            }
        }
        self.add_table_claims(&mut query)?;
        self.check_claims_fit(&query)?;
        query.broken = self.broken_designs(section, &query)?;
        Ok(query)
    }

    /// `on.<design>.error = "CODE"`: an error code, on one of the query's designs, where
    /// no claim of the query is limited to it or compares with it (the design's case
    /// measures nothing), and with no claim that compares every design's answer.
    fn expected_error_on(
        &self,
        error: &Spanned<String>,
        query: &Query,
        design: &Spanned<String>,
    ) -> Result<ExpectedError> {
        let (code, location) = (error.get_ref(), self.source.at(error.span()));
        check_error_code(code, &location)?;
        let design_name = design.get_ref();
        known_design(&query.designs, "this query's designs", design_name, || location.clone())?;
        let measured_there = |claim: &&Claim| {
            claim.only_on.as_deref() == Some(design_name.as_str())
                || claim.rule.designs_named().contains(&design_name.as_str())
                || claim.name == "same_answer_on_every_design"
        };
        if let Some(claim) = query.claims.iter().find(measured_there) {
            bail!(
                "{}:{}: {} on query {}, which must fail with {code} on design {design_name} ({location}): a failed \
                 statement measures nothing to claim about or compare with",
                self.source.file,
                claim.line,
                claim.name,
                query.name
            );
        }
        Ok(ExpectedError {
            code: code.clone(),
            line: self.source.line(error.span()),
            design: Some(design_name.clone()),
        })
    }

    /// `error = "CODE"`: an error code (`TOO_MANY_ROWS`, as the engine names it in
    /// `(...)` after its message), on a query with no claims and no broken design.
    fn expected_error(&self, error: &Spanned<String>, query: &Query, section: &QuerySection) -> Result<ExpectedError> {
        let (code, location) = (error.get_ref(), self.source.at(error.span()));
        check_error_code(code, &location)?;
        if let Some(claim) = query.claims.first() {
            bail!(
                "{}:{}: {} on query {}, which must fail with {code}: a failed statement measures nothing to claim about",
                self.source.file,
                claim.line,
                claim.name,
                query.name
            );
        }
        if let Some((design, _)) = section.broken.iter().next() {
            bail!(
                "{}: broken.{} on query {}, which must fail with {code} on every design",
                self.source.at(design.span()),
                design.get_ref(),
                query.name
            );
        }
        Ok(ExpectedError { code: code.clone(), line: self.source.line(error.span()), design: None })
    }

    /// The `[table]` claims that apply on the query's designs, among its own in the
    /// file's order. A query that names none of the designs' tables (`SELECT 1`, a floor
    /// to compare with) has no table to check them on, so it takes none.
    fn add_table_claims(&self, query: &mut Query) -> Result<()> {
        if !self.names_a_declared_table(query)? {
            return Ok(());
        }
        let applies = |claim: &&Claim| claim.only_on.as_ref().is_none_or(|design| query.designs.contains(design));
        query.claims.extend(self.table_claims.iter().filter(applies).cloned());
        query.claims.sort_by_key(|claim| claim.line);
        Ok(())
    }

    /// Whether the query's text names, as a word of code, a table one of its designs
    /// creates (any, when a design declares none this can read).
    fn names_a_declared_table(&self, query: &Query) -> Result<bool> {
        let tables: Vec<&str> = self
            .declared
            .iter()
            .filter(|(design, _)| query.designs.contains(design))
            .map(|(_, declared)| declared.as_ref().map(|declared| declared.table.as_str()))
            .collect::<Option<_>>()
            .unwrap_or_default();
        if tables.is_empty() {
            return Ok(true);
        }
        let statement = Fixture::read(&query.file)?.render_one(&Params::new().with("rows", 1))?;
        Ok(crate::sql::code_words(&statement).iter().any(|word| {
            let word = word.text.rsplit('.').next().unwrap_or(word.text);
            tables.iter().any(|table| word.eq_ignore_ascii_case(table.rsplit('.').next().unwrap_or(table)))
        }))
    }

    /// The columns and skip indexes a claim names, in the CREATE TABLE of each design it
    /// is checked on (broken designs aside: missing an index may be what breaks them).
    fn check_names(&self, claim: &Claim, query: &Query) -> Result<()> {
        let on: Vec<&String> = match &claim.only_on {
            Some(design) => vec![design],
            None => query.designs.iter().collect(),
        };
        for design in on {
            let Some((_, Some(declared))) = self.declared.iter().find(|(name, _)| name == design) else { continue };
            let named = [
                ("column", "columns", claim.rule.columns_named(), &declared.columns),
                ("skip index", "skip indexes", claim.rule.skip_indexes_named(), &declared.skip_indexes),
            ];
            for (what, plural, names, known) in named {
                for name in names {
                    if known.iter().any(|known| known == name) {
                        continue;
                    }
                    let close = known.iter().find(|known| strsim::damerau_levenshtein(known, name) <= 2);
                    let close = close
                        .or_else(|| known.iter().find(|known| known.eq_ignore_ascii_case(name)))
                        .map(|known| format!("; did you mean {known}?"))
                        .unwrap_or_default();
                    let present = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                    bail!(
                        "{}:{}: {} names {what} {name}, which table {} of design {design} does not have \
                         (designs/{design}.sql declares {plural}: {present}{close})",
                        self.source.file,
                        claim.line,
                        claim.name,
                        declared.table
                    );
                }
            }
        }
        Ok(())
    }

    /// A query's own `designs`: a subset of the pack's.
    fn query_designs(&self, listed: &Spanned<Vec<Spanned<String>>>) -> Result<Vec<String>> {
        let listed = checked_design_list(listed, self.source)?;
        for design in listed {
            known_design(self.designs, "the pack's designs", design.get_ref(), || self.source.at(design.span()))?;
        }
        Ok(listed.iter().map(|design| design.get_ref().clone()).collect())
    }

    /// Each claim where it can be checked: the design it is limited to runs the query, the
    /// designs it names are the pack's, and the query gives it something to compare.
    fn check_claims_fit(&self, query: &Query) -> Result<()> {
        for claim in &query.claims {
            let location = || format!("{}:{}", self.source.file, claim.line);
            if let Some(design) = &claim.only_on {
                known_design(&query.designs, "this query's designs", design, location)?;
            }
            for design in claim.rule.designs_named() {
                known_design(self.designs, "the pack's designs", design, location)?;
            }
            if let Some(reason) = claim.rule.refusal(query) {
                bail!("{}: {} {reason}", location(), claim.name);
            }
            self.check_names(claim, query)?;
        }
        // A case measures the query once without a skip index: one index per query.
        let mut without = query.claims.iter().filter(|claim| claim.rule.also_measure() != AlsoMeasure::Nothing);
        if let Some(first) = without.next()
            && let Some(other) = without.find(|claim| claim.rule.also_measure() != first.rule.also_measure())
        {
            bail!(
                "{}:{}: {} measures without another skip index than {} (line {}): rows dropped are measured for one \
                 skip index per query; make the other a granules_dropped_share claim",
                self.source.file,
                other.line,
                other.name,
                first.name,
                first.line
            );
        }
        Ok(())
    }

    /// `broken.<design> = "<claim>"`: a file in `broken/`, and a claim the query makes on
    /// every design.
    fn broken_designs(&self, section: &QuerySection, query: &Query) -> Result<Vec<(String, String)>> {
        let mut broken_designs = Vec::new();
        for (design, violated) in &section.broken {
            if !self.broken.iter().any(|found| found.name == *design.get_ref()) {
                bail!(
                    "{}: broken design {} has no file broken/{}.sql",
                    self.source.at(design.span()),
                    design.get_ref(),
                    design.get_ref()
                );
            }
            let on_every_design: Vec<&str> =
                query.claims.iter().filter(|claim| claim.only_on.is_none()).map(|claim| claim.name.as_str()).collect();
            if !on_every_design.contains(&violated.get_ref().as_str()) {
                bail!(
                    "{}: {} is not a claim of query {} (its claims: {})",
                    self.source.at(violated.span()),
                    violated.get_ref(),
                    query.name,
                    if on_every_design.is_empty() { "none".to_string() } else { on_every_design.join(", ") }
                );
            }
            broken_designs.push((design.get_ref().clone(), violated.get_ref().clone()));
        }
        Ok(broken_designs)
    }
}

/// The names each design's CREATE TABLE declares, by design.
fn declared_tables(designs: &[SqlFile]) -> Result<Vec<(String, Option<DeclaredTable>)>> {
    let params = Params::new().with("rows", 1);
    designs
        .iter()
        .map(|design| {
            let statements = Fixture::read(&design.path)?.render(&params)?;
            Ok((design.name.clone(), claims::declared_table(statements.iter().map(|statement| statement.sql.as_str()))))
        })
        .collect()
}

/// The `[table]` section's claims, each limited to one of the pack's designs if to any,
/// comparing with the pack's designs only.
fn table_claims(parsed: &ClaimsFile, designs: &[String], source: &ClaimsSource) -> Result<Vec<Claim>> {
    let line = |span: Range<usize>| source.line(span);
    let claims = claims::flatten_table(parsed, &line).map_err(|error| anyhow!("{}:{error}", source.file))?;
    for claim in &claims {
        let location = || format!("{}:{}", source.file, claim.line);
        for design in claim.only_on.iter().map(String::as_str).chain(claim.rule.designs_named()) {
            known_design(designs, "the pack's designs", design, location)?;
        }
    }
    Ok(claims)
}

/// Every SQL file renders with the one parameter a pack gives ({rows}), and each query is
/// one statement: checked here, before any engine starts.
fn check_sql_files(pack: &Pack) -> Result<()> {
    let params = Params::new().with("rows", 1);
    for design in pack.designs.iter().chain(&pack.broken) {
        Fixture::read(&design.path)?.render_dataset(&params)?;
    }
    let mut scales_the_rows = false;
    for file in &pack.generator {
        let fixture = Fixture::read(file)?;
        // Rendered at two scales: a {rows} in a comment only changes nothing.
        scales_the_rows |=
            fixture.render_dataset(&params)? != fixture.render_dataset(&Params::new().with("rows", 2))?;
    }
    if !scales_the_rows {
        let files: Vec<String> = pack.generator.iter().map(|file| shown(file)).collect();
        bail!(
            "{}: the generator never uses {{rows}}, so every scale would get the same rows and the claims' scales \
             would mean nothing; fill the table with {{rows}} rows (e.g. INSERT INTO t SELECT ... FROM \
             numbers({{rows}}))",
            files.join(", ")
        );
    }
    for query in &pack.queries {
        // One statement each; what it may do is the engine parser's to say, before the
        // dataset is built (`crate::guard`, through `Pack::dataset`).
        Fixture::read(&query.file)?.render_one(&params)?;
    }
    Ok(())
}

/// The files a pack's `generator` key lists (each inside the pack folder and present), or
/// by default its `generator.sql`.
fn generator_files(
    folder: &Path,
    listed: Option<&Spanned<Vec<Spanned<String>>>>,
    source: &ClaimsSource,
) -> Result<Vec<PathBuf>> {
    let Some(listed) = listed else {
        let generator = folder.join("generator.sql");
        if !generator.is_file() {
            bail!("{} has no generator.sql (the statements that fill the table with {{rows}} rows)", shown(folder));
        }
        return Ok(vec![generator]);
    };
    if listed.get_ref().is_empty() {
        bail!(
            "{}: generator lists no file; list the files that fill the table with {{rows}} rows, \
             e.g. generator = [\"generator.sql\"]",
            source.at(listed.span())
        );
    }
    let mut files = Vec::new();
    for file in listed.get_ref() {
        let relative = Path::new(file.get_ref());
        // A pack is its folder: copied elsewhere, it must still find its files.
        let inside = relative.components().all(|component| matches!(component, std::path::Component::Normal(_)));
        if !inside {
            bail!(
                "{}: generator file {} must be a path inside the pack folder",
                source.at(file.span()),
                file.get_ref()
            );
        }
        let path = folder.join(relative);
        if !path.is_file() {
            bail!("{}: generator file {} does not exist", source.at(file.span()), file.get_ref());
        }
        files.push(path);
    }
    Ok(files)
}

/// A pack folder is a folder, not a symbolic link to one elsewhere.
fn check_own_folder(folder: &Path) -> Result<()> {
    let metadata = fs::symlink_metadata(folder).with_context(|| format!("cannot read {}", shown(folder)))?;
    if metadata.file_type().is_symlink() {
        bail!("the pack folder {} is a symbolic link; a pack is a folder of its own files", shown(folder));
    }
    Ok(())
}

/// A file of the pack is the folder's own: not a symbolic link (a pack from a pull request
/// could link to any file of the host, whose text an error would then quote), inside the
/// folder once every link on the way is resolved, and a plain file.
fn check_own_file(folder: &Path, path: &Path) -> Result<()> {
    fs::symlink_metadata(path).with_context(|| format!("cannot read {}", shown(path)))?;
    use crate::files::{NotOwn, not_own_plain_file};
    match not_own_plain_file(folder, path) {
        Some(NotOwn::Link | NotOwn::Outside) => bail!(
            "{} is a symbolic link or lies outside the pack; a pack's files are its own (copy the file into the pack)",
            shown(path)
        ),
        Some(problem) => bail!("{} {problem}; a pack's SQL files and {CLAIMS_FILE} are plain files", shown(path)),
        None => Ok(()),
    }
}

/// A name used in test names, dataset names and snapshot files; `what` says whose it is.
pub fn check_name(name: &str, what: &str) -> Result<()> {
    // Lowercase too: a name is a file on disk and a test name, and case would tell two
    // apart on one file system and not on another.
    let valid = crate::sql::is_identifier(name)
        && name.starts_with(|first: char| first.is_ascii_lowercase())
        && !name.chars().any(|c| c.is_ascii_uppercase());
    if !valid {
        bail!("{what}: name {name:?} must be lowercase letters, digits and _, starting with a letter");
    }
    if name.len() > MAX_NAME_CHARS {
        let start: String = name.chars().take(20).collect();
        bail!(
            "{what}: name {start}... has {} characters, and a name has at most {MAX_NAME_CHARS} (it becomes folder, \
             dataset and snapshot names, which file systems cap at 255 bytes); give a shorter one",
            name.len()
        );
    }
    Ok(())
}

/// The longest pack, design or query name: a snapshot's file name joins the three with the
/// row count (`<pack>_<query>_<design>_<rows>.snap.new`), and three of these stay within
/// the 255 bytes a file name may have.
pub const MAX_NAME_CHARS: usize = 64;

/// An error code as the engine names it (`TOO_MANY_ROWS`), else one line at `location`.
fn check_error_code(code: &str, location: &str) -> Result<()> {
    let is_code = !code.is_empty() && code.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if !is_code {
        bail!(
            "{location}: error {code:?} is not an error code; write it as the engine names it, e.g. error = \"TOO_MANY_ROWS\""
        );
    }
    Ok(())
}

/// `list` says which designs `designs` are ("this query's designs").
fn known_design(designs: &[String], list: &str, design: &str, location: impl Fn() -> String) -> Result<()> {
    if !designs.iter().any(|known| known == design) {
        bail!("{}: design {design} is not one of {list} ({})", location(), designs.join(", "));
    }
    Ok(())
}

/// A `designs` list with at least one design, each once: an empty list would run no
/// case (and check no claim), a design listed twice would make two tests of one name.
fn checked_design_list<'a>(
    listed: &'a Spanned<Vec<Spanned<String>>>,
    source: &ClaimsSource,
) -> Result<&'a [Spanned<String>]> {
    let designs = listed.get_ref();
    if designs.is_empty() {
        bail!("{}: designs lists no design; leave it out to run on every design", source.at(listed.span()));
    }
    for (index, design) in designs.iter().enumerate() {
        if designs[..index].iter().any(|earlier| earlier.get_ref() == design.get_ref()) {
            bail!("{}: design {} is listed twice", source.at(design.span()), design.get_ref());
        }
    }
    Ok(designs)
}

fn check_scales(scales: &[u64], location: &str) -> Result<Vec<u64>> {
    if scales.is_empty() || scales.contains(&0) {
        bail!("{location}: scales must list row counts of at least 1, e.g. scales = [1_000_000]");
    }
    let mut sorted = scales.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    Ok(sorted)
}

/// The `*.sql` files of a folder by name (none when the folder is missing).
fn sql_files(folder: &Path) -> Result<Vec<SqlFile>> {
    let entries = match fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error).with_context(|| format!("cannot list {}", shown(folder))),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.with_context(|| format!("cannot list {}", shown(folder)))?.path();
        if path.extension().is_some_and(|extension| extension == "sql") {
            let name = path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
            files.push(SqlFile { name, path });
        }
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}
