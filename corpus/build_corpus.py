#!/usr/bin/env python3
"""Build the "Python-summary corpus" from this machine's CPython standard library.

Usage (from the repository root):

    python3 corpus/build_corpus.py [--output PATH]

PATH defaults to corpus/python-summaries.jsonl (next to this script).  If the
JSON Lines output would exceed 5,000,000 bytes, PATH + ".gz" is written
instead (gzip, mtime=0) and a stale plain PATH is removed (and vice versa).

Standard library only; written for CPython 3.11.  The script re-invokes itself
in private worker modes (--enumerate / --worker MODULE / --topics, always with
--result FILE); those are internal and not meant to be called by hand.

What is produced (one JSON object per line, keys in this order:
id, kind, title, text; lines sorted by id; UTF-8; "\\n" line endings):

* kind "module"   - every public stdlib module/submodule with a docstring;
                    id = dotted module name.
* kind "class" /
  kind "function" - every class / routine reachable as ``module.Name`` (names
                    from ``__all__`` when defined, otherwise public names from
                    ``dir()``) that has a docstring.  One document per object:
                    objects are identified across worker processes by a stable
                    key (see ``object_key``), and the id is the shortest path
                    under which the object is reachable, where "shortest"
                    means: fewest dotted segments, then (unless
                    STRICT_SHORTEST) paths where the module declares the name
                    (in __all__, or defines the object) before paths where it
                    merely leaks an import, then the object's own __name__
                    before aliases, then fewest characters, then alphabetical
                    order (see ``path_rank``).  A path equal to a module name
                    is never used as an object id.
* kind "method"   - every public method / property-like attribute defined in
                    such a class's own ``__dict__`` whose docstring lives on
                    that ``__dict__`` entry itself (never inherited);
                    id = class id + "." + name.  Counted as methods:
                    functions, static/class methods, C method descriptors;
                    counted as properties (also kind "method"): property,
                    functools.cached_property, types.DynamicClassAttribute
                    and C getset/member descriptors (e.g. os.stat_result
                    fields).  Nested classes, constants and enum members are
                    not documents.
* kind "topic"    - every ``pydoc_data.topics.topics`` entry; id = "topic:KEY".

text  = cleaned docstring (inspect.cleandoc, trailing blanks removed, 3+
        newlines collapsed to 2, "at 0x..." addresses removed), at most 2,000
        characters (cut at a word boundary and ended with "…" when longer).
title = id + " — " + first sentence (the first paragraph, whitespace
        collapsed, up to and including the first ". "; reST heading underline
        lines such as "*****" in the topics are ignored); the sentence part is
        at most 120 characters ("…"-truncated).  Without a sentence, title = id.

Every module is imported in its own child process (same interpreter, flags
-B -S -P, clean environment with PYTHONHASHSEED=0, cwd = a fresh temporary
directory, 30 s timeout), at most two children at a time.
"""

import argparse
import json
import os
import re
import sys

# (gzip, hashlib, subprocess, tempfile, time and concurrent.futures are only
# needed by the parent and are imported in build(), so worker processes start
# with as little pre-imported as possible.)

# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------

MAX_TEXT = 2000
MAX_SENTENCE = 120
GZIP_THRESHOLD = 5_000_000
CHILD_TIMEOUT = 30  # seconds per module import
MAX_PARALLEL = 2  # the machine has 2 cores

# Top-level packages/modules skipped together with all their submodules.
#   idlelib, tkinter, turtledemo: GUI code (IDLE / Tk demos); not library API
#       for our purposes and some submodules try to start GUI machinery.
#   lib2to3: deprecated tool with a large grammar/fixer tree (and its tests).
#   ensurepip: bootstrapping helper whose package bundles wheels.
#   antigravity: opens a web browser on import (side effect).
#   this: prints the Zen of Python on import (side effect).
#   pydoc_data: pure data; its topics are emitted as kind "topic" instead.
SKIP_TOP = frozenset({
    "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip",
    "antigravity", "this", "pydoc_data",
})

# Not enumerated at all: os.path (an alias of posixpath, not a file in the
# stdlib tree; its functions appear as posixpath.*), and the "test" package
# (not listed in sys.stdlib_module_names; excluded by the test rule anyway).
#
# Note: `__main__`-style scripts (asyncio.__main__, json.__main__,
# venv.__main__, ...) and all private modules are excluded by the underscore
# rule below, which is what keeps the run free of scripts that would execute
# on import.  No further public module was found to hang or have side effects
# when imported in an isolated child.


