//! The file system side of a bundle: file and directory stamps, the walk of
//! its tree, reading its concept files, and watching it for changes.

pub mod dir;
pub mod read;
pub mod stamp;
pub mod walk;
pub mod watch;
