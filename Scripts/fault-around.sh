#!/usr/bin/env bash
# How much of a cached file one random page read maps into a process (the kernel's fault-around),
# with and without madvise(MADV_RANDOM): the reason a parted import hands back the pages of
# data.mdb every 512 accesses (docs/importing.md, "Large files in parts").
#
# Usage: Scripts/fault-around.sh [READS]   (default 1000 random 4 KiB page reads of a 1 GB file)
# Prints RssFile before and after the reads, for no advice and for MADV_RANDOM. Needs cc.
set -euo pipefail
reads=${1:-1000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/fa.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
static long rss_file(void) {
    FILE *f = fopen("/proc/self/status", "r"); char line[256]; long kib = 0;
    while (fgets(line, sizeof line, f)) if (!strncmp(line, "RssFile:", 8)) kib = atol(line + 8);
    fclose(f); return kib;
}
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY); struct stat st; fstat(fd, &st);
    unsigned char *map = mmap(0, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    int advice = atoi(argv[2]), reads = atoi(argv[3]);
    if (advice) madvise(map, st.st_size, advice);
    long before = rss_file(); size_t pages = st.st_size / 4096; volatile unsigned sum = 0; srand(1);
    for (int i = 0; i < reads; i++) sum += map[(size_t)(rand() % pages) * 4096];
    printf("%-12s %d page reads: RssFile %ld -> %ld KiB (%ld KiB a read)\n", advice ? "MADV_RANDOM" : "no advice",
           reads, before, rss_file(), (rss_file() - before) / reads);
    return 0;
}
C
cc -O2 -o "$work/fa" "$work/fa.c"
head -c 1000000000 /dev/zero > "$work/file"
cat "$work/file" > /dev/null   # in the page cache, as a store that was just written or read
"$work/fa" "$work/file" 0 "$reads"
"$work/fa" "$work/file" "$(printf '#include <sys/mman.h>\nMADV_RANDOM\n' | cc -E -P - | tail -n 1)" "$reads"
