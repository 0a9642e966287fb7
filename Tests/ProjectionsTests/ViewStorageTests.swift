import Foundation
import Testing
import ReadingEvents
@testable import Projections

/// The storage changes that make the fold cheaper (issue 37) keep value semantics: a book view
/// shares its storage until one copy changes, the in-memory store's slots behave as the
/// dictionary they replaced, and identifiers hash by their bytes.
@Suite("View storage")
struct ViewStorageTests {
    private func view(reader: ReaderID = ReaderID(), book: BookID = BookID()) -> BookView {
        BookView(reader: reader, book: book, metadata: aladinMetadata(), status: .reading, inLibrary: true,
                 addedAt: instant("2026-03-01T09:00:00+09:00"), lastActivity: instant("2026-03-01T09:00:00+09:00"),
                 readThrough: 1, entries: [], finishes: [], isFinished: false, sentences: [], memos: [], sessions: [],
                 liked: false)
    }

    @Test("a copy of a book view does not change with the original, and equal views hash equally")
    func bookViewIsAValue() {
        let original = view()
        var copy = original
        #expect(copy == original)
        #expect(copy.hashValue == original.hashValue)

        copy.finishes.append(date("2026-03-02"))
        copy.metadata.title = "소년이 온다"
        copy.decision.apply(.ratingSet(RatingSet(book: original.book, rating: try! Rating(quarters: 18))),
                            occurredAt: instant("2026-03-02T09:00:00+09:00"))
        #expect(original.finishes.isEmpty)
        #expect(original.metadata.title == "채식주의자")
        #expect(original.decision.rating == nil)
        #expect(copy.decision.rating != nil)
        #expect(copy != original)

        // The same changes made to another copy give an equal view (compared field by field).
        var again = original
        again.finishes.append(date("2026-03-02"))
        again.metadata.title = "소년이 온다"
        again.decision.apply(.ratingSet(RatingSet(book: original.book, rating: try! Rating(quarters: 18))),
                             occurredAt: instant("2026-03-02T09:00:00+09:00"))
        #expect(again == copy)
        #expect(again.hashValue == copy.hashValue)
        #expect(Set([copy, again, original]).count == 2)
    }

    @Test("a view handed to another task is not changed by the original's later changes")
    func bookViewAcrossTasks() async {
        var original = view()
        let sent = original
        let task = Task.detached { () -> (Int, String) in (sent.finishes.count, sent.metadata.title) }
        for day in 1...50 { original.finishes.append(LocalDate(dayNumber: 20_000 + day)) }
        original.metadata.title = "changed"
        let seen = await task.value
        #expect(seen.0 == 0 && seen.1 == "채식주의자")
        #expect(sent.finishes.isEmpty && original.finishes.count == 50)
    }

    @Test("the single-reader store's slots keep, hand over and give back views as a dictionary would")
    func singleReaderSlots() throws {
        let reader = ReaderID()
        var store = SingleReaderViewStore(reader: reader)
        let books = (0..<5).map { _ in BookID() }
        for book in books { try store.putBookView(view(reader: reader, book: book)) }
        #expect(try store.bookViews(reader: reader).map(\.book) == books.sorted())
        #expect(Set(store.records(ViewRecords.Books.self).map(\.key)) == Set(books))

        // Taken and put back changed.
        var taken = try #require(try store.takeBookView(reader: reader, book: books[2]))
        #expect(try store.bookView(reader: reader, book: books[2]) == nil)
        taken.finishes.append(date("2026-03-03"))
        try store.putBookView(taken)
        #expect(try store.bookView(reader: reader, book: books[2])?.finishes == [date("2026-03-03")])

        // Taken, then another book put first (the put does not go to the taken book's slot).
        let other = try #require(try store.takeBookView(reader: reader, book: books[0]))
        var changed = view(reader: reader, book: books[4])
        changed.finishes = [date("2026-03-04")]
        try store.putBookView(changed)
        #expect(try store.bookView(reader: reader, book: books[4])?.finishes == [date("2026-03-04")])
        #expect(try store.bookView(reader: reader, book: books[0]) == nil)
        try store.restoreBookView(other)
        #expect(try store.bookView(reader: reader, book: books[0]) == other)

        // Taken and never given back: gone, as a removed dictionary entry.
        _ = try store.takeBookView(reader: reader, book: books[1])
        #expect(try store.bookViews(reader: reader).map(\.book) == books.filter { $0 != books[1] }.sorted())
        #expect(try store.bookView(reader: reader, book: books[1]) == nil && store.records(ViewRecords.Books.self).count == 4)

        // Another reader's book is neither found nor taken; a new book gets a slot of its own.
        #expect(try store.takeBookView(reader: ReaderID(), book: books[3]) == nil)
        let newBook = BookID()
        try store.putBookView(view(reader: reader, book: newBook))
        #expect(try store.bookView(reader: reader, book: newBook)?.book == newBook)
        #expect(throws: SingleReaderViewStore.OtherReader.self) { try store.putBookView(view(book: BookID())) }
    }

