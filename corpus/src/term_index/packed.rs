//! The term index's arrays as stored: unsigned LEB128 varints, of the differences between
//! consecutive values where those are small (documents in a posting list, offsets, rowids), so
//! the file holds, and opening reads, about a third of the bytes of fixed-width numbers.

/// The largest part of one stored array (SQLite's blobs stop at 1 GB by default).
pub(super) const PART_BYTES: usize = 64 << 20;

/// The table of the term index's arrays: `name`'s bytes are its parts, in `part` order,
/// concatenated. Fixed-width numbers are little-endian.
///
/// Arrays of integers are varints (below): "ascending" ones of the differences between
/// consecutive values, "deltas" of their wrapping differences in `u32`.
///
/// - `terms`: every token (numbered in FTS5's order), its UTF-8 length (u32, little-endian) then
///   its bytes;
/// - `starts` (ascending, one more than tokens): token `t`'s postings are `starts[t]..starts[t +
///   1]`;
/// - `docs` (deltas): the postings' documents (positions in rowid order, ascending per token);
/// - `freqs` (varints): the postings' weighted counts, FTS5's `4 × title + 1 × text`;
/// - `max_part` (f64, little-endian, per token): the largest bm25 term-frequency part among its
///   postings;
/// - `sizes` (varints, per document): its size in tokens;
/// - `rowids` (ascending, per document): its rowid;
/// - `tokens` (varints): every document's `title` then `text` tokens in order, and
///   `token_starts` (ascending, two per document and one more) where each column starts;
/// - `snippets` (a byte per document): 1 where the index makes its snippet (see the module's
///   doc).
pub(super) const TABLE: &str = "term_index";

/// `values` as varints of the wrapping differences between consecutive values (the first from
/// 0): ascending runs cost a byte or two per value, a drop (a posting list's start) five.
pub(super) fn pack_deltas(values: impl IntoIterator<Item = u32>) -> Vec<u8> {
    let mut previous = 0u32;
    pack(values.into_iter().map(|v| {
        let delta = v.wrapping_sub(previous);
        previous = v;
        u64::from(delta)
    }))
}

/// `values` as varints of the differences between consecutive values, which must not decrease
/// (offsets, rowids).
pub(super) fn pack_ascending(values: impl IntoIterator<Item = u64>) -> Vec<u8> {
    let mut previous = 0u64;
    pack(values.into_iter().map(|v| {
        let delta = v.wrapping_sub(previous);
        previous = v;
        delta
    }))
}

/// `values` as varints.
pub(super) fn pack(values: impl IntoIterator<Item = u64>) -> Vec<u8> {
    let mut bytes = Vec::new();
    for mut v in values {
        while v >= 0x80 {
            bytes.push((v as u8) | 0x80);
            v >>= 7;
        }
        bytes.push(v as u8);
    }
    bytes
}

/// The varints of `bytes`, or `None` if one is cut short or overflows 64 bits.
#[cfg(test)]
fn unpack(bytes: &[u8]) -> Option<Vec<u64>> {
    unpack_into(bytes, Some)
}

/// The varints of `bytes` as `to` makes them (`None` from it: the whole is `None`), in a vector
/// of exactly their number.
fn unpack_into<T>(bytes: &[u8], mut to: impl FnMut(u64) -> Option<T>) -> Option<Vec<T>> {
    // Every varint ends with the one byte of it below 0x80.
    let mut values = Vec::with_capacity(bytes.iter().filter(|&&b| b < 0x80).count());
    let (mut value, mut shift) = (0u64, 0u32);
    for &b in bytes {
        if shift > 63 || (shift == 63 && b > 1) {
            return None;
        }
        value |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            values.push(to(value)?);
            (value, shift) = (0, 0);
        } else {
            shift += 7;
        }
    }
    (shift == 0).then_some(values)
}

/// The varints of `bytes` where every value is at most `u32::MAX`.
pub(super) fn unpack_small(bytes: &[u8]) -> Option<Vec<u32>> {
    unpack_into(bytes, |v| u32::try_from(v).ok())
}

/// The varints of [`pack_deltas`]: `None` if a value is past `u32`.
pub(super) fn unpack_deltas(bytes: &[u8]) -> Option<Vec<u32>> {
    let mut previous = 0u32;
    unpack_into(bytes, |d| {
        previous = previous.wrapping_add(u32::try_from(d).ok()?);
        Some(previous)
    })
}

/// The varints of [`pack_ascending`]: `None` if a sum overflows.
pub(super) fn unpack_ascending(bytes: &[u8]) -> Option<Vec<u64>> {
    let mut previous = 0u64;
    unpack_into(bytes, |d| {
        previous = previous.checked_add(d)?;
        Some(previous)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        let values = [0u32, 5, 5, 127, 128, 3, u32::MAX, 0, 16_384, 1];
        assert_eq!(unpack_deltas(&pack_deltas(values)).unwrap(), values);
        let ascending = [0u64, 0, 1, 200, 70_000, u64::from(u32::MAX) + 9];
        assert_eq!(
            unpack_ascending(&pack_ascending(ascending)).unwrap(),
            ascending
        );
        let plain = [u64::MAX, 0, 300];
        assert_eq!(unpack(&pack(plain)).unwrap(), plain);
        assert_eq!(unpack_small(&pack([7, 300])).unwrap(), [7, 300]);
        assert_eq!(unpack_small(&pack([1 << 32])), None);
        // Cut short, or past 64 bits.
        assert_eq!(unpack(&[0x80]), None);
        assert_eq!(unpack(&[0xff; 10]), None);
        assert_eq!(unpack_deltas(&pack([1u64 << 32])), None);
    }
}
