//! Helpers shared by the targets: reading fuzz bytes as fields, and a small PRNG.

/// Reads fields off the front of the fuzz input; past the end every read gives zeros, so a
/// target never has to care how long its input is.
pub struct Take<'a> {
    data: &'a [u8],
}

impl<'a> Take<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Take { data }
    }

    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        head
    }

    fn fixed<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        let b = self.bytes(N);
        a[..b.len()].copy_from_slice(b);
        a
    }

    pub fn u8(&mut self) -> u8 {
        self.fixed::<1>()[0]
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.fixed())
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.fixed())
    }
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.fixed())
    }
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 != 0
    }

    /// Whatever is left.
    pub fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.data)
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// SplitMix64: a tiny deterministic generator for chunk sizes and the stable-run mutator.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// Where a buffer lives: (address, length), to ask later whether a slice points into it.
pub fn span(b: &[u8]) -> (usize, usize) {
    (b.as_ptr() as usize, b.len())
}

/// Is `inner` a sub-slice of the buffer at `outer` (same memory)? Returns its offset.
pub fn offset_in(outer: (usize, usize), inner: &[u8]) -> Option<usize> {
    let (o, len) = outer;
    let i = inner.as_ptr() as usize;
    (i >= o && i + inner.len() <= o + len).then(|| i - o)
}

/// Targets skip inputs that hit a bug already reported (each has an ignored reproducer in
/// abi/tests/fuzz.rs), so that a run can find others. `SVELT_FUZZ_KNOWN_BUGS=1` turns the
/// skipping off, to check the bug is still there.
pub fn skip_known_bugs() -> bool {
    static SKIP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SKIP.get_or_init(|| std::env::var_os("SVELT_FUZZ_KNOWN_BUGS").is_none_or(|v| v != "1"))
}

/// The uapi structs are plain bytes (zerocopy derives): these give the targets one spelling for
/// "the bytes of a value" and "a value from bytes", so round-trip checks read simply.
pub trait ToBytes {
    fn to_bytes(&self) -> Vec<u8>;
}

impl<T: zerocopy::IntoBytes + zerocopy::Immutable> ToBytes for T {
    fn to_bytes(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }
}

pub trait FromSlice: Sized {
    /// The value in the first `size_of::<Self>()` bytes of `b`, zeros past its end.
    fn from_bytes(b: &[u8]) -> Self;
}

impl<T: zerocopy::FromBytes> FromSlice for T {
    fn from_bytes(b: &[u8]) -> Self {
        let mut buf = vec![0u8; core::mem::size_of::<T>()];
        let n = b.len().min(buf.len());
        buf[..n].copy_from_slice(&b[..n]);
        T::read_from_bytes(&buf).expect("sized buffer")
    }
}
