//! Progress for long runs: a bar on a terminal, and quiet lines (one when a step starts,
//! one when it ends) when the output goes to a file or a CI log.

use std::io::IsTerminal;
use std::time::Duration;

use chbench::benchmarks::Progress;
use indicatif::{ProgressBar, ProgressStyle};

pub struct TerminalProgress {
    bar: std::cell::RefCell<Option<ProgressBar>>,
    interactive: bool,
}

impl TerminalProgress {
    pub fn new() -> TerminalProgress {
        TerminalProgress { bar: std::cell::RefCell::new(None), interactive: std::io::stderr().is_terminal() }
    }
}

impl Progress for TerminalProgress {
    fn start(&self, step: &str, units: Option<u64>) {
        if !self.interactive {
            say(&format!("==> {step}"));
            return;
        }
        let bar = match units {
            Some(units) => ProgressBar::new(units).with_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            ),
            None => ProgressBar::new_spinner(),
        };
        bar.set_message(step.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        *self.bar.borrow_mut() = Some(bar);
    }

    fn advance(&self, message: &str) {
        if let Some(bar) = self.bar.borrow().as_ref() {
            bar.inc(1);
            bar.set_message(message.to_string());
        }
    }

    fn warn(&self, line: &str) {
        match self.bar.borrow().as_ref() {
            Some(bar) => bar.println(format!("warning: {line}")),
            None => say(&format!("warning: {line}")),
        }
    }

    fn note(&self, line: &str) {
        match self.bar.borrow().as_ref() {
            Some(bar) => bar.println(format!("chbench: {line}")),
            None => say(&format!("chbench: {line}")),
        }
    }

    fn finish(&self, summary: &str) {
        if let Some(bar) = self.bar.borrow_mut().take() {
            bar.finish_and_clear();
        }
        say(&format!("    {summary}"));
    }
}

/// One line on stderr, never a panic: a reader that went away (`2>&1 | head`) must not
/// stop the run.
fn say(line: &str) {
    chbench::terminal::say_line(line);
}
