#!/usr/bin/env python3
"""Pages one commit wrote, per table: the B-tree pages of every named database (and of LMDB's
free-page database) reachable from the newest meta page of `after` whose page numbers are not in
`before` (LMDB copies every page a transaction changes to a new page number, and never reuses a
page the previous snapshot still reaches, so a new page number is a page the commits between the
two copies wrote), plus the meta page each commit writes.

A documented manual measurement (issue 28, part C); reads only the files, never opens LMDB.

Usage: Scripts/commit-pages.py BEFORE/data.mdb AFTER/data.mdb [commits]
       (commits: how many commits lie between the two copies; the figures are divided by it)

Layout read (LMDB 0.9, 64-bit): a 16-byte page header (pgno u64, pad u16, flags u16, lower u16,
upper u16; an overflow page has its page count as u32 at offset 12), node offsets (u16) from offset
16 to `lower`; a node is lo u16, hi u16, flags u16, ksize u16, key, data; a branch node's child is
lo | hi << 16 | flags << 32; a leaf node's data size is lo | hi << 16, F_BIGDATA (1) puts the data
on overflow pages (its first page number is the data), F_SUBDATA (2) marks a named database's
record (an MDB_db: pad u32, flags u16, depth u16, branch, leaf, overflow, entries, root u64).
"""
import struct
import sys

P_BRANCH, P_LEAF, P_OVERFLOW, P_LEAF2 = 0x01, 0x02, 0x04, 0x20
F_BIGDATA, F_SUBDATA = 0x01, 0x02
P_INVALID = 0xFFFFFFFFFFFFFFFF


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    metas = []
    for page in (0, 1):
        off = page * 4096 + 16
        magic, version = struct.unpack_from("<II", data, off)
        if magic != 0xBEEFC0DE:
            sys.exit(f"{path}: page {page} is not an LMDB meta page")
        dbs = off + 24
        free = struct.unpack_from("<IHHQQQQQ", data, dbs)
        main = struct.unpack_from("<IHHQQQQQ", data, dbs + 48)
        last, txnid = struct.unpack_from("<QQ", data, dbs + 96)
        metas.append((txnid, free, main))
    txnid, free, main = max(metas)
    psize = free[0]
    return data, psize, txnid, free[7], main[7]


def walk(data, psize, root):
    """Page numbers of the tree under `root`, and its leaf records (key, value) when asked."""
    pages, records = set(), []
    stack = [] if root == P_INVALID else [root]
    while stack:
        pgno = stack.pop()
        pages.add(pgno)
        base = pgno * psize
        flags, lower = struct.unpack_from("<HH", data, base + 10)
        if flags & P_LEAF2:
            continue
        count = (lower - 16) // 2
        for i in range(count):
            node = base + struct.unpack_from("<H", data, base + 16 + 2 * i)[0]
            lo, hi, nflags, ksize = struct.unpack_from("<HHHH", data, node)
            if flags & P_BRANCH:
                stack.append(lo | (hi << 16) | (nflags << 32))
                continue
            key = data[node + 8:node + 8 + ksize]
            size = lo | (hi << 16)
            value_at = node + 8 + ksize
            if nflags & F_BIGDATA:
                first = struct.unpack_from("<Q", data, value_at)[0]
                n = struct.unpack_from("<I", data, first * psize + 12)[0]
                pages.update(range(first, first + n))
            else:
                records.append((key, bytes(data[value_at:value_at + size]), nflags))
    return pages, records


def tables(path):
    data, psize, txnid, free_root, main_root = load(path)
    result = {}
    main_pages, records = walk(data, psize, main_root)
    result["(main: the table of tables)"] = main_pages
    result["(free pages database)"] = walk(data, psize, free_root)[0]
    for key, value, nflags in records:
        if nflags & F_SUBDATA:
            root = struct.unpack_from("<Q", value, 40)[0]
            result[key.decode()] = walk(data, psize, root)[0]
    return txnid, result


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    before_txn, before = tables(sys.argv[1])
    after_txn, after = tables(sys.argv[2])
    commits = int(sys.argv[3]) if len(sys.argv) > 3 else max(1, after_txn - before_txn)
    old = set().union(*before.values())
    rows = []
    for name, pages in after.items():
        new = len(pages - old)
        if new:
            rows.append((new, name, len(pages)))
    rows.sort(key=lambda r: (-r[0], r[1]))
    total = sum(r[0] for r in rows)
    print(f"{commits} commit(s) (txn {before_txn} -> {after_txn}); pages written per commit, by table:")
    for new, name, size in rows:
        print(f"  {new / commits:7.2f}  {name}  (tree of {size} pages)")
    print(f"  {1:7.2f}  (meta page)")
    print(f"  {total / commits + 1:7.2f}  total")


if __name__ == "__main__":
    main()
