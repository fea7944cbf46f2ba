//! The imports a plugin may have: the contract's own interfaces at a supported version, and the
//! WASI interfaces a guest's standard library links (each granting nothing). Checked at load, before
//! a plugin can serve, so a component that asks for sockets, say, is refused with the import named
//! rather than linked against a denying stub; and it must export `retrieve`.

use wasmtime::Engine;
use wasmtime::component::Component;

use super::versions::{CONTRACT_INTERFACES, CONTRACT_PACKAGE, SUPPORTED_VERSIONS};
use crate::error::{Incompatibility, PluginError};

/// Interfaces (without version) a plugin may import besides the contract's own.
const ALLOWED_WASI: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
];

/// Every import of `component`, e.g. `wasi:io/streams@0.2.6`.
pub fn imports(component: &Component, engine: &Engine) -> Vec<String> {
    component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// Every export of `component`.
pub fn exports(component: &Component, engine: &Engine) -> Vec<String> {
    component
        .component_type()
        .exports(engine)
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// Refuses imports outside the contract and contract versions this host does not support.
pub fn check(name: &str, component: &Component, engine: &Engine) -> Result<(), PluginError> {
    let refuse = |reason: Incompatibility| PluginError::Incompatible {
        name: name.to_owned(),
        reason,
    };
    for import in imports(component, engine) {
        let (interface, version) = import.split_once('@').unwrap_or((&import, ""));
        if let Some(rest) = interface.strip_prefix(CONTRACT_PACKAGE) {
            if !SUPPORTED_VERSIONS.contains(&version) {
                return Err(refuse(Incompatibility::UnsupportedVersion {
                    version: version.to_owned(),
                }));
            }
            if !CONTRACT_INTERFACES.contains(&rest.trim_start_matches('/')) {
                return Err(refuse(Incompatibility::UndefinedInterface(import)));
            }
        } else if !ALLOWED_WASI.contains(&interface) {
            return Err(refuse(Incompatibility::ForbiddenImport(import)));
        }
    }
    if !exports(component, engine).iter().any(|e| e == "retrieve") {
        return Err(refuse(Incompatibility::NoRetrieveExport));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_components_fit_the_contract() {
        let engine = Engine::default();
        for (name, bytes) in [
            ("retrieval-hybrid", crate::embedded_retrieval()),
            ("retrieval", crate::embedded_lexical()),
        ] {
            check(name, &Component::new(&engine, bytes).unwrap(), &engine).unwrap();
        }
        for path in [
            turnstile_fixtures::DELAY,
            turnstile_fixtures::FAULT,
            turnstile_fixtures::HOSTILE,
            turnstile_fixtures::HOSTCALLS,
        ] {
            let component = Component::from_file(&engine, path).unwrap();
            check(path, &component, &engine).unwrap();
        }
    }

    /// The default plugin uses the 0.1.2 additions, the lexical plugin is built against 0.1.1 and
    /// the `delay` fixture against 0.1.0, on purpose: each fits the contract (their imports
    /// resolve to 0.1.2 by semver), so every supported version stays tested.
    #[test]
    fn every_supported_contract_version_is_shipped() {
        let engine = Engine::default();
        let corpus_import = |component: Component| {
            imports(&component, &engine)
                .into_iter()
                .find(|i| i.starts_with("turnstile:retrieval/corpus@"))
                .unwrap()
        };
        assert_eq!(
            corpus_import(Component::new(&engine, crate::embedded_retrieval()).unwrap()),
            "turnstile:retrieval/corpus@0.1.2"
        );
        assert_eq!(
            corpus_import(Component::new(&engine, crate::embedded_lexical()).unwrap()),
            "turnstile:retrieval/corpus@0.1.1"
        );
        assert_eq!(
            corpus_import(Component::from_file(&engine, turnstile_fixtures::DELAY).unwrap()),
            "turnstile:retrieval/corpus@0.1.0"
        );
    }

    #[test]
    fn filesystem_and_socket_imports_are_refused_by_name() {
        let engine = Engine::default();
        let component = Component::from_file(&engine, turnstile_fixtures::ESCAPE).unwrap();
        let error = check("escape", &component, &engine)
            .unwrap_err()
            .to_string();
        assert!(error.contains("it imports `wasi:"), "{error}");
        assert!(error.contains("outside the plugin contract"), "{error}");
    }
}
