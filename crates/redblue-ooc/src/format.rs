//! The file format of a [`DiskMatrix`](crate::DiskMatrix): a header, a table of one checksum
//! per panel, then the matrix column-major.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "RBOOCMAT"
//!      8     4  format version (1), little-endian u32
//!     12     4  scalar type: 0 f32, 1 f64, 2 c32, 3 c64
//!     16     8  rows
//!     24     8  columns
//!     32     8  panel width w: panel p holds columns p·w .. min((p+1)·w, columns)
//!     40     8  checksum of bytes 0..40
//!     48  8·P   one checksum per panel (P = ⌈columns / w⌉), of its bytes
//!      D        the elements, column-major: (i, j) at D + (i + j·rows)·size, D = 48 + 8·P
//!               rounded up to 4096
//! ```
//!
//! Every integer and element is little-endian. A panel is contiguous (whole columns), so its
//! checksum covers one run of the file.

use redblue_core::Scalar;

/// The first 8 bytes of every file.
pub const MAGIC: [u8; 8] = *b"RBOOCMAT";
/// The format version this code reads and writes.
pub const VERSION: u32 = 1;
/// Bytes before the checksum table.
pub const HEADER_BYTES: usize = 48;
/// The data's alignment in the file.
const DATA_ALIGN: u64 = 4096;

/// The code of a scalar type in the header.
pub fn scalar_code<T: Scalar>() -> u32 {
    match (T::IS_COMPLEX, std::mem::size_of::<T>()) {
        (false, 4) => 0,
        (false, _) => 1,
        (true, 8) => 2,
        (true, _) => 3,
    }
}

/// The name of a scalar code (`?` for an unknown one).
pub fn scalar_name(code: u32) -> &'static str {
    ["f32", "f64", "c32", "c64"]
        .get(code as usize)
        .copied()
        .unwrap_or("?")
}

/// What the header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Scalar type code.
    pub scalar: u32,
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// Panel width.
    pub panel: u64,
}

impl Header {
    /// Number of panels, `⌈cols / panel⌉`.
    pub fn panels(&self) -> u64 {
        self.cols.div_ceil(self.panel.max(1))
    }

    /// Where the elements start.
    pub fn data_offset(&self) -> u64 {
        (HEADER_BYTES as u64 + 8 * self.panels()).div_ceil(DATA_ALIGN) * DATA_ALIGN
    }

    /// The file's length for elements of `size` bytes, or `None` if it overflows.
    pub fn file_len(&self, size: u64) -> Option<u64> {
        self.rows
            .checked_mul(self.cols)?
            .checked_mul(size)?
            .checked_add(self.data_offset())
    }

    /// The header's 48 bytes.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.scalar.to_le_bytes());
        b[16..24].copy_from_slice(&self.rows.to_le_bytes());
        b[24..32].copy_from_slice(&self.cols.to_le_bytes());
        b[32..40].copy_from_slice(&self.panel.to_le_bytes());
        let sum = checksum(&b[..40]);
        b[40..48].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Reads a header: `Err` says what is wrong (the caller names the file).
    pub fn decode(b: &[u8; HEADER_BYTES]) -> Result<Header, HeaderProblem> {
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        if b[..8] != MAGIC {
            return Err(HeaderProblem::Magic);
        }
        if u32_at(8) != VERSION {
            return Err(HeaderProblem::Version(u32_at(8)));
        }
        if u64_at(40) != checksum(&b[..40]) {
            return Err(HeaderProblem::Checksum);
        }
        let h = Header {
            scalar: u32_at(12),
            rows: u64_at(16),
            cols: u64_at(24),
            panel: u64_at(32),
        };
        if h.scalar > 3 || h.panel == 0 {
            return Err(HeaderProblem::Fields);
        }
        Ok(h)
    }
}

/// What is wrong with a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderProblem {
    /// Not this format.
    Magic,
    /// Another format version.
    Version(u32),
    /// The header's own checksum does not match.
    Checksum,
    /// An unknown scalar type or a zero panel width.
    Fields,
}

/// A 64-bit checksum of `bytes`: eight bytes at a time, each word mixed into the state
/// (FNV-style multiply, then a rotation), the tail byte by byte; the length closes it.
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ x).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
    }
    for &byte in words.remainder() {
        h = (h ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ (bytes.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_every_damage_is_named() {
        let h = Header {
            scalar: 1,
            rows: 1000,
            cols: 999,
            panel: 64,
        };
        let b = h.encode();
        assert_eq!(Header::decode(&b), Ok(h));
        assert_eq!(h.panels(), 16);
        assert_eq!(h.data_offset(), 4096);
        let mut bad = b;
        bad[0] = b'X';
        assert_eq!(Header::decode(&bad), Err(HeaderProblem::Magic));
        let mut bad = b;
        bad[8] = 2;
        assert_eq!(Header::decode(&bad), Err(HeaderProblem::Version(2)));
        let mut bad = b;
        bad[20] ^= 1;
        assert_eq!(Header::decode(&bad), Err(HeaderProblem::Checksum));
    }

    #[test]
    fn the_checksum_sees_a_changed_bit_anywhere() {
        let data: Vec<u8> = (0..1001u32).map(|i| (i * 7) as u8).collect();
        let sum = checksum(&data);
        for at in [0, 7, 8, 500, 999, 1000] {
            let mut d = data.clone();
            d[at] ^= 0x10;
            assert_ne!(checksum(&d), sum, "byte {at}");
        }
        assert_ne!(checksum(&data[..1000]), sum);
    }
}
