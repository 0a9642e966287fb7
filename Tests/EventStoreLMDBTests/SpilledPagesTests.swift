import Foundation
import LMDB
import TestSupport
import Testing

/// A write transaction with more dirty pages than LMDB keeps in memory (2^17 pages, 512 MiB with
/// 4 KiB pages) spills some to the data file, past the file's size when the transaction began.
/// Reading them back in the same transaction is reading the transaction's own writes, not damage:
/// the bounds check must not report "a stored value lies outside the data file's pages". Before,
/// it did, so an import of about 1 GB (1,000,000 KOReader stays) failed.
///
/// It writes about 700 MB to the temporary directory for a few seconds: it runs when that file
/// system has 4 GiB free, or when `LMDB_SPILL_TEST=1` (`Scripts/stress.sh long` sets it).
@Suite struct SpilledPagesTests {
    static var enabled: Bool {
        if ProcessInfo.processInfo.environment["LMDB_SPILL_TEST"] == "1" { return true }
        let free = (try? FileManager.default.attributesOfFileSystem(forPath: NSTemporaryDirectory())[.systemFreeSize] as? NSNumber)?.int64Value
        return (free ?? 0) >= 4 << 30
    }

    @Test(.enabled(if: enabled, "needs 4 GiB free in the temporary directory (or LMDB_SPILL_TEST=1)"))
    func valuesOfSpilledPagesReadBackInTheirTransaction() throws {
        try withTempDirectory { dir in
            try FileManager.default.createDirectory(at: dir.child("env"), withIntermediateDirectories: true)
            let environment = try LMDBEnvironment(directory: dir.child("env"), options: LMDBEnvironmentOptions(mapSize: 2 << 30))
            let table = try environment.openDatabase(named: "big", keys: BigEndianUInt64.self, values: RawBytes.self)
            // 340,000 values of 1,800 bytes, two to a 4 KiB leaf page: about 170,000 dirty pages,
            // over LMDB's dirty room of 2^17 - 1, so pages written first are spilled to the file.
            let count: UInt64 = 340_000
            func value(_ key: UInt64) -> [UInt8] { [UInt8](repeating: UInt8(truncatingIfNeeded: key), count: 1_800) }
            try environment.write { txn in
                for key in 0..<count { try txn.put(table, key, value(key)) }
                for key in stride(from: 0, to: count, by: 997) {
                    #expect(try txn.get(table, key) == value(key), "value \(key)")
                }
            }
            let last = try environment.read { txn in try txn.get(table, count - 1) }
            #expect(last == value(count - 1))
        }
    }
}
