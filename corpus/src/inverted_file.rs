//! A large corpus's inverted file in memory (`ivf.rs` builds and stores it), and a question's
//! candidates from it: the lists it probes, chosen by its centroids, and the best of their
//! members by their 8-bit codes, each with a bound on its exact similarity.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rusqlite::Connection;

use super::ivf::{CODE_MAX, corrupt, floats, quantize};
use super::kernel::{self, Kernel};

/// The inverted file in memory, as stored: lists one after another.
pub(crate) struct InvertedFile {
    dims: usize,
    /// The unit centroids coded as the documents are (8 bits, one scale each), row-major: the
    /// lists a question probes are chosen by the same integer kernel as its candidates.
    centroid_codes: Vec<i8>,
    centroid_scales: Vec<f32>,
    /// Where each list's run starts in `order`, `codes` and `scales` (`lists + 1` entries).
    starts: Vec<usize>,
    /// Every document's position, list by list.
    order: Vec<u32>,
    /// Their codes (`dims` each) and scales, in the same order.
    codes: Vec<i8>,
    scales: Vec<f32>,
}

/// One document the inverted file offers for a question: its position (rowid order), its row
/// (list order: where the flat vectors hold it), and the most its exact similarity can be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate {
    pub(crate) position: u32,
    pub(crate) row: u32,
    pub(crate) high: f64,
}

