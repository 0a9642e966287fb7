import Foundation
import LMDB
import TestSupport
import Testing

/// LMDB counts in a commit's last page the pages a transaction took and gave back before it
/// committed: a dirty overflow run freed while the transaction holds reclaimed free pages goes
/// back to the free list unwritten. When those were the highest-numbered pages, `data.mdb` ends
/// before the last page its meta page names, although every page in use is in it. Before, the
/// open took that for a file cut short and refused the store for good ("damaged or incomplete"):
/// a JSON Lines import of 100,000 books (200,000 events) left 222 such pages (issue 36), and
/// every command on the store failed after the import said it had succeeded.
@Suite struct FreeTailTests {
    /// The value written and deleted in one transaction: 1 MiB, an overflow run of 257 pages.
    static let bigValue = [UInt8](repeating: 7, count: 1 << 20)
    static let runPages = (bigValue.count + 16 + 4095) / 4096

    /// Makes an environment in `url` with the sequence that leaves a free run at the end: 5,000
    /// small values deleted a transaction later (so later transactions reclaim free pages), one
    /// more commit (the pages of the transaction just before are not reclaimed), then one
    /// transaction that puts a small value and writes and deletes `bigValue`; closes it.
    static func writeFreeTail(in url: URL) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let environment = try LMDBEnvironment(directory: url)
        let table = try environment.openDatabase(named: "t", keys: BigEndianUInt64.self, values: RawBytes.self)
        try environment.write { txn in for key in 0..<UInt64(5_000) { try txn.put(table, key, [1, 2, 3]) } }
        try environment.write { txn in for key in 0..<UInt64(5_000) { _ = try txn.delete(table, key) } }
        try environment.write { txn in try txn.put(table, 1_000_000, [9]) }
        try environment.write { txn in
            try txn.put(table, 1_000_001, [8])
            try txn.put(table, 2_000_000, bigValue)
            _ = try txn.delete(table, 2_000_000)
        }
    }

    /// The offset of the newer of the two meta pages in `bytes` (txnid at 144, 64-bit layout).
    static func newerMeta(_ bytes: Data) -> Int { u64(bytes, 144) > u64(bytes, 4096 + 144) ? 0 : 4096 }
    static func u64(_ bytes: Data, _ at: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }

    /// The file's length and the length its newer meta page counts (last page at 136).
    static func sizes(_ url: URL) throws -> (file: Int, needed: Int) {
        let bytes = try Data(contentsOf: url.appendingPathComponent("data.mdb"))
        return (bytes.count, (Int(u64(bytes, newerMeta(bytes) + 136)) + 1) * 4096)
    }

    @Test func aCommitThatFreesItsLastPagesLeavesAFileThatOpens() throws {
        try withTempDirectory { dir in
            let url = dir.child("env")
            try Self.writeFreeTail(in: url)
            let (file, needed) = try Self.sizes(url)
            // Before: the file ended 257 pages early (LMDB never wrote the freed run).
            #expect(file >= needed, "data.mdb is \(file) bytes, its meta page counts \(needed)")
            for readOnly in [false, true] {
                let environment = try LMDBEnvironment(directory: url, options: LMDBEnvironmentOptions(readOnly: readOnly))
                let table = try environment.openDatabase(named: "t", keys: BigEndianUInt64.self, values: RawBytes.self)
                let values = try environment.read { txn in
                    try [txn.get(table, 1_000_000), txn.get(table, 1_000_001), txn.get(table, 2_000_000)]
                }
                #expect(values == [[9], [8], nil])
            }
        }
    }

    /// A store left short by an earlier build (or by a crash before the file's new length reached
    /// the disk) opens, read-only as well, and a writable open makes the file whole again; cut into
    /// a page in use, it is refused with one line.
    @Test func aFileEndingBeforeFreePagesOnlyOpensAndOneEndingBeforeAPageInUseIsRefused() throws {
        try withTempDirectory { dir in
            let url = dir.child("env")
            try Self.writeFreeTail(in: url)
            let (_, needed) = try Self.sizes(url)
            let data = url.appendingPathComponent("data.mdb")
            // What LMDB itself wrote: everything before the freed run.
            let written = needed - Self.runPages * 4096
            let original = try Data(contentsOf: data)
            try original.prefix(written).write(to: data)

            for readOnly in [true, false] {
                let environment = try LMDBEnvironment(directory: url, options: LMDBEnvironmentOptions(readOnly: readOnly))
                let table = try environment.openDatabase(named: "t", keys: BigEndianUInt64.self, values: RawBytes.self)
                #expect(try environment.read { txn in try txn.get(table, 1_000_001) } == [8])
                #expect(try Self.sizes(url).file == (readOnly ? written : needed), "read-only: \(readOnly)")
            }
            do {
                let environment = try LMDBEnvironment(directory: url)
                let table = try environment.openDatabase(named: "t", keys: BigEndianUInt64.self, values: RawBytes.self)
                try environment.write { txn in try txn.put(table, 3, [3]) }
                #expect(try environment.read { txn in try txn.get(table, 3) } == [3])
            }

            // Cut into the pages LMDB wrote, a page at a time: every cut that opens reads the same
            // values, and a cut that ends before a page in use is refused with one line.
            var refusedAt: Int?
            for pages in stride(from: written / 4096 - 1, through: 3, by: -1) {
                try original.prefix(pages * 4096).write(to: data)
                do {
                    let environment = try LMDBEnvironment(directory: url, options: LMDBEnvironmentOptions(readOnly: true))
                    let table = try environment.openDatabase(named: "t", keys: BigEndianUInt64.self, values: RawBytes.self)
                    #expect(try environment.read { txn in try txn.get(table, 1_000_001) } == [8], "cut at \(pages) pages")
                } catch let error as LMDBError where error.kind == .corrupted {
                    #expect(error.description.contains("damaged or incomplete"), "\(error)")
                    #expect(error.description.contains("in use"), "\(error)")
                    refusedAt = pages
                    break
                }
            }
            #expect(refusedAt != nil)
        }
    }

    /// A meta page whose last page damage raised counts pages that are neither in the file nor
    /// free: refused, as before the short-file walk, instead of opening and growing the file to
    /// the false length.
    @Test func aMetaPageCountingPagesThatAreNotFreeIsRefused() throws {
        try withTempDirectory { dir in
            let url = dir.child("env")
            try Self.writeFreeTail(in: url)
            let data = url.appendingPathComponent("data.mdb")
            var bytes = try Data(contentsOf: data)
            // The newer meta page's last page, 1,000 pages further.
            let meta = Self.newerMeta(bytes)
            let raised = Self.u64(bytes, meta + 136) + 1_000
            for byte in 0..<8 { bytes[meta + 136 + byte] = UInt8(truncatingIfNeeded: raised >> (8 * byte)) }
            try bytes.write(to: data)
            for readOnly in [true, false] {
                #expect {
                    _ = try LMDBEnvironment(directory: url, options: LMDBEnvironmentOptions(readOnly: readOnly))
                } throws: { error in
                    guard let lmdb = error as? LMDBError, lmdb.kind == .corrupted else { return false }
                    return lmdb.description.contains("damaged or incomplete") && lmdb.description.contains("are not free")
                }
            }
            #expect(try Data(contentsOf: data).count == bytes.count, "the file was not grown")
        }
    }
}
