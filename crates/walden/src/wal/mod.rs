//! The write-ahead log: record format, framing, the writer with group commit, the reader.

pub mod compress;
pub mod format;
pub mod reader;
pub mod record;
pub mod retention;
pub mod writer;

pub use compress::WalCompression;
pub use reader::{FrameStats, WalReader};
pub use record::{LogRecord, Record, RecordKind};
pub use writer::{Appended, Wal, WalPosition};