def is_test_segment(seg):
    return (seg in ("test", "tests") or seg.startswith("test_")
            or seg.endswith("_test") or seg.endswith("_tests"))


def skip_reason(dotted):
    """Return why a module name is skipped, or None if it is included."""
    parts = dotted.split(".")
    if any(p.startswith("_") for p in parts):
        return "private"
    if any(is_test_segment(p) for p in parts):
        return "test"
    if parts[0] in SKIP_TOP:
        return "excluded"
    return None


# --------------------------------------------------------------------------
# Child (worker) side
# --------------------------------------------------------------------------

def write_result(path, obj):
    data = json.dumps(obj, ensure_ascii=False)
    with open(path, "w", encoding="utf-8") as f:
        f.write(data)


def worker_enumerate(result_path):
    """List every candidate module without importing any of them."""
    import importlib.util
    import pkgutil

    included = []
    skipped = {}

    def walk(pkgname, paths):
        for info in sorted(pkgutil.iter_modules(paths, pkgname + "."),
                           key=lambda i: i.name):
            why = skip_reason(info.name)
            if why:
                skipped[info.name] = why
                continue
            included.append(info.name)
            if info.ispkg:
                sub = os.path.join(info.module_finder.path,
                                   info.name.rpartition(".")[2])
                walk(info.name, [sub])

    for name in sorted(sys.stdlib_module_names):
        why = skip_reason(name)
        if why:
            skipped[name] = why
            continue
        included.append(name)
        try:
            spec = importlib.util.find_spec(name)
        except Exception:
            spec = None
        if spec is not None and spec.submodule_search_locations:
            walk(name, list(spec.submodule_search_locations))

    write_result(result_path, {"included": sorted(set(included)),
                               "skipped": skipped})


def _doc(obj):
    try:
        d = obj.__doc__
    except Exception:
        return None
    return d if isinstance(d, str) and d.strip() else None


def _code_loc(fn):
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    return "%s:%d" % (code.co_filename, code.co_firstlineno)


def object_key(obj, modname, name):
    """A key identifying `obj` identically in every worker process.

    * classes:            ("class", __module__, __qualname__)
    * Python functions:   ("function", __module__, __qualname__, file:line)
    * bound methods (e.g. random.randint, random.random, which are methods of
      a hidden module-level instance): ("bound", type of __self__, method
      qualname) -- so random.choice and secrets.choice stay distinct.
    * builtin functions:  ("builtin", __module__ or owning module, __qualname__)
    * other routines (lru_cache wrappers, ...): ("routine", type, __module__,
      __qualname__, file:line of the unwrapped function)
    Objects without a usable __module__/__qualname__ get a key unique to the
    path where they were found (no merging).
    """
    import inspect
    import types

    qual = getattr(obj, "__qualname__", None)
    mod = getattr(obj, "__module__", None)
    if inspect.isclass(obj):
        if isinstance(mod, str) and isinstance(qual, str):
            return ["class", mod, qual]
        return ["path", modname, name]
    if inspect.isfunction(obj):
        if isinstance(mod, str) and isinstance(qual, str):
            return ["function", mod, qual, _code_loc(obj)]
        return ["path", modname, name]
    self_ = getattr(obj, "__self__", None)
    if (inspect.ismethod(obj) or inspect.isbuiltin(obj)) and \
            self_ is not None and not isinstance(self_, types.ModuleType):
        owner = self_ if inspect.isclass(self_) else type(self_)
        fq = qual or getattr(obj, "__name__", None)
        if isinstance(fq, str):
            return ["bound", "%s.%s" % (owner.__module__, owner.__qualname__),
                    fq, "cls" if inspect.isclass(self_) else "inst"]
        return ["path", modname, name]
    if inspect.isbuiltin(obj):
        if not isinstance(mod, str) and isinstance(self_, types.ModuleType):
            mod = self_.__name__
        if isinstance(mod, str) and isinstance(qual, str):
            return ["builtin", mod, qual]
        return ["path", modname, name]
    if isinstance(mod, str) and isinstance(qual, str):
        try:
            inner = inspect.unwrap(obj)
        except Exception:
            inner = obj
        return ["routine", type(obj).__qualname__, mod, qual, _code_loc(inner)]
    return ["path", modname, name]


