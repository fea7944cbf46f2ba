use std::sync::OnceLock;

use sha2::{Digest, Sha256};
use tokenizers::Tokenizer;

/// The shipped model's token vectors (`embed/model/embeddings.safetensors`).
static SHIPPED_VECTORS: &[u8] = include_bytes!("../model/embeddings.safetensors");
/// The shipped model's WordPiece tokenizer (`embed/model/tokenizer.json`, MPNet's own).
static SHIPPED_TOKENIZER: &[u8] = include_bytes!("../model/tokenizer.json");
/// The shipped model's name, as the "corpus index ready" log line shows it.
const SHIPPED_NAME: &str = "mpnet-base-v2-static-256";
/// The tensor holding one row per token id.
const TENSOR: &str = "embeddings";

/// Text past this many bytes is not read (cut at a character boundary): a document's text is at
/// most 2,000 characters, and a question 500. Bounds the tokenizer's work per text.
pub const MAX_TEXT_BYTES: usize = 8 * 1024;

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The vectors file is not a safetensors file with an `embeddings` tensor of rank 2 in f16 or
    /// f32.
    #[error("embedding vectors: {0}")]
    Vectors(String),
    /// The tokenizer file does not load.
    #[error("embedding tokenizer: {0}")]
    Tokenizer(String),
    /// The tokenizer can produce ids the vectors have no row for.
    #[error("the tokenizer has {tokenizer} tokens but the vectors only {vectors} rows")]
    VocabularyMismatch {
        /// Tokens the tokenizer knows.
        tokenizer: usize,
        /// Rows of the vectors.
        vectors: usize,
    },
}

/// A tokenizer from a Hugging Face `tokenizer.json`, made to give every token of a text.
fn whole_text_tokenizer(json: &[u8]) -> Result<Tokenizer, EmbedError> {
    let mut tokenizer =
        Tokenizer::from_bytes(json).map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
    // MPNet's tokenizer pads and truncates to 128 tokens for batching; a static model wants
    // every token of the text and no padding.
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
    Ok(tokenizer)
}

/// The shipped model's tokenizer alone, without its vectors (about 60 MB less): what sizes a
/// text in the model's tokens, as `corpus build` does, without embedding it.
pub struct ShippedTokenizer {
    tokenizer: Tokenizer,
    fingerprint: String,
}

impl ShippedTokenizer {
    /// The tokenizer, loaded once per process.
    pub fn get() -> Result<&'static ShippedTokenizer, &'static EmbedError> {
        static SHIPPED: OnceLock<Result<ShippedTokenizer, EmbedError>> = OnceLock::new();
        SHIPPED
            .get_or_init(|| {
                whole_text_tokenizer(SHIPPED_TOKENIZER).map(|tokenizer| Self {
                    tokenizer,
                    fingerprint: hex::encode(Sha256::digest(SHIPPED_TOKENIZER)),
                })
            })
            .as_ref()
    }

    /// The sha256 (hex) of the tokenizer's whole definition (normalizer, pre-tokenizer,
    /// vocabulary): another tokenizer may count other tokens, so cut other passages.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// How many tokens [`Embedder::tokens`] of the shipped model gives for `text`.
    pub fn count(&self, text: &str) -> usize {
        self.tokenizer
            .encode_fast(bounded(text), false)
            .map_or(0, |encoding| encoding.get_ids().len())
    }
}

/// A static embedding model: a WordPiece tokenizer and one vector per token.
pub struct Embedder {
    name: String,
    fingerprint: String,
    tokenizer: Tokenizer,
    /// `rows × dims`, row-major.
    vectors: Vec<f32>,
    rows: usize,
    dims: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("name", &self.name)
            .field("dims", &self.dims)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// The model shipped in this crate, loaded once per process (about 60 ms, 31 MB).
    pub fn shipped() -> Result<&'static Embedder, &'static EmbedError> {
        static SHIPPED: OnceLock<Result<Embedder, EmbedError>> = OnceLock::new();
        SHIPPED
            .get_or_init(|| Self::from_bytes(SHIPPED_NAME, SHIPPED_VECTORS, SHIPPED_TOKENIZER))
            .as_ref()
    }

    /// A model from a safetensors file with one `embeddings` tensor (`[tokens, dims]`, f16 or
    /// f32) and a Hugging Face `tokenizer.json`.
    pub fn from_bytes(name: &str, vectors: &[u8], tokenizer: &[u8]) -> Result<Self, EmbedError> {
        let tokenizer = whole_text_tokenizer(tokenizer)?;
        let (rows, dims, vectors_f32) = read_vectors(vectors)?;
        let known = tokenizer.get_vocab_size(true);
        if known > rows {
            return Err(EmbedError::VocabularyMismatch {
                tokenizer: known,
                vectors: rows,
            });
        }
        let mut hasher = Sha256::new();
        hasher.update(vectors);
        hasher.update(tokenizer_fingerprint(&tokenizer));
        Ok(Self {
            name: name.to_owned(),
            fingerprint: hex::encode(hasher.finalize()),
            tokenizer,
            vectors: vectors_f32,
            rows,
            dims,
        })
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// sha256 (hex) of the model's vectors and tokenizer: document vectors computed with one
    /// model are only ever compared with questions embedded by the same one.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Dimensions of every vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Rows of the vectors: token ids are below this.
    pub fn vocabulary(&self) -> usize {
        self.rows
    }

    /// The token ids of `text` (its first [`MAX_TEXT_BYTES`]), without special tokens.
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        match self.tokenizer.encode_fast(bounded(text), false) {
            Ok(encoding) => encoding.get_ids().to_vec(),
            // Only a tokenizer bug fails here (the input is a valid string); such a text
            // embeds as nothing rather than failing the request.
            Err(_) => Vec::new(),
        }
    }

