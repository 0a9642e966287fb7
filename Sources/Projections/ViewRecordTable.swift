import ReadingEvents

/// The tables of view records, in the order a store keeps and flushes them.
///
/// `Sendable`: a plain enumeration.
public enum ViewRecordKind: Int, CaseIterable, Sendable {
    /// ``ViewRecords/Books``.
    case books
    /// ``ViewRecords/Days``.
    case days
    /// ``ViewRecords/BookDays``.
    case bookDays
    /// ``ViewRecords/Months``.
    case months
    /// ``ViewRecords/Buckets``.
    case buckets
    /// ``ViewRecords/Runs``.
    case runs
    /// ``ViewRecords/Goals``.
    case goals
    /// ``ViewRecords/Years``.
    case years
    /// ``ViewRecords/Readers``.
    case readers
}

extension ViewRecordKind {
    /// Calls `visitor` with this kind's table type: the one place that maps a kind to its table.
    @inlinable
    public func visit<V: ViewRecordTableVisitor>(_ visitor: inout V) throws {
        switch self {
        case .books: try visitor.visit(ViewRecords.Books.self)
        case .days: try visitor.visit(ViewRecords.Days.self)
        case .bookDays: try visitor.visit(ViewRecords.BookDays.self)
        case .months: try visitor.visit(ViewRecords.Months.self)
        case .buckets: try visitor.visit(ViewRecords.Buckets.self)
        case .runs: try visitor.visit(ViewRecords.Runs.self)
        case .goals: try visitor.visit(ViewRecords.Goals.self)
        case .years: try visitor.visit(ViewRecords.Years.self)
        case .readers: try visitor.visit(ViewRecords.Readers.self)
        }
    }
}

/// Code run once per table type (``ViewRecordKind/visit(_:)``): what a store does for every
/// table without code of its own per table.
public protocol ViewRecordTableVisitor {
    /// Called with one table type.
    mutating func visit<T: ViewRecordTable>(_ table: T.Type) throws
}

/// One table of view records: what a ``ViewStore`` keeps for each reader under keys of one type,
/// read, written and scanned in key order through the store's generic requirements.
///
/// A table is a type, never a value: ``ViewRecords`` declares every table there is. The rules of a
/// table (which record stands for "nothing", what a missing record reads as) live in the typed
/// accessors of ``ViewStore`` (one place), not in the stores.
///
/// `Sendable`: a table type has no values.
public protocol ViewRecordTable: Sendable {
    /// A record's key within one reader's records, ordered as the table is scanned.
    associatedtype Key: Hashable & Comparable & Sendable
    /// The record.
    associatedtype Record: Hashable & Sendable
    /// Which table this is.
    static var kind: ViewRecordKind { get }
    /// Whether a write-back cache keeps this table's records (`false`: the fold scans the table
    /// by key ranges, which a cache of points cannot answer, so writes go to the store at once).
    static var isCached: Bool { get }
    /// Whether a write names the record it replaces, as read from the store (``ViewStore/putRecord(_:reader:_:_:replacing:)``):
    /// a store that keeps a record in parts then writes only the parts that differ.
    static var isWrittenInParts: Bool { get }
    /// Whether the fold scans this table by key ranges (a store in memory then keeps its keys in
    /// order as they are written, instead of sorting them at each scan).
    static var isScannedByTheFold: Bool { get }
}

extension ViewRecordTable {
    /// The default: cached.
    public static var isCached: Bool { true }
    /// The default: written whole.
    public static var isWrittenInParts: Bool { false }
    /// The default: not scanned by the fold.
    public static var isScannedByTheFold: Bool { false }
}

/// The key of a table with one record per reader.
///
/// `Sendable`: no stored properties.
public struct ReaderRecordKey: Hashable, Comparable, Sendable {
    /// The one key.
    public init() {}
    public static func < (lhs: ReaderRecordKey, rhs: ReaderRecordKey) -> Bool { false }
}

/// The record of a table that is a set of keys (the key is all there is).
///
/// `Sendable`: no stored properties.
public struct PresenceRecord: Hashable, Sendable {
    /// The one record.
    public init() {}
}

/// A book's day, keyed as the persisted table is: book, then day.
///
/// `Sendable`: plain values.
public struct BookDayKey: Hashable, Comparable, Sendable {
    /// The book.
    public var book: BookID
    /// The reading day.
    public var day: LocalDate
    /// A book's day.
    public init(book: BookID, day: LocalDate) {
        self.book = book
        self.day = day
    }
    public static func < (lhs: BookDayKey, rhs: BookDayKey) -> Bool { (lhs.book, lhs.day) < (rhs.book, rhs.day) }
}

/// Every table of view records (the one list of them: ``ViewRecordKind`` names each once).
///
/// `Sendable`: a namespace.
public enum ViewRecords: Sendable {
    /// Book views by book (``BookView``): kept once written, written in parts.
    ///
    /// `Sendable`: a table type.
    public enum Books: ViewRecordTable {
        public typealias Key = BookID
        public typealias Record = BookView
        public static var kind: ViewRecordKind { .books }
        public static var isWrittenInParts: Bool { true }
    }
    /// Non-zero day totals by day.
    ///
    /// `Sendable`: a table type.
    public enum Days: ViewRecordTable {
        public typealias Key = LocalDate
        public typealias Record = DayTotal
        public static var kind: ViewRecordKind { .days }
    }
    /// Non-zero totals of one book on one day, by book, then day.
    ///
    /// `Sendable`: a table type.
    public enum BookDays: ViewRecordTable {
        public typealias Key = BookDayKey
        public typealias Record = DayTotal
        public static var kind: ViewRecordKind { .bookDays }
    }
    /// Non-zero month totals by month.
    ///
    /// `Sendable`: a table type.
    public enum Months: ViewRecordTable {
        public typealias Key = YearMonth
        public typealias Record = MonthTotal
        public static var kind: ViewRecordKind { .months }
    }
    /// The reader's time-of-day totals (one record).
    ///
    /// `Sendable`: a table type.
    public enum Buckets: ViewRecordTable {
        public typealias Key = ReaderRecordKey
        public typealias Record = BucketTotals
        public static var kind: ViewRecordKind { .buckets }
    }
    /// Streak runs by their first day (scanned backwards by the fold: not cached).
    ///
    /// `Sendable`: a table type.
    public enum Runs: ViewRecordTable {
        public typealias Key = LocalDate
        public typealias Record = StreakRun
        public static var kind: ViewRecordKind { .runs }
        public static var isCached: Bool { false }
        public static var isScannedByTheFold: Bool { true }
    }
    /// The books with an active goal (a set: not cached).
    ///
    /// `Sendable`: a table type.
    public enum Goals: ViewRecordTable {
        public typealias Key = BookID
        public typealias Record = PresenceRecord
        public static var kind: ViewRecordKind { .goals }
        public static var isCached: Bool { false }
    }
    /// Non-empty year records by year.
    ///
    /// `Sendable`: a table type.
    public enum Years: ViewRecordTable {
        public typealias Key = Int
        public typealias Record = YearView
        public static var kind: ViewRecordKind { .years }
    }
    /// The reader's own record (one record; a reader "exists" when it has one).
    ///
    /// `Sendable`: a table type.
    public enum Readers: ViewRecordTable {
        public typealias Key = ReaderRecordKey
        public typealias Record = ReaderView
        public static var kind: ViewRecordKind { .readers }
    }
}