def class_members(cls):
    """Public methods/properties in cls.__dict__ with their own docstring."""
    import functools
    import types

    plain_kinds = (
        types.FunctionType, types.BuiltinFunctionType,
        types.MethodDescriptorType, types.ClassMethodDescriptorType,
        types.WrapperDescriptorType, types.GetSetDescriptorType,
        types.MemberDescriptorType, property, types.DynamicClassAttribute,
        functools.cached_property,
    )
    out = []
    try:
        items = list(vars(cls).items())
    except Exception:
        return out
    for mname, val in items:
        if not isinstance(mname, str) or mname.startswith("_"):
            continue
        doc = None
        if isinstance(val, (staticmethod, classmethod)):
            doc = _doc(getattr(val, "__func__", None))
        elif isinstance(val, functools.singledispatchmethod):
            doc = _doc(getattr(val, "func", None))
        elif isinstance(val, plain_kinds):
            # property / DynamicClassAttribute / cached_property keep the
            # getter's docstring on the instance; functions and C descriptors
            # carry their own.
            doc = _doc(val)
        else:
            continue  # nested classes, constants, enum members, ...
        if doc:
            out.append([mname, doc])
    out.sort()
    return out


def worker_module(modname, result_path):
    import importlib
    import inspect
    import warnings

    warnings.simplefilter("ignore")
    sys.stdout = sys.stderr  # keep stray prints out of our way
    try:
        mod = importlib.import_module(modname)
    except BaseException as e:  # SystemExit, ImportError, anything
        write_result(result_path, {"module": modname, "ok": False,
                                   "error": "%s: %s" % (type(e).__name__, e)})
        return

    names = None
    try:
        allnames = mod.__dict__.get("__all__")
        if allnames is not None:
            names = [n for n in list(allnames) if isinstance(n, str)]
    except Exception:
        names = None
    has_all = names is not None
    if names is None:
        names = dir(mod)
    names = sorted({n for n in names if not n.startswith("_")})

    objects = []
    for name in names:
        try:
            obj = getattr(mod, name)
        except BaseException:
            continue
        if inspect.ismodule(obj):
            continue
        if inspect.isclass(obj):
            kind = "class"
            try:
                doc = vars(obj).get("__doc__")  # own docstring only
            except Exception:
                doc = None
            if not (isinstance(doc, str) and doc.strip()):
                doc = None
        elif inspect.isroutine(obj):
            kind = "function"
            doc = _doc(obj)
        else:
            continue  # plain data, typing special forms, instances, ...
        home = getattr(obj, "__module__", None)
        if inspect.ismethod(obj) or (inspect.isbuiltin(obj) and
                                     not inspect.ismodule(obj.__self__)
                                     and obj.__self__ is not None):
            home = None  # bound method of a hidden instance: no home module
        rec = {"name": name, "kind": kind, "key": object_key(obj, modname, name),
               "doc": doc,
               # declared: exported via __all__ or defined in this module
               "declared": bool(has_all or home == modname),
               # alias: reachable under a name other than its own __name__
               "alias": name != getattr(obj, "__name__", name)}
        if kind == "class":
            rec["methods"] = class_members(obj)
        objects.append(rec)

    write_result(result_path, {"module": modname, "ok": True,
                               "doc": _doc(mod), "objects": objects})


def worker_topics(result_path):
    from pydoc_data.topics import topics
    write_result(result_path, {"topics": {k: topics[k] for k in sorted(topics)}})


# --------------------------------------------------------------------------
# Text cleaning
# --------------------------------------------------------------------------

_ADDR_IN_BRACKETS = re.compile(r"<([^<>\n]*?) at 0x[0-9a-fA-F]+>")
_ADDR = re.compile(r" at 0x[0-9a-fA-F]+")
_MANY_NL = re.compile(r"\n{3,}")
_UNDERLINE = re.compile(r"^\s*([*=\-~^\"#+`'])\1{2,}\s*$")
_WS = re.compile(r"\s+")


