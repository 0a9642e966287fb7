import Foundation
import LMDB
import Testing
import TestSupport

/// `WriteTransaction.releaseMappedPages()`: a parted import hands the pages of `data.mdb` it read
/// back to the kernel between batches. The map is shared and read-only, so nothing it shows may
/// change: values read before, inside the same transaction after, and in later transactions are
/// the same bytes, and the pages it mapped stop counting in the process's resident memory.
@Suite struct ReleaseMappedPagesTests {
    /// The file-backed resident memory of this process (`RssFile`, KiB), where /proc has it.
    static func residentFileKiB() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("RssFile:") }) else { return nil }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
    }

    @Test func valuesReadAfterTheReleaseAreTheSameBytes() throws {
        try withTempDirectory { dir in
            try FileManager.default.createDirectory(at: dir.url, withIntermediateDirectories: true)
            let env = try LMDBEnvironment(directory: dir.url, options: LMDBEnvironmentOptions())
            let db = try env.openDatabase(named: "kv", keys: UTF8String.self, values: UTF8String.self)
            // 64 MiB of values, committed: later transactions read them through the map.
            let values = (0..<4_096).map { i in String(repeating: String(UnicodeScalar(UInt8(97 + i % 26))), count: 16_384) + "\(i)" }
            try env.write { txn in
                for (i, value) in values.enumerated() { try txn.put(db, String(format: "k%05d", i), value) }
            }
            func readAll(_ txn: ReadTransaction) throws -> Bool {
                try values.indices.allSatisfy { try txn.get(db, String(format: "k%05d", $0)) == values[$0] }
            }
            try env.write { txn in
                #expect(try readAll(txn))
                let mapped = Self.residentFileKiB()
                txn.releaseMappedPages()
                let released = Self.residentFileKiB()
                if let mapped, let released {
                    // Reading 64 MiB through the map made them resident; released, they are not.
                    #expect(released + 32 * 1024 < mapped, "RssFile \(mapped) KiB before the release, \(released) KiB after")
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
}
