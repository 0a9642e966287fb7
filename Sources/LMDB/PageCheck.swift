#if canImport(CLMDBVendored)
import CLMDBVendored
#else
import CLMDB
#endif
import Foundation

// The structure of the data file, checked before LMDB trusts it (issue 36: a flipped bit in a
// page header or a node's size sent LMDB's own page walk out of its page, and the process died
// with SIGSEGV or SIGBUS; LMDB checks neither node offsets nor sizes against the page).
//
// The walk reads the pages of one snapshot (a read transaction holds it, so no page of it is
// reused meanwhile) with `pread`, never through the map, and follows every B-tree from the meta
// page: the free-page list, the main database and each named database in it. For every page it
// checks what LMDB would follow blindly: the page's number and kind, its node offsets, every
// key and value within its page, branch children and overflow runs within the file, each page
// reached once, the depth bounded, and the free list's page numbers within the file. The keys'
// order and the values' contents are the readers' to check (decoders, `verify`).

extension LMDBEnvironment {
    /// Checks the structure of every B-tree page of the current snapshot of `data.mdb` (the
    /// free-page list, the main database and every named database): offsets, sizes and page
    /// numbers LMDB follows without checking. Reads every page in use once (`pread`); with
    /// `freeListOnly`, only the pages of the free-page list (a writable open checks those).
    ///
    /// - Throws: ``LMDBError`` with `MDB_CORRUPTED` naming the first damaged page and what is wrong
    ///   with it ("data.mdb is damaged: page 71 (free-page list) ...; restore it from a backup").
    public func checkPageStructure(freeListOnly: Bool = false) throws {
        try read { txn in
            let id = UInt64(mdb_txn_id(txn.handle))
            var walker = try PageWalker(locks: fileLocks, path: path, txnid: id)
            try walker.walkDatabase(walker.freeDB, name: "free-page list", isFree: true, isMain: false)
            try walker.checkMissingPagesAreFree()
            if !freeListOnly { try walker.walkDatabase(walker.mainDB, name: "main database", isFree: false, isMain: true) }
        }
    }
}

/// One walk of ``LMDBEnvironment/checkPageStructure()``.
///
/// Not `Sendable`: a value used by one call.
private struct PageWalker {
    let locks: StoreFileLocks
    let path: String
    let pageSize: Int
    /// Pages in the snapshot (`mm_last_pg + 1`): the free list may name any of them.
    let pageCount: UInt64
    /// Pages in the snapshot that lie whole within the file: a page in use must be one of them.
    /// Fewer than ``pageCount`` when free pages LMDB never wrote end the file early, or when the
    /// file was cut short (then a page in use lies beyond it).
    let filePages: UInt64
    let fileSize: Int
    /// The pages the free list names at or beyond ``filePages`` (collected only when the file is
    /// short): every page the file ends before must be one of them.
    var freeBeyondFile: Set<UInt64> = []
    let freeDB: [UInt8]
    let mainDB: [UInt8]
    var seen: Set<UInt64> = []

    // LMDB's layout (64-bit): page header 16 bytes (pgno u64, pad u16, flags u16, lower u16,
    // upper u16; an overflow page's page count u32 at 12), node header 8 bytes (lo u16, hi u16,
    // flags u16, ksize u16), MDB_db 48 bytes (pad u32, flags u16, depth u16, 4 counts u64, root u64).
    static let header = 16, node = 8, dbSize = 48
    static let branch: UInt16 = 0x01, leaf: UInt16 = 0x02, overflow: UInt16 = 0x04, leaf2: UInt16 = 0x20
    static let bigData: UInt16 = 0x01, subData: UInt16 = 0x02, dupData: UInt16 = 0x04
    static let dupSort: UInt16 = 0x04
    static let maxDepth = 40

    init(locks: StoreFileLocks, path: String, txnid: UInt64) throws {
        self.locks = locks
        self.path = path
        let first = try locks.readData(at: 0, count: 152)
        guard first.count == 152, Self.u32(first, 16) == 0xBEEF_C0DE else {
            throw Self.damaged(path, "its first meta page is not LMDB's")
        }
        let size = Int(Self.u32(first, 40))
        guard size >= 512, size <= 1 << 16, size & (size - 1) == 0 else { throw Self.damaged(path, "its page size \(size) is not a power of two") }
        pageSize = size
        let second = try locks.readData(at: size, count: 152)
        var metas = [first]
        if second.count == 152, Self.u32(second, 16) == 0xBEEF_C0DE { metas.append(second) }
        // The meta page of the snapshot the read transaction holds (else the newer one).
        let meta = metas.first { Self.u64($0, 144) == txnid } ?? metas.max { Self.u64($0, 144) < Self.u64($1, 144) }!
        pageCount = Self.u64(meta, 136) &+ 1
        fileSize = try locks.dataFileSize()
        filePages = min(pageCount, UInt64(fileSize / size))
        freeDB = Array(meta[40..<88])
        mainDB = Array(meta[88..<136])
    }

