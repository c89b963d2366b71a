//! Lines for the person at the terminal, on stderr, which may be gone: a terminal closed
//! (SIGHUP), or the pipe of a matrix that was killed while its variant runs. `eprintln!`
//! panics when the write fails, which would end the process before its bundle is
//! finished; [`say!`](crate::say) drops the line instead.

use std::io::Write as _;

/// Writes `line` and a newline to stderr; a failed write is dropped (see the module).
pub fn say_line(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `eprintln!` that never panics: formats its arguments and hands them to [`say_line`].
#[macro_export]
macro_rules! say {
    ($($argument:tt)*) => {
        $crate::terminal::say_line(&format!($($argument)*))
    };
}
