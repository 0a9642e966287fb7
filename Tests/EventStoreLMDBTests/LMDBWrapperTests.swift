import Foundation
import TestSupport
import ReadingEvents
import Testing
@testable import EventStoreLMDB
import LMDB

struct TestFailure: Error, Equatable { let tag: Int }

@Suite struct LMDBWrapperTests {
    func withEnvironment(_ options: LMDBEnvironmentOptions = LMDBEnvironmentOptions(),
                         _ body: (LMDBEnvironment) throws -> Void) throws {
        try withTempDirectory { dir in
            try FileManager.default.createDirectory(at: dir.url, withIntermediateDirectories: true)
            let env = try LMDBEnvironment(directory: dir.url, options: options)
            try body(env)
        }
    }

    @Test func writeCommitsOnReturn() throws {
        try withEnvironment { env in
            let db = try env.openDatabase(named: "kv", keys: UTF8String.self, values: UTF8String.self)
            try env.write { try $0.put(db, "a", "1") }
            #expect(try env.read { try $0.get(db, "a") } == "1")
        }
    }

    @Test func writeAbortsOnThrowAndTheFirstErrorWins() throws {
        try withEnvironment { env in
            let db = try env.openDatabase(named: "kv", keys: UTF8String.self, values: UTF8String.self)
            #expect(throws: TestFailure(tag: 1)) {
                try env.write { txn in
                    try txn.put(db, "a", "1")
                    throw TestFailure(tag: 1)
                }
            }
            #expect(try env.read { try $0.get(db, "a") } == nil)
            // The first error (the put's) is what surfaces, not a later commit/abort failure.
            let error = #expect(throws: LMDBError.self) {
                try env.write { txn in
                    try txn.put(db, "b", "2")
                    try txn.put(db, "", "empty keys are invalid")
                }
            }
            #expect(error?.kind == .badValueSize)
            #expect(error?.operation == "mdb_put(kv)")
            #expect(try env.read { try $0.get(db, "b") } == nil)
        }
    }

    @Test func readSeesAConsistentSnapshotAndTransactionsDieWithTheirClosure() throws {
        try withEnvironment { env in
            let db = try env.openDatabase(named: "kv", keys: BigEndianUInt64.self, values: BigEndianUInt64.self)
            try env.write { try $0.put(db, 1, 10) }
            var escaped: ReadTransaction?
            try env.read { escaped = $0 }
            let error = #expect(throws: LMDBError.self) { try escaped?.get(db, 1) }
            #expect(error?.message.contains("after its closure") == true)
        }
    }

    @Test func bigEndianKeysSortNumerically() throws {
        var rng = SplitMix64(seed: 7)
        let numbers = (0..<500).map { _ in UInt64.random(in: 0...UInt64.max, using: &rng) } + [0, 1, 255, 256, 65535, 65536, .max]
        try withEnvironment { env in
            let db = try env.openDatabase(named: "n", keys: BigEndianUInt64.self, values: RawBytes.self)
            try env.write { txn in for n in numbers { try txn.put(db, n, []) } }
            var seen: [UInt64] = []
            try env.read { txn in try txn.forEach(db) { key, _ in seen.append(key); return true } }
            #expect(seen == Set(numbers).sorted())
            #expect(try env.read { try $0.count(db) } == Set(numbers).count)
        }
        #expect(BigEndianUInt64.encode(0x0102_0304_0506_0708) == [1, 2, 3, 4, 5, 6, 7, 8])
    }

    @Test func cursorsWalkForwardBackwardFromAKeyAndWithinAPrefix() throws {
        try withEnvironment { env in
            let db = try env.openDatabase(named: "c", keys: UTF8String.self, values: BigEndianUInt64.self)
            let keys = ["a", "b1", "b2", "b3", "c", "d"]
            try env.write { txn in for (i, key) in keys.enumerated() { try txn.put(db, key, UInt64(i)) } }
            func walk(from: String? = nil, _ direction: LMDBDirection, prefix: String? = nil) throws -> [String] {
                try env.read { txn in
                    var out: [String] = []
                    try txn.forEach(db, from: from, direction: direction, prefix: prefix.map { Array($0.utf8) }) { key, _ in
                        out.append(key)
                        return true
                    }
                    return out
                }
            }
            #expect(try walk(.forward) == keys)
            #expect(try walk(.backward) == keys.reversed())
            #expect(try walk(from: "b2", .forward) == ["b2", "b3", "c", "d"])
            #expect(try walk(from: "b25", .forward) == ["b3", "c", "d"])
            #expect(try walk(from: "b25", .backward) == ["b2", "b1", "a"])
            #expect(try walk(from: "zz", .backward) == keys.reversed())
            #expect(try walk(.forward, prefix: "b") == ["b1", "b2", "b3"])
            #expect(try walk(.backward, prefix: "b") == ["b3", "b2", "b1"])
            #expect(try walk(from: "z", .backward, prefix: "b") == ["b3", "b2", "b1"])
            #expect(try walk(from: "a", .forward, prefix: "b") == ["b1", "b2", "b3"])
            // Stopping early.
            let firstTwo = try env.read { txn in
                var out: [String] = []
                try txn.forEach(db) { key, _ in out.append(key); return out.count < 2 }
                return out
            }
            #expect(firstTwo == ["a", "b1"])
        }
    }

    @Test func putFlagsDeleteAndCount() throws {
        try withEnvironment { env in
            let db = try env.openDatabase(named: "f", keys: BigEndianUInt64.self, values: UTF8String.self)
            try env.write { txn in
                try txn.put(db, 1, "one", flags: .append)
                try txn.put(db, 2, "two", flags: .append)
                let notAppend = #expect(throws: LMDBError.self) { try txn.put(db, 1, "again", flags: .append) }
                #expect(notAppend?.kind == .appendOutOfOrder)
                let exists = #expect(throws: LMDBError.self) { try txn.put(db, 2, "again", flags: .noOverwrite) }
                #expect(exists?.kind == .keyExists)
                #expect(try txn.delete(db, 1))
                #expect(try !txn.delete(db, 1))
            }
            #expect(try env.read { try $0.count(db) } == 1)
            #expect(try env.read { try $0.get(db, 2) } == "two")
        }
    }

    /// `MDB_APPEND` with a key that is not greater than the last one: a typed error naming the
    /// database and the rule, and nothing written (one put or a whole bulk batch).
    @Test func appendOfAnOutOfOrderKeyFailsWithATypedErrorAndWritesNothing() throws {
        try withEnvironment { env in
            let db = try env.openDatabase(named: "sorted", keys: BigEndianUInt64.self, values: UTF8String.self)
            var random = SplitMix64(seed: 0xA11E)
            let stored = (0..<50).map { _ in random.next() % 1_000_000 + 1_000 }.sorted()
            let keys = Array(Set(stored)).sorted()
            try env.write { txn in try txn.append(db, sorted: keys.map { ($0, "v\($0)") }) }
            #expect(try env.read { try $0.count(db) } == keys.count)
            let before = try env.read { txn in
                var all: [UInt64: String] = [:]
                try txn.forEach(db) { key, value in all[key] = value; return true }
                return all
            }
            try env.write { txn in
                // One put: a key inside the stored range, and the last key itself.
                for key in [keys[keys.count / 2] + 1, keys.last!] {
                    let error = #expect(throws: LMDBError.self) { try txn.put(db, key, "late", flags: .append) }
                    #expect(error?.kind == .appendOutOfOrder)
                    #expect(error?.operation == "mdb_put(sorted, MDB_APPEND)")
                    #expect(error?.message.contains("is not greater than the last key of the database") == true, "\(String(describing: error))")
                }
                // A batch whose first key is not after the stored ones, and one out of order inside:
                // checked before anything is written.
                let top = keys.last!
                for batch in [[(top, "same")], [(top + 1, "a"), (top + 3, "b"), (top + 2, "c")], [(top + 1, "a"), (top + 1, "b")]] {
                    let error = #expect(throws: LMDBError.self) { try txn.append(db, sorted: batch) }
                    #expect(error?.kind == .appendOutOfOrder, "\(batch)")
                    #expect(error?.description.contains("MDB_APPEND needs strictly increasing keys") == true)
                }
            }
            let after = try env.read { txn in
                var all: [UInt64: String] = [:]
                try txn.forEach(db) { key, value in all[key] = value; return true }
                return all
            }
            #expect(after == before)
            // In order, it appends.
            try env.write { txn in try txn.append(db, sorted: [(keys.last! + 1, "next"), (keys.last! + 2, "after")]) }
            #expect(try env.read { try $0.count(db) } == keys.count + 2)
        }
    }

    @Test func errorsNameTheOperationCodeAndMessage() throws {
        let error = LMDBError(operation: "mdb_put(events)", code: -30792)
        #expect(error.kind == .mapFull)
        #expect(error.description == "mdb_put(events): MDB_MAP_FULL: Environment mapsize limit reached (-30792)")
        try withEnvironment { env in
            let missing = #expect(throws: LMDBError.self) {
                _ = try env.openDatabase(named: "nope", keys: RawBytes.self, values: RawBytes.self, create: false)
            }
            #expect(missing?.kind == .notFound)
            #expect(missing?.description.hasPrefix("mdb_dbi_open(nope): MDB_NOTFOUND") == true)
        }
    }

    @Test func mapFullGrowsTheMapInvisibly() throws {
        try withEnvironment(LMDBEnvironmentOptions(mapSize: 256 << 10)) { env in
            let db = try env.openDatabase(named: "big", keys: BigEndianUInt64.self, values: RawBytes.self)
            let value = [UInt8](repeating: 0xAB, count: 4096)
            var runs = 0
            try env.write { txn in
                runs += 1
                for key in 0..<1024 { try txn.put(db, UInt64(key), value) }  // ~4 MiB
            }
            #expect(runs > 1)  // the closure re-ran after growth
            #expect(env.mapSize >= 4 << 20)
            #expect(try env.read { try $0.count(db) } == 1024)
        }
    }

    @Test func aPathOpensOncePerProcess() throws {
        try withTempDirectory { dir in
            try FileManager.default.createDirectory(at: dir.url, withIntermediateDirectories: true)
            do {
                let env = try LMDBEnvironment(directory: dir.url)
                let error = #expect(throws: LMDBError.self) { _ = try LMDBEnvironment(directory: dir.url) }
                #expect(error?.kind == .alreadyOpen)
                withExtendedLifetime(env) {}
            }
            // Released: it opens again.
            _ = try LMDBEnvironment(directory: dir.url)
        }
    }

    @Test func readOnlyEnvironmentsRefuseWrites() throws {
        try withTempDirectory { dir in
            try FileManager.default.createDirectory(at: dir.url, withIntermediateDirectories: true)
            do {
                let env = try LMDBEnvironment(directory: dir.url)
                _ = try env.openDatabase(named: "x", keys: RawBytes.self, values: RawBytes.self)
            }
            let env = try LMDBEnvironment(directory: dir.url, options: LMDBEnvironmentOptions(readOnly: true))
            let error = #expect(throws: LMDBError.self) { try env.write { _ in } }
            #expect(error?.kind == .system)
            _ = try env.openDatabase(named: "x", keys: RawBytes.self, values: RawBytes.self)
        }
    }

    @Test func crc32cCheckVector() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        #expect(CRC32C.checksum(AnySequence(Array("123456789".utf8))) == 0xE306_9283)
    }

    /// Eight bytes at a time gives the byte-at-a-time CRC for every length and alignment (the
    /// reference below is the textbook bit loop, written apart from the tables).
    @Test func crc32cSlicingEqualsTheBitLoop() {
        func reference(_ bytes: some Sequence<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return crc ^ 0xFFFF_FFFF
        }
        var rng = SplitMix64(seed: 0xC3C3_2C00)
        let bytes = (0..<600).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        for start in 0..<9 {
            for length in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 250, 511] where start + length <= bytes.count {
                let slice = bytes[start..<(start + length)]
                let expected = reference(slice)
                #expect(CRC32C.checksum(slice) == expected, "start \(start), length \(length)")
                #expect(bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[start..<(start + length)])) } == expected)
                #expect(CRC32C.checksum(AnySequence(slice)) == expected)
            }
        }
    }
}
