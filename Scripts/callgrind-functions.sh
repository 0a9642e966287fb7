# Sourced by Scripts/rebuild-instructions.sh, Scripts/open-instructions.sh and
# Scripts/query-instructions.sh (not run alone).
#
# benchmark_binary: builds the release benchmark binary (Benchmarks package, scratch
# Benchmarks/.build-bench; the build's output goes to stderr) and prints its path.
#
# stripped_copy BINARY DIR: copies BINARY into DIR without debug info and prints the copy's path:
# valgrind 3.19 (Debian 12) cannot read the DWARF 5 debug info the Swift toolchain writes and
# gives up; the symbol table, which the copy keeps, is all callgrind needs for names.
#
# measured_symbol BINARY NAME: the exact mangled name of the benchmark's top-level function NAME
# in BINARY (a wildcard could also match its closures or thunks, and each match toggles callgrind's
# collection again); exits when there is not exactly one.
#
# callgrind_functions FILE INCLUSIVE MEASURED: the function table of callgrind_annotate for the
# callgrind output FILE (INCLUSIVE: yes or no), demangled, as "Ir  (share)  function  [object
# file]" lines, without the frames that call the measured functions (MEASURED: an extended regular
# expression of their names, e.g. 'measuredRebuild|measuredAppend'; they are 100% by construction),
# and without the "partial apply" forwarders (each has the figure of the closure it forwards to).

benchmark_binary() {
    echo "== building reading-benchmarks (release) ==" >&2
    # `|| return`: `set -e` does not reach into the command substitution that calls this, so a
    # failed build would otherwise go on to measure the binary of an earlier build.
    swift build -c release --package-path Benchmarks --scratch-path Benchmarks/.build-bench --product reading-benchmarks >&2 || return 1
    printf '%s/reading-benchmarks\n' "$(swift build -c release --package-path Benchmarks --scratch-path Benchmarks/.build-bench --show-bin-path)"
}

stripped_copy() {
    cp "$1" "$2/reading-benchmarks"
    strip --strip-debug "$2/reading-benchmarks"
    printf '%s/reading-benchmarks\n' "$2"
}

measured_symbol() {
    local found
    found="$(nm --defined-only "$1" | awk '{print $3}' | grep -E "^\\\$s18reading_benchmarks${#2}${2}[y_].*KF\$" || true)"
    if [[ "$(printf '%s\n' "$found" | grep -c .)" != 1 ]]; then
        echo "expected exactly one $2 symbol in $1, found: ${found:-none}" >&2
        exit 1
    fi
    printf '%s\n' "$found"
}

demangle() { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; else cat; fi; }

callgrind_functions() {
    callgrind_annotate --inclusive="$2" --threshold=100 "$1" | demangle \
        | awk '/^-+$/ { dash++; next } dash >= 4 && NF' \
        | sed -E 's/^( *[0-9,]+ +\([^)]*\) +)[^:]*:/\1/; s/ \[[^]]*\/([^]/]*)\]$/  [\1]/' \
        | grep -v -E "^ *[0-9,]+ +\([^)]*\) +(__libc_start_main|\(below main\)|0x[0-9a-f]+ |reading_benchmarks_main|$3|partial apply for )" \
        | grep -E '^ *[0-9,]+ +\(' | grep -v 'PROGRAM TOTALS'
}