    /// The embedding of `text` (its first [`MAX_TEXT_BYTES`]): the mean of its tokens' vectors,
    /// each scaled by its weight, L2-normalised. A text with no token (empty, or only characters
    /// the tokenizer drops) is the zero vector, which is near nothing.
    pub fn embed(&self, text: &str, weights: &TokenWeights) -> Vec<f32> {
        self.embed_tokens(&self.tokens(text), weights)
    }

    /// The embedding of a text already tokenized by [`Self::tokens`] (for a caller that also
    /// counts the tokens, as an index build does).
    pub fn embed_tokens(&self, tokens: &[u32], weights: &TokenWeights) -> Vec<f32> {
        let mut sum = vec![0f32; self.dims];
        for &id in tokens {
            let id = id as usize;
            let (Some(row), Some(&w)) = (self.row(id), weights.0.get(id)) else {
                continue;
            };
            for (s, v) in sum.iter_mut().zip(row) {
                *s += w * v;
            }
        }
        normalise(&mut sum);
        sum
    }

    fn row(&self, id: usize) -> Option<&[f32]> {
        (id < self.rows).then(|| &self.vectors[id * self.dims..(id + 1) * self.dims])
    }
}

/// How much each token counts in an embedding. A token the corpus uses everywhere ("the",
/// "return", "module") says little about which document a text is near; smooth inverse
/// frequency (SIF, Arora et al. 2017) weighs token `t` by `a / (a + p(t))`, with `p(t)` its
/// frequency in the corpus (add-one smoothed) and `a` = [`TokenWeights::SIF_A`]. Computed from
/// the corpus when it is indexed, so the shipped model suits any corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenWeights(Vec<f32>);

impl TokenWeights {
    /// SIF's smoothing constant.
    pub const SIF_A: f64 = 1e-3;

    /// SIF weights from per-token `counts` (index = token id).
    pub fn sif(counts: &[u64]) -> Self {
        let total: f64 = counts.iter().map(|&c| c as f64 + 1.0).sum();
        Self(
            counts
                .iter()
                .map(|&c| {
                    let p = (c as f64 + 1.0) / total;
                    (Self::SIF_A / (Self::SIF_A + p)) as f32
                })
                .collect(),
        )
    }

    /// Every token counts the same.
    pub fn uniform(vocabulary: usize) -> Self {
        Self(vec![1.0; vocabulary])
    }

    /// The weights as little-endian f32 bytes, to store with an index.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// Weights stored by [`Self::to_bytes`], if `bytes` holds `vocabulary` finite ones.
    pub fn from_bytes(bytes: &[u8], vocabulary: usize) -> Option<Self> {
        if bytes.len() != vocabulary * 4 {
            return None;
        }
        let weights: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        weights
            .iter()
            .all(|w| w.is_finite())
            .then_some(Self(weights))
    }
}

