//! Compression of WAL frames (`wal_compression = off | lz4 | zstd`).
//!
//! The unit is the frame: what one write of the WAL buffer puts on disk. A compressed
//! frame's payload is `raw_len u32 | compressed bytes`, and its flags name the codec; the
//! frame's `lsn_start` and every LSN stay positions in the uncompressed stream. A frame
//! that would not shrink is stored uncompressed. Bytes read back are untrusted: the
//! decompressed length must be exactly `raw_len`, and `raw_len` is bounded.

use crate::wal::format::{FLAG_LZ4, FLAG_ZSTD, MAX_FRAME_PAYLOAD_BYTES};

/// The codec of WAL frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WalCompression {
    Off,
    Lz4,
    #[default]
    Zstd,
}

/// zstd level of WAL frames: the fastest levels, where zstd still finds the long
/// repeats of a log (rows next to rows like them, the same op again and again).
const ZSTD_LEVEL: i32 = 1;
/// Frames below this size are stored as they are: a commit alone does not shrink.
const MIN_COMPRESS_BYTES: usize = 128;

impl WalCompression {
    pub const ALL: [WalCompression; 3] = [
        WalCompression::Off,
        WalCompression::Lz4,
        WalCompression::Zstd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WalCompression::Off => "off",
            WalCompression::Lz4 => "lz4",
            WalCompression::Zstd => "zstd",
        }
    }

    pub fn parse(s: &str) -> Option<WalCompression> {
        WalCompression::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s.trim()))
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            WalCompression::Off => 0,
            WalCompression::Lz4 => 1,
            WalCompression::Zstd => 2,
        }
    }

    pub(crate) fn try_from_code(c: u8) -> Option<WalCompression> {
        WalCompression::ALL.into_iter().find(|w| w.code() == c)
    }

    pub(crate) fn from_code(c: u8) -> WalCompression {
        match c {
            1 => WalCompression::Lz4,
            2 => WalCompression::Zstd,
            _ => WalCompression::Off,
        }
    }
}

impl std::fmt::Display for WalCompression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The writer's compression state (reused buffers and zstd context).
#[derive(Default)]
pub(crate) struct FrameCompressor {
    zstd: Option<zstd::bulk::Compressor<'static>>,
    out: Vec<u8>,
}

impl FrameCompressor {
    /// Compresses `raw` with `codec`. Returns the stored payload and the frame flag, or
    /// None when the frame is to be stored as it is (codec off, too small, no gain, or
    /// the codec failed — the log never depends on compression working).
    pub fn compress(&mut self, codec: WalCompression, raw: &[u8]) -> Option<(&[u8], u32)> {
        if codec == WalCompression::Off || raw.len() < MIN_COMPRESS_BYTES {
            return None;
        }
        self.out.clear();
        self.out
            .extend_from_slice(&(raw.len() as u32).to_le_bytes());
        let flag = match codec {
            WalCompression::Off => return None,
            WalCompression::Lz4 => {
                let bound = lz4_flex::block::get_maximum_output_size(raw.len());
                self.out.resize(4 + bound, 0);
                let n = lz4_flex::block::compress_into(raw, &mut self.out[4..]).ok()?;
                self.out.truncate(4 + n);
                FLAG_LZ4
            }
            WalCompression::Zstd => {
                if self.zstd.is_none() {
                    self.zstd = zstd::bulk::Compressor::new(ZSTD_LEVEL).ok();
                }
                let z = self.zstd.as_mut()?;
                let bound = zstd::zstd_safe::compress_bound(raw.len());
                self.out.resize(4 + bound, 0);
                let n = z.compress_to_buffer(raw, &mut self.out[4..]).ok()?;
                self.out.truncate(4 + n);
                FLAG_ZSTD
            }
        };
        (self.out.len() < raw.len()).then_some((&self.out[..], flag))
    }
}

/// The codec flags of a frame, if any; Err for a combination no writer produces.
pub fn frame_codec(flags: u32) -> Result<WalCompression, String> {
    match flags & (FLAG_LZ4 | FLAG_ZSTD) {
        0 => Ok(WalCompression::Off),
        FLAG_LZ4 => Ok(WalCompression::Lz4),
        FLAG_ZSTD => Ok(WalCompression::Zstd),
        _ => Err("frame flags name two codecs".into()),
    }
}

