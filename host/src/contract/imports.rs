//! The imports a plugin may have: an interface some capability serves (the contract's own, the
//! WASI 0.2 interfaces a language runtime links, each granting nothing a plugin could read or
//! reach), at a version this host serves. Checked at load, before a plugin can serve, so a
//! component that asks for what no plugin gets (another package, a WASI version other than 0.2)
//! is refused with every such import named; and it must export `retrieve`.

use wasmtime::Engine;
use wasmtime::component::Component;

use super::versions::{CONTRACT_PACKAGE, SUPPORTED_VERSIONS, version_served};
use crate::error::{Incompatibility, PluginError};

/// Every import of `component`, e.g. `wasi:io/streams@0.2.6`.
pub fn imports(component: &Component, engine: &Engine) -> Vec<String> {
    component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// Every import of the component in `bytes`, read from its binary without compiling it (a
/// language runtime's component takes seconds to compile); `None` if `bytes` is no component
/// this parser reads (the compiler then says why).
pub fn imports_in(bytes: &[u8]) -> Option<Vec<String>> {
    use wasmtime::wasmparser::{Parser, Payload};
    let mut imports = Vec::new();
    // Nested modules and components come inline, each closed by its own `End`.
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.ok()? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) if depth > 0 => depth -= 1,
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    let import = import.ok()?;
                    // A world's own types (`source`, `retrieve-error`) are imported as types:
                    // they grant nothing and the engine does not list them either.
                    if !matches!(import.ty, wasmtime::wasmparser::ComponentTypeRef::Type(_)) {
                        imports.push(import.name.name.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    Some(imports)
}

/// Refuses, before compiling, a component that imports what no plugin is granted (naming every
/// such import): a candidate that could never serve costs no compile.
pub fn check_bytes(name: &str, bytes: &[u8]) -> Result<(), PluginError> {
    let Some(imports) = imports_in(bytes) else {
        return Ok(());
    };
    let refused: Vec<String> = imports
        .into_iter()
        .filter(|import| grant_of(import).is_none())
        .collect();
    match refused.first() {
        None => Ok(()),
        // A contract import is refused for its version or interface, with its own reason.
        Some(import) if import.starts_with(CONTRACT_PACKAGE) => Ok(()),
        Some(_) => Err(PluginError::Incompatible {
            name: name.to_owned(),
            reason: Incompatibility::ForbiddenImports(refused),
        }),
    }
}

/// What `import` is granted, or `None`: the capability that serves its interface says, if the
/// version is one this host serves.
pub(crate) fn grant_of(import: &str) -> Option<&'static str> {
    let (interface, version) = import.split_once('@').unwrap_or((import, ""));
    if !version_served(interface, version) {
        return None;
    }
    crate::capabilities::interfaces()
        .find(|(name, _)| *name == interface)
        .map(|(_, grant)| grant)
}

/// Every export of `component`.
pub fn exports(component: &Component, engine: &Engine) -> Vec<String> {
    component
        .component_type()
        .exports(engine)
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// What one import of a plugin is granted, or why it is refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Grant {
    /// The import, e.g. `wasi:filesystem/types@0.2.9`.
    pub import: String,
    /// What the plugin gets through it (`nothing: …` for a WASI interface linked empty), or
    /// `None` when it is refused.
    pub granted: Option<&'static str>,
}

/// Every import of `component`, each with what it is granted (by the capability that serves it).
pub fn grants(component: &Component, engine: &Engine) -> Vec<Grant> {
    imports(component, engine)
        .into_iter()
        .map(|import| Grant {
            granted: grant_of(&import),
            import,
        })
        .collect()
}

/// Refuses a component that imports what no plugin is granted (naming every such import), that
/// is built against a contract version this host does not serve, or that exports no `retrieve`.
pub fn check(name: &str, component: &Component, engine: &Engine) -> Result<(), PluginError> {
    let refuse = |reason: Incompatibility| PluginError::Incompatible {
        name: name.to_owned(),
        reason,
    };
    let refused: Vec<Grant> = grants(component, engine)
        .into_iter()
        .filter(|g| g.granted.is_none())
        .collect();
    // A contract import at an unsupported version says more than "refused".
    for grant in &refused {
        let (interface, version) = grant.import.split_once('@').unwrap_or((&grant.import, ""));
        if let Some(rest) = interface.strip_prefix(CONTRACT_PACKAGE) {
            if !SUPPORTED_VERSIONS.contains(&version) {
                return Err(refuse(Incompatibility::UnsupportedVersion {
                    version: version.to_owned(),
                }));
            }
            return Err(refuse(Incompatibility::UndefinedInterface(format!(
                "{CONTRACT_PACKAGE}{rest}"
            ))));
        }
    }
    if !refused.is_empty() {
        return Err(refuse(Incompatibility::ForbiddenImports(
            refused.into_iter().map(|g| g.import).collect(),
        )));
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
            turnstile_fixtures::ESCAPE,
            turnstile_fixtures::FAULT,
            turnstile_fixtures::HOSTILE,
            turnstile_fixtures::HOSTCALLS,
            turnstile_fixtures::FETCH,
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
    fn imports_outside_wasi_0_2_and_the_contract_are_refused_all_by_name() {
        let engine = Engine::default();
        let component = Component::from_file(&engine, turnstile_fixtures::OUTSIDE).unwrap();
        let error = check("outside", &component, &engine)
            .unwrap_err()
            .to_string();
        for import in ["`wasi:io/streams@0.3.0`", "`example:secrets/vault@1.0.0`"] {
            assert!(error.contains(import), "{import}: {error}");
        }
        // Outbound HTTP is a capability (granted nothing unless the operator grants origins).
        assert!(!error.contains("wasi:http"), "{error}");
        assert!(
            error.contains("outside the plugin contract and WASI 0.2"),
            "{error}"
        );
        let refused: Vec<String> = grants(&component, &engine)
            .into_iter()
            .filter(|g| g.granted.is_none())
            .map(|g| g.import)
            .collect();
        assert_eq!(refused.len(), 2, "{refused:?}");
    }

    /// The imports read from the binary, before any compile, are the compiled component's, and
    /// the refusal comes without compiling.
    #[test]
    fn imports_are_read_without_compiling() {
        let engine = Engine::default();
        for path in [turnstile_fixtures::ESCAPE, turnstile_fixtures::OUTSIDE] {
            let bytes = std::fs::read(path).unwrap();
            let mut read = imports_in(&bytes).unwrap();
            let mut compiled = imports(&Component::new(&engine, &bytes).unwrap(), &engine);
            read.sort();
            compiled.sort();
            assert_eq!(read, compiled, "{path}");
        }
        let outside = std::fs::read(turnstile_fixtures::OUTSIDE).unwrap();
        let error = check_bytes("outside", &outside).unwrap_err().to_string();
        assert!(error.contains("`example:secrets/vault@1.0.0`"), "{error}");
        assert!(
            check_bytes(
                "escape",
                &std::fs::read(turnstile_fixtures::ESCAPE).unwrap()
            )
            .is_ok()
        );
        assert_eq!(imports_in(b"not wasm"), None);
    }

    /// A Rust guest that reaches for files and sockets imports WASI's filesystem and sockets: it
    /// links (every such import granted nothing), and each import says what it gets.
    #[test]
    fn filesystem_and_socket_imports_are_linked_granting_nothing() {
        let engine = Engine::default();
        let component = Component::from_file(&engine, turnstile_fixtures::ESCAPE).unwrap();
        check("escape", &component, &engine).unwrap();
        let grants = grants(&component, &engine);
        let of = |prefix: &str| -> Vec<&Grant> {
            grants
                .iter()
                .filter(|g| g.import.starts_with(prefix))
                .collect()
        };
        assert!(!of("wasi:filesystem/").is_empty() && !of("wasi:sockets/").is_empty());
        for grant in of("wasi:filesystem/")
            .into_iter()
            .chain(of("wasi:sockets/"))
        {
            assert!(
                grant.granted.is_some_and(|g| g.starts_with("nothing")),
                "{grant:?}"
            );
        }
    }

    /// Every WASI interface a capability grants (wasi:http's included) is one the linker provides: the language runtimes'
    /// probes (CPython at WASI 0.2.9, StarlingMonkey at 0.2.12, Rust's std) import all but two
    /// of them, and link; the two random ones are linked by a component that calls them.
    #[test]
    fn every_granted_interface_is_linked() {
        // The serving runtime's own linker: WASI and the contract. Its artifacts go where the
        // integration tests keep theirs (these components take seconds to compile).
        let shared = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/tmp/cache/plugins");
        let runtime = crate::PluginRuntime::new(
            crate::RuntimeOptions::evaluation(Default::default()).with_cache(Some(shared.into())),
        )
        .unwrap();
        let (engine, linker) = (runtime.engine(), runtime.linker());
        let mut imported = std::collections::BTreeSet::new();
        for path in [
            turnstile_fixtures::ESCAPE_PY,
            turnstile_fixtures::ESCAPE_JS,
            turnstile_fixtures::ESCAPE_JS_HTTP,
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
        for (name, _) in crate::capabilities::interfaces().filter(|(n, _)| n.starts_with("wasi:")) {
            let random = ["wasi:random/insecure", "wasi:random/insecure-seed"];
            assert!(
                imported.contains(name) || random.contains(&name),
                "{name} is granted but no probe imports it"
            );
        }
    }
}
