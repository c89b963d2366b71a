//! The library's layers, kept: ARCHITECTURE.md's table "Layers" puts every module of
//! `bench-tests/src/` in one layer, and this test reads every `crate::`, `super::` and
//! `self::` path in the library's source and fails on an import that runs from a lower
//! layer to a higher one, or on a cycle between modules, naming the file, the line and
//! the rule. Like rust-analyzer's tidy tests, it reads the source as text; it needs no
//! engine.
//!
//! A module is the longest path the table names: `benchmarks/logs` is one module (the
//! folder), `benchmarks` the rest of `benchmarks/`. Imports inside one module are free.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One module of the table: its path under `src/` (without `.rs` or `/mod.rs`) and layer.
#[derive(Debug, Clone)]
struct Module {
    path: String,
    layer: usize,
    layer_name: String,
}

/// One import: where it is written and the module it reaches.
#[derive(Debug, Clone)]
struct Import {
    file: String,
    line: usize,
    from: String,
    to: String,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The table under `## Layers` in ARCHITECTURE.md: `| N. name | `a`, `b/c` | ... |`.
fn layer_table(architecture: &str) -> Vec<Module> {
    let section = architecture.split("\n## Layers").nth(1).expect("ARCHITECTURE.md has a section `## Layers`");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut modules = Vec::new();
    for row in section.lines().filter(|line| line.starts_with('|')) {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let Some((number, name)) = cells[0].split_once(". ") else { continue };
        let Ok(layer) = number.parse::<usize>() else { continue };
        for path in cells[1].split('`').skip(1).step_by(2) {
            // `benchmarks/*`: each folder in `benchmarks/` is a module of this layer, so a
            // new benchmark kind's folder needs no line here.
            let paths = match path.strip_suffix("/*") {
                Some(parent) => folders_in(parent),
                None => vec![path.to_string()],
            };
            for path in paths {
                modules.push(Module { path, layer, layer_name: name.to_string() });
            }
        }
    }
    assert!(!modules.is_empty(), "the table under `## Layers` in ARCHITECTURE.md lists no module");
    modules
}

/// The folders in `bench-tests/src/<parent>`, as module paths (`benchmarks/logs`).
fn folders_in(parent: &str) -> Vec<String> {
    let dir = workspace().join("bench-tests/src").join(parent);
    let mut folders: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("ARCHITECTURE.md's Layers names {parent}/*: {}: {error}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .map(|path| format!("{parent}/{}", path.file_name().unwrap().to_string_lossy()))
        .collect();
    folders.sort();
    folders
}

/// Every `.rs` file under `dir`, as paths relative to `root`.
fn source_files(root: &Path, dir: &Path, files: &mut Vec<String>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(root, &path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
        }
    }
}

/// `targets/eks.rs` is module `targets/eks`, `targets/mod.rs` is `targets`, `lib.rs` is ``.
fn module_path_of(file: &str) -> Vec<String> {
    let stem = file.trim_end_matches(".rs");
    let mut segments: Vec<String> = stem.split('/').map(str::to_string).collect();
    if segments.last().is_some_and(|last| last == "mod" || last == "lib") {
        segments.pop();
    }
    segments
}

/// The table's module that holds the module at `segments`: the longest listed prefix.
fn owner<'a>(modules: &'a [Module], segments: &[String]) -> Option<&'a Module> {
    (1..=segments.len()).rev().find_map(|length| {
        let path = segments[..length].join("/");
        modules.iter().find(|module| module.path == path)
    })
}

