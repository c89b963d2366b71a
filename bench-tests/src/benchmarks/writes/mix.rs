//! `--mix inserts=N,updates=N,deletes=N,reads=N`: the statements a writes level's clients
//! send, at those shares: INSERT batches, lightweight UPDATEs and DELETEs by key, and point
//! reads, each from its fixture of `fixtures/writes/`.

use std::fmt;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// The statements' shares, as given (each a count out of their sum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mix {
    pub inserts: u32,
    pub updates: u32,
    pub deletes: u32,
    pub reads: u32,
}

impl Default for Mix {
    /// INSERTs alone.
    fn default() -> Mix {
        Mix { inserts: 1, updates: 0, deletes: 0, reads: 0 }
    }
}

/// One kind of statement of a mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MixStatement {
    Insert,
    Update,
    Delete,
    Read,
}

impl MixStatement {
    pub const ALL: [MixStatement; 4] =
        [MixStatement::Insert, MixStatement::Update, MixStatement::Delete, MixStatement::Read];

    /// Its name in records and comparisons (`insert`, `update`...).
    pub fn name(self) -> &'static str {
        match self {
            MixStatement::Insert => super::INSERT,
            MixStatement::Update => "update",
            MixStatement::Delete => "delete",
            MixStatement::Read => "read",
        }
    }

    /// Its fixture, relative to `fixtures/`.
    pub fn fixture(self) -> &'static str {
        match self {
            MixStatement::Insert => super::INSERT_FILE,
            MixStatement::Update => "writes/update.sql",
            MixStatement::Delete => "writes/delete.sql",
            MixStatement::Read => "writes/read.sql",
        }
    }

    /// The `--mix` key of its share.
    fn key(self) -> &'static str {
        match self {
            MixStatement::Insert => "inserts",
            MixStatement::Update => "updates",
            MixStatement::Delete => "deletes",
            MixStatement::Read => "reads",
        }
    }
}

impl Mix {
    /// `inserts=8,updates=1,deletes=1,reads=0`: each key at most once, a whole number each,
    /// one at least above 0; a key left out is 0. Each mistake is one line quoting the flag.
    pub fn parse(text: &str) -> Result<Mix> {
        let mut mix = Mix { inserts: 0, updates: 0, deletes: 0, reads: 0 };
        let mut seen: Vec<&str> = Vec::new();
        for pair in text.split(',').map(str::trim).filter(|pair| !pair.is_empty()) {
            let Some((key, value)) = pair.split_once('=') else {
                bail!("--mix {text:?}: {pair:?} is not KIND=SHARE; write e.g. --mix inserts=8,updates=1,reads=1");
            };
            let Some(statement) = MixStatement::ALL.into_iter().find(|statement| statement.key() == key.trim()) else {
                bail!(
                    "--mix {text:?}: {key:?} is not a statement of the mix; its keys are inserts, updates, deletes, reads"
                );
            };
            if seen.contains(&statement.key()) {
                bail!("--mix {text:?} gives {} twice; give it once", statement.key());
            }
            seen.push(statement.key());
            let Ok(share) = value.trim().parse::<u32>() else {
                bail!("--mix {text:?}: {} = {value:?} is not a whole number of 0 or more", statement.key());
            };
            *mix.share_mut(statement) = share;
        }
        if mix.total() == 0 {
            bail!("--mix {text:?} has no statement with a share above 0; write e.g. --mix inserts=8,updates=1,reads=1");
        }
        Ok(mix)
    }

    pub fn share(&self, statement: MixStatement) -> u32 {
        match statement {
            MixStatement::Insert => self.inserts,
            MixStatement::Update => self.updates,
            MixStatement::Delete => self.deletes,
            MixStatement::Read => self.reads,
        }
    }

    fn share_mut(&mut self, statement: MixStatement) -> &mut u32 {
        match statement {
            MixStatement::Insert => &mut self.inserts,
            MixStatement::Update => &mut self.updates,
            MixStatement::Delete => &mut self.deletes,
            MixStatement::Read => &mut self.reads,
        }
    }

    fn total(&self) -> u64 {
        MixStatement::ALL.iter().map(|&statement| u64::from(self.share(statement))).sum()
    }

    /// The statements with a share above 0, in the order of [`MixStatement::ALL`].
    pub fn statements(&self) -> Vec<MixStatement> {
        MixStatement::ALL.into_iter().filter(|&statement| self.share(statement) > 0).collect()
    }

    /// What a level's rate counts: `INSERTs/s`, or `statements/s` when the clients send
    /// other statements too.
    pub fn rate_unit(&self) -> &'static str {
        if self.is_inserts_only() { "INSERTs/s" } else { "statements/s" }
    }

    /// Whether the clients send anything but INSERTs.
    pub fn is_inserts_only(&self) -> bool {
        self.statements() == [MixStatement::Insert]
    }

    /// One pass of a client's statements: each as many times as its share, the shares
    /// divided by their greatest common divisor (`inserts=80,reads=20` is four INSERTs and
    /// a read), which a client's order shuffles and cycles.
    pub fn pass(&self) -> Vec<MixStatement> {
        let divisor = self.statements().iter().fold(0, |divisor, &statement| gcd(divisor, self.share(statement)));
        self.statements()
            .into_iter()
            .flat_map(|statement| std::iter::repeat_n(statement, (self.share(statement) / divisor.max(1)) as usize))
            .collect()
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shares: Vec<String> = MixStatement::ALL
            .into_iter()
            .filter(|&statement| self.share(statement) > 0)
            .map(|statement| format!("{}={}", statement.key(), self.share(statement)))
            .collect();
        write!(f, "{}", shares.join(","))
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_is_read_as_shares_and_its_pass_is_them_divided() {
        let mix = Mix::parse("inserts=80, reads=20,updates=0").unwrap();
        assert_eq!(mix, Mix { inserts: 80, updates: 0, deletes: 0, reads: 20 });
        assert_eq!(mix.statements(), [MixStatement::Insert, MixStatement::Read]);
        assert_eq!(mix.pass(), [MixStatement::Insert; 4].into_iter().chain([MixStatement::Read]).collect::<Vec<_>>());
        assert_eq!(mix.to_string(), "inserts=80,reads=20");
        assert!(!mix.is_inserts_only() && Mix::default().is_inserts_only());
        assert_eq!(Mix::parse("updates=3").unwrap().pass(), [MixStatement::Update]);
        let error = |text: &str| Mix::parse(text).unwrap_err().to_string();
        assert!(error("inserts=0").contains("no statement with a share above 0"));
        assert!(error("").contains("no statement with a share above 0"));
        assert!(error("writes=1").contains("\"writes\" is not a statement of the mix"));
        assert!(error("inserts=1,inserts=2").contains("gives inserts twice"));
        assert!(error("inserts=-1").contains("is not a whole number of 0 or more"));
        assert!(error("inserts").contains("is not KIND=SHARE"));
        assert!(error("inserts=99999999999").contains("is not a whole number"));
    }
}
