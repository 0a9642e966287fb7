import Foundation
import LMDB
import Testing
import TestSupport

/// `WriteTransaction.releaseMappedPages()`: a parted import hands the pages of `data.mdb` it read
/// back to the kernel between batches. The map is shared and read-only, so nothing it shows may
/// change: values read before, inside the same transaction after, and in later transactions are
/// the same bytes, and the pages it mapped stop counting in the process's resident memory.
@Suite struct ReleaseMappedPagesTests {
    /// How much of `file` this process has mapped and resident (KiB: the `Rss` of its mappings in
    /// `/proc/self/smaps`), where /proc has it. Per file, so that tests running beside this one
    /// and mapping their own stores do not count.
    static func residentKiB(of file: URL) -> Int? {
        // Read to the end (a /proc file says it is empty, so a read by its size gets nothing).
        guard let handle = FileHandle(forReadingAtPath: "/proc/self/smaps"), let data = try? handle.readToEnd() else { return nil }
        let path = file.resolvingSymlinksInPath().path
        var total = 0, inFile = false
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), fields.count >= 5 {
                // A mapping's header: address range, permissions, offset, device, inode, path.
                inFile = fields.count >= 6 && fields[5...].joined(separator: " ") == path
            } else if inFile, fields.first == "Rss:", fields.count >= 2, let kib = Int(fields[1]) {
                total += kib
            }
        }
        return total
    }

    /// An environment holding 64 MiB of values (4,096 of 16 KiB under `k00000` ...), committed:
    /// later transactions read them through the map.
    func withStoredValues(_ body: (LMDBEnvironment, LMDBDatabase<UTF8String, UTF8String>, [String], _ dataFile: URL) throws -> Void) throws {
        try withTempDirectory { dir in
            try FileManager.default.createDirectory(at: dir.url, withIntermediateDirectories: true)
            let env = try LMDBEnvironment(directory: dir.url, options: LMDBEnvironmentOptions())
            let db = try env.openDatabase(named: "kv", keys: UTF8String.self, values: UTF8String.self)
            let values = (0..<4_096).map { i in String(repeating: String(UnicodeScalar(UInt8(97 + i % 26))), count: 16_384) + "\(i)" }
            try env.write { txn in
                for (i, value) in values.enumerated() { try txn.put(db, String(format: "k%05d", i), value) }
            }
            try body(env, db, values, dir.url.appendingPathComponent("data.mdb"))
        }
    }

    @Test func valuesReadAfterTheReleaseAreTheSameBytes() throws {
        try withStoredValues { env, db, values, dataFile in
            func readAll(_ txn: ReadTransaction) throws -> Bool {
                try values.indices.allSatisfy { try txn.get(db, String(format: "k%05d", $0)) == values[$0] }
            }
            try env.write { txn in
                #expect(try readAll(txn))
                let mapped = Self.residentKiB(of: dataFile)
                txn.releaseMappedPages()
                let released = Self.residentKiB(of: dataFile)
                if let mapped, let released {
                    // Reading 64 MiB through the map made them resident; released, they are not.
                    #expect(released + 32 * 1024 < mapped, "\(mapped) KiB of data.mdb resident before the release, \(released) KiB after")
                }
                // The same bytes, read again in the same transaction, also by a cursor that was
                // on a mapped page when the pages were released; and written over after.
                #expect(try readAll(txn))
                var walked = 0
                try txn.forEach(db) { key, value in
                    if walked == 2_000 { txn.releaseMappedPages() }
                    #expect(key == String(format: "k%05d", walked) && value == values[walked])
                    walked += 1
                    return true
                }
                #expect(walked == values.count)
                try txn.put(db, "k00000", "changed")
                txn.releaseMappedPages()
                #expect(try txn.get(db, "k00000") == "changed")
                #expect(try txn.get(db, "k04095") == values[4_095])
            }
            #expect(try env.read { txn in try txn.get(db, "k00000") } == "changed")
            #expect(try env.read { txn in try values.indices.dropFirst().allSatisfy { try txn.get(db, String(format: "k%05d", $0)) == values[$0] } })
        }
    }

    /// `releaseMappedPages(every:)`: a transaction that reads 64 MiB through the map keeps only
    /// the pages of its last accesses mapped (a parted import's look-ups all over a large store),
    /// and every value read, by `get` and by a cursor walk, is the stored one.
    @Test func releasingEveryFewAccessesKeepsLittleMapped() throws {
        try withStoredValues { env, db, values, dataFile in
            try env.write { txn in
                txn.releaseMappedPages()
                let before = Self.residentKiB(of: dataFile)
                txn.releaseMappedPages(every: 64)
                var peak = 0
                for i in values.indices {
                    #expect(try txn.get(db, String(format: "k%05d", i)) == values[i])
                    if i % 256 == 255, let now = Self.residentKiB(of: dataFile) { peak = max(peak, now) }
                }
                var walked = 0
                try txn.forEach(db) { key, value in
                    #expect(key == String(format: "k%05d", walked) && value == values[walked])
                    walked += 1
                    if walked % 256 == 0, let now = Self.residentKiB(of: dataFile) { peak = max(peak, now) }
                    return true
                }
                #expect(walked == values.count)
                if let before {
                    // 64 accesses of 16 KiB values (and the pages mapped around them): a few MiB,
                    // not the 64 MiB read.
                    #expect(peak < before + 16 * 1024, "\(before) KiB of data.mdb resident before, \(peak) KiB at the most while reading 64 MiB")
                }
            }
        }
    }
}