/// Decompresses a stored frame payload. `Ok(None)` for an uncompressed frame.
pub fn decompress_frame(flags: u32, stored: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let codec = frame_codec(flags)?;
    if codec == WalCompression::Off {
        return Ok(None);
    }
    if stored.len() < 4 {
        return Err(format!("compressed frame of {} bytes", stored.len()));
    }
    let raw_len = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]) as usize;
    if raw_len as u64 > MAX_FRAME_PAYLOAD_BYTES {
        return Err(format!(
            "compressed frame claims {raw_len} bytes, more than a frame holds"
        ));
    }
    let data = &stored[4..];
    let mut raw = vec![0u8; raw_len];
    let n = match codec {
        WalCompression::Lz4 => lz4_flex::block::decompress_into(data, &mut raw)
            .map_err(|e| format!("lz4 frame does not decompress: {e}"))?,
        _ => zstd::bulk::decompress_to_buffer(data, &mut raw[..])
            .map_err(|e| format!("zstd frame does not decompress: {e}"))?,
    };
    if n != raw_len {
        return Err(format!(
            "compressed frame gives {n} bytes, its header says {raw_len}"
        ));
    }
    Ok(Some(raw))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample() -> Vec<u8> {
        let mut v = Vec::new();
        for i in 0..2000u32 {
            v.extend_from_slice(&i.to_le_bytes());
            v.extend_from_slice(&[b'x'; 60]);
        }
        v
    }

    #[test]
    fn every_codec_round_trips_and_shrinks_repeats() {
        let raw = sample();
        let mut c = FrameCompressor::default();
        for codec in [WalCompression::Lz4, WalCompression::Zstd] {
            let (stored, flag) = c.compress(codec, &raw).unwrap();
            let stored = stored.to_vec();
            assert!(stored.len() * 4 < raw.len(), "{codec}: {}", stored.len());
            assert_eq!(frame_codec(flag).unwrap(), codec);
            assert_eq!(decompress_frame(flag, &stored).unwrap().unwrap(), raw);
        }
        assert!(c.compress(WalCompression::Off, &raw).is_none());
        assert!(c.compress(WalCompression::Zstd, &raw[..50]).is_none());
        assert_eq!(decompress_frame(0, &raw).unwrap(), None);
    }

    #[test]
    fn damaged_compressed_frames_are_errors() {
        let raw = sample();
        let mut c = FrameCompressor::default();
        for codec in [WalCompression::Lz4, WalCompression::Zstd] {
            let (stored, flag) = c.compress(codec, &raw).unwrap();
            let stored = stored.to_vec();
            for cut in [0, 3, 4, 10, stored.len() / 2, stored.len() - 1] {
                assert!(
                    decompress_frame(flag, &stored[..cut]).is_err(),
                    "{codec} {cut}"
                );
            }
            let mut big = stored.clone();
            big[..4].copy_from_slice(&(raw.len() as u32 + 1).to_le_bytes());
            assert!(decompress_frame(flag, &big).is_err());
            let mut huge = stored.clone();
            huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
            assert!(decompress_frame(flag, &huge).is_err());
            // Flipped bytes: an error or some bytes, never a panic (the CRC of the frame
            // catches these before decompression in the reader).
            for i in 4..stored.len() {
                let mut b = stored.clone();
                b[i] ^= 0x5a;
                let _ = decompress_frame(flag, &b);
            }
        }
        assert!(decompress_frame(FLAG_LZ4 | FLAG_ZSTD, &raw).is_err());
    }

    mod fuzz {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(crate::testing::proptest_cases()))]

            /// Random stored bytes under each codec flag: an error or at most a frame's
            /// worth of bytes, never a panic.
            #[test]
            fn random_frames_never_panic(
                bytes in proptest::collection::vec(any::<u8>(), 0..400),
                raw_len in 0u32..(2 << 20),
            ) {
                for flag in [FLAG_LZ4, FLAG_ZSTD] {
                    let mut b = raw_len.to_le_bytes().to_vec();
                    b.extend_from_slice(&bytes);
                    if let Ok(Some(raw)) = decompress_frame(flag, &b) {
                        prop_assert_eq!(raw.len(), raw_len as usize);
                    }
                    let _ = decompress_frame(flag, &bytes);
                }
            }
        }
    }
}
