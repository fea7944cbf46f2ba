//! The integer dot products a large corpus's vector search spends its time in: every probed
//! document's 8-bit codes, and every centroid's, against the question's 16-bit codes.
//!
//! Two builds of one kernel: the portable one (plain Rust the compiler turns into SSE2 on
//! x86-64: eight 16-bit products a `pmaddwd`) and, on x86-64 CPUs with AVX2, AVX2 intrinsics
//! (sixteen a `vpmaddwd`, the codes widened by `vpmovsxbw`). Which one runs is chosen once per
//! process, from what the CPU says it has ([`Kernel::detected`]); both give the same integers,
//! bit for bit (integer sums do not depend on their order), which the tests check on random
//! inputs. The one `unsafe` is the call into the AVX2 build, made only after the CPU said it
//! has AVX2.
//!
//! Overflow: a document's code is at most 127 in magnitude and the question's at most
//! [`question_code_max`]`(dims)`, chosen so that a sum of `dims` products stays within an i32.

use std::sync::OnceLock;

/// The largest question code for vectors of `dims` dimensions: 16 bits where the sum of
/// `dims` products of it and a document's 8-bit code fits an i32 (up to 516 dimensions), fewer
/// beyond (at least 1).
pub(crate) fn question_code_max(dims: usize) -> i16 {
    let room = i64::from(i32::MAX)
        / i64::try_from(dims.max(1))
            .unwrap_or(i64::MAX)
            .saturating_mul(127);
    i16::try_from(room.clamp(1, i64::from(i16::MAX))).unwrap_or(i16::MAX)
}

/// The kernel this process runs: the AVX2 build where the CPU has AVX2, the portable one
/// elsewhere. Chosen once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel(Build);

/// The builds. Private: a `Kernel` holding `Avx2` is made only by [`Kernel::detected`] and
/// [`Kernel::available`], after the CPU said it has AVX2 — what the one `unsafe` below relies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// The fastest build this CPU runs, detected on first use; the portable one when the
    /// environment says `TURNSTILE_VECTOR_KERNEL=portable` (to compare the two in one binary, or
    /// to rule the AVX2 build out).
    pub fn detected() -> Self {
        static CHOSEN: OnceLock<Kernel> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let portable =
                std::env::var_os("TURNSTILE_VECTOR_KERNEL").is_some_and(|v| v == "portable");
            let kernel = if portable {
                Self::PORTABLE
            } else {
                Self::available().last().copied().unwrap_or(Self::PORTABLE)
            };
            tracing::debug!(kernel = kernel.name(), "vector search kernel");
            kernel
        })
    }

    /// The portable build: what every CPU runs.
    pub const PORTABLE: Self = Self(Build::Portable);

    /// Every build this CPU can run, the portable one first (for tests and benchmarks).
    pub fn available() -> Vec<Self> {
        #[allow(unused_mut)] // only x86-64 has a second build
        let mut kernels = vec![Self::PORTABLE];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            kernels.push(Self(Build::Avx2));
        }
        kernels
    }

    /// The build's name, for logs and benchmarks.
    pub fn name(self) -> &'static str {
        match self.0 {
            Build::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Build::Avx2 => "avx2",
        }
    }

    /// Appends to `out` the dot product of each row of `codes` (rows of `question.len()` codes,
    /// one after another; a trailing partial row is ignored) with `question`.
    pub fn dot_rows(self, codes: &[i8], question: &[i16], out: &mut Vec<i32>) {
        match self.0 {
            Build::Portable => dot_rows(codes, question, out),
            #[cfg(target_arch = "x86_64")]
            Build::Avx2 => {
                #[allow(unsafe_code)]
                // SAFETY: `dot_rows_avx2` needs a CPU with AVX2. A `Kernel` holding
                // `Build::Avx2` is made only after `is_x86_feature_detected!("avx2")` said this
                // CPU has it (`available`), and `Build` is private to this module.
                unsafe {
                    dot_rows_avx2(codes, question, out);
                }
            }
        }
    }
}

