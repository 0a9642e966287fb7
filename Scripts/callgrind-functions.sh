# Sourced by Scripts/rebuild-instructions.sh and Scripts/open-instructions.sh (not run alone).
#
# callgrind_functions FILE INCLUSIVE MEASURED: the function table of callgrind_annotate for the
# callgrind output FILE (INCLUSIVE: yes or no), demangled, as "Ir  (share)  function  [object
# file]" lines, without the frames that call the measured functions (MEASURED: an extended regular
# expression of their names, e.g. 'measuredRebuild|measuredAppend'; they are 100% by construction),
# and without the "partial apply" forwarders (each has the figure of the closure it forwards to).

demangle() { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; else cat; fi; }

callgrind_functions() {
    callgrind_annotate --inclusive="$2" --threshold=100 "$1" | demangle \
        | awk '/^-+$/ { dash++; next } dash >= 4 && NF' \
        | sed -E 's/^( *[0-9,]+ +\([^)]*\) +)[^:]*:/\1/; s/ \[[^]]*\/([^]/]*)\]$/  [\1]/' \
        | grep -v -E "^ *[0-9,]+ +\([^)]*\) +(__libc_start_main|\(below main\)|0x[0-9a-f]+ |reading_benchmarks_main|$3|partial apply for )" \
        | grep -E '^ *[0-9,]+ +\(' | grep -v 'PROGRAM TOTALS'
}
