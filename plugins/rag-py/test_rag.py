"""Native unit tests of the plugin's host-independent code: the Rust plugin's tests, ported.

Run: `PYTHONPATH=../retrieval-py python3 -m unittest -v test_rag` in this directory (no component
build needed; the ranking modules are retrieval-py's).
"""

import json
import unittest

import completion
import prompt
import settings
from chunks import Finish, NotJson, StreamError, part
from sse import MAX_EVENT_BYTES, Events, TooLong

PASSAGES = [
    prompt.Passage("billing#refunds", "Billing › Refunds",
                   "Ask for a refund within 30 days: we send your money back.\n"),
    prompt.Passage("billing#cancel", "Billing › Cancel", 'Cancel your plan from the "Account" page.'),
]


class SettingsTests(unittest.TestCase):
    def test_an_origin_posts_to_the_completions_path(self):
        self.assertEqual(settings.upstream("http://127.0.0.1:9000"),
                         settings.Upstream(False, "127.0.0.1:9000", "/v1/chat/completions"))
        self.assertEqual(settings.upstream("HTTPS://api.example.com/openai/"),
                         settings.Upstream(True, "api.example.com", "/openai/v1/chat/completions"))

    def test_a_bad_upstream_is_refused_without_echoing_it(self):
        for bad in ["127.0.0.1:9000", "ftp://x", "http://", "http:///v1", "http://user:sk-secret@host",
                    "http://host/?key=sk-secret", "http://ho st", "http://host/a\u0085b"]:
            with self.assertRaises(ValueError, msg=bad) as raised:
                settings.upstream(bad)
            self.assertNotIn("secret", str(raised.exception))

    def test_a_client_asks_for_fewer_tokens_never_more(self):
        self.assertEqual(settings.answer_tokens(None, 256), 256)
        self.assertEqual(settings.answer_tokens(64, 256), 64)
        self.assertEqual(settings.answer_tokens(100_000, 256), 256)

    def test_max_tokens_has_a_default_and_bounds(self):
        self.assertEqual(settings.max_tokens(None), settings.DEFAULT_MAX_TOKENS)
        self.assertEqual(settings.max_tokens(" 64 "), 64)
        for bad in ["0", "-1", "9000", "many", "6_4", "٦٤"]:
            with self.assertRaises(ValueError, msg=bad):
                settings.max_tokens(bad)


class PromptTests(unittest.TestCase):
    def test_the_request_streams_the_question_and_every_numbered_passage(self):
        asked = prompt.Asked(max_tokens=64, temperature=0.699999988079071, stop=["\n\n"], user="u-7")
        body = json.loads(prompt.request_body("local-model", asked, "can I get my money back?",
                                              PASSAGES, []))
        self.assertEqual(body["model"], "local-model")
        self.assertEqual(body["max_tokens"], 64)
        self.assertIs(body["stream"], True)
        self.assertIs(body["stream_options"]["include_usage"], True)
        # The client's f32, as the Rust plugin writes it.
        self.assertEqual(body["temperature"], 0.7)
        self.assertEqual(body["stop"], ["\n\n"])
        self.assertEqual(body["user"], "u-7")
        self.assertEqual(body["messages"][0]["content"], prompt.SYSTEM)
        user = body["messages"][1]["content"]
        self.assertTrue(user.startswith("Sources:\n\n[1] id: billing#refunds\ntitle: Billing › Refunds\n"
                                        "Ask for a refund within 30 days"), user)
        self.assertIn("[2] id: billing#cancel\n", user)
        self.assertTrue(user.endswith("\nQuestion: can I get my money back?"), user)
        self.assertNotIn("argparse", prompt.SYSTEM)

    def test_earlier_turns_go_before_the_question_the_newest_kept(self):
        history = [
            prompt.Turn(prompt.Speaker.SYSTEM, "answer in French"),
            prompt.Turn(prompt.Speaker.USER, "an old question"),
            prompt.Turn(prompt.Speaker.ASSISTANT, "x" * (prompt.MAX_HISTORY_BYTES - 10)),
            prompt.Turn(prompt.Speaker.USER, "how do I cancel?"),
            prompt.Turn(prompt.Speaker.ASSISTANT, "From the Account page."),
        ]
        messages = prompt.messages("and get a refund?", PASSAGES, history)
        self.assertEqual([m["role"] for m in messages], ["system", "system", "user", "assistant", "user"])
        self.assertEqual(messages[1]["content"], "answer in French")
        self.assertEqual(messages[2]["content"], "how do I cancel?")
        self.assertEqual(messages[3]["content"], "From the Account page.")


