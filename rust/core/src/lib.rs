//! okfast-core: OKF bundle loading, folding, the per-field index and the
//! exact weighted term-count scorer. Pure Rust; the Python bindings live in
//! `rust/bindings` and are the only code that knows about PyO3.

pub mod bundle;
pub mod cache;
pub mod concept;
pub mod diagnostic;
pub mod error;
pub mod index;
pub mod intern;
pub mod order;
pub mod progress;
pub mod score;
pub mod slab;
pub mod slot;
pub mod stale;
#[cfg(test)]
mod testing;
pub mod text;
pub mod texts;
pub mod trigram;
pub mod walk;
pub mod watch;
pub mod yaml;

pub use bundle::Bundle;
pub use error::Error;
