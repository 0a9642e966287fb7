import Testing
import ReadingEvents
@testable import Projections

/// The generic record store under the views (issue 37 item 2): every store keeps any table through
/// seven requirements, scans in key order within bounds and backwards, and stores in memory are
/// values equal by their records, whatever the order they were written in.
@Suite("Generic record store")
struct RecordStoreTests {
    private static func run(_ start: Int, _ length: Int) -> StreakRun {
        let first = LocalDate(dayNumber: 20_000 + start)
        return StreakRun(start: first, end: first.adding(days: length - 1))
    }

    /// Runs written in a random order, some removed again: every store answers the point read, the
    /// backward scan of `streakRun(startingOnOrBefore:)`, the list and a bounded range as a sorted
    /// array does.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func scansAnswerAsASortedArrayDoes(seed: UInt64) throws {
        var rng = SplitMix64(seed: 0x5107_0000 + seed)
        let reader = ReaderID()
        var single = SingleReaderViewStore(reader: reader)
        var memory = InMemoryViewStore()
        var cached = CachingViewStore(base: InMemoryViewStore())
        var expected: [Int: StreakRun] = [:]
        for _ in 0..<300 {
            let start = Int.random(in: 0..<400, using: &rng)
            if Bool.random(using: &rng), expected[start] != nil {
                expected[start] = nil
                for store in [0, 1, 2] {
                    switch store {
                    case 0: try single.removeStreakRun(reader: reader, start: Self.run(start, 1).start)
                    case 1: try memory.removeStreakRun(reader: reader, start: Self.run(start, 1).start)
                    default: try cached.removeStreakRun(reader: reader, start: Self.run(start, 1).start)
                    }
                }
            } else {
                let run = Self.run(start, Int.random(in: 1...3, using: &rng))
                expected[start] = run
                try single.putStreakRun(reader: reader, run)
                try memory.putStreakRun(reader: reader, run)
                try cached.putStreakRun(reader: reader, run)
            }
        }
        let sorted = expected.keys.sorted().map { expected[$0]! }
        let stores: [any ViewStore] = [single, memory, cached]
        for store in stores {
            #expect(try store.streakRuns(reader: reader) == sorted)
            for probe in stride(from: -2, to: 403, by: 7) {
                let day = LocalDate(dayNumber: 20_000 + probe)
                #expect(try store.streakRun(reader: reader, startingOnOrBefore: day) == sorted.last { $0.start <= day })
                #expect(try store.streakRun(reader: reader, startingOn: day) == expected[probe])
                let upper = day.adding(days: 50)
                #expect(try store.records(ViewRecords.Runs.self, reader: reader, from: day, through: upper).map(\.record)
                        == sorted.filter { $0.start >= day && $0.start <= upper })
            }
            #expect(try store.streakRuns(reader: ReaderID()).isEmpty)
        }
    }

    /// Book-day totals (a table kept in no order: sorted when scanned) written and removed in a
    /// random order: `records` (collected in code specialized for the table) and `forEachRecord`
    /// backwards answer a bounded range as a sorted array does, in every store.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func unorderedTablesScanAsASortedArrayDoes(seed: UInt64) throws {
        var rng = SplitMix64(seed: 0xB00C_0000 + seed)
        let reader = ReaderID()
        let books = (0..<5).map { _ in BookID() }
        var single = SingleReaderViewStore(reader: reader)
        var memory = InMemoryViewStore()
        var cached = CachingViewStore(base: InMemoryViewStore())
        var expected: [BookDayKey: DayTotal] = [:]
        for _ in 0..<400 {
            let key = BookDayKey(book: books[Int.random(in: 0..<5, using: &rng)], day: LocalDate(dayNumber: 20_000 + Int.random(in: 0..<60, using: &rng)))
            let total = Bool.random(using: &rng) ? DayTotal() : DayTotal(pages: Int.random(in: 1...40, using: &rng))
            expected[key] = total.isZero ? nil : total
            try single.putBookDayTotal(reader: reader, book: key.book, day: key.day, total)
            try memory.putBookDayTotal(reader: reader, book: key.book, day: key.day, total)
            try cached.putBookDayTotal(reader: reader, book: key.book, day: key.day, total)
        }
        try cached.flush()  // a cache lists nothing it has not flushed (a precondition)
        let sorted = expected.keys.sorted()
        let stores: [any ViewStore] = [single, memory, cached]
        for store in stores {
            for book in books {
                let first = LocalDate(dayNumber: 20_000 + Int.random(in: -5..<60, using: &rng))
                let last = first.adding(days: Int.random(in: 0..<30, using: &rng))
                let wanted = sorted.filter { $0.book == book && $0.day >= first && $0.day <= last }
                #expect(try store.bookDayTotals(reader: reader, book: book, in: first...last).map { $0.0 } == wanted.map(\.day))
                let lower = BookDayKey(book: book, day: first), upper = BookDayKey(book: book, day: last)
                let collected = try store.records(ViewRecords.BookDays.self, reader: reader, from: lower, through: upper)
                #expect(collected.map(\.key) == wanted && collected.map(\.record) == wanted.map { expected[$0]! })
                var backward: [BookDayKey] = []
                try store.forEachRecord(ViewRecords.BookDays.self, reader: reader, from: lower, through: upper, reverse: true) { key, _ in
                    backward.append(key)
                    return true
                }
                #expect(backward == wanted.reversed())
            }
            #expect(try store.records(ViewRecords.BookDays.self, reader: reader).map(\.key) == sorted)
            #expect(try store.records(ViewRecords.BookDays.self, reader: ReaderID()).isEmpty)
        }
    }

    /// Day totals written in another order, and a record written and removed again, give equal
    /// stores with equal hashes; a different total does not.
    @Test func storesInMemoryAreEqualByTheirRecords() throws {
        let reader = ReaderID()
        let days = (0..<40).map { LocalDate(dayNumber: 20_500 + $0 * 3) }
        var forward = InMemoryViewStore(), backward = InMemoryViewStore()
        var singleForward = SingleReaderViewStore(reader: reader), singleBackward = SingleReaderViewStore(reader: reader)
        for (index, day) in days.enumerated() {
            try forward.putDayTotal(reader: reader, day: day, DayTotal(pages: index + 1))
            try singleForward.putDayTotal(reader: reader, day: day, DayTotal(pages: index + 1))
        }
        for (index, day) in days.enumerated().reversed() {
            try backward.putDayTotal(reader: reader, day: day, DayTotal(pages: index + 1))
            try singleBackward.putDayTotal(reader: reader, day: day, DayTotal(pages: index + 1))
        }
        // Written and removed again (a zero total removes the day): as if never written.
        let other = ReaderID()
        try backward.putDayTotal(reader: other, day: days[0], DayTotal(pages: 5))
        try backward.putDayTotal(reader: other, day: days[0], DayTotal())
        try singleBackward.putDayTotal(reader: reader, day: LocalDate(dayNumber: 1), DayTotal(pages: 2))
        try singleBackward.putDayTotal(reader: reader, day: LocalDate(dayNumber: 1), DayTotal())
        #expect(forward == backward && forward.hashValue == backward.hashValue)
        #expect(singleForward == singleBackward && singleForward.hashValue == singleBackward.hashValue)
        #expect(try forward.dayTotals(reader: reader, in: days[3]...days[5]).map(\.0) == Array(days[3...5]))

        try backward.putDayTotal(reader: reader, day: days[7], DayTotal(pages: 99))
        #expect(forward != backward)
        try singleBackward.putDayTotal(reader: reader, day: days[7], DayTotal(pages: 99))
        #expect(singleForward != singleBackward)
    }

    /// A copy of a store is a value: changing the copy (a put, a take) leaves the original as it
    /// was (the tables are copied on write).
    @Test func aCopyOfAStoreIsAValue() throws {
        let reader = ReaderID()
        let day = LocalDate(dayNumber: 20_700)
        var original = SingleReaderViewStore(reader: reader)
        try original.putDayTotal(reader: reader, day: day, DayTotal(pages: 3))
        try original.putReaderView(reader: reader, ReaderView())
        var copy = original
        try copy.putDayTotal(reader: reader, day: day, DayTotal(pages: 8))
        _ = try copy.takeReaderView(reader: reader)
        #expect(try original.dayTotal(reader: reader, day: day).pages == 3)
        #expect(try original.readerView(reader: reader) != nil)
        #expect(try copy.dayTotal(reader: reader, day: day).pages == 8)
        #expect(try copy.readers().isEmpty && original.readers() == [reader])
    }

    /// The write-back cache writes nothing until its flush, then exactly what a store written
    /// directly holds; a table the fold scans (runs) goes to the base store at once.
    @Test func theCacheFlushesWhatADirectStoreHolds() throws {
        let reader = ReaderID()
        var direct = InMemoryViewStore()
        var cached = CachingViewStore(base: InMemoryViewStore())
        for (index, day) in (0..<20).map({ LocalDate(dayNumber: 21_000 + $0) }).enumerated() {
            for store in 0..<2 {
                func write(_ views: inout some ViewStore) throws {
                    try views.putDayTotal(reader: reader, day: day, DayTotal(pages: index, seconds: 60))
                    try views.putMonthTotal(reader: reader, month: YearMonth(year: 2027, month: 1 + index % 12), MonthTotal(pages: index + 1, finishes: 1))
                    try views.putStreakRun(reader: reader, StreakRun(start: day, end: day))
                }
                if store == 0 { try write(&direct) } else { try write(&cached) }
            }
        }
        #expect(try cached.base.dayTotals(reader: reader, in: ViewDigestRange.days).isEmpty)
        #expect(try cached.base.streakRuns(reader: reader).count == 20)
        try cached.flush()
        #expect(cached.base == direct)
    }
}

/// The whole calendar, for range reads of every record in these tests.
enum ViewDigestRange {
    static let days = LocalDate(dayNumber: -719_162)...LocalDate(dayNumber: 2_932_896)
}
