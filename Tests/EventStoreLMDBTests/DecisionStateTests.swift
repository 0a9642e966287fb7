import Foundation
import Projections
import ReadingEvents
import Testing
import TestSupport
@testable import EventStoreLMDB

/// The persisted decision state: the small record beside each book view that commands are decided
/// on. It must always equal `BookState` folded from the book's stored events in canonical order
/// (the rules of one type, `BookState.apply`), whatever order the events arrived in.
@Suite struct DecisionStateTests {
    typealias F = Facade

    /// Every book's decision record, read alone from its table, next to the fold of its stream.
    static func expectRecordsAreTheFoldOfTheirStreams(_ store: ReadingStore, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        var books = 0
        for reader in try store.readers() {
            for view in try store.withViews({ try $0.bookViews(reader: reader) }) {
                let record = try store.log.environment.read { txn in try store.decisionState(reader: reader, book: view.book, txn) }
                let stream = try store.auditTrail(reader: reader, book: view.book).sorted(by: ReadingProjector.canonicallyBefore)
                #expect(record == BookState(envelopes: stream), "book \(view.book)", sourceLocation: sourceLocation)
                #expect(record == view.decision, sourceLocation: sourceLocation)
                // The view's copies of the decision state's fields.
                #expect(view.status == record.status && view.goal == record.goal && view.isFinished == record.isFinished
                        && view.readThrough == record.readThrough && view.inLibrary == record.isInLibrary
                        && view.rating == record.rating && view.liked == record.isLiked, sourceLocation: sourceLocation)
                books += 1
            }
        }
        return books
    }

    @Test func everyDecisionRecordOfADemoHistoryIsTheFoldOfItsStream() throws {
        let dir = TempDirectory()
        let store = try ReadingStore.open(at: dir.url)
        try F.appendInChunks(store, F.history(readers: 3, days: 240, seed: 0xDEC1DE))
        let books = try Self.expectRecordsAreTheFoldOfTheirStreams(store)
        #expect(books > 10)
        // A rebuild writes the same records.
        let before = try store.viewDigest()
        #expect(try store.rebuild().digest == before)
        _ = try Self.expectRecordsAreTheFoldOfTheirStreams(store)
    }

    @Test func commandsAfterAMergeAreDecidedOnTheMergedState() throws {
        let dir = TempDirectory()
        let devices = try Devices(dir)
        let (a, b) = (devices.a, devices.b)
        try devices.run(a, .addBook(Devices.metadata, status: .reading), "2025-03-01T09:00:00+09:00")
        try devices.sync()
        // Offline: A reads to 120 and finishes; B reads to 80 and collects a sentence.
        try devices.run(a, .recordPages(position: 120), "2025-03-02T21:00:00+09:00")
        try devices.run(a, .finishBook(on: F.day("2025-03-02")), "2025-03-02T22:00:00+09:00")
        let sentence = SentenceID()
        try devices.run(b, .recordPages(position: 80), "2025-03-02T20:00:00+09:00")
        try devices.run(b, .collectSentence(sentence, text: "바람이 분다", page: 80), "2025-03-02T20:30:00+09:00")
        try devices.sync()
        try devices.expectConverged()
        // B now decides on the merged record: the book is finished (A's finish) and the sentence
        // collected on B is known on A.
        for store in [a, b] {
            #expect(throws: ValidationError.self) {
                try store.execute(.recordPages(position: 150), book: devices.book, context: F.context(devices.reader, "2025-03-03T09:00:00+09:00"))
            }
            #expect(throws: ValidationError.self) {
                try store.execute(.finishBook(on: F.day("2025-03-03")), book: devices.book, context: F.context(devices.reader, "2025-03-03T09:00:00+09:00"))
            }
            #expect(throws: ValidationError.self) {
                try store.execute(.collectSentence(sentence, text: "again", page: 1), book: devices.book,
                                  context: F.context(devices.reader, "2025-03-03T09:00:00+09:00"))
            }
        }
        try devices.run(a, .startReadThrough, "2025-03-04T09:00:00+09:00")
        try devices.sync()
        try devices.run(b, .recordPages(position: 10), "2025-03-05T09:00:00+09:00")
        #expect(try devices.view(b)?.decision.readThrough == 2)
        #expect(try Self.expectRecordsAreTheFoldOfTheirStreams(a) == 1)
        #expect(try Self.expectRecordsAreTheFoldOfTheirStreams(b) == 1)
    }

    @Test func aLateFinishRefoldsTheDecisionRecordToo() throws {
        let dir = TempDirectory()
        let devices = try Devices(dir)
        let (a, b) = (devices.a, devices.b)
        try devices.run(a, .addBook(Devices.metadata, status: .reading), "2025-03-01T09:00:00+09:00")
        try devices.run(a, .setGoal(startDate: F.day("2025-03-01"), targetDate: F.day("2025-03-31"), theme: nil), "2025-03-01T09:01:00+09:00")
        try devices.sync()
        // A finishes early in canonical order; B keeps recording later, without having seen it.
        try devices.run(a, .finishBook(on: F.day("2025-03-02")), "2025-03-02T09:00:00+09:00")
        try devices.run(b, .recordPages(position: 40), "2025-03-03T09:00:00+09:00")
        #expect(try devices.view(b)?.decision.isFinished == false)
        try devices.sync()
        // The finish sorts before B's page record: B refolded the book, and its record says finished,
        // with the goal the finish ended kept for an undo.
        let record = try #require(try devices.view(b)?.decision)
        #expect(record.isFinished && record.goal == nil && record.goalEndedByFinish != nil)
        try devices.run(b, .undoFinish, "2025-03-04T09:00:00+09:00")
        #expect(try devices.view(b)?.decision.goal?.targetDate == F.day("2025-03-31"))
        try devices.sync()
        try devices.expectConverged()
        _ = try Self.expectRecordsAreTheFoldOfTheirStreams(a)
        _ = try Self.expectRecordsAreTheFoldOfTheirStreams(b)
    }

    @Test func aDecisionRecordThatDoesNotDecodeIsACorruptViewNotACrash() throws {
        let dir = TempDirectory()
        let store = try ReadingStore.open(at: dir.url)
        let reader = ReaderID(), book = BookID()
        try store.execute(.addBook(BookMetadata(title: "T", pageCount: 100), status: .reading), book: book,
                          context: F.context(reader, "2025-03-01T09:00:00+09:00"))
        try store.log.environment.write { txn in
            let tables = store.generations[try store.activeGeneration(txn)]
            try tables[.decisions].put(ReaderBookKey.encode((reader, book)), [ViewRecordCodec.decisionFormat, 7, 7], txn)
        }
        #expect {
            try store.execute(.recordPages(position: 10), book: book, context: F.context(reader, "2025-03-01T10:00:00+09:00"))
        } throws: { error in
            guard case EventStoreError.corruptView(let detail) = error else { return false }
            return detail.contains("BookState")
        }
        #expect(try store.log.lastPosition() == 1, "nothing was appended")
    }
}
