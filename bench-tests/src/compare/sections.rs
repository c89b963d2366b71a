//! What a kind adds to a comparison: its own sections (ClickBench's relative score and the
//! cost of a query-set run, throughput's rate level by level), made by the kind
//! ([`crate::benchmarks::Benchmark::comparison_sections`]), written in `compare.json` under
//! the kind's name, and rendered by the kind where the report and the terminal leave room
//! for them. The comparison every kind shares ([`Comparison`]) holds none of them.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::Comparison;

/// A kind's sections of a comparison, as the report and the terminal show them. Every
/// method has a default that adds nothing, so a kind says only what it has.
pub trait ComparisonSections: fmt::Debug + Send + Sync {
    /// Whether there is nothing to write under the kind's name in `compare.json`.
    fn is_empty(&self) -> bool {
        false
    }
    /// Lines said beside the queries' verdict count, in the report and on the terminal
    /// (`QPS: 1 level higher, 2 unchanged`).
    fn headlines(&self) -> Vec<String> {
        Vec::new()
    }
    /// Markdown before the queries' table: what the kind's comparison opens with.
    fn markdown_before_queries(&self, _comparison: &Comparison) -> String {
        String::new()
    }
    /// Markdown after the queries' totals.
    fn markdown_after_totals(&self, _comparison: &Comparison) -> String {
        String::new()
    }
    /// Terminal lines after the totals.
    fn terminal_lines(&self) -> Vec<String> {
        Vec::new()
    }
    /// What else is worse on B, each as `--fail-on-slower` names it (`QPS at 4 clients`).
    fn regressions(&self) -> Vec<String> {
        Vec::new()
    }
    /// The node type each side (A, B) was priced at, for a kind whose sections use a node
    /// price; `None` for one that prices nothing.
    fn priced_node_types(&self) -> Option<[Option<String>; 2]> {
        None
    }
    /// Charts of the kind's own figures (file name, SVG), written beside `compare.md`,
    /// whose sections name them where they show those figures (the levels as curves).
    fn charts(&self, _comparison: &Comparison) -> Result<Vec<(&'static str, String)>> {
        Ok(Vec::new())
    }
    /// What the terminal calls the totals' sum of means.
    fn sum_of_means_name(&self) -> &'static str {
        "sum of means"
    }
}

/// The sections of a kind that adds none to a comparison.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoSections;

impl ComparisonSections for NoSections {
    fn is_empty(&self) -> bool {
        true
    }
}

/// A comparison of any kind: what every kind's comparison finds, and its kind's sections.
/// What the registry's comparison gives the command line and the matrix.
#[derive(Debug)]
pub struct Compared {
    pub comparison: Comparison,
    sections: Box<dyn SerializedSections>,
}

impl Compared {
    pub fn new<Sections: ComparisonSections + Serialize + 'static>(
        comparison: Comparison,
        sections: Sections,
    ) -> Compared {
        Compared { comparison, sections: Box::new(sections) }
    }

    /// The kind's sections.
    pub fn sections(&self) -> &dyn ComparisonSections {
        self.sections.as_sections()
    }

    /// `compare.json`: the comparison's fields, then the kind's sections under its name.
    pub fn json(&self) -> Result<String> {
        self.sections.json(&self.comparison).context("cannot serialise the comparison")
    }
}

/// Sections that serialise themselves beside the comparison: what lets [`Compared`] hold
/// any kind's (serde's `Serialize` is not object-safe).
trait SerializedSections: fmt::Debug + Send + Sync {
    fn json(&self, comparison: &Comparison) -> serde_json::Result<String>;
    fn as_sections(&self) -> &dyn ComparisonSections;
}

impl<Sections: ComparisonSections + Serialize + 'static> SerializedSections for Sections {
    fn json(&self, comparison: &Comparison) -> serde_json::Result<String> {
        /// The comparison's fields, then one more: the kind's name, its sections the value.
        #[derive(Serialize)]
        struct WithSections<'a, Sections: Serialize> {
            #[serde(flatten)]
            comparison: &'a Comparison,
            #[serde(flatten)]
            sections: BTreeMap<&'a str, &'a Sections>,
        }
        let mut sections = BTreeMap::new();
        if !self.is_empty() {
            sections.insert(comparison.kind.as_str(), self);
        }
        serde_json::to_string_pretty(&WithSections { comparison, sections })
    }

    fn as_sections(&self) -> &dyn ComparisonSections {
        self
    }
}
