//! An inverted file over the document vectors, for corpora too large to scan per question.
//!
//! `nearest` scans every document's integer codes (`vectors.rs`): linear in the corpus, ~150 µs
//! for the shipped 6,090 documents but milliseconds for a hundred thousand, where it becomes most
//! of a hybrid request. From [`MIN_DOCUMENTS`] up, the documents are grouped around `√n`
//! centroids (spherical k-means: cosine, unit centroids), and a question is compared with the
//! centroids first; only the members of its [`PROBE_SHARE`] nearest clusters are searched. That
//! answer is approximate — a document in a cluster not probed is not found — which is why smaller
//! corpora, the shipped one included, keep the exhaustive scan and its exact answer.
//!
//! Built in memory when a pool opens, deterministically (first centroids drawn with a fixed seed,
//! a fixed number of rounds over an evenly spaced sample), so every process and every start
//! groups the same corpus the same way.

/// The smallest corpus grouped into clusters; below it every document is scanned (exactly).
pub(crate) const MIN_DOCUMENTS: usize = 32_768;
/// The share of clusters a question searches (at least one): 1/8 of the clusters hold about 1/8
/// of the documents, so a search costs about an eighth of the full scan plus the centroids.
pub(crate) const PROBE_SHARE: usize = 8;
/// Rounds of k-means (assign, re-centre) over the training sample.
const ROUNDS: usize = 8;
/// Training sample: about this many documents per centroid, evenly spaced.
const SAMPLE_PER_CLUSTER: usize = 32;

/// Documents grouped by their nearest centroid.
pub(crate) struct Clusters {
    dims: usize,
    /// Unit centroids, row-major (`count × dims`).
    centroids: Vec<f32>,
    /// Every document's position, cluster by cluster (ascending within one): what a search
    /// scans is a few runs of this order, so the documents' codes are stored in it.
    order: Vec<u32>,
    /// Where each cluster's run starts in `order`, and its end (`count + 1` entries).
    starts: Vec<usize>,
    /// Clusters searched per question.
    probes: usize,
}

impl Clusters {
    /// Groups `values` (unit vectors of `dims`, row-major) when there are at least
    /// [`MIN_DOCUMENTS`] of them, into `⌈√n⌉` clusters, each question searching `1/PROBE_SHARE`
    /// of them; `None` for a smaller corpus (scanned whole).
    pub(crate) fn build(values: &[f32], dims: usize) -> Option<Self> {
        let n = values.len().checked_div(dims)?;
        if n < MIN_DOCUMENTS {
            return None;
        }
        let count = n.isqrt() + usize::from(n.isqrt() * n.isqrt() < n);
        Some(Self::with(values, dims, count, count.div_ceil(PROBE_SHARE)))
    }

    /// `count` clusters (at least 1, at most the number of vectors), `probes` of them searched
    /// per question (at least 1, at most `count`).
    pub(crate) fn with(values: &[f32], dims: usize, count: usize, probes: usize) -> Self {
        let n = values.len() / dims;
        let count = count.clamp(1, n.max(1));
        let row = |i: usize| &values[i * dims..(i + 1) * dims];
        // First centroids: distinct documents drawn by a fixed-seed generator (evenly spaced ones
        // would all fall in one group of a corpus that repeats with a period). Sample: evenly
        // spaced documents.
        let mut centroids: Vec<f32> = first_picks(n, count)
            .into_iter()
            .flat_map(row)
            .copied()
            .collect();
        let sample_size = (count * SAMPLE_PER_CLUSTER).min(n);
        let sample: Vec<usize> = (0..sample_size).map(|s| s * n / sample_size).collect();
        for _ in 0..ROUNDS {
            let mut sums = vec![0f32; count * dims];
            for &i in &sample {
                let c = nearest_centroid(&centroids, dims, row(i));
                for (s, x) in sums[c * dims..(c + 1) * dims].iter_mut().zip(row(i)) {
                    *s += x;
                }
            }
            for (centroid, sum) in centroids
                .chunks_exact_mut(dims)
                .zip(sums.chunks_exact(dims))
            {
                let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
                // A cluster no sample joined keeps its centroid.
                if norm > 0.0 {
                    for (c, s) in centroid.iter_mut().zip(sum) {
                        *c = s / norm;
                    }
                }
            }
        }
        let mut members = vec![Vec::new(); count];
        for i in 0..n {
            #[allow(clippy::cast_possible_truncation)] // positions fit u32: far beyond any corpus
            members[nearest_centroid(&centroids, dims, row(i))].push(i as u32);
        }
        let mut starts = Vec::with_capacity(count + 1);
        starts.push(0);
        for m in &members {
            starts.push(starts[starts.len() - 1] + m.len());
        }
        Self {
            dims,
            centroids,
            order: members.concat(),
            starts,
            probes: probes.clamp(1, count),
        }
    }

    /// Number of clusters.
    pub(crate) fn count(&self) -> usize {
        self.starts.len() - 1
    }

    /// Every document's position, cluster by cluster.
    pub(crate) fn order(&self) -> &[u32] {
        &self.order
    }

    /// Clusters searched per question.
    pub(crate) fn probes(&self) -> usize {
        self.probes
    }

