//! One value of one setting, judged by its flag's own parser — the one definition of what a
//! setting accepts, whichever layer the value came from. The invariant: the message says what is
//! wrong in the setting's terms (never clap's "unexpected argument" for a value that looks like
//! a flag, never the flag's name again, which the problem's origin gives), and never echoes the
//! value of a secret, nor the user part of a URL (`redis://:password@host`,
//! `https://user:key@host`): a credential written into a URL by mistake.

use std::ffi::{OsStr, OsString};

use clap::builder::Resettable;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, ArgAction, Command};

/// Longest piece of a value a message quotes.
const QUOTED_CHARS: usize = 80;

/// Whether `value` is acceptable to `arg`; else why not.
pub(crate) fn check(arg: &Arg, value: &OsStr) -> Result<(), String> {
    let switch = matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse);
    // `--flag=` is a flag without its value to clap ("a value is required"): said in terms of
    // the setting instead, wherever the empty value came from (found by fuzzing the config file).
    if value.is_empty() && !switch {
        return Err(
            "an empty value: give one, or leave the setting out for its default".to_owned(),
        );
    }
    // A switch from the environment or the file: true or false, in clap's words for them.
    let alone = if switch {
        alone(arg)
            .action(ArgAction::Set)
            .value_parser(clap::builder::BoolishValueParser::new())
    } else {
        alone(arg)
    };
    let argv: Vec<OsString> = match arg.get_long() {
        // One argument, `--long=value`: a value that starts with `-` (`"-5"`, `"--help"`) is
        // this flag's value, refused by its bounds or taken, and never read as another flag.
        Some(long) => {
            let mut flag = OsString::from(format!("--{long}="));
            flag.push(value);
            vec![flag]
        }
        None => vec!["--".into(), value.to_owned()],
    };
    Command::new("value")
        .no_binary_name(true)
        .arg(alone)
        .try_get_matches_from(argv)
        .map(|_| ())
        .map_err(|error| message(&error, arg, value))
}

/// `arg` without its ties to other flags (requirements, conflicts, its variable, its place among
/// positionals): what is left is its parser, its bounds and its possible values.
fn alone(arg: &Arg) -> Arg {
    let arg = arg
        .clone()
        .required(false)
        .env(None)
        .conflicts_with(Resettable::Reset)
        .requires(Resettable::Reset)
        .overrides_with(Resettable::Reset);
    if arg.is_positional() {
        arg.index(Resettable::Reset)
    } else {
        arg
    }
}

/// Whether `arg`'s values must never be shown: a token, a secret, a password (by name), or a
/// flag whose clap definition hides its variable's value.
pub(crate) fn is_secret(arg: &Arg) -> bool {
    let name = arg
        .get_long()
        .unwrap_or_else(|| arg.get_id().as_str())
        .to_ascii_lowercase();
    arg.is_hide_env_values_set()
        || ["token", "secret", "password", "passwd", "credential"]
            .iter()
            .any(|word| name.contains(word))
}

/// clap's reason, without its framing (the flag and its value name, the usage footer).
fn message(error: &clap::Error, arg: &Arg, value: &OsStr) -> String {
    let secret = is_secret(arg);
    let raw = value.to_string_lossy();
    let shown = if secret {
        "(not shown: a secret)".to_owned()
    } else {
        let quoted: String = raw.chars().take(QUOTED_CHARS).collect();
        let more = if raw.chars().count() > QUOTED_CHARS {
            "…"
        } else {
            ""
        };
        format!("'{quoted}{more}'")
    };
    let text = match error.kind() {
        ErrorKind::ValueValidation => {
            let reason = std::error::Error::source(error)
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("invalid value {shown}: {reason}")
        }
        ErrorKind::InvalidValue => {
            let mut text = format!("invalid value {shown}");
            if let Some(ContextValue::Strings(valid)) = error.get(ContextKind::ValidValue) {
                text.push_str(&format!("; possible values: {}", valid.join(", ")));
            }
            if let Some(ContextValue::String(similar)) = error.get(ContextKind::SuggestedValue) {
                text.push_str(&format!("; a similar value exists: '{similar}'"));
            }
            text
        }
        _ => {
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or_default();
            first.trim_start_matches("error: ").to_owned()
        }
    };
    if secret && !raw.is_empty() {
        text.replace(raw.as_ref(), "***")
    } else if let Some(user) = user_part(&raw).filter(|u| !u.is_empty()) {
        // Wherever it shows, in the value quoted and in the parser's reason (anchored on its
        // `@`, so a short user part does not replace letters elsewhere).
        text.replace(&format!("{user}@"), "[user]@")
    } else {
        text
    }
}

