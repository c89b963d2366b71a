//! A loaded pack's cases (one per query, design and scale, then one per broken design),
//! their test and snapshot names, and the pack's queries and designs by name.

use anyhow::{Context, Result};

use super::{Case, Pack, Query, SqlFile};

impl Case {
    /// `<pack>::<query>::<design>::rows_<N>`, with `broken::` before a broken design:
    /// nextest filters select by any part (`-E 'test(/::by_day::/)'`).
    pub fn test_name(&self, pack: &str) -> String {
        let broken = if self.must_violate.is_some() { "broken::" } else { "" };
        format!("{pack}::{}::{broken}{}::rows_{}", self.query, self.design, self.rows)
    }

    /// `<pack>_<query>_<design>_<N>`: the snapshot of a good design's structure.
    pub fn snapshot_name(&self, pack: &str) -> String {
        format!("{pack}_{}_{}_{}", self.query, self.design, self.rows)
    }
}

impl Pack {
    pub fn query(&self, name: &str) -> Result<&Query> {
        self.queries.iter().find(|query| query.name == name).with_context(|| {
            let names: Vec<&str> = self.queries.iter().map(|query| query.name.as_str()).collect();
            format!("pack {} has no query {name} (its queries: {})", self.name, names.join(", "))
        })
    }

    /// A design or broken design by name.
    pub fn design(&self, name: &str) -> Result<&SqlFile> {
        self.designs.iter().chain(&self.broken).find(|design| design.name == name).with_context(|| {
            let names: Vec<&str> = self.designs.iter().chain(&self.broken).map(|design| design.name.as_str()).collect();
            format!("pack {} has no design {name} (its designs: {})", self.name, names.join(", "))
        })
    }

    /// The design named (`--design`), or the pack's first when none is.
    pub fn chosen_design(&self, name: Option<&str>) -> Result<&SqlFile> {
        match name {
            Some(name) => self.design(name),
            None => self.designs.first().with_context(|| format!("pack {} has no design to build", self.name)),
        }
    }

    /// One case per (query, design, scale), then each broken design at the query's
    /// largest scale.
    pub fn cases(&self) -> Vec<Case> {
        let mut cases = Vec::new();
        for query in &self.queries {
            for design in &query.designs {
                for &rows in &query.scales {
                    cases.push(Case { query: query.name.clone(), design: design.clone(), rows, must_violate: None });
                }
            }
            let largest = query.scales.last().copied().unwrap_or(1);
            for (design, violated) in &query.broken {
                let must_violate = Some(violated.clone());
                cases.push(Case { query: query.name.clone(), design: design.clone(), rows: largest, must_violate });
            }
        }
        cases
    }
}
