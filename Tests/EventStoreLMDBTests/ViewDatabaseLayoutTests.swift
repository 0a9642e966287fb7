import DemoHistory
import Foundation
import LMDB
import Projections
import ReadingEvents
import TestSupport
import Testing
@testable import EventStoreLMDB

/// Issue 37: the views of a generation are one LMDB database (views version 8), each table a
/// range of its keys (``ViewKeyLayout``), so that a single-event commit writes one B-tree path with
/// the reader's records side by side instead of one in each of fourteen databases
/// (`Scripts/commit-pages.sh`: 38.75 pages a commit before, 24 after).
@Suite struct ViewDatabaseLayoutTests {
    typealias F = Facade

    /// Every stored record of every reader is where the layout puts it: the reader's records, key
    /// for key and value for value, are exactly that reader's views encoded table by table and
    /// merged into the database's order (what a rebuild appends), and every key names its table.
    @Test func everyReadersRecordsAreItsTablesMergedInTheDatabasesOrder() throws {
        try withTempDirectory { dir in
            let history = F.history(readers: 5, days: 200, seed: 0x5EED_3708)
            let store = try ReadingStore.open(at: dir.child("store"))
            _ = try F.appendInChunks(store, history, chunk: 700)
            try store.log.environment.read { txn in
                let tables = store.generations[try store.activeGeneration(txn)]
                let views = LMDBViewStore(txn: txn, tables: tables)
                var stored: [ReaderID: [ReaderRecords.Record]] = [:]
                var order: [ReaderID] = []
                try txn.forEachRaw(tables.database, from: nil, direction: .forward, prefix: nil) { key, value in
                    #expect(ViewKeyLayout.table(of: key) != nil, "a key of no table: \(Array(key))")
                    let reader = try #require(ReaderID(bytes: key.prefix(16)))
                    if order.last != reader { order.append(reader) }
                    stored[reader, default: []].append((Array(key), Array(value)))
                    return true
                }
                #expect(order == Set(history.map(\.reader)).sorted(), "each reader's records are one range, in reader order")
                #expect(try views.readers() == order)
                var tablesSeen = Set<ViewTable>()
                for reader in order {
                    let expected = ViewDatabases.databaseRecords(ViewDatabases.records(of: try ViewDigest.copy(of: reader, in: views)))
                    let records = stored[reader] ?? []
                    #expect(records.map(\.key) == expected.map(\.key))
                    #expect(records.map(\.value) == expected.map(\.value))
                    for (key, _) in records {
                        let table = try #require(key.withUnsafeBytes { ViewKeyLayout.table(of: $0) })
                        tablesSeen.insert(table)
                        let logical = try #require(key.withUnsafeBytes { ViewKeyLayout.logical($0, of: table) })
                        #expect(ViewKeyLayout.key(table, logical: logical) == key)
                    }
                }
                #expect(tablesSeen.isSuperset(of: [.books, .decisions, .bookEntries, .bookSessions, .days, .bookDays, .months, .buckets, .runs, .readers, .years]))
            }
        }
    }