impl InvertedFile {
    /// Reads the `ivf` table: `None` when it is empty (a corpus searched whole). Every one of the
    /// `documents` positions must be in exactly one list.
    pub(crate) fn load(
        conn: &Connection,
        dims: usize,
        documents: usize,
    ) -> rusqlite::Result<Option<Self>> {
        let mut stmt =
            conn.prepare("SELECT list, centroid, members, codes, scales FROM ivf ORDER BY list")?;
        let mut rows = stmt.query([])?;
        let mut file = Self {
            dims,
            centroid_codes: Vec::new(),
            centroid_scales: Vec::new(),
            starts: vec![0],
            order: Vec::with_capacity(documents),
            codes: Vec::new(),
            scales: Vec::with_capacity(documents),
        };
        let mut centroid = Vec::with_capacity(dims);
        while let Some(row) = rows.next()? {
            if row.get::<_, i64>(0)? != i64::try_from(file.starts.len() - 1).unwrap_or(-1) {
                return Err(corrupt("list numbers"));
            }
            let centroid_bytes = row.get_ref(1)?.as_blob()?;
            let members = row.get_ref(2)?.as_blob()?;
            let codes = row.get_ref(3)?.as_blob()?;
            let scales = row.get_ref(4)?.as_blob()?;
            let count = members.len() / 4;
            if centroid_bytes.len() != dims * 4
                || members.len() % 4 != 0
                || codes.len() != count * dims
                || scales.len() != count * 4
            {
                return Err(corrupt("a list of inconsistent sizes"));
            }
            centroid.clear();
            centroid.extend(floats(centroid_bytes));
            file.centroid_scales
                .push(quantize(&centroid, &mut file.centroid_codes));
            file.order.extend(
                members
                    .chunks_exact(4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
            file.codes
                .extend(codes.iter().map(|b| i8::from_le_bytes([*b])));
            file.scales.extend(floats(scales));
            file.starts.push(file.order.len());
        }
        if file.starts.len() == 1 {
            return Ok(None);
        }
        let mut seen = vec![false; documents];
        for &p in &file.order {
            match seen.get_mut(p as usize) {
                Some(s) if !*s => *s = true,
                _ => return Err(corrupt("a document in no list or in two")),
            }
        }
        if file.order.len() != documents {
            return Err(corrupt("a document in no list"));
        }
        Ok(Some(file))
    }

    /// Number of lists.
    pub(crate) fn lists(&self) -> usize {
        self.starts.len() - 1
    }

    /// Every document's position, in list order (row `r` of the flat vectors is the document
    /// at position `order()[r]`).
    #[cfg(test)]
    pub(crate) fn order(&self) -> &[u32] {
        &self.order
    }

    /// Bytes held, for reports.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.centroid_codes.len()
            + self.centroid_scales.len() * 4
            + self.order.len() * 4
            + self.codes.len()
            + self.scales.len() * 4
    }

    /// The `wanted` documents whose codes score best against `query` among the members of its
    /// `probes` nearest lists (fewer if the lists hold fewer), best estimate first, each with a
    /// bound its exact similarity cannot pass.
    ///
    /// The question is coded to 16 bits ([`kernel::question_code_max`]), so the estimate's error
    /// is nearly all the document's 8-bit rounding: with `v = s·c + δ` (`|δᵢ| ≤ s/2`) and
    /// `q = t·e + ε` (`|εᵢ| ≤ t/2`), `|v·q − s·t·(c·e)| ≤ s·(t/2·Σ|cᵢ| + ‖q‖₁/2)`, and
    /// `Σ|cᵢ| ≤ 127·dims`.
    pub(crate) fn candidates(&self, query: &[f32], probes: usize, wanted: usize) -> Vec<Candidate> {
        let kernel = Kernel::detected();
        let (q, step) = question_codes(query);
        let mut sums = Vec::with_capacity(self.lists());
        kernel.dot_rows(&self.centroid_codes, &q, &mut sums);
        #[allow(clippy::cast_precision_loss)] // an estimate: f32 keeps 24 bits of the sum
        let mut lists: Vec<(f32, usize)> = sums
            .iter()
            .zip(&self.centroid_scales)
            .map(|(sum, scale)| scale * *sum as f32)
            .enumerate()
            .map(|(i, s)| (s, i))
            .collect();
        let better = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        let probes = probes.clamp(1, lists.len());
        if lists.len() > probes {
            lists.select_nth_unstable_by(probes - 1, better);
            lists.truncate(probes);
        }
        // The best `wanted` by estimate, in a heap whose top is the worst kept: most documents
        // are turned away by one comparison.
        let wanted = wanted.max(1);
        let mut best: BinaryHeap<Estimate> = BinaryHeap::with_capacity(wanted + 1);
        for &(_, list) in &lists {
            let rows = self.starts[list]..self.starts[list + 1];
            sums.clear();
            kernel.dot_rows(
                &self.codes[rows.start * self.dims..rows.end * self.dims],
                &q,
                &mut sums,
            );
            for (row, sum) in rows.zip(&sums) {
                #[allow(clippy::cast_precision_loss)] // an estimate: f32 keeps 24 bits of the sum
                let estimate = Estimate {
                    score: self.scales[row] * *sum as f32,
                    position: self.order[row],
                    row: u32::try_from(row).unwrap_or(u32::MAX),
                };
                if best.len() < wanted {
                    best.push(estimate);
                } else if best.peek().is_some_and(|worst| estimate < *worst) {
                    best.pop();
                    best.push(estimate);
                }
            }
        }
        let l1: f64 = query.iter().map(|x| f64::from(x.abs())).sum();
        #[allow(clippy::cast_precision_loss)] // dims: a few thousand at most
        let most_codes = f64::from(CODE_MAX) * self.dims as f64;
        best.into_sorted_vec()
            .into_iter()
            .map(|e| {
                let scale = f64::from(self.scales[e.row as usize]);
                let estimate = f64::from(e.score) * step;
                // The coding error (above), the estimate's f32 rounding, and the exact
                // product's own f32 rounding (`vectors.rs`), with room to spare.
                let error = scale * (step / 2.0 * most_codes + l1 / 2.0)
                    + estimate.abs() * 1e-6
                    + 1e-4 * scale * f64::from(CODE_MAX) * l1;
                Candidate {
                    position: e.position,
                    row: e.row,
                    high: estimate + error,
                }
            })
            .collect()
    }
}

/// The question coded to integers of at most [`kernel::question_code_max`], and its step (the
/// value of one code): `value ≈ step × code`, off by at most `step / 2`.
fn question_codes(query: &[f32]) -> (Vec<i16>, f64) {
    let max = f64::from(kernel::question_code_max(query.len()));
    let step = query.iter().fold(0f64, |m, x| m.max(f64::from(x.abs()))) / max;
    let codes = query
        .iter()
        .map(|x| {
            let code = if step > 0.0 {
                (f64::from(*x) / step).round().clamp(-max, max)
            } else {
                0.0
            };
            #[allow(clippy::cast_possible_truncation)] // within ±max by the clamp
            let code = code as i16;
            code
        })
        .collect();
    (codes, step)
}

/// A document's estimated similarity, ordered best first: higher score, then lower position.
#[derive(Clone, Copy)]
struct Estimate {
    score: f32,
    position: u32,
    row: u32,
}

impl Ord for Estimate {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.position.cmp(&other.position))
    }
}

impl PartialOrd for Estimate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Estimate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Estimate {}
