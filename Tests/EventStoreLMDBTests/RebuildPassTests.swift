import DemoHistory
import Foundation
import LMDB
import Projections
import ReadingEvents
import TestSupport
import Testing
@testable import EventStoreLMDB

/// The rebuild's pass: one reader at a time through the reader index, folded in memory and
/// appended in key order. Its views must be the views every other fold gives (incremental,
/// fresh in memory), with several readers, with events appended while it runs, and with a
/// reader index that lost entries.
@Suite struct RebuildPassTests {
    typealias F = Facade
    static let metadata = BookMetadata(title: "Rebuild", authors: "R", pageCount: 400)

    /// Several readers, several write transactions: rebuild digest = incremental = fresh fold,
    /// for a full rebuild and for one view; and a second rebuild (into the other generation)
    /// gives the same again.
    @Test func aMultiReaderRebuildGivesTheIncrementalViews() throws {
        try withTempDirectory { dir in
            let history = F.history(readers: 9, days: 900, seed: 0x5EED_0009)
            #expect(history.count > ReadingStore.rebuildChunkSize, "the pass needs several transactions: \(history.count) events")
            let readers = Set(history.map(\.reader))
            #expect(readers.count == 9)
            let store = try ReadingStore.open(at: dir.child("store"))
            #expect(try F.appendInChunks(store, history, chunk: 1_500) == history.count)
            let incremental = try store.viewDigest()
            #expect(try store.freshFoldDigest() == incremental)
            var calls: [(UInt64, UInt64)] = []
            let report = try store.rebuild { calls.append(($0, $1)) }
            // The report's digest is hashed during the pass; reading the new views back agrees.
            #expect(report.digest == incremental)
            #expect(try store.viewDigest() == report.digest)
            #expect(report.events == UInt64(history.count))
            #expect(calls.count >= 2, "\(calls)")
            #expect(try Set(store.readers()) == readers)
            #expect(try store.rebuild(view: "bookDays").digest == incremental)
            #expect(try store.rebuild().digest == incremental)
        }
    }

    /// The pass folds on one thread and writes on another: with many readers of seeded random
    /// histories (long ones over several write transactions and queue batches, and short ones a
    /// batch holds several of), the rebuilt views are those of a fresh fold in memory and of the
    /// incremental fold, and so is the digest the rebuild hashed from the records it appended.
    @Test func aParallelRebuildOfManyReadersGivesTheFreshFold() throws {
        try withTempDirectory { dir in
            let long = F.history(readers: 14, days: 700, seed: 0x5EED_0028)
            let short = F.history(readers: 30, days: 6, seed: 0x5EED_0128)
            let history = long + short
            let readers = Set(history.map(\.reader))
            #expect(readers.count == 44)
            #expect(long.count > ReadingStore.rebuildChunkSize, "several write transactions: \(long.count) events")
            #expect(short.count / 30 < ReadingStore.rebuildBatchEvents, "a batch holds several short readers")
            let store = try ReadingStore.open(at: dir.child("store"))
            try F.appendInChunks(store, history, chunk: 1_000)
            let incremental = try store.viewDigest()
            let fresh = try store.freshFoldDigest()
            #expect(fresh == incremental)
            var calls: [(UInt64, UInt64)] = []
            let report = try store.rebuild { calls.append(($0, $1)) }
            #expect(report.digest == fresh)
            #expect(try store.viewDigest() == fresh)
            #expect(report.events == UInt64(history.count))
            #expect(calls.count >= 2, "\(calls)")
            #expect(calls.map(\.0) == calls.map(\.0).sorted() && calls.last?.0 == UInt64(history.count))
            #expect(try Set(store.readers()) == readers)
        }
    }

