//! The `fleetsim` binary.

use clap::Parser;

fn main() {
    let cli = fleetsim::cli::Cli::parse();
    if let Err(e) = fleetsim::cli::main(cli) {
        eprintln!("error: {}", fleetsim::cli::render_error(&e));
        std::process::exit(if fleetsim::cli::is_bad_input(&e) {
            fleetsim::cli::EXIT_BAD_INPUT
        } else {
            1
        });
    }
}