class EventTests(unittest.TestCase):
    BODY = b'data: {"a":1}\n\n: a comment\nevent: x\ndata: two\ndata: lines\r\n\r\ndata:[DONE]\r\r'

    def test_events_come_as_soon_as_they_end_whatever_the_pieces(self):
        self.assertEqual(Events().push(self.BODY), ['{"a":1}', "two\nlines", "[DONE]"])
        # Byte by byte: each event as its blank line arrives, never before.
        events = Events()
        seen = [(i, done) for i in range(len(self.BODY)) if (done := events.push(self.BODY[i:i + 1]))]
        self.assertEqual(len(seen), 3)
        self.assertEqual(seen[0], (14, ['{"a":1}']))
        # A `\r\n` split between two pieces ends one line, not two.
        events = Events()
        self.assertEqual(events.push(b"data: x\r"), [])
        self.assertEqual(events.push(b"\ndata: y\n\n"), ["x\ny"])

    def test_an_event_past_the_bound_is_an_error(self):
        with self.assertRaises(TooLong):
            Events().push(b"x" * (MAX_EVENT_BYTES + 1))


class ChunkTests(unittest.TestCase):
    def test_each_kind_of_chunk_is_read(self):
        first = '{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}'
        self.assertEqual(part(first), (None, None, None))
        token = '{"choices":[{"index":0,"delta":{"content":"json "},"finish_reason":null}]}'
        self.assertEqual(part(token).content, "json ")
        last = '{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}'
        self.assertEqual(part(last).finish, Finish.LENGTH)
        usage = '{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}'
        self.assertEqual(part(usage).usage, (12, 5))
        with self.assertRaises(StreamError):
            part('{"error":{"message":"the model crashed","type":"server_error"}}')
        for not_json in ["<html>", '{"choices": NaN}']:
            with self.assertRaises(NotJson):
                part(not_json)


class CompletionTests(unittest.TestCase):
    def test_the_first_choice_content_is_the_answer(self):
        body = (b'{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"According to '
                b'[json.dumps], yes."},"finish_reason":"stop"},{"message":{"content":"no"}}],'
                b'"usage":{"prompt_tokens":9,"completion_tokens":5}}')
        self.assertEqual(completion.whole(body),
                         ("According to [json.dumps], yes.", Finish.STOP, (9, 5)))

    def test_not_json_or_no_content_is_an_error(self):
        with self.assertRaisesRegex(completion.Unreadable, "invalid JSON"):
            completion.whole(b"<html>busy</html>")
        for body in [b"{}", b'{"choices":[]}', b'{"choices":[{"message":{"content":null}}]}',
                     b'{"choices":[{"message":{"content":"  "}}]}',
                     b'{"choices":[{"message":{"content":7}}]}']:
            with self.assertRaisesRegex(completion.Unreadable, "no content", msg=body):
                completion.whole(body)

    def test_a_long_answer_is_cut_on_a_char_boundary(self):
        long = "é" * completion.MAX_ANSWER_BYTES  # two bytes each
        answer = completion.whole(json.dumps({"choices": [{"message": {"content": long}}]}).encode())
        self.assertEqual(len(answer.content.encode()), completion.MAX_ANSWER_BYTES)
        self.assertEqual(answer.finish, Finish.LENGTH)
        self.assertEqual(completion.cut("aé".encode(), 2), "a")
        self.assertEqual(completion.cut(b"abc", 10), "abc")


if __name__ == "__main__":
    unittest.main()
