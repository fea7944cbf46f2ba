"""Native unit tests of the plugin's host-independent code: the Rust crates' tests, ported.

Run: `python3 -m unittest -v test_hybrid` in this directory (no component build needed).
"""

import math
import unittest
from typing import NamedTuple

import retrieval_query
from hybrid import TEXT_SNIPPET_BYTES, debug_str, fuse, lexical_weight, text_snippet
from retrieval_query import MAX_TERMS, fts_expression, id_match, terms


class Hit(NamedTuple):
    """What the host's `Ranked` and `Nearest` records give `fuse`."""

    id: str
    title: str
    doc: int


def c(doc_id: str, doc: int, score: float) -> tuple[Hit, float]:
    return Hit(doc_id, doc_id, doc), score


def fuse_pairs(lexical, semantic, weight, limit=None):
    """`fuse` of two pools given as (hit, score) pairs."""
    pools = [([h for h, _ in pool], [s for _, s in pool]) for pool in (lexical, semantic)]
    return fuse(*pools[0], *pools[1], weight, limit)


def ids(fused):
    return [hit.id for _, hit, _ in fused]


class QueryTests(unittest.TestCase):
    def test_drops_stop_words_and_quotes_terms(self):
        self.assertEqual(
            fts_expression(terms("How do I parse command line arguments?")),
            '"parse" OR "command" OR "line" OR "arguments"',
        )

    def test_fts_syntax_in_the_question_is_inert(self):
        self.assertEqual(
            fts_expression(terms('NEAR(a b) OR "x" * col:^y')),
            '"near" OR "b" OR "x" OR "col" OR "y"',
        )

    def test_stop_words_only_still_searches(self):
        self.assertEqual(fts_expression(terms("how is it")), '"how" OR "is" OR "it"')

    def test_naming_the_object_ranks_it_higher(self):
        t = terms("limit concurrency with an asyncio semaphore")
        self.assertGreater(id_match("asyncio.Semaphore", t), id_match("asyncio.Semaphore.locked", t))
        self.assertGreater(id_match("asyncio.Semaphore", t), id_match("asyncio.BoundedSemaphore", t))

    def test_the_expression_fits_the_hosts_bounds(self):
        for question in [
            "文字列を分割する方法" * 50,
            "é" * 500,
            "a " * 250,
            "𝔘" * 500,
            "".join(chr(ord("a") + i % 26) for i in range(500)),
        ]:
            t = terms(question)
            self.assertLessEqual(len(t), MAX_TERMS)
            self.assertLessEqual(len(fts_expression(t).encode()), 8192)

    def test_no_terms_at_all(self):
        self.assertIsNone(fts_expression(terms("?! 🙂 …")))

    def test_rust_alphanumerics_not_python_ones(self):
        # U+093F (Devanagari vowel sign I) is Other_Alphabetic: Rust keeps "किताब" one word,
        # where `str.isalnum` would split it.
        self.assertEqual(terms("किताब"), ["किताब"])
        self.assertEqual(terms("snake_case x"), ["snake_case", "x"])

    def test_words_are_runs_of_rust_alphanumerics_at_every_code_point(self):
        # The regex that splits a question must agree with `is_alphanumeric` (the table Rust's
        # `char::is_alphanumeric` was generated into) on every code point, surrogates included.
        word = retrieval_query._WORD
        for cp in range(0x110000):
            ch = chr(cp)
            expected = ch == "_" or retrieval_query.is_alphanumeric(ch)
            if bool(word.fullmatch(ch)) != expected:
                self.fail(f"U+{cp:04X}: regex {not expected}, is_alphanumeric {expected}")
            if cp < 0x80 and bool(retrieval_query._ASCII_WORD.fullmatch(ch)) != expected:
                self.fail(f"U+{cp:04X}: the ASCII regex says {not expected}")

    def test_ids_match_ignoring_ascii_case_only(self):
        self.assertEqual(id_match("topic:Asyncio.Semaphore", ["asyncio", "semaphore"]), 2.0)
        self.assertEqual(id_match("ÉTAT", ["état"]), -0.5)
        self.assertEqual(id_match("Émile_ZOLA.x", ["émile", "zola"]), 0.0)
        self.assertEqual(id_match("a..b_", ["A", "b"]), 2.0)


