//! `fleetsim-scheduler`: the live scheduling service's command line. This part has the
//! `shadow` subcommand (see [`fleetsim_scheduler::shadow`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "fleetsim-scheduler",
    about = "Live scheduling service on fleetsim's policy crate"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay another scheduler's recorded jobs.csv through the policy and report, per job,
    /// where its decision would have differed (start, nodes, victim).
    Shadow {
        /// Scenario file giving the fleet and the policy (the spec a study compares).
        #[arg(long)]
        spec: PathBuf,
        /// The recorded log: a jobs.csv of the other scheduler.
        #[arg(long)]
        events: PathBuf,
        /// Output directory for shadow.csv and shadow.json.
        #[arg(long, default_value = "out/shadow")]
        out: PathBuf,
        /// Directory of public traces (for a scenario's fleet file under it).
        #[arg(long)]
        trace_dir: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Shadow {
            spec,
            events,
            out,
            trace_dir,
        } => {
            let dir = fleetsim::scenario::TraceDir::resolve(trace_dir);
            match fleetsim_scheduler::shadow::run(&spec, &events, &out, dir) {
                Ok(text) => {
                    print!("{text}");
                    println!("wrote {}/{{shadow.csv,shadow.json}}", out.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
