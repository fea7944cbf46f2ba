//! Compiling components through a cache of precompiled artifacts that only this host wrote: an
//! artifact is native code loaded without being checked again, so it is trusted only from this
//! host's private cache directory and only when it matches the digest recorded beside it.
//!
//! A cached artifact is mapped from its file, not copied into the heap: its code is shared by
//! every process that maps it, and a plugin's initial memory image (tens of MB for a language
//! runtime's snapshot) is mapped copy-on-write into each fresh instance, so a call touches only
//! the pages it writes.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use crate::error::{Incompatibility, PluginError};
use crate::runtime::PluginRuntime;

/// What the first 8 bytes say a file is, when it cannot be a component: not WebAssembly, or a
/// core module (version 1; a component's header is version 0x0d, layer 1). In words a person can
/// act on, instead of the parser's dump of the bytes it expected.
pub fn not_a_component(bytes: &[u8]) -> Option<Incompatibility> {
    const MAGIC: &[u8] = b"\0asm";
    const CORE_MODULE: &[u8] = &[1, 0, 0, 0];
    if !bytes.starts_with(MAGIC) {
        return Some(Incompatibility::NotWasm);
    }
    (bytes.get(4..8) == Some(CORE_MODULE)).then_some(Incompatibility::CoreModule)
}

impl PluginRuntime {
    /// Compiles `bytes`, or loads the artifact this host precompiled for the same component
    /// (by sha256) and the same engine settings.
    pub(crate) fn compile(
        &self,
        name: &str,
        bytes: &[u8],
        sha256: &str,
    ) -> Result<Component, PluginError> {
        let incompatible = |reason: Incompatibility| PluginError::Incompatible {
            name: name.to_owned(),
            reason,
        };
        if let Some(reason) = not_a_component(bytes) {
            return Err(incompatible(reason));
        }
        // Compiling a language runtime's component (tens of MB of code) takes hundreds of MB
        // in the compiler's threads; the allocator keeps what they freed unless told.
        let compiled = self.compile_or_load(bytes, sha256, &incompatible);
        crate::freed_memory::give_back_freed_memory();
        compiled
    }

    fn compile_or_load(
        &self,
        bytes: &[u8],
        sha256: &str,
        incompatible: &dyn Fn(Incompatibility) -> PluginError,
    ) -> Result<Component, PluginError> {
        let Some(dir) = &self.options().cache_dir else {
            return Component::new(self.engine(), bytes)
                .map_err(|e| incompatible(Incompatibility::Compile(e)));
        };
        let mut engine_hash = DefaultHasher::new();
        self.engine()
            .precompile_compatibility_hash()
            .hash(&mut engine_hash);
        let path = dir.join(format!("{sha256}-{:016x}.cwasm", engine_hash.finish()));
        // One compile of a component at a time, whoever asks: threads of this process, or other
        // processes sharing the cache (a test run's servers and commands, replicas on one host).
        // The lock is released with `_compiling`, once the artifact is in place.
        let _compiling = lock_artifact(dir, &path);
        if let Some(component) = self.load_cached(&path) {
            return Ok(component);
        }
        let artifact = self
            .engine()
            .precompile_component(bytes)
            .map_err(|e| incompatible(Incompatibility::Compile(e)))?;
        // Only an artifact that loads is cached: a component this engine cannot instantiate
        // (e.g. one needing more than the pool allows) is refused now and every time, with
        // the real cause, and never leaves an unusable file behind.
        let component = self
            .deserialize_own(&artifact)
            .map_err(|e| incompatible(Incompatibility::Artifact(e)))?;
        if let Err(e) = store_artifact(dir, &path, &artifact) {
            tracing::warn!(path = %path.display(), error = %e, "cannot cache precompiled plugin");
            return Ok(component);
        }
        // Served from the file just written (mapped), as every later load will be.
        Ok(self.load_cached(&path).unwrap_or(component))
    }

    fn load_cached(&self, path: &Path) -> Option<Component> {
        let artifact = std::fs::read(path).ok()?;
        let recorded = std::fs::read_to_string(path.with_extension("cwasm.sha256")).ok()?;
        // The digest file guards against a truncated or half-written artifact; the directory is
        // private to this host (created 0700), which is what makes the artifact trusted.
        if hex::encode(Sha256::digest(&artifact)) != recorded.trim() {
            tracing::warn!(path = %path.display(), "precompiled plugin does not match its digest; recompiling");
            return None;
        }
        drop(artifact);
        match self.map_own(path) {
            Ok(component) => {
                mark_used(path);
                Some(component)
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "precompiled plugin rejected; recompiling");
                None
            }
        }
    }

    #[allow(unsafe_code)]
    fn map_own(&self, path: &Path) -> wasmtime::Result<Component> {
        // SAFETY: as for `deserialize_own`: a file this host wrote into its private cache
        // directory (0700, owned by this user: `crate::cache`), whose digest was checked just
        // before. The file is mapped, so it must not change while mapped: this host never
        // rewrites an artifact in place (a new one is renamed over it, leaving the mapping on
        // the old inode).
        unsafe { Component::deserialize_file(self.engine(), path) }
    }

    #[allow(unsafe_code)]
    fn deserialize_own(&self, artifact: &[u8]) -> wasmtime::Result<Component> {
        // SAFETY: `Component::deserialize` trusts its input to be machine code this engine
        // produced. `artifact` is either what `precompile_component` returned a moment ago or a
        // file this host wrote into its private cache directory, checked against the digest it
        // recorded beside it; wasmtime itself also checks the engine settings it was built with.
        unsafe { Component::deserialize(self.engine(), artifact) }
    }
}

/// Records that the artifact at `path` was used now (the modification time of its digest): a
/// bounded cache removes the entries least recently used first. Best effort.
fn mark_used(path: &Path) {
    let marked = std::fs::File::open(path.with_extension("cwasm.sha256"))
        .and_then(|f| f.set_modified(std::time::SystemTime::now()));
    if let Err(e) = marked {
        tracing::debug!(path = %path.display(), error = %e, "cannot mark the precompiled plugin used");
    }
}

/// An exclusive lock on `<artifact>.lock` (created in the private cache directory), held until
/// the file is dropped; `None` (no lock, compile anyway) if it cannot be had.
fn lock_artifact(dir: &Path, artifact: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(artifact.with_extension("cwasm.lock"))
        .ok()?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive).ok()?;
    Some(file)
}

/// Writes the artifact under a unique temporary name, flushes it, and renames it into place, then
/// records its digest: a reader sees either no artifact or a whole one.
fn store_artifact(dir: &Path, path: &Path, artifact: &[u8]) -> std::io::Result<()> {
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    // Named `ARTIFACT.XXXXXX.tmp` while `ARTIFACT.lock` is held: one left by a compile cut
    // short is removed when the cache next opens (`crate::cache_trim`).
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!("{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, artifact)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    std::fs::write(
        path.with_extension("cwasm.sha256"),
        hex::encode(Sha256::digest(artifact)),
    )
}