    /// What to search for `query`: the runs of [`Self::order`] that are its nearest clusters.
    pub(crate) fn probe(&self, query: &[f32]) -> Vec<std::ops::Range<usize>> {
        let mut scored: Vec<(f32, usize)> = self
            .centroids
            .chunks_exact(self.dims)
            .map(|c| dot(c, query))
            .enumerate()
            .map(|(i, s)| (s, i))
            .collect();
        let order = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if scored.len() > self.probes {
            scored.select_nth_unstable_by(self.probes - 1, order);
            scored.truncate(self.probes);
        }
        scored
            .iter()
            .map(|&(_, c)| self.starts[c]..self.starts[c + 1])
            .collect()
    }

    /// The positions `probe` gives, ascending (for tests).
    #[cfg(test)]
    fn probed_positions(&self, query: &[f32]) -> Vec<u32> {
        let mut positions: Vec<u32> = self
            .probe(query)
            .into_iter()
            .flat_map(|run| self.order[run].iter().copied())
            .collect();
        positions.sort_unstable();
        positions
    }
}

/// `count` distinct positions below `n` (`count ≤ n`), drawn by xorshift from a fixed seed, in
/// the order drawn.
fn first_picks(n: usize, count: usize) -> Vec<usize> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut taken = vec![false; n];
    let mut picks = Vec::with_capacity(count);
    while picks.len() < count {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        #[allow(clippy::cast_possible_truncation)] // the remainder is below n, a usize
        let i = (state % n as u64) as usize;
        if !taken[i] {
            taken[i] = true;
            picks.push(i);
        }
    }
    picks
}

/// The index of the centroid most similar to `v` (the first of equals).
fn nearest_centroid(centroids: &[f32], dims: usize, v: &[f32]) -> usize {
    let mut best = (f32::NEG_INFINITY, 0);
    for (c, centroid) in centroids.chunks_exact(dims).enumerate() {
        let s = dot(centroid, v);
        if s > best.0 {
            best = (s, c);
        }
    }
    best.1
}

/// The dot product of two vectors: their cosine similarity when both have unit length.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent sums, so the compiler can keep them in one vector register.
    let mut sums = [0f32; 8];
    let (chunks_a, rest_a) = a.as_chunks::<8>();
    let (chunks_b, rest_b) = b.as_chunks::<8>();
    for (x, y) in chunks_a.iter().zip(chunks_b) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    let tail: f32 = rest_a.iter().zip(rest_b).map(|(x, y)| x * y).sum();
    sums.iter().sum::<f32>() + tail
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `per` noisy unit vectors around each of `groups` random unit directions, interleaved
    /// (document `i` is in group `i % groups`).
    pub(crate) fn clustered(groups: usize, per: usize, dims: usize) -> Vec<f32> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            #[allow(clippy::cast_precision_loss)]
            let x = (state >> 11) as f32 / (1u64 << 53) as f32;
            x - 0.5
        };
        let centres: Vec<Vec<f32>> = (0..groups)
            .map(|_| (0..dims).map(|_| next()).collect())
            .collect();
        let mut values = Vec::with_capacity(groups * per * dims);
        for _ in 0..per {
            for centre in &centres {
                let mut v: Vec<f32> = centre.iter().map(|c| c + 0.3 * next()).collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
                values.extend(v);
            }
        }
        values
    }

    #[test]
    fn small_corpora_are_not_clustered() {
        let dims = 16;
        assert!(Clusters::build(&vec![0.25; (MIN_DOCUMENTS - 1) * dims], dims).is_none());
        let clusters = Clusters::build(&vec![0.25; MIN_DOCUMENTS * dims], dims).unwrap();
        assert_eq!(clusters.count(), 182); // ⌈√32768⌉ = 182 (181² = 32761)
        assert_eq!(clusters.probes, 23);
    }

    #[test]
    fn every_document_is_in_exactly_one_cluster_and_probing_is_deterministic() {
        let dims = 16;
        let values = clustered(12, 50, dims);
        let clusters = Clusters::with(&values, dims, 12, 3);
        let mut all = clusters.order.clone();
        all.sort_unstable();
        assert_eq!(all, (0..600).collect::<Vec<u32>>());
        assert_eq!((clusters.starts[0], clusters.starts[12]), (0, 600));
        for c in 0..12 {
            let run = &clusters.order[clusters.starts[c]..clusters.starts[c + 1]];
            assert!(
                run.windows(2).all(|w| w[0] < w[1]),
                "ascending in a cluster"
            );
            for &i in run {
                let v = &values[i as usize * dims..(i as usize + 1) * dims];
                assert_eq!(nearest_centroid(&clusters.centroids, dims, v), c);
            }
        }
        let again = Clusters::with(&values, dims, 12, 3);
        assert_eq!(clusters.order, again.order);
        let query = &values[5 * dims..6 * dims];
        let probed = clusters.probed_positions(query);
        assert_eq!(probed, again.probed_positions(query));
        assert!(
            probed.windows(2).all(|w| w[0] < w[1]),
            "ascending, no repeats"
        );
        assert!(
            probed.contains(&5),
            "a document's own cluster is probed for it"
        );
        assert!(probed.len() < 600, "three clusters of twelve, not all");
    }

    #[test]
    fn dot_handles_every_length() {
        for n in [0, 1, 7, 8, 9, 256, 257] {
            let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let expected: f32 = a.iter().map(|x| x * x).sum();
            assert_eq!(dot(&a, &a), expected, "length {n}");
        }
    }
}
