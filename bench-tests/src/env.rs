//! Settings read from the environment: a variable that may be unset (set but not UTF-8
//! is an error, never a silent default), and a bound in seconds (the server targets'
//! timeouts, the Kubernetes API's, the engine fetch's), with how messages show one.

use std::time::Duration;

use anyhow::{Result, bail};

/// A variable that may be unset; set but not UTF-8 is an error (never a silent default,
/// and the message does not show the value).
pub fn optional(name: &str) -> Result<Option<String>> {
    match std::env::var(name) {
        Ok(value) => Ok(Some(value)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => bail!("{name} is not valid UTF-8; set it to UTF-8 text"),
    }
}

/// A duration in seconds from the variable `name`, `default` when it is unset.
pub fn seconds_env(name: &str, default: Duration) -> Result<Duration> {
    match optional(name)? {
        Some(text) => parse_seconds(name, &text, default),
        None => Ok(default),
    }
}

/// The longest wait a variable may give, in seconds (about 31 years: as good as no
/// limit); beyond it a deadline would overflow the clock.
const MAX_SECONDS: f64 = 1e9;

/// [`seconds_env`]'s reading of `text`, the value of `name`.
fn parse_seconds(name: &str, text: &str, default: Duration) -> Result<Duration> {
    match text.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 && seconds <= MAX_SECONDS => {
            Ok(Duration::from_secs_f64(seconds))
        }
        Ok(seconds) if seconds.is_finite() && seconds > MAX_SECONDS => bail!(
            "{name}={text} is more seconds than the largest accepted, {MAX_SECONDS} (about 31 years); give \
             {MAX_SECONDS} or fewer, like {}",
            default.as_secs()
        ),
        _ => bail!("{name}={text} is not a number of seconds above 0; give one like {}", default.as_secs()),
    }
}

/// `30 s`, `0.5 s`: a limit as messages show it.
pub fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESPONSE_TIMEOUT_ENV: &str = "CHBENCH_RESPONSE_TIMEOUT";
    const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

    #[test]
    fn timeouts_are_positive_seconds() {
        let parse = |text: &str| parse_seconds(RESPONSE_TIMEOUT_ENV, text, DEFAULT_RESPONSE_TIMEOUT);
        assert_eq!(parse("0.25").unwrap(), Duration::from_millis(250));
        assert_eq!(parse(" 600 ").unwrap(), Duration::from_secs(600));
        for bad in ["0", "-1", "abc", "inf", "NaN", "", "30s"] {
            let error = parse(bad).unwrap_err().to_string();
            assert_eq!(
                error,
                format!("CHBENCH_RESPONSE_TIMEOUT={bad} is not a number of seconds above 0; give one like 30")
            );
        }
        assert_eq!(parse("1e9").unwrap(), Duration::from_secs(1_000_000_000));
        for beyond in ["1e12", "1000000001", "1e308"] {
            assert_eq!(
                parse(beyond).unwrap_err().to_string(),
                format!(
                    "CHBENCH_RESPONSE_TIMEOUT={beyond} is more seconds than the largest accepted, 1000000000 (about 31 \
                     years); give 1000000000 or fewer, like 30"
                )
            );
        }
        assert_eq!(seconds(Duration::from_millis(300)), "0.3 s");
        assert_eq!(seconds(DEFAULT_RESPONSE_TIMEOUT), "30 s");
    }
}
