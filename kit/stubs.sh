#!/usr/bin/env bash
# The typed stubs the kit's templates ship for an author's editor, generated from the contract
# (wit/retrieval.wit) by the pinned toolchains that build the plugins:
#   kit/templates/python/typings/  componentize-py 0.25.1 `bindings`: the modules `wit_world`
#                                  (the world, its imports: corpus, embeddings, config, log,
#                                  answer, conversation, and wasi:http's types, outgoing_handler,
#                                  streams, poll, error, monotonic_clock) and `componentize_py_types`
#                                  that app.py imports, each `.py` written as a `.pyi`
#                                  (Pyright/Pylance read `typings/`); the world is the template's
#                                  `retrieval-plugin-outbound` (kit/templates/python/wit/)
#   kit/templates/js/types/        jco 1.35.0 `guest-types`: a `.d.ts` per interface, declaring
#                                  the modules plugin.js imports ('turnstile:retrieval/...@0.1.4')
#
# Usage: kit/stubs.sh           write them into the templates
#        kit/stubs.sh --check   generate them afresh and compare: exit 1, naming what differs,
#                               when the shipped stubs are not what the contract generates
# The toolchains: $TURNSTILE_TOOLCHAINS, else target/toolchains (plugins/toolchains/install.sh).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
toolchains="${TURNSTILE_TOOLCHAINS:-$repo/target/toolchains}"
die() { echo "kit/stubs.sh: $*" >&2; exit 1; }

check=false
case "${1:-}" in
    --check) check=true ;;
    "") ;;
    *) die "usage: kit/stubs.sh [--check]" ;;
esac

cpy="$toolchains/py/bin/componentize-py"
jco="$toolchains/js/node_modules/@bytecodealliance/jco"
[ -x "$cpy" ] && [ -d "$jco" ] ||
    die "no pinned toolchains in $toolchains: run plugins/toolchains/install.sh (or set TURNSTILE_TOOLCHAINS)"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The contract as `turnstile new plugin` writes it: wit/retrieval.wit alone.
mkdir -p "$scratch/wit"
cp "$repo/wit/retrieval.wit" "$scratch/wit/"

# Python: the generated modules app.py imports, as stubs, of the world the template builds: the
# contract with the template's own WIT beside it, as `turnstile new plugin` writes them. (The async
# support and poll loop that componentize-py also writes for wasi:http are not imported by the
# world's modules, nor by app.py.)
mkdir -p "$scratch/wit-py"
cp -r "$scratch/wit/retrieval.wit" "$repo/kit/templates/python/wit/." "$scratch/wit-py/"
"$cpy" -d "$scratch/wit-py" -w retrieval-plugin-outbound bindings "$scratch/py" >/dev/null
mkdir -p "$scratch/python/typings"
(cd "$scratch/py" && find wit_world componentize_py_types.py -name '*.py' | sort) |
    while read -r file; do
        mkdir -p "$scratch/python/typings/$(dirname "$file")"
        cp "$scratch/py/$file" "$scratch/python/typings/${file%.py}.pyi"
    done

# JavaScript: jco 1.35.0 (in componentize-js's lock) reads WIT through preview2-shim 0.26.1, nested
# in its own node_modules, whose WASI filesystem cannot open the WIT ("os error 44"): it runs from
# a scratch copy without that nesting, so it resolves the toolchain's preview2-shim 0.25.0 (the
# version componentize-js is pinned to for the same reason).
modules="$toolchains/js/node_modules"
mkdir -p "$scratch/node/node_modules/@bytecodealliance"
for entry in "$modules"/* "$modules"/.bin; do
    [ "$(basename "$entry")" = @bytecodealliance ] || ln -s "$entry" "$scratch/node/node_modules/"
done
for entry in "$modules"/@bytecodealliance/*; do
    case "$(basename "$entry")" in
        jco | jco-transpile) cp -r "$entry" "$scratch/node/node_modules/@bytecodealliance/" ;;
        *) ln -s "$entry" "$scratch/node/node_modules/@bytecodealliance/" ;;
    esac
done
rm -rf "$scratch"/node/node_modules/@bytecodealliance/{jco,jco-transpile}/node_modules/@bytecodealliance/preview2-shim
version=$(node -p "require('$scratch/node/node_modules/@bytecodealliance/jco/package.json').version")
[ "$version" = 1.35.0 ] || die "jco $version in $toolchains, not the 1.35.0 the stubs are made with"
(cd "$scratch" && node node/node_modules/@bytecodealliance/jco/dist/jco.js guest-types wit \
    -n retrieval-plugin -o js/types --quiet)
[ -f "$scratch/js/types/retrieval-plugin.d.ts" ] || die "jco guest-types wrote no retrieval-plugin.d.ts"

status=0
for lang_dir in python/typings js/types; do
    shipped="$repo/kit/templates/$lang_dir"
    if $check; then
        if ! diff -r "$shipped" "$scratch/$lang_dir" >"$scratch/diff" 2>&1; then
            echo "kit/stubs.sh: kit/templates/$lang_dir is not what wit/retrieval.wit generates; run kit/stubs.sh:" >&2
            head -n 40 "$scratch/diff" >&2
            status=1
        fi
    else
        rm -rf "$shipped"
        cp -r "$scratch/$lang_dir" "$shipped"
        echo "wrote kit/templates/$lang_dir ($(find "$shipped" -type f | wc -l) files)"
    fi
done
exit $status
