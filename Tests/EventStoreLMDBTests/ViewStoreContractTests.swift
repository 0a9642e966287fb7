import DemoHistory
import Foundation
import Projections
import ReadingEvents
import TestSupport
import Testing
@testable import EventStoreLMDB

/// The `ViewStore` contract, run against every implementation (the in-memory store, the write-back
/// cache, the type-erasing wrapper, the LMDB store, and the one-reader store of rebuilds, filled per reader): what is stored is read back
/// identically (point reads and range reads, every record kind), and what is deleted (a zero
/// total, an inactive goal, an empty year, a removed run) is gone from both.
@Suite struct ViewStoreContractTests {
    /// The implementations under test.
    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case inMemory, cachingOverInMemory, anyOverInMemory, lmdb, singleReader
        var testDescription: String { rawValue }
    }

    /// Realistic records of every kind: a small seeded demo history folded in memory.
    static let source: InMemoryViewStore = {
        var views = InMemoryViewStore()
        let projector = ReadingProjector()
        for envelope in DemoHistory.generate(.init(readers: 2, days: 60)) {
            try! projector.apply(envelope, to: &views)
        }
        return views
    }()

    /// The source holds every record kind, so the contract below checks each of them.
    @Test func theSourceHoldsEveryRecordKind() throws {
        let contents = try Contents(of: Self.source)
        #expect(contents.readers.count == 2)
        for reader in contents.readers {
            #expect(reader.readerView != nil)
            #expect(!reader.books.isEmpty)
            #expect(reader.bookDays.contains { !$0.days.isEmpty })
            #expect(!reader.days.isEmpty)
            #expect(!reader.months.isEmpty)
            #expect(reader.buckets != BucketTotals())
            #expect(!reader.runs.isEmpty)
            #expect(!reader.years.isEmpty)
        }
        #expect(contents.readers.contains { !$0.goals.isEmpty })
    }

    @Test(arguments: Kind.allCases)
    func storesReadsBackAndDeletesEveryRecordKind(_ kind: Kind) throws {
        let expectedFull = try Contents(of: Self.source)
        var expectedEmptied = expectedFull
        for index in expectedEmptied.readers.indices { expectedEmptied.readers[index].removeDeletableRecords() }
        #expect(expectedEmptied != expectedFull)

        /// Fill, check, delete, check: for stores that write through at once.
        func cycle(_ views: inout some ViewStore) throws {
            try Self.fill(&views)
            try Self.checkPoints(views)
            #expect(try Contents(of: views) == expectedFull)
            try Self.deleteDeletable(&views)
            try Self.checkDeleted(views)
            #expect(try Contents(of: views) == expectedEmptied)
        }
        switch kind {
        case .inMemory:
            var views = InMemoryViewStore()
            try cycle(&views)
        case .anyOverInMemory:
            var views = AnyViewStore(InMemoryViewStore())
            try cycle(&views)
        case .cachingOverInMemory:
            var views = CachingViewStore(base: InMemoryViewStore())
            try Self.fill(&views)
            try Self.checkPoints(views)          // served from the cache before the flush
            try views.flush()
            try Self.checkPoints(views)
            #expect(try Contents(of: views) == expectedFull)
            #expect(try Contents(of: views.base) == expectedFull)
            try Self.deleteDeletable(&views)
            try views.flush()
            try Self.checkDeleted(views)
            #expect(try Contents(of: views) == expectedEmptied)
            #expect(try Contents(of: views.base) == expectedEmptied)
        case .singleReader:
            // One store per reader: each holds exactly that reader's part of the contents.
            for reader in try Self.source.readers() {
                var views = SingleReaderViewStore(reader: reader)
                try Self.fill(&views, only: reader)
                try Self.checkPoints(views, only: reader)
                #expect(try Contents(of: views).readers == expectedFull.readers.filter { $0.id == reader })
                try Self.deleteDeletable(&views, only: reader)
                try Self.checkDeleted(views, only: reader)
                #expect(try Contents(of: views).readers == expectedEmptied.readers.filter { $0.id == reader })
                // A write for another reader is refused and changes nothing.
                let before = try Contents(of: views)
                #expect(throws: SingleReaderViewStore.OtherReader.self) {
                    try views.putBucketTotals(reader: ReaderID(), BucketTotals())
                }
                #expect(try Contents(of: views) == before)
            }
        case .lmdb:
            try withTempDirectory { dir in
                let store = try ReadingStore.open(at: dir.child("store"))
                let tables = store.generations[1]
                // Each phase commits its writes, then reads them in a new transaction.
                func phase(_ change: (inout LMDBViewStore) throws -> Void, _ check: (LMDBViewStore) throws -> Void) throws {
                    try store.log.environment.write { txn in
                        var views = LMDBViewStore(txn: txn, tables: tables)
                        try change(&views)
                    }
                    try store.log.environment.read { txn in try check(LMDBViewStore(txn: txn, tables: tables)) }
                }
                try phase({ try Self.fill(&$0) }) { views in
                    try Self.checkPoints(views)
                    #expect(try Contents(of: views) == expectedFull)
                }
                try phase({ try Self.deleteDeletable(&$0) }) { views in
                    try Self.checkDeleted(views)
                    #expect(try Contents(of: views) == expectedEmptied)
                }
            }
        }
    }

    /// A book view written again with its detail arrays shortened, shifted, changed and grown
    /// reads back exactly as written last (the LMDB store keeps the details in chunks of 32 and
    /// rewrites only the chunks that differ, so stale and shifted chunks must go).
    @Test(arguments: Kind.allCases)
    func aBookViewRewrittenWithOtherDetailsReadsBackAsWritten(_ kind: Kind) throws {
        let reader = try #require(try Self.source.readers().first)
        let original = try #require(try Self.source.bookViews(reader: reader).max { $0.entries.count < $1.entries.count })
        #expect(original.entries.count > 3)
        var changed = original
        changed.entries.removeFirst()                       // every later entry shifts down
        if !changed.entries.isEmpty { changed.entries[changed.entries.count / 2].credited += 7 }
        changed.sessions = Array(changed.sessions.dropLast())
        changed.memos = []
        var note = try #require(try Self.source.bookViews(reader: reader).lazy.flatMap { $0.sentences + $0.memos }.first)
        note.id = UUIDBox(SentenceID()); note.text = "새 문장"
        changed.sentences.append(note)
        changed.lastActivity = Timestamp(microseconds: original.lastActivity.microseconds + 1)
        func roundTrip(_ views: inout some ViewStore) throws {
            try views.putBookView(original)
            try views.putBookView(changed)
        }
        switch kind {
        case .inMemory:
            var views = InMemoryViewStore()
            try roundTrip(&views)
            #expect(try views.bookView(reader: reader, book: original.book) == changed)
        case .cachingOverInMemory:
            var views = CachingViewStore(base: InMemoryViewStore())
            try roundTrip(&views)
            try views.flush()
            #expect(try views.base.bookView(reader: reader, book: original.book) == changed)
        case .anyOverInMemory:
            var views = AnyViewStore(InMemoryViewStore())
            try roundTrip(&views)
            #expect(try views.bookView(reader: reader, book: original.book) == changed)
        case .singleReader:
            var views = SingleReaderViewStore(reader: reader)
            try roundTrip(&views)
            #expect(try views.bookView(reader: reader, book: original.book) == changed)
        case .lmdb:
            try withTempDirectory { dir in
                let store = try ReadingStore.open(at: dir.child("store"))
                let tables = store.generations[1]
                // In two transactions, so the second compares against committed records.
                try store.log.environment.write { txn in
                    var views = LMDBViewStore(txn: txn, tables: tables)
                    try views.putBookView(original)
                }
                // The second write goes the way of a flush: told what was read, it writes only the
                // details that differ (and deletes those past the new ends).
                try store.log.environment.write { txn in
                    var views = LMDBViewStore(txn: txn, tables: tables)
                    let previous = try views.bookView(reader: reader, book: original.book)
                    #expect(previous == original)
                    try views.putBookView(changed, replacing: previous)
                }
                try store.log.environment.read { txn throws -> Void in
                    #expect(try LMDBViewStore(txn: txn, tables: tables).bookView(reader: reader, book: original.book) == changed)
                    func count(_ table: ViewTable) throws -> Int { try tables[table].count(txn) }
                    func chunks<T>(_ details: [T]) -> Int { ViewRecordCodec.chunked(details).count }
                    #expect(try count(.bookEntries) == chunks(changed.entries))
                    #expect(try count(.bookSessions) == chunks(changed.sessions))
                    #expect(try count(.bookSentences) == chunks(changed.sentences))
                    #expect(try count(.bookMemos) == 0)
                }
                // And back, without `previous` (every detail compared with its stored bytes).
                try store.log.environment.write { txn in
                    var views = LMDBViewStore(txn: txn, tables: tables)
                    try views.putBookView(original)
                }
                try store.log.environment.read { txn throws -> Void in
                    #expect(try LMDBViewStore(txn: txn, tables: tables).bookView(reader: reader, book: original.book) == original)
                }
            }
        }
    }

    /// Writes every record of the source through the protocol.
    static func fill(_ views: inout some ViewStore, only: ReaderID? = nil) throws {
        for reader in try source.readers() where only.map({ $0 == reader }) ?? true {
            if let view = try source.readerView(reader: reader) { try views.putReaderView(reader: reader, view) }
            for book in try source.bookViews(reader: reader) {
                try views.putBookView(book)
                for (day, total) in try source.bookDayTotals(reader: reader, book: book.book, in: ViewDigest.allDays) {
                    try views.putBookDayTotal(reader: reader, book: book.book, day: day, total)
                }
            }
            for (day, total) in try source.dayTotals(reader: reader, in: ViewDigest.allDays) {
                try views.putDayTotal(reader: reader, day: day, total)
            }
            for (month, total) in try source.monthTotals(reader: reader, in: ViewDigest.allMonths) {
                try views.putMonthTotal(reader: reader, month: month, total)
            }
            try views.putBucketTotals(reader: reader, try source.bucketTotals(reader: reader))
            for run in try source.streakRuns(reader: reader) { try views.putStreakRun(reader: reader, run) }
            for book in try source.goalBooks(reader: reader) { try views.setGoalBook(reader: reader, book: book, active: true) }
            for year in try source.yearViews(reader: reader) { try views.putYearView(reader: reader, year) }
        }
    }

    /// Every point read gives the source's record.
    static func checkPoints(_ views: some ViewStore, only: ReaderID? = nil) throws {
        for reader in try source.readers() where only.map({ $0 == reader }) ?? true {
            #expect(try views.readerView(reader: reader) == source.readerView(reader: reader))
            for book in try source.bookViews(reader: reader) {
                #expect(try views.bookView(reader: reader, book: book.book) == book)
                for (day, total) in try source.bookDayTotals(reader: reader, book: book.book, in: ViewDigest.allDays) {
                    #expect(try views.bookDayTotal(reader: reader, book: book.book, day: day) == total)
                }
            }
            for (day, total) in try source.dayTotals(reader: reader, in: ViewDigest.allDays) {
                #expect(try views.dayTotal(reader: reader, day: day) == total)
            }
            for (month, total) in try source.monthTotals(reader: reader, in: ViewDigest.allMonths) {
                #expect(try views.monthTotal(reader: reader, month: month) == total)
            }
            #expect(try views.bucketTotals(reader: reader) == source.bucketTotals(reader: reader))
            for run in try source.streakRuns(reader: reader) {
                #expect(try views.streakRun(reader: reader, startingOn: run.start) == run)
                #expect(try views.streakRun(reader: reader, startingOnOrBefore: run.start) == run)
            }
            for year in try source.yearViews(reader: reader) {
                #expect(try views.yearView(reader: reader, year: year.year) == year)
            }
        }
    }

    /// Deletes what the protocol can delete: totals set to zero, runs removed, goals made
    /// inactive, years emptied. Book views and reader views have no delete.
    static func deleteDeletable(_ views: inout some ViewStore, only: ReaderID? = nil) throws {
        for reader in try source.readers() where only.map({ $0 == reader }) ?? true {
            for book in try source.bookViews(reader: reader) {
                for (day, _) in try source.bookDayTotals(reader: reader, book: book.book, in: ViewDigest.allDays) {
                    try views.putBookDayTotal(reader: reader, book: book.book, day: day, DayTotal())
                }
            }
            for (day, _) in try source.dayTotals(reader: reader, in: ViewDigest.allDays) {
                try views.putDayTotal(reader: reader, day: day, DayTotal())
            }
            for (month, _) in try source.monthTotals(reader: reader, in: ViewDigest.allMonths) {
                try views.putMonthTotal(reader: reader, month: month, MonthTotal())
            }
            for run in try source.streakRuns(reader: reader) { try views.removeStreakRun(reader: reader, start: run.start) }
            for book in try source.goalBooks(reader: reader) { try views.setGoalBook(reader: reader, book: book, active: false) }
            for year in try source.yearViews(reader: reader) { try views.putYearView(reader: reader, YearView(year: year.year)) }
        }
    }

    /// Every deleted record reads as absent (zero totals, no run, no year).
    static func checkDeleted(_ views: some ViewStore, only: ReaderID? = nil) throws {
        for reader in try source.readers() where only.map({ $0 == reader }) ?? true {
            for book in try source.bookViews(reader: reader) {
                for (day, _) in try source.bookDayTotals(reader: reader, book: book.book, in: ViewDigest.allDays) {
                    #expect(try views.bookDayTotal(reader: reader, book: book.book, day: day) == DayTotal())
                }
            }
            for (day, _) in try source.dayTotals(reader: reader, in: ViewDigest.allDays) {
                #expect(try views.dayTotal(reader: reader, day: day) == DayTotal())
            }
            for (month, _) in try source.monthTotals(reader: reader, in: ViewDigest.allMonths) {
                #expect(try views.monthTotal(reader: reader, month: month) == MonthTotal())
            }
            for run in try source.streakRuns(reader: reader) {
                #expect(try views.streakRun(reader: reader, startingOn: run.start) == nil)
            }
            for year in try source.yearViews(reader: reader) {
                #expect(try views.yearView(reader: reader, year: year.year) == nil)
            }
        }
    }
}