    static func u16(_ b: [UInt8], _ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }
    static func u32(_ b: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[at + $1]) << (8 * $1) } }
    static func u64(_ b: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * $1) } }

    static func damaged(_ path: String, _ detail: String) -> LMDBError {
        LMDBError(operation: "check(\(path))", code: MDB_CORRUPTED,
                  message: "data.mdb is damaged: \(detail); restore it from a backup")
    }

    func damaged(_ page: UInt64, _ tree: String, _ detail: String) -> LMDBError {
        Self.damaged(path, "page \(page) (\(tree)) \(detail)")
    }

    /// Refuses a file that ends before a page that is not free. LMDB accounts for every page below
    /// its last: in use or on the free list. So when only free pages LMDB never wrote are missing,
    /// the free list names each of them; a meta page whose last page was changed by damage, or a
    /// file cut short, leaves some missing page unnamed.
    func checkMissingPagesAreFree() throws {
        guard filePages < pageCount else { return }
        let missing = pageCount - filePages
        guard UInt64(freeBeyondFile.count) == missing else {
            throw LMDBError(operation: "check(\(path))", code: MDB_CORRUPTED,
                            message: "data.mdb is damaged or incomplete: it is \(fileSize) bytes, but its meta page counts "
                                + "\(pageCount) pages, and \(missing - UInt64(freeBeyondFile.count)) of the \(missing) beyond its end are not free "
                                + "(a copy cut short, a truncated file, or a disk that filled while the file grew); restore it from a backup")
        }
    }

    /// A page in use that the file ends before (see ``filePages``).
    func incomplete(_ page: UInt64, _ tree: String) -> LMDBError {
        LMDBError(operation: "check(\(path))", code: MDB_CORRUPTED,
                  message: "data.mdb is damaged or incomplete: it is \(fileSize) bytes, but page \(page) (\(tree)), in use, "
                      + "lies beyond its end (a copy cut short, a truncated file, or a disk that filled while the file grew); "
                      + "restore it from a backup")
    }

    /// Walks the tree an MDB_db record describes.
    mutating func walkDatabase(_ db: [UInt8], name: String, isFree: Bool, isMain: Bool) throws {
        let root = Self.u64(db, 40)
        guard root != UInt64.max else { return }   // P_INVALID: an empty database
        let depth = Int(Self.u16(db, 6))
        guard depth >= 1, depth <= Self.maxDepth else {
            throw Self.damaged(path, "the \(name) says it is \(depth) levels deep")
        }
        try walkPage(root, tree: name, flags: Self.u16(db, 4), isFree: isFree, isMain: isMain, level: 1, depth: depth)
    }

    func readPage(_ number: UInt64, count: Int) throws -> [UInt8] {
        let (offset, overflow) = number.multipliedReportingOverflow(by: UInt64(pageSize))
        guard !overflow, offset <= UInt64(Int.max - count) else { throw LMDBError(operation: "check(\(path))", code: MDB_CORRUPTED) }
        let bytes = try locks.readData(at: Int(offset), count: count)
        guard bytes.count == count else { throw Self.damaged(path, "page \(number) lies beyond the end of the file") }
        return bytes
    }

    mutating func walkPage(_ number: UInt64, tree: String, flags dbFlags: UInt16, isFree: Bool, isMain: Bool,
                           level: Int, depth: Int) throws {
        guard number >= 2, number < pageCount else {
            throw damaged(number, tree, "is named by its parent but lies outside the file's \(pageCount) pages")
        }
        guard number < filePages else { throw incomplete(number, tree) }
        guard seen.insert(number).inserted else { throw damaged(number, tree, "is reached twice") }
        let page = try readPage(number, count: pageSize)
        guard Self.u64(page, 0) == number else { throw damaged(number, tree, "says it is page \(Self.u64(page, 0))") }
        let kind = Self.u16(page, 10)
        let lower = Int(Self.u16(page, 12)), upper = Int(Self.u16(page, 14))
        let isBranch = kind & Self.branch != 0, isLeaf = kind & Self.leaf != 0
        guard isBranch != isLeaf, kind & (Self.overflow | Self.leaf2) == 0 else {
            throw damaged(number, tree, "has kind 0x\(String(kind, radix: 16)), neither a branch nor a leaf page")
        }
        guard isBranch == (level < depth) else {
            throw damaged(number, tree, "is a \(isBranch ? "branch" : "leaf") page at level \(level) of a tree \(depth) levels deep")
        }
        guard lower >= Self.header, lower <= upper, upper <= pageSize, (lower - Self.header) % 2 == 0 else {
            throw damaged(number, tree, "has its free space at \(lower) ... \(upper)")
        }
        let count = (lower - Self.header) / 2
        guard count > 0 || level == 1 else { throw damaged(number, tree, "holds no entry") }
        for index in 0..<count {
            let at = Int(Self.u16(page, Self.header + 2 * index))
            guard at >= upper, at + Self.node <= pageSize else {
                throw damaged(number, tree, "puts entry \(index) at \(at), outside its entries (\(upper) ... \(pageSize))")
            }
            let lo = UInt64(Self.u16(page, at)), hi = UInt64(Self.u16(page, at + 2))
            let nodeFlags = Self.u16(page, at + 4), keySize = Int(Self.u16(page, at + 6))
            let data = at + Self.node + keySize
            guard data <= pageSize else { throw damaged(number, tree, "has a key of entry \(index) that runs past the page") }
            if isBranch {
                let child = lo | hi << 16 | UInt64(nodeFlags) << 32
                try walkPage(child, tree: tree, flags: dbFlags, isFree: isFree, isMain: isMain, level: level + 1, depth: depth)
                continue
            }
            let size = Int(lo | hi << 16)
            guard nodeFlags & ~(Self.bigData | Self.subData | Self.dupData) == 0 else {
                throw damaged(number, tree, "has entry \(index) with flags 0x\(String(nodeFlags, radix: 16))")
            }
            if nodeFlags & Self.dupData != 0, dbFlags & Self.dupSort == 0 {
                throw damaged(number, tree, "has entry \(index) marked as duplicates in a database without them")
            }
            var value: [UInt8]?
            if nodeFlags & Self.bigData != 0 {
                guard data + 8 <= pageSize else { throw damaged(number, tree, "has entry \(index) whose overflow page number runs past the page") }
                let first = Self.u64(page, data)
                guard first >= 2, first < pageCount else {
                    throw damaged(number, tree, "has entry \(index) on overflow page \(first), outside the file's \(pageCount) pages")
                }
                guard first < filePages else { throw incomplete(first, tree) }
                guard seen.insert(first).inserted else { throw damaged(first, tree, "is reached twice") }
                let head = try readPage(first, count: Self.header)
                let pages = UInt64(Self.u32(head, 12))
                guard Self.u64(head, 0) == first, Self.u16(head, 10) & Self.overflow != 0, pages >= 1,
                      first + pages <= pageCount, UInt64(Self.header + size) <= pages * UInt64(pageSize) else {
                    throw damaged(first, tree, "is not an overflow run of the \(size) bytes its entry names")
                }
                if first + pages > filePages { throw incomplete(filePages, tree) }
                for extra in 1..<pages { seen.insert(first + extra) }
                if isFree {
                    // The whole list only when the file is short (its pages beyond the end are checked).
                    value = try locks.readData(at: Int(first) * pageSize + Self.header, count: filePages < pageCount ? size : min(size, 8))
                }
            } else {
                guard size <= pageSize - data else {
                    throw damaged(number, tree, "has a value of \(size) bytes in entry \(index), past the end of the page")
                }
                if isFree { value = Array(page[data..<(data + size)]) }
            }
            if isFree, let value {
                // A free-list entry: an ID list, its length first, then that many page numbers.
                guard size % 8 == 0, size >= 8, value.count >= 8, (Self.u64(value, 0) &+ 1) &* 8 == UInt64(size) else {
                    throw damaged(number, tree, "has a free-page list of \(size) bytes that does not hold the count it starts with")
                }
                if value.count == size {
                    for slot in 1..<(size / 8) {
                        let free = Self.u64(value, 8 * slot)
                        if free >= pageCount {
                            throw damaged(number, tree, "lists page \(free) as free, outside the file's \(pageCount) pages")
                        }
                        if free >= filePages { freeBeyondFile.insert(free) }
                    }
                }
            }
            if isMain, nodeFlags & Self.subData != 0, nodeFlags & Self.bigData == 0 {
                guard size == Self.dbSize else { throw damaged(number, tree, "has a database record of \(size) bytes, not 48") }
                let name = String(decoding: page[(at + Self.node)..<(at + Self.node + keySize)], as: UTF8.self)
                try walkDatabase(Array(page[data..<(data + size)]), name: "database \(name)", isFree: false, isMain: false)
            }
        }
    }
}
