//! What the generator-driven targets (`gen_pipeline`, `gen_rewrite`)
//! share: environment switches and counters.
#![allow(dead_code)] // each target uses part of it

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

fn env(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// `AGUI_FUZZ_DUMP=FILE`: the stream an input makes is written to FILE
/// (`cargo fuzz run -s none TARGET INPUT` shows a finding's stream); if
/// FILE is a directory, each input's stream goes into it as
/// `<hash>.sse` (run over a corpus with `-runs=0`, it turns the corpus
/// into streams).
pub fn dump(stream: &[u8]) {
    static DUMP: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    let Some(path) = DUMP.get_or_init(|| env("AGUI_FUZZ_DUMP").map(Into::into)) else {
        return;
    };
    if path.is_dir() {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut h = DefaultHasher::new();
        stream.hash(&mut h);
        let file = path.join(format!("{:016x}.sse", h.finish()));
        std::fs::write(file, stream).expect("AGUI_FUZZ_DUMP is writable");
    } else {
        std::fs::write(path, stream).expect("AGUI_FUZZ_DUMP is writable");
    }
}

/// Counters of what the runs saw, printed at every power of two of
/// inputs (from 256) with `AGUI_FUZZ_STATS=1`: `N` counters named by
/// `names`, counter 0 the inputs.
pub struct Counters<const N: usize> {
    pub names: [&'static str; N],
    pub counts: [AtomicU64; N],
}

impl<const N: usize> Counters<N> {
    pub const fn new(names: [&'static str; N]) -> Self {
        Counters {
            names,
            counts: [const { AtomicU64::new(0) }; N],
        }
    }

    /// Counts one of counter `i` (if `yes`).
    pub fn count(&self, i: usize, yes: bool) {
        if yes {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Prints the counters now and then, then counts an input (counter 0).
    pub fn input(&self, target: &str) {
        static ON: OnceLock<bool> = OnceLock::new();
        let n = self.counts[0].load(Ordering::Relaxed);
        if n.is_power_of_two() && n >= 256 && *ON.get_or_init(|| env("AGUI_FUZZ_STATS").is_some()) {
            let mut line = format!("{target} stats:");
            for (name, c) in self.names.iter().zip(&self.counts) {
                line += &format!(" {name} {},", c.load(Ordering::Relaxed));
            }
            line.pop();
            eprintln!("{line}");
        }
        self.counts[0].fetch_add(1, Ordering::Relaxed);
    }
}
