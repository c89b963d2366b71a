//! `cargo xtask`: the proving ground's command line. Each subcommand lives in its own
//! file with a `run`; the whole command line is declared in `flags.rs`.

mod bench;
mod clean_containers;
mod compare;
mod eks;
mod engine_worker;
mod features;
mod flags;
mod history;
mod measure;
mod new_pack;
mod progress;
mod report;
mod setup;

use std::process::ExitCode;

fn main() -> ExitCode {
    let flags = flags::parse();
    // Without this, Ctrl-C, SIGTERM or SIGHUP would end the process before it removes the
    // engine's folder.
    let outcome = chbench::interrupt::stop_at_the_next_statement_on_ctrl_c().and_then(|()| match flags.command {
        flags::Command::Setup(setup) => setup.run(),
        flags::Command::Bench(bench) => bench.run(),
        flags::Command::Measure(measure) => measure.run(),
        flags::Command::Report(report) => report.run(),
        flags::Command::Compare(compare) => compare.run(),
        flags::Command::History(history) => history.run(),
        flags::Command::NewPack(new_pack) => new_pack.run(),
        flags::Command::Eks(eks) => eks.run(),
        flags::Command::CleanContainers(clean) => clean.run(),
        flags::Command::EngineWorker(worker) => worker.run(),
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line naming what failed: the whole context chain, newlines folded.
            let line = format!("{error:#}").split_whitespace().collect::<Vec<_>>().join(" ");
            // After SIGHUP the terminal may be gone: `eprintln!` would panic and exit 101.
            chbench::say!("error: {line}");
            // 128 + SIGINT, as a shell reports a command stopped by Ctrl-C; the same for
            // SIGTERM and SIGHUP, so that a caller tells a stop from a failure one way.
            if error.is::<chbench::interrupt::Interrupted>() { ExitCode::from(130) } else { ExitCode::FAILURE }
        }
    }
}
