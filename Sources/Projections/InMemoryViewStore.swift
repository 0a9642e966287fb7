import ReadingEvents

/// The views held in dictionaries: for tests of the folds, and for folding a log in memory.
///
/// Its methods never fail; they are declared `throws` like the protocol's so that code written
/// against ``ViewStore`` reads the same with either store.
///
/// `Sendable`: a value type of Sendable collections.
public struct InMemoryViewStore: ViewStore, Sendable, Hashable {
    struct BookKey: Hashable, Sendable { var reader: ReaderID; var book: BookID }
    struct BookDayKey: Hashable, Sendable { var reader: ReaderID; var book: BookID; var day: LocalDate }
    struct DayKey: Hashable, Sendable { var reader: ReaderID; var day: LocalDate }
    struct MonthKey: Hashable, Sendable { var reader: ReaderID; var month: YearMonth }

    var books: [BookKey: BookView] = [:]
    var days: [DayKey: DayTotal] = [:]
    var bookDays: [BookDayKey: DayTotal] = [:]
    var months: [MonthKey: MonthTotal] = [:]
    var buckets: [ReaderID: BucketTotals] = [:]
    var runs: [ReaderID: [LocalDate: StreakRun]] = [:]
    var readerViews: [ReaderID: ReaderView] = [:]
    var goals: [ReaderID: Set<BookID>] = [:]
    var years: [ReaderID: [Int: YearView]] = [:]

    /// An empty store.
    public init() {}

    public func bookView(reader: ReaderID, book: BookID) throws -> BookView? { books[BookKey(reader: reader, book: book)] }
    public mutating func putBookView(_ view: BookView) throws { books[BookKey(reader: view.reader, book: view.book)] = view }
    /// Removes the view while the caller changes it (see ``ViewStore/takeBookView(reader:book:)``).
    public mutating func takeBookView(reader: ReaderID, book: BookID) throws -> BookView? {
        books.removeValue(forKey: BookKey(reader: reader, book: book))
    }
    /// Puts a taken view back.
    public mutating func restoreBookView(_ view: BookView) throws { try putBookView(view) }
    public func bookViews(reader: ReaderID) throws -> [BookView] {
        books.values.filter { $0.reader == reader }.sorted { $0.book < $1.book }
    }

    public func dayTotal(reader: ReaderID, day: LocalDate) throws -> DayTotal { days[DayKey(reader: reader, day: day)] ?? DayTotal() }
    public mutating func putDayTotal(reader: ReaderID, day: LocalDate, _ total: DayTotal) throws {
        days[DayKey(reader: reader, day: day)] = total.isZero ? nil : total
    }
    public func dayTotals(reader: ReaderID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        days.filter { $0.key.reader == reader && range.contains($0.key.day) }.map { ($0.key.day, $0.value) }.sorted { $0.0 < $1.0 }
    }

    public func bookDayTotal(reader: ReaderID, book: BookID, day: LocalDate) throws -> DayTotal {
        bookDays[BookDayKey(reader: reader, book: book, day: day)] ?? DayTotal()
    }
    public mutating func putBookDayTotal(reader: ReaderID, book: BookID, day: LocalDate, _ total: DayTotal) throws {
        bookDays[BookDayKey(reader: reader, book: book, day: day)] = total.isZero ? nil : total
    }
    public func bookDayTotals(reader: ReaderID, book: BookID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        bookDays.filter { $0.key.reader == reader && $0.key.book == book && range.contains($0.key.day) }
            .map { ($0.key.day, $0.value) }.sorted { $0.0 < $1.0 }
    }

    public func monthTotal(reader: ReaderID, month: YearMonth) throws -> MonthTotal { months[MonthKey(reader: reader, month: month)] ?? MonthTotal() }
    public mutating func putMonthTotal(reader: ReaderID, month: YearMonth, _ total: MonthTotal) throws {
        months[MonthKey(reader: reader, month: month)] = total == MonthTotal() ? nil : total
    }
    public func monthTotals(reader: ReaderID, in range: ClosedRange<YearMonth>) throws -> [(YearMonth, MonthTotal)] {
        months.filter { $0.key.reader == reader && range.contains($0.key.month) }.map { ($0.key.month, $0.value) }.sorted { $0.0 < $1.0 }
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
    public mutating func putYearView(reader: ReaderID, _ view: YearView) throws {
        years[reader, default: [:]][view.year] = view.isEmpty ? nil : view
        if years[reader]?.isEmpty == true { years[reader] = nil }
    }
    public func yearViews(reader: ReaderID) throws -> [YearView] { (years[reader] ?? [:]).values.sorted { $0.year < $1.year } }

    public func readerView(reader: ReaderID) throws -> ReaderView? { readerViews[reader] }
    public mutating func putReaderView(reader: ReaderID, _ view: ReaderView) throws { readerViews[reader] = view }
    public func readers() throws -> [ReaderID] { readerViews.keys.sorted() }
}