    @Test("taken reader records and bucket totals come back as they were put")
    func singleReaderTakes() throws {
        let reader = ReaderID()
        var store = SingleReaderViewStore(reader: reader)
        #expect(try store.takeReaderView(reader: reader) == nil)
        #expect(try store.takeBucketTotals(reader: reader) == nil)
        var record = ReaderView()
        record.eventCount = 3
        try store.putReaderView(reader: reader, record)
        var totals = BucketTotals()
        totals.pages[1] = 12
        try store.putBucketTotals(reader: reader, totals)

        var taken = try #require(try store.takeReaderView(reader: reader))
        #expect(taken.eventCount == 3)
        taken.eventCount += 1
        try store.putReaderView(reader: reader, taken)
        #expect(try store.readerView(reader: reader)?.eventCount == 4)

        var buckets = try #require(try store.takeBucketTotals(reader: reader))
        buckets.seconds[2] = 60
        try store.putBucketTotals(reader: reader, buckets)
        #expect(try store.bucketTotals(reader: reader).pages == [0, 12, 0, 0])
        #expect(try store.bucketTotals(reader: reader).seconds == [0, 0, 60, 0])
        #expect(try store.takeReaderView(reader: ReaderID()) == nil)
    }

    @Test("identifiers hash by their bytes: equal IDs hash equally, distinct IDs stay distinct")
    func identifierHashing() {
        var rng = SplitMix64(seed: 0x1D_0037)
        var ids: [BookID] = []
        for _ in 0..<5_000 {
            let bytes = (0..<16).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            ids.append(BookID(bytes: bytes)!)
        }
        for id in ids.prefix(100) {
            let again = BookID(uuidString: id.uuid.uuidString)!
            #expect(again == id && again.hashValue == id.hashValue)
        }
        #expect(Set(ids).count == Set(ids.map(\.uuid)).count)
    }

    @Test("dates and months hash as one packed word: equal values hash equally, a dictionary keeps them apart")
    func dateHashing() throws {
        var byDate: [LocalDate: Int] = [:], byMonth: [YearMonth: Int] = [:]
        for n in -3_000...8_000 {
            let day = LocalDate(dayNumber: n * 7)
            byDate[day, default: 0] += 1
            byMonth[YearMonth(day), default: 0] += 1
            let again = try LocalDate(year: day.year, month: day.month, day: day.day)
            #expect(again.hashValue == day.hashValue)
        }
        #expect(byDate.count == 11_001 && byDate.values.allSatisfy { $0 == 1 })
        #expect(byMonth.values.reduce(0, +) == 11_001)
        #expect(byMonth.count == Set(byDate.keys.map { "\($0.year)-\($0.month)" }).count)
    }

    @Test("a UUID reads the same from contiguous and from other collections of bytes")
    func uuidFromBytes() {
        let bytes: [UInt8] = (0..<16).map { UInt8($0 * 7 + 3) }
        let fromArray = UUID(bytes: bytes)
        let fromLazy = UUID(bytes: bytes.lazy.map { $0 })
        let fromRaw = bytes.withUnsafeBytes { UUID(bytes: $0) }
        let fromSlice = ([0] + bytes + [0])[1...16].withUnsafeBytes { UUID(bytes: $0) }
        #expect(fromArray != nil)
        #expect(fromArray == fromLazy && fromArray == fromRaw && fromArray == fromSlice)
        #expect(fromArray?.bytes == bytes)
        #expect(UUID(bytes: bytes.dropLast()) == nil)
        #expect(UUID(bytes: bytes.lazy.map { $0 }.dropLast()) == nil)
    }
}
