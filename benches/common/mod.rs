//! Workload shared by the benches: 5M strings of 0 to 32 ASCII bytes (~80 MB of
//! values), deterministic (xorshift), cut into 1M-element chunks.

pub const ELEMENTS: usize = 5_000_000;
pub const CHUNK: usize = 1_000_000;

/// Deterministic strings of 0..=32 ASCII bytes.
pub fn strings() -> Vec<Vec<u8>> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..ELEMENTS)
        .map(|_| {
            let len = (next() % 33) as usize;
            (0..len).map(|_| b'a' + (next() % 26) as u8).collect()
        })
        .collect()
}