def clean_text(doc):
    import inspect
    text = doc.replace("\r\n", "\n").replace("\r", "\n")
    text = inspect.cleandoc(text)
    text = _ADDR_IN_BRACKETS.sub(r"<\1>", text)
    text = _ADDR.sub("", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = _MANY_NL.sub("\n\n", text)
    return text.strip()


def truncate(s, limit):
    """At most `limit` characters; cut at a word boundary, end with '…'."""
    if len(s) <= limit:
        return s
    cut = s[:limit - 1]
    sp = max(cut.rfind(" "), cut.rfind("\n"))
    if sp >= limit // 2:
        cut = cut[:sp]
    return cut.rstrip() + "…"


def first_sentence(text):
    # First paragraph, ignoring reST heading underlines (topics use them).
    lines = [ln for ln in text.split("\n") if not _UNDERLINE.match(ln)]
    para = "\n".join(lines).strip().split("\n\n")[0]
    para = _WS.sub(" ", para).strip()
    idx = para.find(". ")
    if idx >= 0:
        para = para[:idx + 1]
    return truncate(para, MAX_SENTENCE)


def make_doc(doc_id, kind, raw):
    text = clean_text(raw)
    if not text:
        return None
    sentence = first_sentence(text)
    title = doc_id + " — " + sentence if sentence else doc_id
    return {"id": doc_id, "kind": kind, "title": title,
            "text": truncate(text, MAX_TEXT)}


# --------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------

def child_env(tmpdir):
    return {
        "PYTHONHASHSEED": "0",
        "PATH": "/usr/bin:/bin",
        "HOME": tmpdir,
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
    }


def run_child(mode_args, tmpdir, tag):
    """Run this script in a worker mode; return (result_dict or None, error)."""
    import subprocess
    result_path = os.path.join(tmpdir, "result-%s.json" % tag)
    workdir = os.path.join(tmpdir, "cwd-%s" % tag)
    os.makedirs(workdir, exist_ok=True)
    cmd = [sys.executable, "-B", "-S", "-P", "-X", "utf8",
           os.path.abspath(__file__)] + mode_args + ["--result", result_path]
    try:
        proc = subprocess.run(cmd, cwd=workdir, env=child_env(workdir),
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "timeout after %ds" % CHILD_TIMEOUT
    if proc.returncode != 0 or not os.path.exists(result_path):
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, "exit %d: %s" % (proc.returncode, tail[-1] if tail else "")
    with open(result_path, encoding="utf-8") as f:
        data = json.load(f)
    os.remove(result_path)
    return data, None


# Choice of an object's id among all paths "module.Name" that reach it.
# The base rule is: fewest dotted segments, then fewest characters, then
# alphabetical.  Applied literally it names many objects after incidental
# imports in modules without __all__ (builtins.int -> "uuid.int_",
# builtins.str -> "typing.Text", collections.deque -> "asynchat.deque",
# OSError -> "os.error"), so two demotions are inserted after the segment
# count: (1) paths through a module that merely leaks the name (the module
# has no __all__ and the object's __module__ is elsewhere), then (2) paths
# whose final name differs from the object's own __name__ (aliases).  Set
# STRICT_SHORTEST = True to use the base rule alone.
STRICT_SHORTEST = False


def path_rank(path, rec):
    if STRICT_SHORTEST:
        return (path.count("."), len(path), path)
    return (path.count("."), not rec.get("declared", True),
            bool(rec.get("alias", False)), len(path), path)


def build(output):
    import gzip
    import hashlib
    import tempfile
    import time
    from concurrent.futures import ThreadPoolExecutor

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pycorpus-") as tmpdir:
        listing, err = run_child(["--enumerate"], tmpdir, "enumerate")
        if listing is None:
            sys.exit("module enumeration failed: %s" % err)
        modules = listing["included"]
        skipped = listing["skipped"]
        print("enumerated %d modules (%d skipped by rule)"
              % (len(modules), len(skipped)), file=sys.stderr)

        topics_res, err = run_child(["--topics"], tmpdir, "topics")
        if topics_res is None:
            sys.exit("loading pydoc_data.topics failed: %s" % err)

        results = {}

        def job(idx_name):
            idx, name = idx_name
            return name, run_child(["--worker", name], tmpdir, str(idx))

        with ThreadPoolExecutor(max_workers=MAX_PARALLEL) as pool:
            for n, (name, (res, err)) in enumerate(
                    pool.map(job, enumerate(modules)), 1):
                if res is None:
                    res = {"module": name, "ok": False, "error": err}
                results[name] = res
                if n % 100 == 0:
                    print("  %d/%d modules" % (n, len(modules)),
                          file=sys.stderr)

    # ---- merge ---------------------------------------------------------
    docs = {}
    imported, failed = [], {}
    objects = {}  # key -> list of (path, record)
    for name in modules:
        res = results[name]
        if not res.get("ok"):
            failed[name] = res.get("error", "?")
            continue
        imported.append(name)
        if res.get("doc"):
            d = make_doc(name, "module", res["doc"])
            if d:
                docs[name] = d
        for rec in res["objects"]:
            key = json.dumps(rec["key"])
            objects.setdefault(key, []).append((name + "." + rec["name"], rec))

    # A path that is also a module name (e.g. unittest.main is both the
    # submodule unittest.main and an alias of unittest.TestProgram) is never
    # used as an object id: module ids take precedence.
    module_names = set(modules)
    conflicts = 0
    shadowed = []
    for key, seen in sorted(objects.items()):
        seen = [pr for pr in seen if pr[0] not in module_names]
        if not seen:
            shadowed.append(key)
            continue
        seen.sort(key=lambda pr: path_rank(pr[0], pr[1]))
        path, rec = seen[0]
        if len({r["doc"] for _, r in seen}) > 1:
            conflicts += 1  # same key, differing docs: reported only
        if not rec["doc"]:
            continue
        d = make_doc(path, rec["kind"], rec["doc"])
        if d is None:
            continue
        if path in docs:
            raise SystemExit("duplicate id %r" % path)
        docs[path] = d
        if rec["kind"] == "class":
            for mname, mdoc in rec["methods"]:
                mid = path + "." + mname
                md = make_doc(mid, "method", mdoc)
                if md is None:
                    continue
                if mid in docs:
                    raise SystemExit("duplicate id %r" % mid)
                docs[mid] = md

    for key, raw in topics_res["topics"].items():
        tid = "topic:" + key
        d = make_doc(tid, "topic", raw)
        if d:
            docs[tid] = d

    # ---- write ---------------------------------------------------------
    lines = [json.dumps(docs[i], ensure_ascii=False) for i in sorted(docs)]
    payload = ("\n".join(lines) + "\n").encode("utf-8")
    out_dir = os.path.dirname(os.path.abspath(output))
    os.makedirs(out_dir, exist_ok=True)
    if len(payload) > GZIP_THRESHOLD:
        final, stale = output + ".gz", output
        tmp = final + ".tmp"
        with open(tmp, "wb") as raw_f:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw_f,
                               compresslevel=9, mtime=0) as gz:
                gz.write(payload)
    else:
        final, stale = output, output + ".gz"
        tmp = final + ".tmp"
        with open(tmp, "wb") as f:
            f.write(payload)
    os.replace(tmp, final)
    if os.path.exists(stale):
        os.remove(stale)

    with open(final, "rb") as f:
        blob = f.read()
    digest = hashlib.sha256(blob).hexdigest()

    # ---- summary -------------------------------------------------------
    by_kind = {}
    for d in docs.values():
        by_kind[d["kind"]] = by_kind.get(d["kind"], 0) + 1
    print("Python-summary corpus (Python %s)" % sys.version.split()[0])
    print("documents: %d" % len(docs))
    for k in ("module", "class", "function", "method", "topic"):
        print("  %-8s %d" % (k, by_kind.get(k, 0)))
    print("modules: %d enumerated, %d imported, %d failed to import, "
          "%d skipped by rule"
          % (len(modules), len(imported), len(failed), len(skipped)))
    reasons = {}
    for why in skipped.values():
        reasons[why] = reasons.get(why, 0) + 1
    print("  skipped by rule: " + ", ".join(
        "%s=%d" % kv for kv in sorted(reasons.items())))
    for name in sorted(failed):
        print("  failed: %s (%s)" % (name, failed[name][:150]))
    if shadowed:
        print("objects reachable only under a module's name (dropped): %d"
              % len(shadowed))
        for key in shadowed:
            print("  dropped: %s" % key)
    if conflicts:
        print("objects sharing a key with differing docstrings: %d" % conflicts)
    print("output: %s" % final)
    print("uncompressed bytes: %d" % len(payload))
    print("file bytes: %d" % len(blob))
    print("sha256: %s" % digest)
    print("elapsed: %.1f s" % (time.monotonic() - t0))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--output",
                    default=os.path.join(here, "python-summaries.jsonl"))
    ap.add_argument("--enumerate", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--worker", metavar="MODULE", help=argparse.SUPPRESS)
    ap.add_argument("--topics", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.enumerate:
        worker_enumerate(args.result)
    elif args.worker:
        worker_module(args.worker, args.result)
    elif args.topics:
        worker_topics(args.result)
    else:
        build(args.output)


if __name__ == "__main__":
    main()
