#!/usr/bin/env bash
# `corpus build` on documentation no one here wrote (issue 40, item 6): Flask 2.2's manual as
# Debian packages it (python-flask-doc 2.2.2-3, Sphinx-generated HTML: 77 pages, their reST
# sources under `_sources/` beside them, the package's symbolic links into other packages), the
# folder built as it is installed, then scored on bench/docs/flask-questions.jsonl (50 questions
# written from its pages, expecting pages: README.md beside them).
#
#   cargo build --release -p turnstile-cli && cargo xtask plugins
#   bench/docs-corpus.sh                      build from the package, score, print the table
#   CORPUS=old.jsonl bench/docs-corpus.sh     score a corpus built before (another binary)
#
# Prints: files read/skipped and passages, build time and peak memory (best of RUNS full builds;
# then a rebuild after one page changed, from the manifest of the build before),
# "chrome" passages — passages under a heading found on a quarter of the pages or more (the
# site's repeated Navigation, Quick search, Contents…) — then, for the embedded hybrid plugin and
# the lexical one, recall@1 and recall@5 (a page's HTML or its reST source counts), the same with
# the HTML page only, and how many chrome passages came back in the questions' top 5s.
#
# Environment: TURNSTILE_BIN (target/release/turnstile), LEXICAL (target/plugins/retrieval.wasm),
#   DOCS (an installed copy of the html folder; default: the package fetched with apt-get
#   download into OUT), OUT (/tmp/docs-corpus-<UTC>), RUNS (3). Needs python3, dpkg-deb and
#   apt's package lists (for the download only).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${TURNSTILE_BIN:-$REPO/target/release/turnstile}"
LEXICAL="${LEXICAL:-$REPO/target/plugins/retrieval.wasm}"
QUESTIONS="$REPO/bench/docs/flask-questions.jsonl"
OUT="${OUT:-/tmp/docs-corpus-$(date -u +%Y%m%dT%H%M%SZ)}"
RUNS="${RUNS:-3}"
PACKAGE=python-flask-doc
VERSION=2.2.2-3
mkdir -p "$OUT"

if [[ -z "${CORPUS:-}" ]]; then
    if [[ -z "${DOCS:-}" ]]; then
        (cd "$OUT" && apt-get download "$PACKAGE=$VERSION" >/dev/null)
        dpkg-deb -x "$OUT/${PACKAGE}_${VERSION}_all.deb" "$OUT/package"
        DOCS="$OUT/package/usr/share/doc/$PACKAGE/html"
    fi
    CORPUS="$OUT/corpus.jsonl"
    best=""
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f '%e %M' -o "$OUT/time" "$BIN" corpus build "$DOCS" --out "$CORPUS" --full \
            >"$OUT/build.out" 2>&1
        read -r secs kb <"$OUT/time"
        if [[ -z "$best" ]] || python3 -c "import sys; sys.exit(not $secs < ${best%% *})"; then
            best="$secs $kb"
        fi
    done
    echo "build: $(grep -E '^wrote' "$OUT/build.out")"
    grep -E '^(read|skipped)' "$OUT/build.out" || true
    echo "build time, best of $RUNS: ${best%% *} s, peak RSS $(( ${best##* } / 1024 )) MiB"
    # A rebuild after one page changed (on a copy: the installed folder is left alone), where the
    # builder keeps a manifest (`--full` is refused by one that does not: then this is skipped).
    if "$BIN" corpus build --help | grep -q -- '--full'; then
        rm -rf "$OUT/copy" && cp -r "$DOCS" "$OUT/copy"
        "$BIN" corpus build "$OUT/copy" --out "$OUT/rebuilt.jsonl" >/dev/null 2>&1
        echo '<p>One more paragraph.</p>' >>"$OUT/copy/patterns/caching.html"
        /usr/bin/time -f '%e %M' -o "$OUT/time" "$BIN" corpus build "$OUT/copy" \
            --out "$OUT/rebuilt.jsonl" >"$OUT/rebuild.out" 2>&1
        read -r secs kb <"$OUT/time"
        echo "rebuild after one page changed: $secs s, peak RSS $(( kb / 1024 )) MiB: $(grep -E '^reused' "$OUT/rebuild.out" || true)"
    fi
fi

"$BIN" eval "$QUESTIONS" --corpus "$CORPUS" --cache-dir "$OUT/cache" --limit 10 \
    --compare "$LEXICAL" --json >"$OUT/eval.json"

python3 - "$CORPUS" "$OUT/eval.json" <<'EOF'
import collections, json, re, sys

corpus, report = sys.argv[1], json.load(open(sys.argv[2]))

def page(id):
    return id.split("#", 1)[0]

def heading(id):
    if "#" not in id:
        return None
    # The section's slug without a repeat's `-N` or a further passage's `/N` (either id scheme).
    return re.sub(r"(-\d+)?(/\d+)?$", "", id.split("#", 1)[1]).strip("-")

pages_of = collections.defaultdict(set)
passages = collections.Counter()
kinds = collections.Counter()
for line in open(corpus):
    doc = json.loads(line)
    kinds[doc.get("kind", "?")] += 1
    if not doc["id"].startswith("_sources/"):
        pages_of[heading(doc["id"])].add(page(doc["id"]))
        passages[heading(doc["id"])] += 1
html_pages = len(set().union(*pages_of.values()))
chrome = {h for h, pages in pages_of.items() if h and len(pages) * 4 >= html_pages}
print(f"passages: {sum(kinds.values())} ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))})")
print(f"chrome passages (a heading on >= 1/4 of {html_pages} pages: {', '.join(sorted(chrome)) or 'none'}): "
      f"{sum(passages[h] for h in chrome)}")

def accepted(id, expect):
    return any(id == e or (id.startswith(e) and id[len(e)] in ".#/") for e in expect)

print("| plugin | recall@1 | recall@5 | recall@1, HTML page only | recall@5, HTML page only | chrome in top 5s |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for plugin in report["plugins"]:
    r1 = r5 = h1 = h5 = shown = 0
    for a in plugin["answers"]:
        ids, expect = a["ids"], a["expect"]
        html = [e for e in expect if not e.startswith("_sources/")]
        hits = [accepted(i, expect) for i in ids]
        html_hits = [accepted(i, html) for i in ids]
        r1 += bool(hits[:1] and hits[0]); r5 += any(hits[:5])
        h1 += bool(html_hits[:1] and html_hits[0]); h5 += any(html_hits[:5])
        shown += sum(1 for i in ids[:5] if heading(i) in chrome and not i.startswith("_sources/"))
    n = len(plugin["answers"])
    m = plugin["metrics"]
    assert abs(m["recall_at_1"] - r1 / n) < 1e-9 and abs(m["recall_at_5"] - r5 / n) < 1e-9, m
    print(f"| {plugin['plugin']} | {r1/n:.2f} | {r5/n:.2f} | {h1/n:.2f} | {h5/n:.2f} | {shown} |")
EOF
echo "kept in $OUT"
