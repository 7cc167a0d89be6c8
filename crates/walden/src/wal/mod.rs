//! The write-ahead log: the record header and record owners, framing, the writer with
//! group commit, the reader, retention.

pub mod compress;
pub mod format;
pub mod owner;
pub mod payload;
pub mod reader;
pub mod record;
pub mod retention;
pub mod writer;

pub use compress::WalCompression;
pub use owner::{Owners, RecordOwner, RedoCtx};
pub use reader::{FrameStats, WalReader};
pub use record::{LogRecord, RecordType};
pub use writer::{Appended, Wal, WalPosition};
