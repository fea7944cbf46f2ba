//! A plugin's operator-given settings (`--plugin-config KEY=VALUE`, the `config` of a swap): what
//! its `config` import returns. One validation for every way settings arrive — flags, the admin
//! endpoint, `turnstile check` — so none of them skips a bound.

use std::collections::BTreeMap;

/// Operator-provided `KEY=VALUE` settings of a plugin, handed to every call.
pub type PluginConfig = BTreeMap<String, String>;

/// Most entries: the map is cloned into no call, but every call may read any of them.
pub const MAX_PLUGIN_CONFIG_ENTRIES: usize = 64;
/// Longest key, in bytes.
pub const MAX_CONFIG_KEY_BYTES: usize = 128;
/// Longest value, in bytes.
pub const MAX_CONFIG_VALUE_BYTES: usize = 4096;

/// Why plugin settings are refused; each names what is wrong and the bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginConfigError {
    /// A `KEY=VALUE` argument without `=`.
    #[error("expected KEY=VALUE, got {0:?}")]
    NotKeyValue(String),
    /// A key that is empty or too long.
    #[error("key must be 1..={MAX_CONFIG_KEY_BYTES} bytes, got {0:?}")]
    BadKey(String),
    /// A value that is too long.
    #[error("value of {key:?} is {bytes} bytes; at most {MAX_CONFIG_VALUE_BYTES} are allowed")]
    ValueTooLong {
        /// Its key.
        key: String,
        /// Its length.
        bytes: usize,
    },
    /// More entries than allowed.
    #[error("{0} entries given; at most {MAX_PLUGIN_CONFIG_ENTRIES} are allowed")]
    TooMany(usize),
    /// The same key given twice (refused rather than silently overwritten).
    #[error("key {0:?} is given twice")]
    DuplicateKey(String),
}

impl PluginConfigError {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotKeyValue(_) => "not_key_value",
            Self::BadKey(_) => "bad_key",
            Self::ValueTooLong { .. } => "value_too_long",
            Self::TooMany(_) => "too_many_entries",
            Self::DuplicateKey(_) => "duplicate_key",
        }
    }
}

/// Validates settings given as entries in order: every key and value within its bound, at most
/// [`MAX_PLUGIN_CONFIG_ENTRIES`], no key twice.
pub fn plugin_config(
    entries: impl IntoIterator<Item = (String, String)>,
) -> Result<PluginConfig, PluginConfigError> {
    let mut map = PluginConfig::new();
    let mut given = 0usize;
    for (key, value) in entries {
        given += 1;
        check_entry(&key, &value)?;
        if map.contains_key(&key) {
            return Err(PluginConfigError::DuplicateKey(key));
        }
        map.insert(key, value);
    }
    if given > MAX_PLUGIN_CONFIG_ENTRIES {
        return Err(PluginConfigError::TooMany(given));
    }
    Ok(map)
}

/// Parses one `KEY=VALUE` command-line argument (clap value parser), checking its bounds.
pub fn parse_config_entry(arg: &str) -> Result<(String, String), PluginConfigError> {
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| PluginConfigError::NotKeyValue(arg.to_owned()))?;
    check_entry(key, value)?;
    Ok((key.to_owned(), value.to_owned()))
}

fn check_entry(key: &str, value: &str) -> Result<(), PluginConfigError> {
    if key.is_empty() || key.len() > MAX_CONFIG_KEY_BYTES {
        return Err(PluginConfigError::BadKey(key.to_owned()));
    }
    if value.len() > MAX_CONFIG_VALUE_BYTES {
        return Err(PluginConfigError::ValueTooLong {
            key: key.to_owned(),
            bytes: value.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_bound_is_one_rule() {
        assert_eq!(
            plugin_config(entries(&[("a", "1"), ("b", "2")]))
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            plugin_config(entries(&[("a", "1"), ("a", "2")])),
            Err(PluginConfigError::DuplicateKey("a".into()))
        );
        assert_eq!(
            plugin_config(entries(&[("", "1")])),
            Err(PluginConfigError::BadKey(String::new()))
        );
        let long = "v".repeat(MAX_CONFIG_VALUE_BYTES + 1);
        assert!(matches!(
            plugin_config(vec![("k".to_owned(), long)]),
            Err(PluginConfigError::ValueTooLong { bytes: 4097, .. })
        ));
        let many = (0..=MAX_PLUGIN_CONFIG_ENTRIES).map(|i| (format!("k{i}"), String::new()));
        assert_eq!(
            plugin_config(many),
            Err(PluginConfigError::TooMany(MAX_PLUGIN_CONFIG_ENTRIES + 1))
        );
        assert_eq!(
            parse_config_entry("delay_ms=5"),
            Ok(("delay_ms".into(), "5".into()))
        );
        assert_eq!(
            parse_config_entry("novalue"),
            Err(PluginConfigError::NotKeyValue("novalue".into()))
        );
    }
}