class HybridTests(unittest.TestCase):
    def test_a_document_in_both_pools_beats_one_in_either(self):
        fused = fuse_pairs([c("a", 1, 10.0), c("b", 2, 8.0)], [c("c", 3, 0.9), c("b", 2, 0.8), c("d", 4, 0.5)], 0.5)
        self.assertEqual(ids(fused), ["b", "a", "c", "d"])
        self.assertAlmostEqual(fused[0][0], 0.8)
        self.assertAlmostEqual(fused[1][0], 0.75)

    def test_a_limit_keeps_the_first_of_the_full_ranking_and_says_which_pool(self):
        lexical = [c("a", 1, 10.0), c("b", 2, 8.0)]
        semantic = [c("c", 3, 0.9), c("b", 2, 0.8), c("d", 4, 0.5)]
        full = fuse_pairs(lexical, semantic, 0.5)
        for limit in range(6):
            self.assertEqual(fuse_pairs(lexical, semantic, 0.5, limit), full[:limit])
        self.assertEqual([in_lexical for _, _, in_lexical in full], [True, True, False, False])

    def test_the_weight_moves_between_lexical_and_semantic(self):
        self.assertEqual(ids(fuse_pairs([c("lex", 1, 5.0)], [c("sem", 2, 0.9), c("lex", 1, 0.1)], 1.0))[0], "lex")
        self.assertEqual(ids(fuse_pairs([c("lex", 1, 5.0)], [c("sem", 2, 0.9), c("lex", 1, 0.1)], 0.0))[0], "sem")

    def test_either_pool_alone_is_ranked_as_it_came(self):
        self.assertEqual(ids(fuse_pairs([], [c("x", 1, 0.7), c("y", 2, 0.9)], 0.3)), ["y", "x"])
        self.assertEqual(ids(fuse_pairs([c("x", 1, 2.0), c("y", 2, 3.0)], [], 0.3)), ["y", "x"])
        self.assertEqual(fuse_pairs([], [], 0.3), [])

    def test_ties_are_broken_by_id_and_non_finite_scores_sink(self):
        self.assertEqual(ids(fuse_pairs([], [c("b", 2, 0.5), c("a", 1, 0.5)], 0.3)), ["a", "b"])
        fused = fuse_pairs([c("nan", 1, math.nan), c("ok", 2, 1.0)], [], 0.3)
        self.assertEqual(ids(fused), ["ok", "nan"])
        self.assertTrue(all(math.isfinite(s) for s, _, _ in fused))

    def test_positive_zero_beats_negative_zero_as_in_rust_total_cmp(self):
        # Weight 1: semantic-only documents score 0 × similarity, +0.0 or -0.0.
        fused = fuse_pairs([], [c("a", 1, -0.2), c("b", 2, 0.1)], 1.0)
        self.assertEqual(ids(fused), ["b", "a"])

    def test_the_weight_setting_is_checked(self):
        self.assertEqual(lexical_weight(" 0.25 "), 0.25)
        self.assertEqual(lexical_weight("1"), 1.0)
        self.assertEqual(lexical_weight(".5"), 0.5)
        for bad in ["", "x", "-0.1", "1.5", "NaN", "inf", "0_5", "١"]:
            with self.assertRaises(ValueError, msg=bad):
                lexical_weight(bad)
        with self.assertRaises(ValueError) as raised:
            lexical_weight('x"\n')
        self.assertEqual(str(raised.exception), 'lexical_weight must be a number in 0..=1, not "x\\"\\n"')

    def test_text_snippets_are_bounded_on_character_boundaries(self):
        self.assertEqual(text_snippet("  short text \n"), "short text")
        snippet = text_snippet("é" * 400)
        self.assertLessEqual(len(snippet.encode()), TEXT_SNIPPET_BYTES)
        self.assertTrue(snippet.endswith("…"))

    def test_debug_str(self):
        self.assertEqual(debug_str('a "b"\t\u00e9\u0301'), '"a \\"b\\"\\t\u00e9\\u{301}"')


if __name__ == "__main__":
    unittest.main()
