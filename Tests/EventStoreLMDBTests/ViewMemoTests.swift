import Foundation
import LMDB
import Projections
import ReadingEvents
import Testing
import TestSupport
@testable import EventStoreLMDB

/// The book-view memo (``ViewMemo``): decoded book views kept between a process's write
/// transactions. It may answer only while it is provably what the records hold: these tests break
/// that in every way the store allows (another process writing, a transaction aborted after its
/// fold, a rebuild, a commit that bypasses it) and check that the views stay the fold of the log.
@Suite struct ViewMemoTests {
    typealias F = Facade

    static let reader = ReaderID(UUID(uuidString: "00000000-0000-4000-8000-00000000C0DE")!)

    /// A book view of a small folded history, for the memo's own tests.
    static let folded: BookView = {
        var views = InMemoryViewStore()
        try! ReadingProjector(dayStartHour: 0).fold(F.history(readers: 1, days: 20, seed: 0x3E3), into: &views)
        return try! views.bookViews(reader: try! views.readers().first!).max { $0.entries.count < $1.entries.count }!
    }()

    /// The folded view as book `n`, with a title naming it.
    static func view(_ n: Int) -> BookView {
        var view = folded
        view.book = BookID(deterministicID(prefix: "memo-book", index: n))
        view.metadata.title = "book \(n)"
        return view
    }

