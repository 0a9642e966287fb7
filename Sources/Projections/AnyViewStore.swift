import ReadingEvents

/// Any ``ViewStore`` behind one concrete type, so that a fold through a ``CachingViewStore`` over a
/// store of another module runs specialized code.
///
/// The projector's fold is generic over its store. Called from another module (the LMDB store's
/// append path) with `CachingViewStore<ThatModulesStore>`, it cannot be specialized there and runs
/// through witness tables and run-time generic metadata at every record access. Wrapped as
/// `CachingViewStore<AnyViewStore>`, the fold is specialized inside this module
/// (``CachingViewStore/apply(_:with:)``); only the cache's misses and its flush reach the wrapped
/// store, through one existential call each.
///
/// Not `Sendable`: it holds an arbitrary store (one bound to a transaction, typically).
public struct AnyViewStore: ViewStore {
    /// The wrapped store.
    public private(set) var base: any ViewStore

    /// Wraps `base`.
    public init(_ base: any ViewStore) { self.base = base }

    public func bookView(reader: ReaderID, book: BookID) throws -> BookView? { try base.bookView(reader: reader, book: book) }
    public mutating func putBookView(_ view: BookView) throws { try base.putBookView(view) }
    public mutating func putBookView(_ view: BookView, replacing previous: BookView?) throws {
        try base.putBookView(view, replacing: previous)
    }
    public func bookViews(reader: ReaderID) throws -> [BookView] { try base.bookViews(reader: reader) }
    public mutating func takeBookView(reader: ReaderID, book: BookID) throws -> BookView? {
        try base.takeBookView(reader: reader, book: book)
    }
    public mutating func restoreBookView(_ view: BookView) throws { try base.restoreBookView(view) }
    public mutating func takeYearView(reader: ReaderID, year: Int) throws -> YearView? {
        try base.takeYearView(reader: reader, year: year)
    }
    public mutating func takeReaderView(reader: ReaderID) throws -> ReaderView? { try base.takeReaderView(reader: reader) }
    public func dayTotal(reader: ReaderID, day: LocalDate) throws -> DayTotal { try base.dayTotal(reader: reader, day: day) }
    public mutating func putDayTotal(reader: ReaderID, day: LocalDate, _ total: DayTotal) throws {
        try base.putDayTotal(reader: reader, day: day, total)
    }
    public func dayTotals(reader: ReaderID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        try base.dayTotals(reader: reader, in: range)
    }
    public func bookDayTotal(reader: ReaderID, book: BookID, day: LocalDate) throws -> DayTotal {
        try base.bookDayTotal(reader: reader, book: book, day: day)
    }
    public mutating func putBookDayTotal(reader: ReaderID, book: BookID, day: LocalDate, _ total: DayTotal) throws {
        try base.putBookDayTotal(reader: reader, book: book, day: day, total)
    }
    public func bookDayTotals(reader: ReaderID, book: BookID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        try base.bookDayTotals(reader: reader, book: book, in: range)
    }
    public func monthTotal(reader: ReaderID, month: YearMonth) throws -> MonthTotal { try base.monthTotal(reader: reader, month: month) }
    public mutating func putMonthTotal(reader: ReaderID, month: YearMonth, _ total: MonthTotal) throws {
        try base.putMonthTotal(reader: reader, month: month, total)
    }
    public func monthTotals(reader: ReaderID, in range: ClosedRange<YearMonth>) throws -> [(YearMonth, MonthTotal)] {
        try base.monthTotals(reader: reader, in: range)
    }
    public func bucketTotals(reader: ReaderID) throws -> BucketTotals { try base.bucketTotals(reader: reader) }
    public mutating func putBucketTotals(reader: ReaderID, _ totals: BucketTotals) throws { try base.putBucketTotals(reader: reader, totals) }
    public mutating func takeBucketTotals(reader: ReaderID) throws -> BucketTotals? { try base.takeBucketTotals(reader: reader) }
    public func streakRun(reader: ReaderID, startingOnOrBefore day: LocalDate) throws -> StreakRun? {
        try base.streakRun(reader: reader, startingOnOrBefore: day)
    }
    public func streakRun(reader: ReaderID, startingOn day: LocalDate) throws -> StreakRun? {
        try base.streakRun(reader: reader, startingOn: day)
    }
    public mutating func putStreakRun(reader: ReaderID, _ run: StreakRun) throws { try base.putStreakRun(reader: reader, run) }
    public mutating func removeStreakRun(reader: ReaderID, start: LocalDate) throws { try base.removeStreakRun(reader: reader, start: start) }
    public func streakRuns(reader: ReaderID) throws -> [StreakRun] { try base.streakRuns(reader: reader) }
    public func goalBooks(reader: ReaderID) throws -> [BookID] { try base.goalBooks(reader: reader) }
    public mutating func setGoalBook(reader: ReaderID, book: BookID, active: Bool) throws {
        try base.setGoalBook(reader: reader, book: book, active: active)
    }
    public func yearView(reader: ReaderID, year: Int) throws -> YearView? { try base.yearView(reader: reader, year: year) }
    public mutating func putYearView(reader: ReaderID, _ view: YearView) throws { try base.putYearView(reader: reader, view) }
    public func yearViews(reader: ReaderID) throws -> [YearView] { try base.yearViews(reader: reader) }
    public func readerView(reader: ReaderID) throws -> ReaderView? { try base.readerView(reader: reader) }
    public mutating func putReaderView(reader: ReaderID, _ view: ReaderView) throws { try base.putReaderView(reader: reader, view) }
    public func readers() throws -> [ReaderID] { try base.readers() }
}

extension CachingViewStore where Base == AnyViewStore {
    /// Folds one event into the cached views with `projector` (``ReadingProjector/apply(_:to:)``),
    /// specialized for this concrete cache (see ``AnyViewStore``).
    @discardableResult
    public mutating func apply(_ envelope: EventEnvelope, with projector: ReadingProjector) throws -> ReadingProjector.Outcome {
        try projector.apply(envelope, to: &self)
    }

    /// ``flush()``, specialized for this concrete cache (called from another module, the generic
    /// flush sorts and hashes its keys through unspecialized code).
    public mutating func flushSpecialized() throws { try flush() }
}
