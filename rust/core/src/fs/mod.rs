//! The file system side of a bundle: file and directory stamps, the walk of
//! its tree (on a stack that grows with its depth), the part of it a load
//! keeps, reading its concept files, and watching it for changes.

pub mod dir;
pub mod range;
pub mod read;
pub mod stack;
pub mod stamp;
pub mod walk;
pub mod watch;
