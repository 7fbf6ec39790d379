//! What the command line prints. A closed or broken pipe on either stream (`horde plan sim.py
//! | head`, `2>&-`) ends the printing quietly, as in every Unix tool: it is never a panic, and
//! never a reason to lose a run's results.

use std::fmt;
use std::io::Write;

/// A line of status on stderr (progress, where the results are, warnings).
macro_rules! status {
    ($($arg:tt)*) => { $crate::output::status_line(format_args!($($arg)*)) };
}
pub(crate) use status;

pub(crate) fn status_line(line: fmt::Arguments<'_>) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}

/// Text on stdout: the console summary, a plan, a report.
pub(crate) fn print_text(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}