/// [`dot_rows`] with AVX2: sixteen codes a step, widened to 16 bits (`vpmovsxbw`) and
/// multiplied and summed in pairs (`vpmaddwd`) into two accumulators of eight lanes. No
/// `unsafe` inside: the intrinsics are safe where AVX2 is enabled, and the lanes come from
/// arrays by `bytemuck`'s checked casts.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_rows_avx2(codes: &[i8], question: &[i16], out: &mut Vec<i32>) {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi32, _mm256_cvtepi8_epi16, _mm256_madd_epi16,
        _mm256_setzero_si256,
    };
    let dims = question.len();
    if dims == 0 {
        return;
    }
    let (q_chunks, q_rest) = question.as_chunks::<16>();
    out.reserve(codes.len() / dims);
    for row in codes.chunks_exact(dims) {
        let (r_chunks, r_rest) = row.as_chunks::<16>();
        let product = |r: &[i8; 16], q: &[i16; 16]| {
            let wide = _mm256_cvtepi8_epi16(bytemuck::cast::<[i8; 16], __m128i>(*r));
            _mm256_madd_epi16(wide, bytemuck::cast::<[i16; 16], __m256i>(*q))
        };
        let (mut even, mut odd) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for (r, q) in r_chunks.chunks_exact(2).zip(q_chunks.chunks_exact(2)) {
            even = _mm256_add_epi32(even, product(&r[0], &q[0]));
            odd = _mm256_add_epi32(odd, product(&r[1], &q[1]));
        }
        let paired = r_chunks.len() / 2 * 2;
        if let (Some(r), Some(q)) = (r_chunks.get(paired), q_chunks.get(paired)) {
            even = _mm256_add_epi32(even, product(r, q));
        }
        let lanes: [i32; 8] = bytemuck::cast(_mm256_add_epi32(even, odd));
        out.push(lanes.iter().sum::<i32>() + dot_tail(r_rest, q_rest));
    }
}

/// The portable build: one row at a time through [`dot`].
fn dot_rows(codes: &[i8], question: &[i16], out: &mut Vec<i32>) {
    let dims = question.len();
    if dims == 0 {
        return;
    }
    out.reserve(codes.len() / dims);
    for row in codes.chunks_exact(dims) {
        out.push(dot(row, question));
    }
}

/// Lanes summed independently, so the compiler keeps the sums in vector registers.
const LANES: usize = 16;

/// The integer dot product of a document's codes and the question's.
///
/// Not inlined: compiled alone it becomes `pmaddwd` over sixteen lanes; inlined into a loop
/// over rows the compiler leaves it a code at a time (seen in the disassembly).
#[inline(never)]
fn dot(a: &[i8], b: &[i16]) -> i32 {
    let (chunks_a, rest_a) = a.as_chunks::<LANES>();
    let (chunks_b, rest_b) = b.as_chunks::<LANES>();
    let mut sums = [0i32; LANES];
    for (x, y) in chunks_a.iter().zip(chunks_b) {
        for i in 0..LANES {
            sums[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    sums.iter().sum::<i32>() + dot_tail(rest_a, rest_b)
}

/// The plain sum of products of what is left past the last whole chunk.
#[inline(always)]
fn dot_tail(a: &[i8], b: &[i16]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed | 1;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// Every build gives the plain sum, on random codes of many lengths and at the extremes.
    #[test]
    fn every_build_equals_the_plain_sum() {
        let mut next = random(0x5eed);
        let kernels = Kernel::available();
        assert_eq!(kernels[0], Kernel::PORTABLE);
        assert!(kernels.contains(&Kernel::detected()));
        for dims in [1, 3, 15, 16, 17, 31, 32, 100, 256, 257, 384, 512, 768, 1536] {
            let max = question_code_max(dims);
            let rows = 37;
            for extreme in [false, true] {
                let codes: Vec<i8> = (0..rows * dims + dims / 2)
                    .map(|_| {
                        if extreme {
                            -127
                        } else {
                            i8::try_from(next() % 255).unwrap_or(0).wrapping_sub(127)
                        }
                    })
                    .collect();
                let question: Vec<i16> = (0..dims)
                    .map(|_| {
                        if extreme {
                            -max
                        } else {
                            let span = 2 * i64::from(max) + 1;
                            i16::try_from(
                                i64::try_from(next() >> 1).unwrap() % span - i64::from(max),
                            )
                            .unwrap()
                        }
                    })
                    .collect();
                let plain: Vec<i32> = codes
                    .chunks_exact(dims)
                    .map(|row| {
                        let sum: i64 = row
                            .iter()
                            .zip(&question)
                            .map(|(a, b)| i64::from(*a) * i64::from(*b))
                            .sum();
                        i32::try_from(sum).expect("within an i32")
                    })
                    .collect();
                assert_eq!(plain.len(), rows);
                for kernel in &kernels {
                    let mut out = vec![7];
                    kernel.dot_rows(&codes, &question, &mut out);
                    assert_eq!(out[0], 7, "appended");
                    assert_eq!(
                        out[1..],
                        plain[..],
                        "{} at {dims} dimensions",
                        kernel.name()
                    );
                }
            }
        }
    }

    #[test]
    fn question_codes_leave_room_for_the_sum() {
        assert_eq!(question_code_max(256), i16::MAX);
        assert_eq!(question_code_max(516), i16::MAX);
        assert!(question_code_max(517) < i16::MAX);
        for dims in [1, 256, 517, 768, 1536, 3072, 1 << 20, usize::MAX] {
            let max = i64::from(question_code_max(dims));
            assert!(max >= 1);
            if dims < 1 << 24 {
                assert!(127 * max * i64::try_from(dims).unwrap() <= i64::from(i32::MAX));
            }
        }
    }
}