/// Scales `v` to unit length (the zero vector stays zero).
pub(crate) fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// `text` cut to at most [`MAX_TEXT_BYTES`] on a character boundary.
fn bounded(text: &str) -> &str {
    if text.len() <= MAX_TEXT_BYTES {
        return text;
    }
    let mut end = MAX_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The vocabulary in id order, so the fingerprint changes with the tokenizer's vocabulary.
fn tokenizer_fingerprint(tokenizer: &Tokenizer) -> Vec<u8> {
    let mut vocab: Vec<(String, u32)> = tokenizer.get_vocab(true).into_iter().collect();
    vocab.sort_by_key(|(_, id)| *id);
    let mut bytes = Vec::new();
    for (token, _) in vocab {
        bytes.extend_from_slice(token.as_bytes());
        bytes.push(0);
    }
    bytes
}

/// `(rows, dims, values)` of the `embeddings` tensor, in f32.
fn read_vectors(bytes: &[u8]) -> Result<(usize, usize, Vec<f32>), EmbedError> {
    let bad = |m: String| EmbedError::Vectors(m);
    let tensors = safetensors::SafeTensors::deserialize(bytes).map_err(|e| bad(e.to_string()))?;
    let view = tensors
        .tensor(TENSOR)
        .map_err(|e| bad(format!("no `{TENSOR}` tensor: {e}")))?;
    let &[rows, dims] = view.shape() else {
        return Err(bad(format!(
            "`{TENSOR}` has shape {:?}, not [tokens, dims]",
            view.shape()
        )));
    };
    if rows == 0 || dims == 0 {
        return Err(bad(format!("`{TENSOR}` is empty")));
    }
    let data = view.data();
    let values: Vec<f32> = match view.dtype() {
        safetensors::Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        safetensors::Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        other => return Err(bad(format!("`{TENSOR}` is {other:?}, not F16 or F32"))),
    };
    if values.len() != rows * dims || values.iter().any(|v| !v.is_finite()) {
        return Err(bad(format!("`{TENSOR}` data is short or not finite")));
    }
    Ok((rows, dims, values))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn uniform() -> TokenWeights {
        TokenWeights::uniform(Embedder::shipped().unwrap().vocabulary())
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn the_shipped_model_loads_and_embeds_unit_vectors() {
        let model = Embedder::shipped().unwrap();
        assert_eq!(model.dims(), 256);
        let v = model.embed("parse command line arguments", &uniform());
        assert_eq!(v.len(), 256);
        assert!((v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4);
        assert_eq!(model.fingerprint().len(), 64);
    }

    #[test]
    fn related_texts_are_closer_than_unrelated_ones() {
        let model = Embedder::shipped().unwrap();
        let q = model.embed("delete a folder that still has files in it", &uniform());
        let near = model.embed("Recursively delete a directory tree.", &uniform());
        let far = model.embed("Return the square root of x.", &uniform());
        assert!(cosine(&q, &near) > cosine(&q, &far) + 0.1);
    }

    #[test]
    fn text_without_tokens_is_the_zero_vector() {
        let model = Embedder::shipped().unwrap();
        assert!(model.embed("", &uniform()).iter().all(|x| *x == 0.0));
        assert!(
            model
                .embed("   \n\t ", &uniform())
                .iter()
                .all(|x| *x == 0.0)
        );
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        let model = Embedder::shipped().unwrap();
        let long = "é".repeat(MAX_TEXT_BYTES);
        assert!(bounded(&long).len() <= MAX_TEXT_BYTES);
        assert_eq!(model.embed(&long, &uniform()).len(), 256);
    }

    #[test]
    fn frequent_tokens_weigh_less_and_weights_round_trip() {
        let model = Embedder::shipped().unwrap();
        let vocabulary = model.vocabulary();
        let mut counts = vec![0u64; vocabulary];
        let the = model.tokens("the")[0] as usize;
        let rare = model.tokens("rmtree")[0] as usize;
        counts[the] = 100_000;
        counts[rare] = 2;
        let weights = TokenWeights::sif(&counts);
        assert!(
            weights.0[the] < 0.1 && weights.0[rare] > 0.9,
            "{} {}",
            weights.0[the],
            weights.0[rare]
        );
        let stored = TokenWeights::from_bytes(&weights.to_bytes(), vocabulary).unwrap();
        assert_eq!(stored, weights);
        assert_eq!(
            TokenWeights::from_bytes(&weights.to_bytes(), vocabulary + 1),
            None
        );
        // A text of one frequent and one rare token leans to the rare one.
        let mixed = model.embed("the rmtree", &weights);
        let rare_alone = model.embed("rmtree", &weights);
        assert!(cosine(&mixed, &rare_alone) > 0.95);
    }

    #[test]
    fn malformed_models_are_refused_with_a_reason() {
        let tokenizer = SHIPPED_TOKENIZER;
        assert!(matches!(
            Embedder::from_bytes("x", b"not safetensors", tokenizer),
            Err(EmbedError::Vectors(_))
        ));
        assert!(matches!(
            Embedder::from_bytes("x", SHIPPED_VECTORS, b"{}"),
            Err(EmbedError::Tokenizer(_))
        ));
        let tiny = safetensors_f32(&[("embeddings", vec![2, 4], vec![0.5; 8])]);
        assert!(matches!(
            Embedder::from_bytes("x", &tiny, tokenizer),
            Err(EmbedError::VocabularyMismatch { vectors: 2, .. })
        ));
        let wrong_name = safetensors_f32(&[("weights", vec![2, 4], vec![0.5; 8])]);
        assert!(matches!(
            Embedder::from_bytes("x", &wrong_name, tokenizer),
            Err(EmbedError::Vectors(_))
        ));
    }

    /// A safetensors file of f32 tensors.
    fn safetensors_f32(tensors: &[(&str, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
        let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
            .iter()
            .map(|(name, shape, values)| {
                let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                ((*name).to_owned(), shape.clone(), data)
            })
            .collect();
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = bytes
            .iter()
            .map(|(name, shape, data)| {
                let view = safetensors::tensor::TensorView::new(
                    safetensors::Dtype::F32,
                    shape.clone(),
                    data,
                )
                .unwrap();
                (name.clone(), view)
            })
            .collect();
        safetensors::serialize(views, None).unwrap()
    }
}
