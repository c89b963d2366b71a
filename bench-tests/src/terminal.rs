//! Lines for the person at the terminal, on stderr, which may be gone: a terminal closed
//! (SIGHUP), or the pipe of a matrix that was killed while its variant runs. `eprintln!`
//! panics when the write fails, which would end the process before its bundle is
//! finished; [`say!`](crate::say) drops the line instead. A line may quote a file's text
//! (a statement in an error), so its control characters are written escaped: an escape
//! sequence in a pull request's SQL file must not drive the terminal.

use std::io::Write as _;

/// Writes `line` and a newline to stderr; a failed write is dropped (see the module).
pub fn say_line(line: &str) {
    let _ = writeln!(std::io::stderr(), "{}", printable(line));
}

/// `text` with every control character but newline and tab escaped (`\u{1b}`).
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let controls = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(controls) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if controls(c) {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    std::borrow::Cow::Owned(escaped)
}

/// `eprintln!` that never panics: formats its arguments and hands them to [`say_line`].
#[macro_export]
macro_rules! say {
    ($($argument:tt)*) => {
        $crate::terminal::say_line(&format!($($argument)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_escaped() {
        assert_eq!(printable("plain\tline\nnext"), "plain\tline\nnext");
        assert_eq!(printable("a\u{1b}]0;pwned\u{7}b\0c\rd"), "a\\u{1b}]0;pwned\\u{7}b\\u{0}c\\rd");
    }
}
