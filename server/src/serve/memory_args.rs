//! `turnstile serve`'s flags for a plugin instance's memory: its cap, how a fresh instance gets
//! the component's initial memory, and how much of it stays resident between calls.

use clap::Args;
use turnstile_host::MemoryInit;

/// Flags of a plugin instance's memory (flattened into `ServeArgs`).
#[derive(Debug, Clone, Args)]
pub struct PluginMemoryArgs {
    /// Cap on one plugin instance's linear memory, in MiB (1..=4096); growth past it traps.
    #[arg(long = "memory-limit-mib", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub memory_limit_mib: u32,

    /// How each fresh plugin instance gets its initial memory: `cow`, mapped copy-on-write from
    /// the component's image, its written pages reset in place after each call, or `copy`,
    /// copied whole into memory kept resident (the whole image copied for every call: slower;
    /// docs/PLUGINS.md).
    #[arg(long = "plugin-memory-init", default_value_t = MemoryInit::Cow,
          value_parser = clap::builder::TypedValueParser::try_map(
              clap::builder::PossibleValuesParser::new(["cow", "copy"]),
              |name: String| name.parse::<MemoryInit>()))]
    pub plugin_memory_init: MemoryInit,

    /// MiB of each pooled instance memory kept resident between calls (0..=4096): the pages a
    /// call wrote, up to this much, are reset in place to the component's image and stay
    /// mapped, so the next call does not page-fault them back in; past it they are dropped.
    /// Default: 16 with `cow`, 32 with `copy`. Bounds what idle instances keep resident: at most
    /// this × `--max-active` × 2 (a component's memories). Used where the kernel has PAGEMAP_SCAN
    /// (Linux ≥ 6.7).
    #[arg(long = "plugin-keep-resident-mib",
          value_parser = clap::value_parser!(u32).range(0..=4096))]
    pub plugin_keep_resident_mib: Option<u32>,
}

impl PluginMemoryArgs {
    /// The bytes to keep resident, `None` for the runtime's default for the memory init.
    pub fn keep_resident(&self) -> Option<usize> {
        self.plugin_keep_resident_mib
            .map(|mib| (mib as usize) << 20)
    }
}
