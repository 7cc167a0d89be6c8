//! Options for test databases: one base, and the few settings tests change, each named
//! where a test uses it.

use std::sync::Arc;

use walden::vfs::{SimVfs, Vfs};
use walden::{Options, Protection, TableKind};

/// WAL segment size of test databases: the smallest, so that a few MiB of WAL span
/// several segments.
pub const SEGMENT_BYTES: u64 = 2 << 20;

/// The engine's defaults on the file layer `vfs`, with no background thread (a test
/// checkpoints when it chooses).
pub fn default_opts(vfs: Arc<dyn Vfs>) -> Options {
    Options {
        vfs,
        background: false,
        ..Options::default()
    }
}

/// [`default_opts`] with 2 MiB WAL segments and a 1 MiB buffer pool: the base of most
/// tests.
pub fn test_opts(vfs: Arc<dyn Vfs>) -> Options {
    Options {
        segment_size_bytes: SEGMENT_BYTES,
        buffer_pool_bytes: 1 << 20,
        ..default_opts(vfs)
    }
}

/// [`test_opts`] on the simulated file layer `vfs`.
pub fn sim_opts(vfs: &SimVfs) -> Options {
    test_opts(Arc::new(vfs.clone()))
}

/// [`test_opts`] in protection mode `protection`.
pub fn opts_on(vfs: Arc<dyn Vfs>, protection: Protection) -> Options {
    Options {
        protection,
        ..test_opts(vfs)
    }
}

/// [`opts_on`] the simulated file layer `vfs`.
pub fn opts(vfs: &SimVfs, protection: Protection) -> Options {
    opts_on(Arc::new(vfs.clone()), protection)
}

/// [`opts`] with tables of kind `kind` unless `create_table` names another.
pub fn table_opts(vfs: &SimVfs, protection: Protection, kind: TableKind) -> Options {
    Options {
        default_table_kind: kind,
        ..opts(vfs, protection)
    }
}

/// `options` with pages of `page_size` bytes and a buffer pool of `pool_pages` of them.
pub fn with_pool(options: Options, page_size: usize, pool_pages: u64) -> Options {
    Options {
        page_size,
        buffer_pool_bytes: pool_pages * page_size as u64,
        ..options
    }
}

/// `options` with 4 KiB pages and the smallest buffer pool, 16 of them, so that inserts
/// evict dirty pages and scans read pages back from the data file.
pub fn small_pool(options: Options) -> Options {
    with_pool(options, 4096, 16)
}