/// The user part of a URL in `value` (`user:password` of `scheme://user:password@host/…`), if
/// it has one.
fn user_part(value: &str) -> Option<&str> {
    let start = value.find("://")? + 3;
    let authority = &value[start..];
    let end = authority.find(['/', '?', '#']).unwrap_or(authority.len());
    let at = authority[..end].rfind('@')?;
    Some(&authority[..at])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranged() -> Arg {
        Arg::new("max_active")
            .long("max-active")
            .value_parser(clap::value_parser!(u32).range(1..=1024))
    }

    #[test]
    fn a_value_is_judged_by_its_flag_s_parser_in_the_setting_s_terms() {
        assert_eq!(check(&ranged(), OsStr::new("8")), Ok(()));
        let refused = check(&ranged(), OsStr::new("0")).unwrap_err();
        assert_eq!(refused, "invalid value '0': 0 is not in 1..=1024");
        let refused = check(&ranged(), OsStr::new("abc")).unwrap_err();
        assert!(refused.starts_with("invalid value 'abc': "), "{refused}");
        assert!(
            !refused.contains("--max-active"),
            "no doubled name: {refused}"
        );
        // A value that looks like a flag is this flag's value.
        let refused = check(&ranged(), OsStr::new("--help")).unwrap_err();
        assert!(refused.starts_with("invalid value '--help'"), "{refused}");
        let refused = check(&ranged(), OsStr::new("")).unwrap_err();
        assert!(refused.starts_with("an empty value"), "{refused}");
    }

    #[test]
    fn possible_values_and_switches_say_what_is_accepted() {
        let format = Arg::new("log_format")
            .long("log-format")
            .value_parser(["text", "json"]);
        let refused = check(&format, OsStr::new("jsn")).unwrap_err();
        assert_eq!(
            refused,
            "invalid value 'jsn'; possible values: text, json; a similar value exists: 'json'"
        );
        let switch = Arg::new("json").long("json").action(ArgAction::SetTrue);
        assert_eq!(check(&switch, OsStr::new("false")), Ok(()));
        let refused = check(&switch, OsStr::new("maybe")).unwrap_err();
        assert!(refused.contains("maybe"), "{refused}");
    }

    #[test]
    fn the_user_part_of_a_url_is_never_echoed() {
        let url = Arg::new("redis_url")
            .long("redis-url")
            .value_parser(|v: &str| -> Result<String, String> { Err(format!("{v} is refused")) });
        for given in [
            "redis://:hunter2-pass@127.0.0.1:6379/0",
            "https://user:hunter2-pass@api.example.com/v1",
        ] {
            let refused = check(&url, OsStr::new(given)).unwrap_err();
            assert!(!refused.contains("hunter2"), "{refused}");
            assert!(refused.contains("[user]@"), "{refused}");
        }
        // A one-letter user part is replaced where it is a user part only.
        let refused = check(&url, OsStr::new("https://a@api.example.com")).unwrap_err();
        assert!(
            refused.starts_with("invalid value 'https://[user]@api"),
            "{refused}"
        );
        // A URL without one is quoted whole.
        let refused = check(&url, OsStr::new("redis://127.0.0.1:1")).unwrap_err();
        assert!(refused.contains("'redis://127.0.0.1:1'"), "{refused}");
    }

    #[test]
    fn a_secret_s_value_is_never_echoed() {
        let token = Arg::new("api_token")
            .long("api-token")
            .value_parser(|v: &str| -> Result<String, String> { Err(format!("{v} is too short")) });
        let refused = check(&token, OsStr::new("hunter2")).unwrap_err();
        assert!(!refused.contains("hunter2"), "{refused}");
        assert!(refused.contains("not shown"), "{refused}");
        assert!(is_secret(&Arg::new("a").long("admin-token")));
        assert!(!is_secret(&Arg::new("g").long("global-key")));
    }
}
