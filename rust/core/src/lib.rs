//! okfast-core: OKF bundle loading, folding, the per-field index and the
//! exact weighted term-count scorer. Pure Rust; the Python bindings live in
//! `rust/bindings` and are the only code that knows about PyO3.
//!
//! The modules form a one-way order — a module uses only those listed
//! before it (docs/architecture.md):
//! `error`, `diagnostic`, `progress`, `array` → `text` → `yaml` →
//! `concept` → `fs` → `index` → `cache` → `bundle` → `score` → `bm25f`, `order`.

pub mod array;
pub mod bm25f;
pub mod bundle;
pub mod cache;
pub mod concept;
pub mod diagnostic;
pub mod error;
pub mod fs;
pub mod index;
pub mod order;
pub mod progress;
pub mod score;
#[cfg(test)]
mod testing;
pub mod text;
pub mod yaml;

pub use bundle::Bundle;
pub use error::Error;
