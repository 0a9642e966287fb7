import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents
import ReadingImport
import Testing

/// `ReadingStore.importHistory(partsOf:batches:committed:)` and `appendRecorded(partsOf:...)`:
/// an import committed in parts (what bounds an import's memory) ends where one transaction ends,
/// every part is whole, and an import stopped between parts is finished by importing again.
@Suite struct ImportPartsTests {
    /// Every fixture the importers read, one history: Goodreads, StoryGraph and KOReader rows.
    static func history(in dir: ImportTempDirectory) throws -> [ImportResult] {
        try KOReaderFixture.standard(at: dir.child("k.sqlite3").path).close()
        let options = Fixtures.options()
        return [
            try HistoryImport.read(.goodreads, from: Fixtures.url("goodreads-31.csv"), options: options),
            try HistoryImport.read(.storygraph, from: Fixtures.url("storygraph.csv"), options: options),
            try HistoryImport.read(.koreader, from: dir.child("k.sqlite3"), options: options),
        ]
    }

    /// Each `skipping` a producer was called with.
    final class Calls { var skipping: [Int] = [] }

    /// A producer over `envelopes` in batches of `size`, from the envelope `skipping` on, noting
    /// each call in `calls`.
    static func batches(_ envelopes: [EventEnvelope], of size: Int, calls: Calls = Calls())
        -> (Int, ([EventEnvelope]) throws -> Void) throws -> Void {
        { skipping, body in
            calls.skipping.append(skipping)
            for start in stride(from: skipping, to: envelopes.count, by: size) {
                try body(Array(envelopes[start..<min(start + size, envelopes.count)]))
            }
        }
    }

    @Test(arguments: [1, 7, 64, 100_000])
    func partsEndWhereOneTransactionEnds(partSize: Int) throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let results = try Self.history(in: dir)
        let whole = try ReadingStore.open(at: dir.child("whole"))
        let parted = try ReadingStore.open(at: dir.child("parted"))
        for result in results {
            let one = try whole.importHistory(result.envelopes)
            var committed: [Int] = []
            let inParts = try parted.importHistory(partsOf: partSize, batches: { skipping, body in
                try result.forEachBatch(of: 3, skipping: skipping, body)
            }, committed: { committed.append($0) })
            #expect(inParts == one)
            // One commit a part, each after a whole number of batches of 3 and at least partSize
            // envelopes (the last may hold fewer), the last at the end of the input.
            #expect(committed.last == result.eventCount)
            #expect(committed == committed.sorted())
            for (before, after) in zip([0] + committed, committed).dropLast() {
                #expect(after - before >= partSize && after - before < partSize + 3)
            }
        }
        #expect(try parted.lastPosition() == whole.lastPosition())
        #expect(try parted.viewDigest() == whole.viewDigest())
        #expect(try parted.rebuild().digest == whole.viewDigest())
        // Importing again adds nothing, in parts too.
        for result in results {
            let again = try parted.importHistory(partsOf: partSize, batches: { skipping, body in
                try result.forEachBatch(of: 3, skipping: skipping, body)
            })
            #expect(again.added == 0)
            #expect(again.alreadyStored == result.eventCount)
        }
        #expect(try parted.viewDigest() == whole.viewDigest())
    }

    @Test func aRefusalInALaterPartKeepsTheEarlierPartsAndImportingAgainFinishes() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let envelopes = try Self.history(in: dir).flatMap { try $0.envelopes }
        try #require(envelopes.count > 40)
        // The same event ID as the first envelope with another fact: a conflict with the stored
        // copy, refused by the pipeline when its part comes.
        var forged = envelopes[0]
        forged.occurredAt = Timestamp(microseconds: forged.occurredAt.microseconds + 60_000_000)
        let bad = Array(envelopes[..<25]) + [forged] + Array(envelopes[25...])
        let clean = try ReadingStore.open(at: dir.child("clean"))
        try clean.appendRecorded(envelopes)

        let store = try ReadingStore.open(at: dir.child("store"))
        var committed: [Int] = []
        let calls = Calls()
        #expect(throws: RecordedEventRejection.self) {
            try store.appendRecorded(partsOf: 10, batches: Self.batches(bad, of: 5, calls: calls), committed: { committed.append($0) })
        }
        // Parts of 10: the first two were committed; the third, which holds the forged copy
        // (envelope 25), was not, nor anything after it.
        #expect(committed == [10, 20])
        #expect(calls.skipping == [0, 10, 20])
        #expect(try store.lastPosition() == 20)
        #expect(try store.events().map(\.eventID) == envelopes[..<20].map(\.eventID))
        #expect(try store.rebuild().digest == store.viewDigest())

        // The file corrected and imported again: the stored part is skipped, the rest is added,
        // and the store ends as one import of the whole would.
        let added = try store.appendRecorded(partsOf: 10, batches: Self.batches(envelopes, of: 5))
        #expect(added == envelopes.count - 20)
        #expect(try store.lastPosition() == clean.lastPosition())
        #expect(try store.viewDigest() == clean.viewDigest())
    }

    @Test func aPartSizeBelowOneIsATypedErrorAndWritesNothing() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let envelopes = try Self.history(in: dir).flatMap { try $0.envelopes }
        let store = try ReadingStore.open(at: dir.child("store"))
        let calls = Calls()
        for size in [0, -1] {
            let error = #expect(throws: EventStoreError.self) {
                try store.appendRecorded(partsOf: size, batches: Self.batches(envelopes, of: 4, calls: calls))
            }
            #expect("\(error.map { "\($0)" } ?? "")".contains("partSize"))
            #expect(throws: EventStoreError.self) {
                try store.importHistory(partsOf: size, batches: Self.batches(envelopes, of: 4, calls: calls))
            }
        }
        #expect(calls.skipping.isEmpty)
        #expect(try store.lastPosition() == 0)
    }

    @Test func aRecordedBatchInPartsEqualsOneTransaction() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let envelopes = try Self.history(in: dir).flatMap { try $0.envelopes }
        let whole = try ReadingStore.open(at: dir.child("whole"))
        let parted = try ReadingStore.open(at: dir.child("parted"))
        let one = try whole.appendRecorded(envelopes)
        var parts = 0
        let inParts = try parted.appendRecorded(partsOf: 16, batches: Self.batches(envelopes, of: 4), committed: { _ in parts += 1 })
        #expect(inParts == one)
        #expect(parts == (envelopes.count + 15) / 16)
        #expect(try parted.viewDigest() == whole.viewDigest())
        #expect(try parted.events().map(\.eventID) == whole.events().map(\.eventID))
    }
}
