//! `serve` as a layered command (`turnstile_config`): its settings come from the defaults, the
//! `--config` file, `TURNSTILE_*` variables and the flags like every command's, and its checks
//! across settings ([`ServeArgs::validate`]: the gate's limits, the plugin's settings, the global
//! limit) are reported with the others, each naming its flag once.

use turnstile_config::{Invalid, Layered};

use super::args::ServeArgs;

impl Layered for ServeArgs {
    type Args = Self;
    const NAME: &'static str = "serve";

    fn validate(args: &Self) -> Vec<Invalid> {
        match ServeArgs::validate(args) {
            Ok(()) => Vec::new(),
            Err(errors) => errors
                .iter()
                .map(|error| Invalid::new(error.flag().trim_start_matches("--"), error.reason()))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::Path;

    use turnstile_config::{Env, ResolveError, resolve};

    use super::*;

    /// The doubled prefix ("--max-active: --max-active: invalid_capacity: …"): a check
    /// across settings names its flag once, without the gate's machine-readable code.
    #[test]
    fn a_check_across_settings_names_its_flag_once() {
        let argv = ["--max-active", "0", "--redis-url", "redis://127.0.0.1:1"].map(OsString::from);
        let read = |_: &Path| Ok(String::new());
        let Err(ResolveError::Settings(problems)) =
            resolve::<ServeArgs>(argv, &Env::default(), &read)
        else {
            panic!("expected problems");
        };
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "--max-active: must be 1..=1024, got 0",
                "--redis-url: needs --global-max-active: set both for a global limit, or neither"
            ]
        );
    }
}
