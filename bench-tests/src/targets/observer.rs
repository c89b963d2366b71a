//! Looking at a target while something else runs on it ([`Target::observe`]): a thread of
//! its own that takes a look every so often, with a connection of its own to the engine,
//! until told to stop. A load level uses it to sample what only shows during the load
//! (the engine's threads' states, the table's active parts and running merges) without
//! taking a statement slot from the clients it measures.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};

use super::{Backend, Target};
use crate::settings::Settings;

/// The observer's connection to the engine: statements it runs are not counted in the
/// target's statement time (they are not the measured work).
pub struct ObserverConnection {
    backend: Box<dyn Backend>,
}

impl ObserverConnection {
    /// Runs a query and returns its result as raw tab-separated text.
    pub fn query_text(&mut self, sql: &str) -> Result<String> {
        Ok(self.backend.run(sql, &Settings::new(), "TabSeparatedRaw")?.0)
    }
}

/// An observer started by [`Target::observe`]; [`Observer::finish`] stops it.
pub struct Observer<T> {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Observed<T>>,
}

/// What an observer saw: every look, in order, and why it had no connection to the
/// engine, when it had none.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed<T> {
    pub looks: Vec<T>,
    pub without_connection: Option<String>,
}

impl<T> Observer<T> {
    /// Stops the observer after the look it is taking, and returns what it saw.
    pub fn finish(self) -> Result<Observed<T>> {
        drop(self.stop);
        self.thread.join().map_err(|_| anyhow!("the observer's thread panicked"))
    }
}

impl Target {
    /// Calls `look` at once and then every `every` in a thread of its own, with a
    /// connection of its own in this target's database (`None` where the target cannot
    /// open another, said in [`Observed::without_connection`]), until
    /// [`Observer::finish`]. A look that takes longer than `every` delays the next; none
    /// is skipped or doubled to catch up.
    pub fn observe<T: Send + 'static>(
        &self,
        every: Duration,
        mut look: impl FnMut(Option<&mut ObserverConnection>) -> T + Send + 'static,
    ) -> Result<Observer<T>> {
        let opener = self.backend.client_opener();
        let database = self.database.clone();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("chbench-observer".to_string())
            .spawn(move || {
                let connection = opener.and_then(|opener| {
                    let mut backend = opener()?;
                    backend.use_database(&database).with_context(|| format!("cannot use database {database}"))?;
                    Ok(ObserverConnection { backend })
                });
                let (mut connection, without_connection) = match connection {
                    Ok(connection) => (Some(connection), None),
                    Err(error) => (None, Some(format!("{error:#}"))),
                };
                let mut looks = Vec::new();
                loop {
                    looks.push(look(connection.as_mut()));
                    match stopped.recv_timeout(every) {
                        Err(mpsc::RecvTimeoutError::Timeout) => continue,
                        _ => break,
                    }
                }
                Observed { looks, without_connection }
            })
            .context("cannot start the observer's thread")?;
        Ok(Observer { stop, thread })
    }
}
