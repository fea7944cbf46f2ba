//! The WASI policy: what a plugin may import of WASI, and what each import is granted.
//!
//! A language runtime links WASI interfaces its plugin never uses: CPython (componentize-py)
//! imports the filesystem and sockets, StarlingMonkey (componentize-js) the filesystem for its
//! stdio. Refusing such a component for the import alone would leave every plugin but a Rust
//! one unusable; granting what they name would break the sandbox. So every interface of WASI 0.2
//! that the host links is linked — and grants nothing a plugin could read or reach: no preopened
//! directory, an empty environment and no arguments, networking switched off, stdin empty,
//! stdout and stderr captured into the server log (bounded). Anything else — another WASI
//! package (`wasi:http`, …), a WASI version other than 0.2, an interface of another package — is
//! refused at load, naming every such import.

/// The WASI major.minor version the host links (any 0.2.x: later patch versions only add).
pub const WASI_VERSION: &str = "0.2";

/// Every WASI interface (without version) a plugin may import, and what it is granted.
pub const WASI_GRANTS: &[(&str, &str)] = &[
    (
        "wasi:cli/environment",
        "nothing: no variables, no arguments, no working directory",
    ),
    ("wasi:cli/exit", "exit ends the call as a trap"),
    ("wasi:cli/stdin", "nothing: an empty stream"),
    (
        "wasi:cli/stdout",
        "a stream into the server log (16 KiB per call, escaped)",
    ),
    (
        "wasi:cli/stderr",
        "a stream into the server log (16 KiB per call, escaped)",
    ),
    ("wasi:cli/terminal-input", "nothing: no terminal"),
    ("wasi:cli/terminal-output", "nothing: no terminal"),
    ("wasi:cli/terminal-stdin", "nothing: stdin is no terminal"),
    ("wasi:cli/terminal-stdout", "nothing: stdout is no terminal"),
    ("wasi:cli/terminal-stderr", "nothing: stderr is no terminal"),
    ("wasi:io/error", "the errors of the streams above"),
    ("wasi:io/poll", "waiting on the streams and clocks above"),
    ("wasi:io/streams", "the streams above"),
    ("wasi:clocks/monotonic-clock", "the host's monotonic clock"),
    ("wasi:clocks/wall-clock", "the host's wall clock"),
    ("wasi:random/random", "random bytes"),
    ("wasi:random/insecure", "random bytes"),
    ("wasi:random/insecure-seed", "a random seed"),
    ("wasi:filesystem/types", "nothing: no directory is opened"),
    (
        "wasi:filesystem/preopens",
        "nothing: an empty list of directories",
    ),
    (
        "wasi:sockets/network",
        "nothing: networking is switched off",
    ),
    (
        "wasi:sockets/instance-network",
        "nothing: networking is switched off",
    ),
    ("wasi:sockets/tcp", "nothing: every TCP socket call fails"),
    (
        "wasi:sockets/tcp-create-socket",
        "nothing: every TCP socket call fails",
    ),
    ("wasi:sockets/udp", "nothing: every UDP socket call fails"),
    (
        "wasi:sockets/udp-create-socket",
        "nothing: every UDP socket call fails",
    ),
    (
        "wasi:sockets/ip-name-lookup",
        "nothing: every name lookup fails",
    ),
];

/// What the WASI interface `interface` at `version` is granted, or `None` when the host refuses
/// it (not an interface of WASI 0.2 that the host links).
pub fn wasi_grant(interface: &str, version: &str) -> Option<&'static str> {
    let minor = version.rsplit_once('.').map_or(version, |(minor, _)| minor);
    if minor != WASI_VERSION {
        return None;
    }
    WASI_GRANTS
        .iter()
        .find(|(name, _)| *name == interface)
        .map(|(_, grant)| *grant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_wasi_0_2_interfaces_the_host_links_are_granted() {
        assert!(
            wasi_grant("wasi:filesystem/types", "0.2.9").is_some_and(|g| g.starts_with("nothing"))
        );
        assert!(wasi_grant("wasi:sockets/tcp", "0.2.12").is_some_and(|g| g.starts_with("nothing")));
        assert!(wasi_grant("wasi:io/streams", "0.2.0").is_some());
        assert_eq!(wasi_grant("wasi:io/streams", "0.3.0"), None);
        assert_eq!(wasi_grant("wasi:io/streams", "0.1.0"), None);
        assert_eq!(wasi_grant("wasi:io/streams", ""), None);
        assert_eq!(wasi_grant("wasi:http/outgoing-handler", "0.2.0"), None);
        assert_eq!(wasi_grant("wasi:keyvalue/store", "0.2.0"), None);
    }

    /// Every interface the policy grants is one the linker provides: the language runtimes'
    /// probes (CPython at WASI 0.2.9, StarlingMonkey at 0.2.12, Rust's std) import all but two
    /// of them, and link; the two random ones are linked by a component that calls them.
    #[test]
    fn every_granted_interface_is_linked() {
        // The serving runtime's own linker: WASI and the contract. Its artifacts go where the
        // integration tests keep theirs (these components take seconds to compile).
        let shared = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/tmp/cache/plugins");
        let runtime = crate::PluginRuntime::new(crate::RuntimeOptions {
            memory_limit: 64 << 20,
            max_instances: 1,
            cache_dir: Some(shared.into()),
            pooling: false,
            call_deadline: None,
            observer: None,
            memory_init: crate::MemoryInit::default(),
        })
        .unwrap();
        let (engine, linker) = (runtime.engine(), runtime.linker());
        let mut imported = std::collections::BTreeSet::new();
        for path in [
            turnstile_fixtures::ESCAPE_PY,
            turnstile_fixtures::ESCAPE_JS,
            turnstile_fixtures::ESCAPE,
        ] {
            let bytes = std::fs::read(path).unwrap();
            let component = runtime
                .compile(path, &bytes, &crate::sha256_hex(&bytes))
                .unwrap();
            linker
                .instantiate_pre(&component)
                .unwrap_or_else(|e| panic!("{path}: {e:#}"));
            for import in crate::contract::imports(&component, engine) {
                let interface = import.split_once('@').map_or(&*import, |(i, _)| i);
                imported.insert(interface.to_owned());
            }
        }
        let random = |name: &str, export: &str| {
            let wat = format!("(component (import \"{name}\" (instance {export})))");
            let bytes = wat::parse_str(&wat).unwrap();
            let component = wasmtime::component::Component::new(engine, bytes).unwrap();
            linker.instantiate_pre(&component).map(|_| ())
        };
        random(
            "wasi:random/insecure@0.2.0",
            "(export \"get-insecure-random-u64\" (func (result u64)))",
        )
        .unwrap();
        random(
            "wasi:random/insecure-seed@0.2.12",
            "(export \"insecure-seed\" (func (result (tuple u64 u64))))",
        )
        .unwrap();
        // The same check can fail: a function the interface does not have.
        assert!(random("wasi:random/insecure@0.2.0", "(export \"nope\" (func))").is_err());
        for (name, _) in WASI_GRANTS {
            let random = ["wasi:random/insecure", "wasi:random/insecure-seed"];
            assert!(
                imported.contains(*name) || random.contains(name),
                "{name} is granted but no probe imports it"
            );
        }
    }
}