/// The source with comments, strings and character literals blanked out (newlines kept,
/// so lines still count), so that only code is read.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < chars.len() {
        let rest = |offset: usize| chars.get(i + offset).copied();
        match chars[i] {
            '/' if rest(1) == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
            '/' if rest(1) == Some('*') => {
                let mut depth = 0;
                loop {
                    if i >= chars.len() {
                        break;
                    }
                    if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                        depth += 1;
                        out.push_str("  ");
                        i += 2;
                    } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        out.push_str("  ");
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        blank(&mut out, chars[i]);
                        i += 1;
                    }
                }
            }
            'r' if (rest(1) == Some('"') || rest(1) == Some('#'))
                && !chars.get(i.wrapping_sub(1)).is_some_and(|c| c.is_alphanumeric() || *c == '_') =>
            {
                // A raw string: r"...", r#"..."#.
                let mut hashes = 0;
                let mut j = i + 1;
                while chars.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if chars.get(j) != Some(&'"') {
                    out.push(chars[i]);
                    i += 1;
                    continue;
                }
                let closing: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                let body_start = j + 1;
                let text: String = chars[body_start..].iter().collect();
                let end = text.find(&closing).map_or(chars.len(), |at| body_start + text[..at].chars().count());
                for &c in &chars[i..(end + closing.len()).min(chars.len())] {
                    blank(&mut out, c);
                }
                i = end + closing.len();
            }
            '"' => {
                blank(&mut out, '"');
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        blank(&mut out, chars[i]);
                        i += 1;
                    }
                    if i < chars.len() {
                        blank(&mut out, chars[i]);
                        i += 1;
                    }
                }
                if i < chars.len() {
                    blank(&mut out, '"');
                    i += 1;
                }
            }
            '\'' if rest(2) == Some('\'') || (rest(1) == Some('\\') && rest(1) != Some('\'')) => {
                // A character literal ('x', '\n', '\u{1F600}'); a lifetime has no closing quote.
                let end = (i + 1..chars.len().min(i + 12)).find(|&j| chars[j] == '\'' && j > i + 1);
                match end {
                    Some(end) => {
                        for &c in &chars[i..=end] {
                            blank(&mut out, c);
                        }
                        i = end + 1;
                    }
                    None => {
                        out.push('\'');
                        i += 1;
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The inline modules (`mod tests { ... }`) open at each byte of `code`, innermost last.
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let bytes = code.as_bytes();
    let mut spans = Vec::new();
    for (name, after) in module_declarations(code) {
        let brace = after + (code[after..].len() - code[after..].trim_start().len());
        if bytes.get(brace) != Some(&b'{') {
            continue;
        }
        let mut depth = 0;
        let mut end = code.len();
        for (offset, byte) in bytes[brace..].iter().enumerate() {
            match byte {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = brace + offset;
                        break;
                    }
                }
                _ => {}
            }
        }
        spans.push((brace, end, name));
    }
    spans
}

/// The modules a file declares in files of their own (`mod name;`, `pub mod name;`):
/// a path may start with one of them, relative to the file's module.
fn child_modules(code: &str) -> Vec<String> {
    module_declarations(code)
        .into_iter()
        .filter(|(_, after)| code[*after..].trim_start().starts_with(';'))
        .map(|(name, _)| name)
        .collect()
}

/// Every `mod <name>` in `code` (the keyword at a word boundary): the name, and the byte
/// after it, where `;` (a module in a file of its own) or `{` (an inline one) follows.
fn module_declarations(code: &str) -> Vec<(String, usize)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = code[at..].find("mod ") {
        let start = at + offset;
        at = start + 4;
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let name: String = code[start + 4..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            found.push((name.clone(), start + 4 + name.len()));
        }
    }
    found
}

/// Every path that starts with `crate`, `super`, `self` or a child module in `code`, with
/// the byte it starts at; `use` groups (`crate::{a, b::{c, d}}`) are expanded. A path
/// from a child module is returned as `self::<child>::...`.
fn paths_in(code: &str, children: &[String]) -> Vec<(usize, Vec<String>)> {
    let bytes = code.as_bytes();
    let heads: Vec<(String, Vec<String>)> = ["crate", "super", "self"]
        .into_iter()
        .map(|root| (format!("{root}::"), vec![root.to_string()]))
        .chain(children.iter().map(|child| (format!("{child}::"), vec!["self".to_string(), child.clone()])))
        .collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let is_start =
            !(at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_' || bytes[at - 1] == b':'));
        let head = heads.iter().find(|(head, _)| code[at..].starts_with(head.as_str()));
        match head {
            Some((head, root)) if is_start => {
                let mut cursor = at + head.len();
                let mut paths = Vec::new();
                parse_tree(code, &mut cursor, root.clone(), &mut paths);
                found.extend(paths.into_iter().map(|path| (at, path)));
                at = cursor.max(at + 1);
            }
            _ => at += 1,
        }
    }
    found
}