    /// Every view the store's memo holds, next to the same view read from its records; returns
    /// how many book views it holds.
    static func expectMemoMatchesRecords(_ store: ReadingStore, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let held = store.viewMemo.contents
        try store.log.environment.read { txn in
            let records = try store.activeViews(txn)  // a read transaction: records only, no memo
            #expect(records.memo == nil, sourceLocation: sourceLocation)
            for view in held.books {
                #expect(try records.bookView(reader: view.reader, book: view.book) == view, "book \(view.book)", sourceLocation: sourceLocation)
            }
            for (reader, view) in held.readers {
                #expect(try records.readerView(reader: reader) == view, "reader \(reader)", sourceLocation: sourceLocation)
            }
        }
        // In a write transaction the memo answers the summary and the decision state too: the same
        // values as the records (a transaction that writes nothing leaves the memo current).
        try store.log.environment.write { txn in
            let withMemo = try store.activeViews(txn)
            let records = LMDBViewStore(txn: txn, tables: withMemo.tables)
            for view in held.books {
                #expect(withMemo.memo?.knowsBook(reader: view.reader, book: view.book) == true, sourceLocation: sourceLocation)
                #expect(try withMemo.bookSummary(reader: view.reader, book: view.book)
                        == records.bookSummary(reader: view.reader, book: view.book), sourceLocation: sourceLocation)
                #expect(try withMemo.decisionState(reader: view.reader, book: view.book)
                        == records.decisionState(reader: view.reader, book: view.book), sourceLocation: sourceLocation)
            }
        }
        return held.books.count
    }

    // MARK: The memo alone, over a real environment

    /// Runs `body` with an LMDB environment in a fresh directory (removed afterwards).
    static func withEnvironment(_ body: (LMDBEnvironment) throws -> Void) throws {
        let dir = try TempDirectory.created(prefix: "memo-tests")
        defer { dir.remove() }
        try body(try LMDBEnvironment(directory: dir.url))
    }

    @Test func aCommittedSessionIsAnsweredByTheNextTransactionOnly() throws {
        try Self.withEnvironment { env in
            let memo = ViewMemo()
            let (a, b) = (Self.view(1), Self.view(2))
            try env.write { txn in
                let session = memo.session(txn, generation: 0)
                #expect(session.bookView(reader: a.reader, book: a.book) == nil)
                session.note(a)
                #expect(session.bookView(reader: a.reader, book: a.book) == a)
                #expect(memo.session(txn, generation: 0) === session)  // one session per transaction
            }
            #expect(memo.contents.books == [a])
            // The next transaction sees it.
            try env.write { txn in
                #expect(memo.session(txn, generation: 0).bookView(reader: a.reader, book: a.book) == a)
                memo.session(txn, generation: 0).note(b)
            }
            #expect(Set(memo.contents.books) == [a, b])
            // A transaction that writes nothing commits no new transaction ID: the memo stays current.
            try env.write { _ in }
            try env.write { txn in
                #expect(memo.session(txn, generation: 0).bookView(reader: a.reader, book: a.book) == a)
            }
            // A commit that did not go through the memo (here: a put into another database, as
            // another process or a rebuild would commit) makes the next session find it stale.
            let other = try env.openDatabase(named: "other", keys: UTF8String.self, values: RawBytes.self)
            try env.write { txn in try txn.put(other, "key", [1]) }
            try env.write { txn in
                #expect(memo.session(txn, generation: 0).bookView(reader: a.reader, book: a.book) == nil)
            }
            #expect(memo.contents.books.isEmpty)
        }
    }

    @Test func anAbortedTransactionLeavesTheMemoAsItWas() throws {
        try Self.withEnvironment { env in
            let memo = ViewMemo()
            let (a, b) = (Self.view(1), Self.view(2))
            try env.write { txn in memo.session(txn, generation: 0).note(a) }
            struct Abort: Error {}
            var changed = a
            changed.metadata.title = "changed in an aborted transaction"
            #expect(throws: Abort.self) {
                try env.write { txn in
                    let session = memo.session(txn, generation: 0)
                    session.note(changed)
                    session.note(b)
                    throw Abort()
                }
            }
            // The aborted transaction committed nothing, so the memo is still current, and as it was.
            try env.write { txn in
                let session = memo.session(txn, generation: 0)
                #expect(session.bookView(reader: a.reader, book: a.book) == a)
                #expect(session.bookView(reader: b.reader, book: b.book) == nil)
            }
        }
    }

    @Test func anotherGenerationOrAnInvalidatedSessionEmptiesTheMemo() throws {
        try Self.withEnvironment { env in
            let memo = ViewMemo()
            let a = Self.view(1)
            try env.write { txn in memo.session(txn, generation: 0).note(a) }
            try env.write { txn in
                #expect(memo.session(txn, generation: 1).bookView(reader: a.reader, book: a.book) == nil)
            }
            #expect(memo.contents.books.isEmpty)
            try env.write { txn in memo.session(txn, generation: 1).note(a) }
            #expect(memo.contents.books == [a])
            try env.write { txn in
                let session = memo.session(txn, generation: 1)
                #expect(session.bookView(reader: a.reader, book: a.book) == a)
                session.invalidate()
                #expect(session.bookView(reader: a.reader, book: a.book) == nil)
                session.note(a)  // ignored once invalid
            }
            #expect(memo.contents.books.isEmpty)
            #expect(memo.contents.transaction == nil)
        }
    }

    @Test func beyondItsCapacityTheLeastRecentlyUsedViewsGo() throws {
        try Self.withEnvironment { env in
            let memo = ViewMemo(capacity: 8)
            let views = (0..<8).map(Self.view)
            // One transaction each, so the views are used in this order.
            for view in views { try env.write { txn in memo.session(txn, generation: 0).note(view) } }
            #expect(memo.contents.books.count == 8)
            // Use views 0 and 1 again, then add a ninth: down to six, the two used and the four newest.
            let ninth = Self.view(8)
            try env.write { txn in
                let session = memo.session(txn, generation: 0)
                for view in views[0..<2] { #expect(session.bookView(reader: view.reader, book: view.book) == view) }
            }
            try env.write { txn in memo.session(txn, generation: 0).note(ninth) }
            #expect(Set(memo.contents.books.map(\.metadata.title)) == Set(([0, 1, 5, 6, 7, 8]).map { "book \($0)" }))
        }
    }

    // MARK: The store

    @Test func aHistoryAppendedEventByEventFoldsFromTheMemoAndEqualsItsRecords() throws {
        let dir = TempDirectory()
        defer { dir.remove() }
        let store = try ReadingStore.open(at: dir.url)
        let history = F.history(readers: 2, days: 90, seed: 0x3E30)
        #expect(history.count > 300)
        var index = 0
        var chunk = 1
        var checks = 0
        var transactions = 0
        while index < history.count {
            try store.appendRecorded(Array(history[index..<min(history.count, index + chunk)]))
            index += chunk
            chunk = chunk % 5 + 1
            transactions += 1
            if transactions % 10 == 0, try Self.expectMemoMatchesRecords(store) > 0 { checks += 1 }
        }
        #expect(checks > 10)
        #expect(store.viewMemo.contents.readers.count == 2)
        #expect(try Self.expectMemoMatchesRecords(store) > 3)
        #expect(try store.viewDigest() == store.freshFoldDigest())
        _ = try DecisionStateTests.expectRecordsAreTheFoldOfTheirStreams(store)
    }

    @Test func aMergeFoldedInATransactionThatAbortsIsForgotten() throws {
        let dir = TempDirectory()
        defer { dir.remove() }
        let devices = try Devices(dir)
        let (a, b) = (devices.a, devices.b)
        try devices.run(a, .addBook(Devices.metadata, status: .reading), "2025-03-01T09:00:00+09:00")
        try devices.run(a, .recordPages(position: 50), "2025-03-01T21:00:00+09:00")
        try devices.sync()
        try devices.run(b, .recordPages(position: 100), "2025-03-02T21:00:00+09:00")
        let remote = try b.changes(since: try a.versionVector())
        #expect(remote.count == 1)
        #expect(a.viewMemo.contents.books.map(\.book) == [devices.book])
        // One batch: B's event (merged and folded first), then a local event the check rejects:
        // the transaction aborts after B's event was folded into the memo's session.
        let bad = try F.context(devices.reader, "2025-03-02T22:00:00+09:00")
            .envelopes(for: [.pagesRead(PagesRead(book: devices.book, position: 1_000))])
        #expect(throws: RecordedEventRejection.self) { try a.appendRecorded(remote + bad) }
        #expect(try devices.view(a)?.position == 50)
        // Deciding on the memo: 60 is forward of 50 (it would be backward of B's 100).
        try devices.run(a, .recordPages(position: 60), "2025-03-02T23:00:00+09:00")
        #expect(try devices.view(a)?.position == 60)
        #expect(try Self.expectMemoMatchesRecords(a) == 1)
        #expect(try a.viewDigest() == a.freshFoldDigest())
        try devices.sync()
        try devices.expectConverged()
    }

    @Test func aRebuildOfOneViewEmptiesTheMemo() throws {
        let dir = TempDirectory()
        defer { dir.remove() }
        let store = try ReadingStore.open(at: dir.url)
        let history = F.history(readers: 1, days: 40, seed: 0x3E31)
        let half = history.count / 2
        try F.appendInChunks(store, Array(history[..<half]), chunk: 50)
        #expect(!store.viewMemo.contents.books.isEmpty)
        for view in ViewTable.views {
            _ = try store.rebuild(view: view)
            #expect(store.viewMemo.contents.books.isEmpty, "after rebuilding \(view)")
        }
        _ = try store.rebuild()
        try F.appendInChunks(store, Array(history[half...]), chunk: 50)
        #expect(try Self.expectMemoMatchesRecords(store) > 0)
        #expect(try store.viewDigest() == store.freshFoldDigest())
    }

    /// Another process appends to a book between two of this process's appends to it: the memo
    /// of this process is stale, and must not be used (its view lacks the child's page entries).
    @Test func anotherProcessWritingBetweenTwoTransactionsIsNotMissed() throws {
        let dir = TempDirectory()
        defer { dir.remove() }
        let prefix = "memo-child"
        let reader = ReaderID(deterministicID(prefix: prefix + "-reader", index: 0))
        let book = BookID(deterministicID(prefix: prefix + "-book", index: 0))
        // The child adds the book and records pages 1 and 2 (commands 0 ... 2).
        let first = try FacadeChild.run(["facade-execute", dir.url.path, "--prefix", prefix, "--count", "3"])
        #expect(first.status == 0 && first.lines.last == "done")
        let store = try ReadingStore.open(at: dir.url)
        // This process rates the book: the memo now holds its view.
        try store.execute(.setRating(stars: 4), book: book, context: F.context(reader, "2025-06-01T09:00:00+09:00"))
        #expect(store.viewMemo.contents.books.map(\.book) == [book])
        // The child, while this process keeps the store open, records pages 3 ... 5 (commands
        // 0 ... 2 are retries of stored ones and append nothing).
        let second = try FacadeChild.run(["facade-execute", dir.url.path, "--prefix", prefix, "--count", "6"])
        #expect(second.status == 0 && second.lines.last == "done")
        // This process writes to the book again: it must fold on the child's page entries.
        try store.execute(.recordPages(position: 10), book: book, context: F.context(reader, "2025-06-02T09:00:00+09:00"))
        let view = try #require(try store.withViews { try $0.bookView(reader: reader, book: book) })
        #expect(view.entries.map(\.position) == [1, 2, 3, 4, 5, 10])
        #expect(view.rating == (try Rating(stars: 4)))
        #expect(try Self.expectMemoMatchesRecords(store) == 1)
        #expect(try store.viewDigest() == store.freshFoldDigest())
    }
}
