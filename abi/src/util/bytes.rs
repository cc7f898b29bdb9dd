//! Little-endian field access for the ABI encoders and decoders.
//!
//! The `put_*`/`get_*` pairs index a buffer whose size the caller controls (a fixed-size array
//! pinned by a `const` assertion): an out-of-range offset there is a bug in this crate and panics.
//! Bytes from user space are read with the checked `read_*` forms, which return `None` instead.
//!
//! The `#[repr(C)]` uapi structs elsewhere in this crate go through zerocopy's derives instead,
//! which copy native-endian images: right only because every target Svelt builds for (arm64 and
//! the test host) is little-endian, as the ABI is.

const _: () = assert!(cfg!(target_endian = "little"));

macro_rules! le_fields {
    ($( $put:ident, $get:ident, $read:ident, $t:ty; )*) => {
        $(
            /// Store at `off` (little-endian). Panics if out of range: a caller bug.
            #[inline]
            pub fn $put(b: &mut [u8], off: usize, v: $t) {
                b[off..off + size_of::<$t>()].copy_from_slice(&v.to_le_bytes());
            }
            /// Load from `off` (little-endian). Panics if out of range: a caller bug.
            #[inline]
            pub fn $get(b: &[u8], off: usize) -> $t {
                let mut a = [0u8; size_of::<$t>()];
                a.copy_from_slice(&b[off..off + size_of::<$t>()]);
                <$t>::from_le_bytes(a)
            }
            /// Load from `off` if the whole field lies inside `b`.
            #[inline]
            pub fn $read(b: &[u8], off: usize) -> Option<$t> {
                let end = off.checked_add(size_of::<$t>())?;
                let mut a = [0u8; size_of::<$t>()];
                a.copy_from_slice(b.get(off..end)?);
                Some(<$t>::from_le_bytes(a))
            }
        )*
    };
}

le_fields! {
    put_u16, get_u16, read_u16, u16;
    put_i16, get_i16, read_i16, i16;
    put_u32, get_u32, read_u32, u32;
    put_i32, get_i32, read_i32, i32;
    put_u64, get_u64, read_u64, u64;
    put_i64, get_i64, read_i64, i64;
    put_u128, get_u128, read_u128, u128;
}

/// An extensible struct as Linux's `copy_struct_from_user` takes it: `bytes` is the caller's
/// version of the struct, of any size, returned in the kernel's `N`-byte layout. A shorter
/// struct is zero-extended (a field it covers only in part keeps the bytes it gives); a longer
/// one may only add zero bytes, else E2BIG. Minimum sizes are the caller's rule.
pub fn struct_from_user<const N: usize>(
    bytes: &[u8],
) -> Result<[u8; N], crate::uapi::errno::Errno> {
    let (known, tail) = bytes.split_at(bytes.len().min(N));
    if tail.iter().any(|&b| b != 0) {
        return Err(crate::uapi::errno::Errno::E2BIG);
    }
    let mut out = [0u8; N];
    out[..known.len()].copy_from_slice(known);
    Ok(out)
}

/// Copy `src` into the fixed-size field at `off..off+len`, truncating and NUL-padding.
/// The last byte of the field is always NUL, as for the kernel's fixed C strings.
pub fn put_cstr(b: &mut [u8], off: usize, len: usize, src: &[u8]) {
    let field = &mut b[off..off + len];
    field.fill(0);
    let n = src.len().min(len.saturating_sub(1));
    field[..n].copy_from_slice(&src[..n]);
}

#[cfg(test)]
mod tests {
    #[test]
    fn extensible_structs() {
        use super::struct_from_user;
        use crate::uapi::errno::Errno;
        assert_eq!(struct_from_user::<4>(&[1, 2]), Ok([1, 2, 0, 0]));
        assert_eq!(struct_from_user::<4>(&[1, 2, 3, 4]), Ok([1, 2, 3, 4]));
        assert_eq!(struct_from_user::<4>(&[1, 2, 3, 4, 0, 0]), Ok([1, 2, 3, 4]));
        assert_eq!(
            struct_from_user::<4>(&[1, 2, 3, 4, 0, 9]),
            Err(Errno::E2BIG)
        );
        assert_eq!(struct_from_user::<4>(&[]), Ok([0; 4]));
    }

    use super::*;

    #[test]
    fn round_trip_and_bounds() {
        let mut b = [0u8; 16];
        put_u32(&mut b, 4, 0x1122_3344);
        assert_eq!(b[4..8], [0x44, 0x33, 0x22, 0x11]);
        assert_eq!(get_u32(&b, 4), 0x1122_3344);
        put_i64(&mut b, 8, -2);
        assert_eq!(get_i64(&b, 8), -2);
        assert_eq!(read_u64(&b, 8), Some(u64::MAX - 1));
        assert_eq!(read_u64(&b, 9), None);
        assert_eq!(read_u16(&b, usize::MAX), None);
        put_cstr(&mut b, 0, 4, b"abcdef");
        assert_eq!(&b[..4], b"abc\0");
    }
}

/// A fast 64-bit checksum over data read as little-endian words (a final partial word
/// zero-padded), with the length mixed in: the host harness and the userland check big files
/// with it. Every piece given to `update` but the last must be a multiple of 8 bytes long.
#[derive(Clone, Copy, Debug)]
pub struct Checksum {
    h: u64,
    len: u64,
}

impl Default for Checksum {
    fn default() -> Self {
        Checksum::new()
    }
}

impl Checksum {
    pub const fn new() -> Checksum {
        Checksum {
            h: 0x243f_6a88_85a3_08d3,
            len: 0,
        }
    }

    fn word(&mut self, w: u64) {
        self.h = (self.h.rotate_left(23) ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    pub fn update(&mut self, data: &[u8]) {
        let mut words = data.chunks_exact(8);
        for w in &mut words {
            self.word(u64::from_le_bytes([
                w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7],
            ]));
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let mut w = [0u8; 8];
            w[..tail.len()].copy_from_slice(tail);
            self.word(u64::from_le_bytes(w));
        }
        self.len += data.len() as u64;
    }

    pub fn finish(mut self) -> u64 {
        self.word(self.len);
        self.h ^ (self.h >> 29)
    }
}

#[cfg(test)]
mod checksum_tests {
    use super::Checksum;

    fn sum(pieces: &[&[u8]]) -> u64 {
        let mut c = Checksum::new();
        for p in pieces {
            c.update(p);
        }
        c.finish()
    }

    #[test]
    fn pieces_of_whole_words_agree_and_length_counts() {
        let data: std::vec::Vec<u8> = (0..100u8).collect();
        assert_eq!(
            sum(&[&data]),
            sum(&[&data[..16], &data[16..64], &data[64..]])
        );
        assert_ne!(sum(&[&data[..9]]), sum(&[&data[..9], &[0]]));
        assert_ne!(sum(&[b""]), sum(&[&[0]]));
        let mut flipped = data.clone();
        flipped[50] ^= 1;
        assert_ne!(sum(&[&data]), sum(&[&flipped]));
    }
}