/// Everything a view store holds, read through the protocol's range reads in canonical order.
struct Contents: Hashable {
    struct Dated<Key: Hashable, Value: Hashable>: Hashable {
        var key: Key
        var value: Value
    }
    struct BookDays: Hashable {
        var book: BookID
        var days: [Dated<LocalDate, DayTotal>]
    }
    struct Reader: Hashable {
        var id: ReaderID
        var readerView: ReaderView?
        var books: [BookView]
        var bookDays: [BookDays]
        var days: [Dated<LocalDate, DayTotal>]
        var months: [Dated<YearMonth, MonthTotal>]
        var buckets: BucketTotals
        var runs: [StreakRun]
        var goals: [BookID]
        var years: [YearView]

        /// What ``ViewStoreContractTests/deleteDeletable(_:)`` leaves.
        mutating func removeDeletableRecords() {
            for index in bookDays.indices { bookDays[index].days = [] }
            days = []
            months = []
            runs = []
            goals = []
            years = []
        }
    }

    var readers: [Reader]

    init(of views: some ViewStore) throws {
        readers = try views.readers().map { id in
            let books = try views.bookViews(reader: id)
            return Reader(
                id: id,
                readerView: try views.readerView(reader: id),
                books: books,
                bookDays: try books.map { book in
                    BookDays(book: book.book, days: try views.bookDayTotals(reader: id, book: book.book, in: ViewDigest.allDays)
                        .map { Dated(key: $0.0, value: $0.1) })
                },
                days: try views.dayTotals(reader: id, in: ViewDigest.allDays).map { Dated(key: $0.0, value: $0.1) },
                months: try views.monthTotals(reader: id, in: ViewDigest.allMonths).map { Dated(key: $0.0, value: $0.1) },
                buckets: try views.bucketTotals(reader: id),
                runs: try views.streakRuns(reader: id),
                goals: try views.goalBooks(reader: id),
                years: try views.yearViews(reader: id))
        }
    }
}
