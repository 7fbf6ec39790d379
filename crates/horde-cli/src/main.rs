//! The standalone `horde` binary. The Python package's console script is the usual entry
//! point; this one loads Python simulations through a `python3` child process.

fn main() {
    let code = horde_cli::cli_main(std::env::args_os().collect(), &horde_cli::PythonSubprocessLoader::default());
    std::process::exit(code);
}