    /// A rebuild that fails in the middle, after write transactions of the pass committed, leaves
    /// the active views as they were, whether the fold thread fails (a damaged reader index: an
    /// entry of the last reader names another reader's event) or the writer does (the shadow
    /// generation holds a key every reader's records sort before, so an append is out of order;
    /// the fold thread is then waiting on a full queue and must stop); once the cause is gone a
    /// rebuild gives the views again.
    @Test func aRebuildThatFailsInTheMiddleLeavesTheActiveViews() throws {
        try withTempDirectory { dir in
            let history = F.history(readers: 14, days: 700, seed: 0x5EED_0028)
            let store = try ReadingStore.open(at: dir.child("store"))
            try F.appendInChunks(store, history)
            let digest = try store.viewDigest()
            let active = try store.log.environment.read { try store.activeGeneration($0) }
            let readers = Set(history.map(\.reader)).sorted()
            let (lastReader, other) = (readers.last!, readers.first!)
            let otherPosition = try #require(store.auditTrail(reader: other).first?.position)

            // The fold thread fails on the last reader.
            try store.log.environment.write { txn in try txn.put(store.readerIndex, (lastReader, otherPosition), []) }
            var calls = 0
            let foldError = #expect(throws: EventStoreError.self) { try store.rebuild { _, _ in calls += 1 } }
            #expect(foldError.map { "\($0)" }?.contains("an event of reader \(other)") == true, "\(String(describing: foldError))")
            #expect(calls >= 1, "the failure came after a committed write transaction of the pass")
            #expect(try store.log.environment.read { try store.activeGeneration($0) } == active)
            #expect(try store.viewDigest() == digest)
            #expect(try store.log.environment.write { txn in try txn.delete(store.readerIndex, (lastReader, otherPosition)) })

            // The writer fails after its first transaction.
            calls = 0
            let writerError = #expect(throws: LMDBError.self) {
                try store.rebuild { _, _ in
                    calls += 1
                    guard calls == 1 else { return }
                    do {
                        try store.log.environment.write { txn in
                            let shadow = store.generations[1 - (try store.activeGeneration(txn))]
                            try shadow[.days].put([UInt8](repeating: 0xFF, count: 20), [0], txn)
                        }
                    } catch {
                        Issue.record("writing into the shadow generation failed: \(error)")
                    }
                }
            }
            #expect(writerError?.kind == .appendOutOfOrder)
            #expect(calls == 1)
            #expect(try store.log.environment.read { try store.activeGeneration($0) } == active)
            #expect(try store.viewDigest() == digest)
            let report = try store.rebuild()
            #expect(report.digest == digest)
            #expect(try store.viewDigest() == digest)
        }
    }

    /// Events other writers append while the pass runs (a command of a reader already written, a
    /// new reader, an event appended through the raw log without a fold) are folded by the final
    /// commit, once, and indexed.
    @Test func eventsAppendedDuringThePassAreFoldedOnce() throws {
        try withTempDirectory { dir in
            let history = F.history(readers: 9, days: 900, seed: 0x5EED_0009)
            #expect(history.count > ReadingStore.rebuildChunkSize)
            let store = try ReadingStore.open(at: dir.child("store"))
            try F.appendInChunks(store, history)
            let first = history[0].reader
            let book = BookID()
            let newcomer = ReaderID()
            // After every demo event (the raw event's provisional origin is its recording instant).
            var appended = false
            let report = try store.rebuild { _, _ in
                guard !appended else { return }
                appended = true
                do {
                    try store.execute(.addBook(Self.metadata, status: .reading), book: book, context: F.context(first, "2031-01-02T08:00:00+09:00"))
                    try store.execute(.addBook(Self.metadata, status: .reading), book: book, context: F.context(newcomer, "2031-01-02T09:00:00+09:00"))
                    let raw = try F.context(newcomer, "2031-01-02T22:00:00+09:00").envelopes(for: [.pagesRead(PagesRead(book: book, position: 42))])
                    try store.log.append(NewEvent(eventID: raw[0].eventID.uuid, payload: BinaryEventCodec.encode(raw[0])), to: raw[0].stream.description)
                } catch {
                    Issue.record("appending during the rebuild failed: \(error)")
                }
            }
            #expect(appended)
            let total = UInt64(history.count + 3)
            #expect(report.events == total)
            #expect(try store.viewCheckpoint() == total)
            #expect(try store.freshFoldDigest() == report.digest)
            #expect(try store.withViews { try $0.bookView(reader: newcomer, book: book)?.position } == 42)
            #expect(try store.withViews { try $0.bookView(reader: first, book: book) } != nil)
            #expect(try store.auditTrail(reader: newcomer).map(\.position) == [total - 1, total])
            // The next command folds only its own event.
            try store.execute(.recordPages(position: 50), book: book, context: F.context(newcomer, "2031-01-03T22:00:00+09:00"))
            #expect(try store.withViews { try $0.bookView(reader: newcomer, book: book)?.position } == 50)
            #expect(try store.freshFoldDigest() == store.viewDigest())
        }
    }

    /// A reader index that lost entries (damage) is completed from the log before the pass, so
    /// the rebuild still folds every event and the audit trail is whole again.
    @Test func aReaderIndexThatLostEntriesIsCompletedFromTheLog() throws {
        try withTempDirectory { dir in
            let history = F.history(readers: 3, days: 120, seed: 0x5EED_0003)
            let store = try ReadingStore.open(at: dir.child("store"))
            try F.appendInChunks(store, history)
            let digest = try store.viewDigest()
            let reader = history[0].reader
            let trail = try store.auditTrail(reader: reader).map(\.position)
            var random = SplitMix64(seed: 0x10DE)
            let lost = Set((0..<20).map { _ in trail[Int(random.next() % UInt64(trail.count))] })
            let deleted = try store.log.environment.write { txn in
                try lost.filter { try txn.delete(store.readerIndex, (reader, $0)) }.count
            }
            #expect(deleted == lost.count)
            #expect(try store.auditTrail(reader: reader).count == trail.count - lost.count)
            let report = try store.rebuild()
            #expect(report.digest == digest)
            #expect(report.events == UInt64(history.count))
            #expect(try store.auditTrail(reader: reader).map(\.position) == trail)
        }
    }

    /// One reader's events folded into a ``SingleReaderViewStore`` hold exactly that reader's
    /// records of the all-readers in-memory fold; writes for another reader are refused.
    @Test func aSingleReaderStoreHoldsWhatTheAllReadersFoldHoldsForItsReader() throws {
        let history = DemoHistory.generate(.init(readers: 3, days: 90, seed: 0x5EED_0001))
        let projector = ReadingProjector()
        var all = InMemoryViewStore()
        for envelope in history { try projector.apply(envelope, to: &all) }
        let everyone = try Contents(of: all)
        for reader in Set(history.map(\.reader)) {
            var one = SingleReaderViewStore(reader: reader)
            for envelope in history where envelope.reader == reader { try projector.apply(envelope, to: &one) }
            let contents = try Contents(of: one)
            #expect(contents.readers.count == 1)
            #expect(contents.readers.first == everyone.readers.first { $0.id == reader })
            let other = ReaderID()
            #expect(try one.readerView(reader: other) == nil)
            #expect(try one.bookViews(reader: other).isEmpty)
            let error = #expect(throws: SingleReaderViewStore.OtherReader.self) {
                try one.putDayTotal(reader: other, day: F.day("2025-01-01"), DayTotal(pages: 1, seconds: 0))
            }
            #expect(error?.description.hasPrefix("reader: ") == true)
            #expect(try one.dayTotal(reader: reader, day: F.day("2025-01-01")) == all.dayTotal(reader: reader, day: F.day("2025-01-01")))
        }
    }
}
