import DemoHistory
import Foundation
import LMDB
import Projections
import ReadingEvents
import TestSupport
import Testing
@testable import EventStoreLMDB

/// Issue 37: the rebuild folds readers on several fold workers at once and one thread appends
/// them in reader-ID order. Whatever the number of jobs, the views (every table, byte for byte)
/// and the digest are those of a one-job rebuild, and a failure of any worker leaves the active
/// views as they were.
@Suite struct ParallelRebuildTests {
    typealias F = Facade

    /// Every record of every view table of the active generation, table by table, as stored.
    static func activeTables(_ store: ReadingStore) throws -> [String: [[UInt8]]] {
        try store.log.environment.read { txn in
            let active = try store.activeGeneration(txn)
            var tables: [String: [[UInt8]]] = [:]
            for table in ViewTable.allCases {
                var records: [[UInt8]] = []
                try store.generations[active][table].forEach(txn) { key, value in
                    records.append(key)
                    records.append(value)
                    return true
                }
                tables["\(table)"] = records
            }
            return tables
        }
    }

    /// The readers of the reader index, in its (reader-ID) order.
    static func indexedReaders(_ store: ReadingStore) throws -> [ReaderID] {
        try store.log.environment.read { txn in
            var readers: [ReaderID] = []
            try txn.forEach(store.readerIndex) { key, _ in
                if readers.last != key.0 { readers.append(key.0) }
                return true
            }
            return readers
        }
    }

    /// Demo stores of three seeds with many readers (long histories over several write
    /// transactions, and short ones a read transaction folds many of): rebuilds with 1, 2, 4 and
    /// 7 jobs give the same digest as the incremental fold and the fresh fold in memory, and every
    /// view table is byte-identical to the one-job rebuild's; so is a one-view rebuild.
    @Test(arguments: [UInt64(0x5EED_3701), 0x5EED_3702, 0x5EED_3703])
    func everyNumberOfJobsGivesTheViewsOfOneJob(seed: UInt64) throws {
        try withTempDirectory { dir in
            let long = F.history(readers: 9, days: 900, seed: seed)
            let short = F.history(readers: 40, days: 20, seed: seed &+ 0x100)
            let history = long + short
            #expect(Set(history.map(\.reader)).count == 49)
            #expect(history.count > ReadingStore.rebuildChunkSize, "several write transactions: \(history.count) events")
            let store = try ReadingStore.open(at: dir.child("store"))
            try F.appendInChunks(store, history, chunk: 1_000)
            let incremental = try store.viewDigest()
            #expect(try store.freshFoldDigest() == incremental)

            let one = try store.rebuild(jobs: 1)
            #expect(one.digest == incremental)
            #expect(one.events == UInt64(history.count))
            let tables = try Self.activeTables(store)
            #expect(tables.count == ViewTable.allCases.count)
            #expect(tables.values.map(\.count).reduce(0, +) > 10_000, "the views hold records")
            for jobs in [2, 4, 7] {
                var calls: [UInt64] = []
                let report = try store.rebuild(jobs: jobs) { done, _ in calls.append(done) }
                #expect(report.digest == one.digest, "\(jobs) jobs")
                #expect(report.events == one.events, "\(jobs) jobs")
                #expect(calls == calls.sorted() && calls.last == UInt64(history.count) && calls.count >= 2, "\(jobs) jobs: \(calls)")
                #expect(try store.viewDigest() == one.digest, "\(jobs) jobs")
                let rebuilt = try Self.activeTables(store)
                for (name, records) in tables {
                    #expect(rebuilt[name] == records, "\(jobs) jobs: table \(name) differs from the one-job rebuild")
                }
            }
            #expect(try store.rebuild(view: "bookDays", jobs: 3).digest == incremental)
            #expect(try Self.activeTables(store) == tables)
        }
    }

    /// An event that no longer reads back (an edited record, its checksum left as it was) in a
    /// reader in the middle of the reader order: a rebuild with several jobs fails after write
    /// transactions of the pass committed, names that event as one job does, and leaves the
    /// active generation, every table and the digest as they were. With a second damaged event
    /// in a later reader the error is still the first one's in reader order, as with one job.
    @Test(arguments: [2, 4])
    func aWorkerThatFailsLeavesTheActiveViews(jobs: Int) throws {
        try withTempDirectory { dir in
            let history = F.history(readers: 12, days: 1_000, seed: 0x5EED_3710) + F.history(readers: 30, days: 15, seed: 0x5EED_3711)
            let store = try ReadingStore.open(at: dir.child("store"))
            try F.appendInChunks(store, history)
            let digest = try store.viewDigest()
            let tables = try Self.activeTables(store)
            let active = try store.log.environment.read { try store.activeGeneration($0) }
            let readers = try Self.indexedReaders(store)
            #expect(readers.count == 42)
            // A reader past the first write transactions, and a later one.
            var before = 0, index = 0
            while before <= ReadingStore.rebuildChunkSize, index < readers.count - 2 {
                before += try store.auditTrail(reader: readers[index]).count
                index += 1
            }
            #expect(before > ReadingStore.rebuildChunkSize && index < readers.count - 2, "\(before) events before reader \(index)")
            let first = try #require(store.auditTrail(reader: readers[index]).last?.position)
            let second = try #require(store.auditTrail(reader: readers[readers.count - 1]).first?.position)
            let raw = store.log.events
            for position in [second, first] {
                try store.log.environment.write { txn in
                    var bytes = try #require(try txn.get(raw, position))
                    bytes[bytes.count - 1] ^= 0x01
                    try txn.put(raw, position, bytes)
                }
            }
            func failure(_ jobs: Int) -> (error: String, calls: Int) {
                var calls = 0
                let error = #expect(throws: EventStoreError.self) { try store.rebuild(jobs: jobs) { _, _ in calls += 1 } }
                return (error.map { "\($0)" } ?? "none", calls)
            }
            let many = failure(jobs)
            #expect(many.error.contains("position \(first):"), "\(many.error)")
            #expect(many.calls >= 1, "the failure came after a committed write transaction of the pass")
            #expect(try store.log.environment.read { try store.activeGeneration($0) } == active)
            #expect(try store.viewDigest() == digest)
            #expect(try Self.activeTables(store) == tables)
            #expect(failure(1).error == many.error, "one job fails on the same event")
        }
    }

    /// `jobs` outside 1 ... 256 is refused, naming the field and the rule, and nothing is written.
    @Test(arguments: [0, -1, 257])
    func jobsOutsideTheRangeAreRefused(jobs: Int) throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            try F.appendInChunks(store, F.history(readers: 2, days: 10, seed: 0x5EED_3720))
            let digest = try store.viewDigest()
            let active = try store.log.environment.read { try store.activeGeneration($0) }
            let error = #expect(throws: EventStoreError.self) { try store.rebuild(jobs: jobs) }
            #expect(error == .invalidArgument(field: "jobs", detail: "\(jobs) fold workers; a rebuild runs 1 ... 256"))
            #expect(try store.log.environment.read { try store.activeGeneration($0) } == active)
            #expect(try store.viewDigest() == digest)
            #expect(ReadingStore.defaultRebuildJobs == min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 256))
        }
    }
}