    /// A store whose views are of the former layout (views version 7: a database a table and
    /// generation) is rebuilt once at its first writable open: the former databases are deleted
    /// with their records, and the views are those of a fresh fold.
    @Test func theFormerTablesAreDeletedAndTheViewsRebuiltOnceAtOpen() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let history = F.history(readers: 3, days: 120, seed: 0x5EED_3709)
            let digest: String
            do {
                let store = try ReadingStore.open(at: url)
                _ = try F.appendInChunks(store, history, chunk: 500)
                digest = try store.viewDigest()
                // The former layout: each table in a database of its own (here: the current records
                // under the tables' own keys), the generations' databases empty, views version 7.
                let environment = store.log.environment
                let active = try environment.read { try store.activeGeneration($0) }
                var former: [(String, [([UInt8], [UInt8])])] = []
                try environment.read { txn in
                    for table in ViewTable.allCases {
                        var records: [([UInt8], [UInt8])] = []
                        try store.generations[active][table].forEach(txn) { key, value in
                            records.append((key, value))
                            return true
                        }
                        former.append((ViewDatabases.name(table, generation: active), records))
                    }
                }
                for (name, records) in former {
                    let database = try environment.openDatabase(named: name, keys: RawBytes.self, values: RawBytes.self, create: true)
                    try environment.write { txn in for (key, value) in records { try txn.put(database, key, value) } }
                }
                try environment.write { txn in
                    for generation in store.generations { try generation.removeAll(txn) }
                    try txn.put(store.viewMeta, "viewsVersion", [7])
                }
                let names = try environment.databaseNames()
                #expect(names.contains(ViewDatabases.name(.days, generation: active)))
            }
            let reopened = try ReadingStore.open(at: url)
            let names = try reopened.log.environment.databaseNames()
            #expect(names.filter { ViewDatabases.formerNames.contains($0) }.isEmpty, "\(names)")
            #expect(names.contains(ViewDatabases.name(generation: 0)) && names.contains(ViewDatabases.name(generation: 1)))
            #expect(try reopened.log.environment.read { txn in try txn.get(reopened.viewMeta, "viewsVersion") } == [ReadingStore.viewsVersion])
            #expect(try reopened.viewDigest() == digest)
            #expect(try reopened.viewDigest() == reopened.freshFoldDigest())
            #expect(try reopened.viewCheckpoint() == UInt64(history.count))
        }
    }

    @Test func viewsStampedWithAnotherSetOfTablesAreRebuiltOnceAtOpen() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let history = F.history(readers: 2, days: 30, seed: 0x5EED_3738)
            let expected: String
            let before: Int
            do {
                let store = try ReadingStore.open(at: url)
                try F.appendInChunks(store, history)
                expected = try store.viewDigest()
                #expect(try store.log.environment.read { try $0.get(store.viewMeta, "viewTables") } == ReadingStore.viewTablesStamp)
                // What a build without the years table left: its stamp without "years", no year records.
                let former = ViewTable.allCases.filter { $0 != .years }.map(\.rawValue).joined(separator: ",")
                try store.log.environment.write { txn in
                    try txn.put(store.viewMeta, "viewTables", Array(former.utf8))
                    for generation in store.generations { try generation[.years].removeAll(txn) }
                }
                #expect(try store.viewDigest() != expected)
                before = try store.log.environment.read { try store.activeGeneration($0) }
            }
            let after: Int
            do {
                let reopened = try ReadingStore.open(at: url)
                #expect(try reopened.viewDigest() == expected)
                #expect(try reopened.log.environment.read { try $0.get(reopened.viewMeta, "viewTables") } == ReadingStore.viewTablesStamp)
                after = try reopened.log.environment.read { try reopened.activeGeneration($0) }
                #expect(after != before, "the views are rebuilt into the other generation")
            }
            // Stamped again: the next open rebuilds nothing.
            let again = try ReadingStore.open(at: url)
            #expect(try again.log.environment.read { try again.activeGeneration($0) } == after)
            #expect(try again.viewDigest() == expected)
        }
    }

    @Test func viewsOfVersion8StampedBeforeTablesWereAreNotRebuilt() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let history = F.history(readers: 2, days: 20, seed: 0x5EED_3739)
            let expected: String
            let before: Int
            do {
                let store = try ReadingStore.open(at: url)
                try F.appendInChunks(store, history)
                expected = try store.viewDigest()
                // A store stamped by the build before table stamps: version 8, no `viewTables`.
                try store.log.environment.write { txn in
                    try txn.put(store.viewMeta, "viewsVersion", [8])
                    try txn.delete(store.viewMeta, "viewTables")
                }
                before = try store.log.environment.read { try store.activeGeneration($0) }
            }
            #expect(ReadingStore.viewsVersion == 8)
            let reopened = try ReadingStore.open(at: url)
            #expect(try reopened.log.environment.read { try reopened.activeGeneration($0) } == before)
            #expect(try reopened.viewDigest() == expected)
        }
    }
}
