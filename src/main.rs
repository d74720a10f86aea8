//! The `fleetsim` binary.

use clap::Parser;

fn main() {
    let cli = fleetsim::cli::Cli::parse();
    // Ctrl-C or a termination request removes the half-written `.NAME.tmp` files.
    fleetsim::report::atomic::install_signal_cleanup();
    if let Err(e) = fleetsim::cli::main(cli) {
        fleetsim::write_stderr(format_args!("error: {}\n", fleetsim::cli::render_error(&e)));
        std::process::exit(if fleetsim::cli::is_bad_input(&e) {
            fleetsim::cli::EXIT_BAD_INPUT
        } else {
            1
        });
    }
}
