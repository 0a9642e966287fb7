import ReadingEvents

/// The views held in dictionaries: for tests of the folds, and for folding a log in memory.
///
/// Its methods never fail; they are declared `throws` like the protocol's so that code written
/// against ``ViewStore`` reads the same with either store.
///
/// `Sendable`: a value type of Sendable collections.
public struct InMemoryViewStore: ViewStore, Sendable, Hashable {
    struct BookKey: Hashable, Sendable { var reader: ReaderID; var book: BookID }

    // Keyed by reader (and book) first, so that a reader's or a book's records are found without
    // walking every record: filtering one dictionary of every book's days for each book made the
    // fresh fold of `verify` quadratic in a reader's books (100,000 books: 85 s, issue 37). An
    // inner dictionary that becomes empty is removed, so equal views are equal stores.
    var books: [ReaderID: [BookID: BookView]] = [:]
    var days: [ReaderID: [LocalDate: DayTotal]] = [:]
    var bookDays: [BookKey: [LocalDate: DayTotal]] = [:]
    var months: [ReaderID: [YearMonth: MonthTotal]] = [:]
    var buckets: [ReaderID: BucketTotals] = [:]
    var runs: [ReaderID: [LocalDate: StreakRun]] = [:]
    var readerViews: [ReaderID: ReaderView] = [:]
    var goals: [ReaderID: Set<BookID>] = [:]
    var years: [ReaderID: [Int: YearView]] = [:]

    /// An empty store.
    public init() {}

    /// Sets `inner[key]` in `outer[outerKey]` (`nil` removes it), dropping an inner dictionary
    /// that becomes empty.
    private static func set<Outer: Hashable, Key: Hashable, Value>(
        _ outer: inout [Outer: [Key: Value]], _ outerKey: Outer, _ key: Key, _ value: Value?
    ) {
        if let value {
            outer[outerKey, default: [:]][key] = value
        } else if outer[outerKey]?.removeValue(forKey: key) != nil, outer[outerKey]?.isEmpty == true {
            outer[outerKey] = nil
        }
    }

    public func bookView(reader: ReaderID, book: BookID) throws -> BookView? { books[reader]?[book] }
    public mutating func putBookView(_ view: consuming BookView) throws { Self.set(&books, view.reader, view.book, view) }
    /// Removes the view while the caller changes it (see ``ViewStore/takeBookView(reader:book:)``).
    public mutating func takeBookView(reader: ReaderID, book: BookID) throws -> BookView? {
        let view = books[reader]?[book]
        Self.set(&books, reader, book, nil)
        return view
    }
    /// Puts a taken view back.
    public mutating func restoreBookView(_ view: BookView) throws { try putBookView(view) }
    public func bookViews(reader: ReaderID) throws -> [BookView] {
        (books[reader] ?? [:]).values.sorted { $0.book < $1.book }
    }

    public func dayTotal(reader: ReaderID, day: LocalDate) throws -> DayTotal { days[reader]?[day] ?? DayTotal() }
    public mutating func putDayTotal(reader: ReaderID, day: LocalDate, _ total: DayTotal) throws {
        Self.set(&days, reader, day, total.isZero ? nil : total)
    }
    public func dayTotals(reader: ReaderID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        (days[reader] ?? [:]).filter { range.contains($0.key) }.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
    }

    public func bookDayTotal(reader: ReaderID, book: BookID, day: LocalDate) throws -> DayTotal {
        bookDays[BookKey(reader: reader, book: book)]?[day] ?? DayTotal()
    }
    public mutating func putBookDayTotal(reader: ReaderID, book: BookID, day: LocalDate, _ total: DayTotal) throws {
        Self.set(&bookDays, BookKey(reader: reader, book: book), day, total.isZero ? nil : total)
    }
    public func bookDayTotals(reader: ReaderID, book: BookID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        (bookDays[BookKey(reader: reader, book: book)] ?? [:]).filter { range.contains($0.key) }
            .map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
    }

    public func monthTotal(reader: ReaderID, month: YearMonth) throws -> MonthTotal { months[reader]?[month] ?? MonthTotal() }
    public mutating func putMonthTotal(reader: ReaderID, month: YearMonth, _ total: MonthTotal) throws {
        Self.set(&months, reader, month, total == MonthTotal() ? nil : total)
    }
    public func monthTotals(reader: ReaderID, in range: ClosedRange<YearMonth>) throws -> [(YearMonth, MonthTotal)] {
        (months[reader] ?? [:]).filter { range.contains($0.key) }.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
    }

    public func bucketTotals(reader: ReaderID) throws -> BucketTotals { buckets[reader] ?? BucketTotals() }
    public mutating func putBucketTotals(reader: ReaderID, _ totals: BucketTotals) throws { buckets[reader] = totals }

    public func streakRun(reader: ReaderID, startingOnOrBefore day: LocalDate) throws -> StreakRun? {
        runs[reader]?.values.filter { $0.start <= day }.max { $0.start < $1.start }
    }
    public func streakRun(reader: ReaderID, startingOn day: LocalDate) throws -> StreakRun? { runs[reader]?[day] }
    public mutating func putStreakRun(reader: ReaderID, _ run: StreakRun) throws { runs[reader, default: [:]][run.start] = run }
    public mutating func removeStreakRun(reader: ReaderID, start: LocalDate) throws { runs[reader]?[start] = nil }
    public func streakRuns(reader: ReaderID) throws -> [StreakRun] { (runs[reader] ?? [:]).values.sorted { $0.start < $1.start } }

    public func goalBooks(reader: ReaderID) throws -> [BookID] { (goals[reader] ?? []).sorted() }
    public mutating func setGoalBook(reader: ReaderID, book: BookID, active: Bool) throws {
        if active { goals[reader, default: []].insert(book) } else { goals[reader]?.remove(book) }
        if goals[reader]?.isEmpty == true { goals[reader] = nil }
    }

    public func yearView(reader: ReaderID, year: Int) throws -> YearView? { years[reader]?[year] }
    public mutating func putYearView(reader: ReaderID, _ view: consuming YearView) throws {
        Self.set(&years, reader, view.year, view.isEmpty ? nil : view)
    }
    /// Removes the record while the caller changes it (see ``ViewStore/takeYearView(reader:year:)``).
    public mutating func takeYearView(reader: ReaderID, year: Int) throws -> YearView? {
        let view = years[reader]?[year]
        Self.set(&years, reader, year, nil)
        return view
    }
    public func yearViews(reader: ReaderID) throws -> [YearView] { (years[reader] ?? [:]).values.sorted { $0.year < $1.year } }

    public func readerView(reader: ReaderID) throws -> ReaderView? { readerViews[reader] }
    public mutating func putReaderView(reader: ReaderID, _ view: consuming ReaderView) throws { readerViews[reader] = view }
    public func readers() throws -> [ReaderID] { readerViews.keys.sorted() }
}