/// Parses a path or a `{ ... }` group after `prefix::`, adding each whole path to `paths`.
fn parse_tree(code: &str, cursor: &mut usize, mut prefix: Vec<String>, paths: &mut Vec<Vec<String>>) {
    let skip_space = |cursor: &mut usize| {
        while code[*cursor..].starts_with(char::is_whitespace) {
            *cursor += code[*cursor..].chars().next().map_or(1, char::len_utf8);
        }
    };
    loop {
        skip_space(cursor);
        if code[*cursor..].starts_with('{') {
            *cursor += 1;
            loop {
                skip_space(cursor);
                if code[*cursor..].starts_with('}') {
                    *cursor += 1;
                    return;
                }
                parse_tree(code, cursor, prefix.clone(), paths);
                skip_space(cursor);
                if code[*cursor..].starts_with(',') {
                    *cursor += 1;
                } else if code[*cursor..].starts_with('}') {
                    *cursor += 1;
                    return;
                } else if *cursor >= code.len() {
                    return;
                } else {
                    // `as name` and anything else up to the next `,` or `}`.
                    while *cursor < code.len() && !code[*cursor..].starts_with([',', '}']) {
                        *cursor += 1;
                    }
                }
            }
        }
        let ident: String = code[*cursor..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if ident.is_empty() {
            // `*`, or the path ended.
            paths.push(prefix);
            return;
        }
        *cursor += ident.len();
        prefix.push(ident);
        if code[*cursor..].starts_with("::") {
            *cursor += 2;
        } else {
            paths.push(prefix);
            return;
        }
    }
}

/// Resolves a path written in the module at `here` (inline modules included) to module
/// segments from the crate root.
fn resolve(here: &[String], path: &[String]) -> Vec<String> {
    let mut resolved: Vec<String> = here.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            resolved.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().is_some_and(|segment| segment == "super") {
        resolved.pop();
        rest = &rest[1..];
    }
    resolved.extend(rest.iter().cloned());
    resolved
}

/// Every import between two different modules of the table, and the files no module holds.
fn imports(modules: &[Module]) -> (Vec<Import>, Vec<String>) {
    let src = workspace().join("bench-tests/src");
    let mut files = Vec::new();
    source_files(&src, &src, &mut files);
    files.sort();
    let mut found = Vec::new();
    let mut unowned = Vec::new();
    for file in &files {
        let module_path = module_path_of(file);
        if module_path.is_empty() {
            // lib.rs only declares the modules: an item or a re-export there would be an
            // import this test does not place in a layer.
            let code = code_only(&fs::read_to_string(src.join(file)).unwrap());
            for (number, line) in code.lines().enumerate() {
                let line = line.trim();
                let declaration = line.strip_prefix("pub mod ").or_else(|| line.strip_prefix("mod "));
                let feature_gate = line.starts_with("#[cfg(feature = ") && line.ends_with(")]");
                assert!(
                    line.is_empty() || feature_gate || declaration.is_some_and(|name| name.ends_with(';')),
                    "bench-tests/src/{file}:{}: lib.rs holds only `pub mod` lines; put `{line}` in a module of a layer",
                    number + 1
                );
            }
            continue;
        }
        let Some(from) = owner(modules, &module_path) else {
            unowned.push(file.clone());
            continue;
        };
        let code = code_only(&fs::read_to_string(src.join(file)).unwrap());
        let inline = inline_modules(&code);
        let children = child_modules(&code);
        for (at, path) in paths_in(&code, &children) {
            let mut here = module_path.clone();
            for (start, end, name) in &inline {
                if *start < at && at < *end {
                    here.push(name.clone());
                }
            }
            let target = resolve(&here, &path);
            let Some(to) = owner(modules, &target) else { continue };
            if to.path != from.path {
                let line = code[..at].matches('\n').count() + 1;
                found.push(Import {
                    file: format!("bench-tests/src/{file}"),
                    line,
                    from: from.path.clone(),
                    to: to.path.clone(),
                });
            }
        }
    }
    (found, unowned)
}

/// Modules in a cycle (strongly connected components of more than one module).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's algorithm, small enough to write out: the graph has a few dozen nodes.
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        components: Vec<Vec<String>>,
    }
    fn visit(state: &mut State<'_>, node: &str) {
        let index = state.index.len();
        state.index.insert(node.to_string(), index);
        state.low.insert(node.to_string(), index);
        state.stack.push(node.to_string());
        state.on_stack.insert(node.to_string());
        for next in state.edges.get(node).into_iter().flatten() {
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node.to_string(), low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node.to_string(), low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(&member);
                let last = member == node;
                component.push(member);
                if last {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.components.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.components
}

/// What is wrong with `imports` under `modules`: upward imports and cycles, one line each.
fn violations(modules: &[Module], imports: &[Import]) -> Vec<String> {
    let layer = |path: &str| modules.iter().find(|module| module.path == path).unwrap();
    let mut problems = Vec::new();
    let mut said = BTreeSet::new();
    for import in imports {
        let (from, to) = (layer(&import.from), layer(&import.to));
        // Two paths on one line to one module are one problem.
        if to.layer > from.layer && said.insert((&import.file, import.line, &import.to)) {
            problems.push(format!(
                "{}:{}: `{}` (layer {}, {}) imports `{}` (layer {}, {}): an import runs upward; move what it \
                 needs down to a lower layer, or the importer up (ARCHITECTURE.md, Layers)",
                import.file, import.line, from.path, from.layer, from.layer_name, to.path, to.layer, to.layer_name
            ));
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for import in imports {
        edges.entry(import.from.clone()).or_default().insert(import.to.clone());
    }
    for cycle in cycles(&edges) {
        let members: BTreeSet<&String> = cycle.iter().collect();
        // One line per pair of modules is enough to find the circle.
        let mut witnesses: BTreeMap<(&str, &str), String> = BTreeMap::new();
        for import in imports.iter().filter(|import| members.contains(&import.from) && members.contains(&import.to)) {
            witnesses
                .entry((&import.from, &import.to))
                .or_insert_with(|| format!("{}:{} ({} -> {})", import.file, import.line, import.from, import.to));
        }
        let witnesses: Vec<&String> = witnesses.values().collect();
        problems.push(format!(
            "modules {} import each other in a cycle: {}; a module imports only from modules that do not import \
             it back (ARCHITECTURE.md, Layers)",
            cycle.join(", "),
            witnesses.iter().map(|witness| witness.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    problems
}

#[test]
fn every_module_is_in_one_layer_of_the_table() {
    let modules = layer_table(&fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap());
    let mut seen = BTreeSet::new();
    for module in &modules {
        assert!(seen.insert(&module.path), "ARCHITECTURE.md's Layers lists `{}` twice", module.path);
        let src = workspace().join("bench-tests/src");
        let exists = src.join(format!("{}.rs", module.path)).is_file() || src.join(&module.path).is_dir();
        assert!(exists, "ARCHITECTURE.md's Layers lists `{}`, which is no module of bench-tests/src", module.path);
    }
    let (_, unowned) = imports(&modules);
    assert!(unowned.is_empty(), "no layer in ARCHITECTURE.md's Layers holds: {}", unowned.join(", "));
}

#[test]
fn no_import_runs_upward_and_no_modules_import_each_other() {
    let modules = layer_table(&fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap());
    let (imports, _) = imports(&modules);
    assert!(!imports.is_empty(), "no import between modules was found: the reader is broken");
    let problems = violations(&modules, &imports);
    assert!(problems.is_empty(), "{} layering problems:\n{}", problems.len(), problems.join("\n"));
}

/// The reader itself, on source it must read right: groups, `super` in a test module,
/// paths in strings and comments (not imports), and a cycle.
#[test]
fn the_reader_finds_imports_in_groups_and_ignores_strings_and_comments() {
    let code = code_only(
        "use crate::{a::{B, c::D}, e};\n// crate::f::G\nlet s = \"crate::h\";\nlet c = '\"';\nmod tests {\n    use super::*;\n    use crate::i::J;\n}\n",
    );
    let paths: Vec<Vec<String>> = paths_in(&code, &[]).into_iter().map(|(_, path)| path).collect();
    let text: Vec<String> = paths.iter().map(|path| path.join("::")).collect();
    assert_eq!(text, ["crate::a::B", "crate::a::c::D", "crate::e", "super", "crate::i::J"]);
    // A path from a module the file declares is relative to the file's module.
    let declared = code_only("pub mod collect;\npub use collect::Collected;\nlet x = other::collect::y;\n");
    let children = child_modules(&declared);
    assert_eq!(children, ["collect"]);
    let text: Vec<String> = paths_in(&declared, &children).into_iter().map(|(_, path)| path.join("::")).collect();
    assert_eq!(text, ["self::collect::Collected"]);
    let inline = inline_modules(&code);
    assert_eq!(inline.len(), 1);
    let here = vec!["m".to_string(), "tests".to_string()];
    assert_eq!(resolve(&here, &["super".to_string()]), vec!["m".to_string()]);

    let module = |path: &str, layer| Module { path: path.to_string(), layer, layer_name: format!("l{layer}") };
    let modules = [module("low", 1), module("high", 2), module("other", 2)];
    let import = |from: &str, to: &str| Import { file: "f.rs".into(), line: 3, from: from.into(), to: to.into() };
    let problems = violations(&modules, &[import("low", "high"), import("high", "other"), import("other", "high")]);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("f.rs:3: `low` (layer 1, l1) imports `high` (layer 2, l2)"), "{}", problems[0]);
    assert!(problems[1].starts_with("modules high, other import each other in a cycle"), "{}", problems[1]);
}

/// The benchmark kinds: each folder in `benchmarks/`, as a module path.
fn kinds() -> Vec<String> {
    folders_in("benchmarks")
}

/// The registry, the one module that may name a kind.
const REGISTRY: &str = "benchmarks/kinds";

/// Imports that reach a kind other than from its own folder or the registry: a core
/// module, the matrix or another kind naming it.
fn kind_wall_violations(kinds: &[String], imports: &[Import]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut said = BTreeSet::new();
    for import in imports.iter().filter(|import| kinds.contains(&import.to) && import.from != REGISTRY) {
        if !said.insert((&import.file, import.line, &import.from, &import.to)) {
            continue;
        }
        let who = match kinds.contains(&import.from) {
            true => format!("kind `{}` imports kind `{}`", import.from, import.to),
            false => format!("`{}` imports kind `{}`", import.from, import.to),
        };
        problems.push(format!(
            "{}:{}: {who}: a kind is reached only through the registry (`{REGISTRY}`, the `Benchmark` trait); move \
             what both need below the kinds (ARCHITECTURE.md, Layers)",
            import.file, import.line
        ));
    }
    problems
}

/// Paths in the command line's `code` that name a kind (`chbench::benchmarks::<kind>`).
fn command_line_kind_paths(file: &str, code: &str, kinds: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for (number, line) in code.lines().enumerate() {
        for kind in kinds {
            let path = format!("chbench::{}", kind.replace('/', "::"));
            let named = line
                .match_indices(&path)
                .any(|(at, _)| !line[at + path.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'));
            if named {
                problems.push(format!(
                    "{file}:{}: the command line names kind `{kind}`: it reaches kinds only through the registry \
                     (`chbench::{}`)",
                    number + 1,
                    REGISTRY.replace('/', "::")
                ));
            }
        }
    }
    problems
}

/// The kinds of target by name: every `TargetKind` variant but `Auto` (not a target: the
/// choice left to the machine).
const TARGET_VARIANTS: [&str; 4] = ["Embedded", "Container", "Url", "Eks"];

/// Lines of `code` that branch on a target's kind by name: a `TargetKind::<Variant>` in a
/// comparison (`==`, `!=`), a match arm, `matches!` or `if let`. Code from the first
/// `#[cfg(test)]` on is a test module, which may compare the kinds it parsed.
fn target_kind_branches(file: &str, code: &str) -> Vec<String> {
    let code = code.split("#[cfg(test)]").next().unwrap_or(code);
    let mut problems = Vec::new();
    for (number, line) in code.lines().enumerate() {
        let names_a_kind = TARGET_VARIANTS.iter().any(|variant| {
            let path = format!("TargetKind::{variant}");
            line.match_indices(&path)
                .any(|(at, _)| !line[at + path.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        });
        let branches = ["==", "!=", "=>", "matches!", "if let"].iter().any(|sign| line.contains(sign));
        if names_a_kind && branches {
            problems.push(format!(
                "{file}:{}: branches on a target's kind by name (`{}`): branch on its declared capabilities \
                 (`targets::spec(kind).capabilities`), or add one there (ARCHITECTURE.md, Invariants)",
                number + 1,
                line.trim()
            ));
        }
    }
    problems
}

/// Every source file of the library outside the targets' own module, and of the command
/// line, as (path from the workspace, code only).
fn code_outside_the_targets() -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (crate_dir, own) in [("bench-tests/src", &["targets/", "target_info.rs"][..]), ("xtask/src", &[][..])] {
        let root = workspace().join(crate_dir);
        let mut files = Vec::new();
        source_files(&root, &root, &mut files);
        files.sort();
        for file in files.into_iter().filter(|file| !own.iter().any(|own| file.starts_with(own))) {
            let code = code_only(&fs::read_to_string(root.join(&file)).unwrap());
            found.push((format!("{crate_dir}/{file}"), code));
        }
    }
    found
}

#[test]
fn a_kind_is_reached_only_through_the_registry() {
    let modules = layer_table(&fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap());
    let kinds = kinds();
    assert!(kinds.len() >= 4, "benchmarks/ holds {} kinds: the reader is broken", kinds.len());
    let (imports, _) = imports(&modules);
    let mut problems = kind_wall_violations(&kinds, &imports);
    for (file, code) in code_outside_the_targets().iter().filter(|(file, _)| file.starts_with("xtask/")) {
        problems.extend(command_line_kind_paths(file, code, &kinds));
    }
    assert!(problems.is_empty(), "{} imports across the kinds' wall:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn no_code_outside_the_targets_branches_on_a_target_kind_by_name() {
    let problems: Vec<String> =
        code_outside_the_targets().iter().flat_map(|(file, code)| target_kind_branches(file, code)).collect();
    assert!(problems.is_empty(), "{} branches on a target's kind by name:\n{}", problems.len(), problems.join("\n"));
}

/// The walls' readers on planted code: a core module, the matrix and a kind each reaching
/// a kind, the registry doing so (allowed), the command line naming one, and branches on a
/// target's kind by name next to a use that is not a branch.
#[test]
fn the_walls_fail_on_planted_imports_and_branches() {
    let kinds = vec!["benchmarks/logs".to_string(), "benchmarks/parts".to_string()];
    let import = |from: &str, to: &str| Import { file: "f.rs".into(), line: 7, from: from.into(), to: to.into() };
    let problems = kind_wall_violations(
        &kinds,
        &[
            import("compare", "benchmarks/logs"),
            import("matrix", "benchmarks/parts"),
            import("benchmarks/parts", "benchmarks/logs"),
            import(REGISTRY, "benchmarks/logs"),
            import("benchmarks/logs", "units"),
        ],
    );
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].starts_with("f.rs:7: `compare` imports kind `benchmarks/logs`"), "{}", problems[0]);
    assert!(
        problems[2].starts_with("f.rs:7: kind `benchmarks/parts` imports kind `benchmarks/logs`"),
        "{}",
        problems[2]
    );
    let command_line = code_only("use chbench::benchmarks::kinds;\nuse chbench::benchmarks::logs::LogsResults;\n");
    let problems = command_line_kind_paths("xtask/src/x.rs", &command_line, &kinds);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].starts_with("xtask/src/x.rs:2: the command line names kind `benchmarks/logs`"));

    let code = code_only(
        "let on = kind == TargetKind::Eks;\nmatch kind {\n    TargetKind::Embedded => 1,\n}\nlet k = TargetKind::Embedded;\nif kind != TargetKind::Auto {}\n// kind == TargetKind::Url\n#[cfg(test)]\nmod tests { fn t() { assert!(k == TargetKind::Url); } }\n",
    );
    let problems = target_kind_branches("f.rs", &code);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].starts_with("f.rs:1: branches on a target's kind by name"), "{}", problems[0]);
    assert!(problems[1].starts_with("f.rs:3: "), "{}", problems[1]);
}
