//! A statement as the engine parsed it: its canonical text (`formatQuerySingleLine`) and
//! its syntax tree (`EXPLAIN AST`), read into nodes with their parents.

use anyhow::{Context, Result, anyhow, bail};

use super::text::setting_names;
use crate::fixtures::Statement;
use crate::settings::Settings;
use crate::sql::{sql_string, statement_line};
use crate::targets::Target;

/// A statement as the engine parsed it.
#[derive(Debug)]
pub(super) struct Parsed {
    /// `formatQuerySingleLine`'s text.
    pub(super) canonical: String,
    /// `EXPLAIN AST`'s lines, the root first.
    pub(super) tree: Vec<Node>,
    /// The settings the statement sets, each with its type as the engine declares it
    /// (`system.settings`, else `system.merge_tree_settings`); `None` for a name it
    /// does not know.
    pub(super) settings: Vec<(String, Option<String>)>,
}

/// One line of `EXPLAIN AST`: `Function file (alias f) (children 1)` at some depth.
#[derive(Debug, Clone)]
pub(super) struct Node {
    /// The children its label declares (`(children 2)`): what a complete dump shows.
    pub(super) declared_children: usize,
    /// The label's first word: `Function`, `TableExpression`, `SelectWithUnionQuery`.
    pub(super) kind: String,
    /// The label's second word, where it has one: a function's or command's name.
    pub(super) name: String,
    /// The label past its first word: a literal's text (`'x String'`).
    pub(super) text: String,
    pub(super) parent: Option<usize>,
}

impl Parsed {
    pub(super) fn of(target: &mut Target, statement: &Statement) -> Result<Parsed> {
        let location = statement.location();
        let canonical = target
            .run(&format!("SELECT formatQuerySingleLine({})", sql_string(&statement.sql)), &Settings::new(), "TSVRaw")
            .map_err(|error| {
                anyhow!(
                    "{location}: the engine cannot parse this statement ({}): {}",
                    engine_message(&error),
                    statement_line(&statement.sql)
                )
            })?
            .body
            .trim_end_matches('\n')
            .to_string();
        let tree = target
            .run(&format!("EXPLAIN AST {canonical}"), &Settings::new(), "TSVRaw")
            .map_err(|error| {
                anyhow!("{location}: the engine cannot explain this statement: {}", engine_message(&error))
            })?
            .body;
        let tree = parse_tree(&tree);
        // Every node with the children it declares: a dump cut short (a result limit of the
        // statement's own, say) would hide what comes after.
        let complete = !tree.is_empty()
            && tree.iter().enumerate().all(|(index, node)| {
                tree.iter().filter(|child| child.parent == Some(index)).count() == node.declared_children
            });
        if !complete {
            bail!("{location}: the engine's syntax tree of this statement came back incomplete, so it is refused");
        }
        let settings = if tree.iter().any(|node| node.kind == "Set") {
            setting_types(target, &setting_names(&canonical))
                .with_context(|| format!("{location}: cannot read the types of the statement's settings"))?
        } else {
            Vec::new()
        };
        Ok(Parsed { canonical, tree, settings })
    }

    pub(super) fn root(&self) -> Option<&Node> {
        self.tree.first()
    }

    pub(super) fn children(&self, index: usize) -> impl Iterator<Item = &Node> {
        self.tree.iter().filter(move |node| node.parent == Some(index))
    }

    /// The canonical text's first `count` words (`CREATE MATERIALIZED VIEW`).
    pub(super) fn leading_words(&self, count: usize) -> String {
        self.canonical.split_whitespace().take(count).collect::<Vec<_>>().join(" ")
    }
}

/// The engine's error, past the statement the target's error quotes: its own words.
pub(super) fn engine_message(error: &anyhow::Error) -> String {
    let text = format!("{error:#}");
    let message = text.rsplit_once("DB::Exception: ").map_or(text.as_str(), |(_, message)| message);
    crate::sql::one_line(message)
}

/// `EXPLAIN AST`'s text as nodes with their parents (one space of indent a level).
pub(super) fn parse_tree(text: &str) -> Vec<Node> {
    let mut nodes: Vec<Node> = Vec::new();
    // The index of the last node seen at each depth.
    let mut open: Vec<usize> = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let depth = line.len() - line.trim_start_matches(' ').len();
        let label = line.trim();
        let (label, declared_children) = match label.rsplit_once(" (children ") {
            Some((head, count)) => (head, count.trim_end_matches(')').parse().unwrap_or(usize::MAX)),
            None => (label, 0),
        };
        let mut words = label.split_whitespace();
        let kind = words.next().unwrap_or_default().to_string();
        let name = words.next().unwrap_or_default().to_string();
        let text = label.split_once(' ').map_or("", |(_, text)| text).to_string();
        open.truncate(depth);
        let parent = depth.checked_sub(1).and_then(|level| open.get(level).copied());
        open.push(nodes.len());
        nodes.push(Node { declared_children, kind, name, text, parent });
    }
    nodes
}

/// Each setting's type as the engine declares it.
fn setting_types(target: &mut Target, names: &[String]) -> Result<Vec<(String, Option<String>)>> {
    #[derive(serde::Deserialize)]
    struct Declared {
        name: String,
        r#type: String,
    }
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let list = names.iter().map(|name| sql_string(name)).collect::<Vec<_>>().join(", ");
    let declared: Vec<Declared> = target.query_rows(&format!(
        "SELECT name, type FROM system.settings WHERE name IN ({list}) \
         UNION ALL SELECT name, type FROM system.merge_tree_settings WHERE name IN ({list})"
    ))?;
    Ok(names
        .iter()
        .map(|name| {
            let r#type =
                declared.iter().find(|declared| declared.name == *name).map(|declared| declared.r#type.clone());
            (name.clone(), r#type)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_dump_is_read_with_parents() {
        let tree = parse_tree(
            "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 2)\n   \
             TablesInSelectQuery (children 1)\n    TableExpression (children 1)\n     Function file (alias f) \
             (children 1)\n      ExpressionList (children 1)\n   Set\n",
        );
        let function = tree.iter().position(|node| node.kind == "Function").unwrap();
        assert_eq!(tree[function].name, "file");
        assert_eq!(tree[tree[function].parent.unwrap()].kind, "TableExpression");
        let set = tree.iter().position(|node| node.kind == "Set").unwrap();
        assert_eq!(tree[tree[set].parent.unwrap()].kind, "SelectQuery");
    }
}
