import Foundation
import LMDB
import Projections
import ReadingEvents

/// The named databases of one generation of persisted views. Two generations exist so that a
/// rebuild can fill the inactive one in chunks and then switch to it in one commit: a crash in
/// the middle leaves the active views untouched.
///
/// `Sendable`: database handles are plain values, valid for the environment's lifetime.
struct ViewDatabases: Sendable {
    typealias Table = LMDBDatabase<RawBytes, RawBytes>
    let generation: Int
    let books: Table
    let days: Table
    let bookDays: Table
    let months: Table
    let buckets: Table
    let runs: Table
    let readers: Table
    let goals: Table
    let years: Table

    /// Every table of the generation with its short name, in a fixed order (for digests and drops).
    var all: [(name: String, table: Table)] {
        [("books", books), ("days", days), ("bookDays", bookDays), ("months", months),
         ("buckets", buckets), ("runs", runs), ("readers", readers), ("goals", goals), ("years", years)]
    }

    static let tableNames = ["books", "days", "bookDays", "months", "buckets", "runs", "readers", "goals", "years"]

    static func name(_ table: String, generation: Int) -> String { "views.g\(generation).\(table)" }

    init(log: EventLog, generation: Int) throws {
        self.generation = generation
        func open(_ table: String) throws -> Table {
            try log.openDatabase(named: Self.name(table, generation: generation), keys: RawBytes.self, values: RawBytes.self)
        }
        books = try open("books"); days = try open("days"); bookDays = try open("bookDays")
        months = try open("months"); buckets = try open("buckets"); runs = try open("runs"); readers = try open("readers")
        goals = try open("goals"); years = try open("years")
    }
}

/// Key layouts: reader and book as their 16 UUID bytes; days as big-endian `UInt32(dayNumber +
/// 1_000_000)` so byte order is date order; months as big-endian `UInt32(year * 12 + month - 1)`;
/// years as big-endian `UInt32(year)`.
enum ViewKeys {
    static func day(_ d: LocalDate) -> [UInt8] { be32(UInt32(d.dayNumber + 1_000_000)) }
    static func decodeDay(_ bytes: ArraySlice<UInt8>) -> LocalDate? {
        guard bytes.count == 4 else { return nil }
        let v = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let n = Int(v) - 1_000_000
        guard (-719_162...2_932_896).contains(n) else { return nil }
        return LocalDate(dayNumber: n)
    }
    static func month(_ m: YearMonth) -> [UInt8] { be32(UInt32(m.year * 12 + m.month - 1)) }
    static func decodeMonth(_ bytes: ArraySlice<UInt8>) -> YearMonth? {
        guard bytes.count == 4 else { return nil }
        let v = Int(bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        return YearMonth(year: v / 12, month: v % 12 + 1)
    }
    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
}

/// The ``ViewStore`` of the persisted views, inside one LMDB transaction: reads through any
/// transaction, writes through a write transaction (the one that appends the events it folds).
///
/// Not `Sendable`: it is bound to a transaction, which is bound to its closure.
struct LMDBViewStore: ViewStore {
    let txn: ReadTransaction
    let tables: ViewDatabases

    private var writer: WriteTransaction {
        get throws {
            guard let w = txn as? WriteTransaction else { throw EventStoreError.readOnlyViews }
            return w
        }
    }

    private func decode<T>(_ bytes: [UInt8]?, _ body: ([UInt8]) throws(ViewDecodingError) -> T) throws -> T? {
        guard let bytes else { return nil }
        do { return try body(bytes) } catch { throw EventStoreError.corruptView(detail: error.description) }
    }

    private func scan(_ table: ViewDatabases.Table, prefix: [UInt8], from: [UInt8], through: [UInt8],
                      _ body: ([UInt8], [UInt8]) throws -> Void) throws {
        try txn.forEach(table, from: prefix + from, prefix: prefix) { key, value in
            let suffix = Array(key.dropFirst(prefix.count))
            guard !suffix.lexicographicallyPrecedes(from) else { return true }
            guard !through.lexicographicallyPrecedes(suffix) else { return false }
            try body(suffix, value)
            return true
        }
    }

    func bookView(reader: ReaderID, book: BookID) throws -> BookView? {
        try decode(txn.get(tables.books, reader.bytes + book.bytes), ViewRecordCodec.decodeBookView)
    }
    mutating func putBookView(_ view: BookView) throws {
        try writer.put(tables.books, view.reader.bytes + view.book.bytes, ViewRecordCodec.encode(view))
    }
    func bookViews(reader: ReaderID) throws -> [BookView] {
        var result: [BookView] = []
        try txn.forEach(tables.books, prefix: reader.bytes) { _, value in
            result.append(try decode(value, ViewRecordCodec.decodeBookView)!)
            return true
        }
        return result
    }

    func dayTotal(reader: ReaderID, day: LocalDate) throws -> DayTotal {
        try decode(txn.get(tables.days, reader.bytes + ViewKeys.day(day)), ViewRecordCodec.decodeDayTotal) ?? DayTotal()
    }
    mutating func putDayTotal(reader: ReaderID, day: LocalDate, _ total: DayTotal) throws {
        let key = reader.bytes + ViewKeys.day(day)
        if total.isZero { try writer.delete(tables.days, key) } else { try writer.put(tables.days, key, ViewRecordCodec.encode(total)) }
    }
    func dayTotals(reader: ReaderID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        var result: [(LocalDate, DayTotal)] = []
        try scan(tables.days, prefix: reader.bytes, from: ViewKeys.day(range.lowerBound), through: ViewKeys.day(range.upperBound)) { key, value in
            guard let day = ViewKeys.decodeDay(key[...]) else { throw EventStoreError.corruptView(detail: "days: bad key") }
            result.append((day, try decode(value, ViewRecordCodec.decodeDayTotal)!))
        }
        return result
    }

    func bookDayTotal(reader: ReaderID, book: BookID, day: LocalDate) throws -> DayTotal {
        try decode(txn.get(tables.bookDays, reader.bytes + book.bytes + ViewKeys.day(day)), ViewRecordCodec.decodeDayTotal) ?? DayTotal()
    }
    mutating func putBookDayTotal(reader: ReaderID, book: BookID, day: LocalDate, _ total: DayTotal) throws {
        let key = reader.bytes + book.bytes + ViewKeys.day(day)
        if total.isZero { try writer.delete(tables.bookDays, key) } else { try writer.put(tables.bookDays, key, ViewRecordCodec.encode(total)) }
    }
    func bookDayTotals(reader: ReaderID, book: BookID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        var result: [(LocalDate, DayTotal)] = []
        try scan(tables.bookDays, prefix: reader.bytes + book.bytes, from: ViewKeys.day(range.lowerBound), through: ViewKeys.day(range.upperBound)) { key, value in
            guard let day = ViewKeys.decodeDay(key[...]) else { throw EventStoreError.corruptView(detail: "bookDays: bad key") }
            result.append((day, try decode(value, ViewRecordCodec.decodeDayTotal)!))
        }
        return result
    }

    func monthTotal(reader: ReaderID, month: YearMonth) throws -> MonthTotal {
        try decode(txn.get(tables.months, reader.bytes + ViewKeys.month(month)), ViewRecordCodec.decodeMonthTotal) ?? MonthTotal()
    }
    mutating func putMonthTotal(reader: ReaderID, month: YearMonth, _ total: MonthTotal) throws {
        let key = reader.bytes + ViewKeys.month(month)
        if total == MonthTotal() { try writer.delete(tables.months, key) } else { try writer.put(tables.months, key, ViewRecordCodec.encode(total)) }
    }
    func monthTotals(reader: ReaderID, in range: ClosedRange<YearMonth>) throws -> [(YearMonth, MonthTotal)] {
        var result: [(YearMonth, MonthTotal)] = []
        try scan(tables.months, prefix: reader.bytes, from: ViewKeys.month(range.lowerBound), through: ViewKeys.month(range.upperBound)) { key, value in
            guard let month = ViewKeys.decodeMonth(key[...]) else { throw EventStoreError.corruptView(detail: "months: bad key") }
            result.append((month, try decode(value, ViewRecordCodec.decodeMonthTotal)!))
        }
        return result
    }

    func bucketTotals(reader: ReaderID) throws -> BucketTotals {
        try decode(txn.get(tables.buckets, reader.bytes), ViewRecordCodec.decodeBucketTotals) ?? BucketTotals()
    }
    mutating func putBucketTotals(reader: ReaderID, _ totals: BucketTotals) throws {
        try writer.put(tables.buckets, reader.bytes, ViewRecordCodec.encode(totals))
    }

    func streakRun(reader: ReaderID, startingOnOrBefore day: LocalDate) throws -> StreakRun? {
        var found: StreakRun?
        try txn.forEach(tables.runs, from: reader.bytes + ViewKeys.day(day), direction: .backward, prefix: reader.bytes) { _, value in
            found = try decode(value, ViewRecordCodec.decodeStreakRun)
            return false
        }
        return found
    }
    func streakRun(reader: ReaderID, startingOn day: LocalDate) throws -> StreakRun? {
        try decode(txn.get(tables.runs, reader.bytes + ViewKeys.day(day)), ViewRecordCodec.decodeStreakRun)
    }
    mutating func putStreakRun(reader: ReaderID, _ run: StreakRun) throws {
        try writer.put(tables.runs, reader.bytes + ViewKeys.day(run.start), ViewRecordCodec.encode(run))
    }
    mutating func removeStreakRun(reader: ReaderID, start: LocalDate) throws {
        try writer.delete(tables.runs, reader.bytes + ViewKeys.day(start))
    }
    func streakRuns(reader: ReaderID) throws -> [StreakRun] {
        var result: [StreakRun] = []
        try txn.forEach(tables.runs, prefix: reader.bytes) { _, value in
            result.append(try decode(value, ViewRecordCodec.decodeStreakRun)!)
            return true
        }
        return result
    }

    func goalBooks(reader: ReaderID) throws -> [BookID] {
        var result: [BookID] = []
        try txn.forEach(tables.goals, prefix: reader.bytes) { key, _ in
            guard let book = BookID(bytes: key.dropFirst(16)) else { throw EventStoreError.corruptView(detail: "goals: bad key") }
            result.append(book)
            return true
        }
        return result
    }
    mutating func setGoalBook(reader: ReaderID, book: BookID, active: Bool) throws {
        if active { try writer.put(tables.goals, reader.bytes + book.bytes, []) } else { try writer.delete(tables.goals, reader.bytes + book.bytes) }
    }

    func yearView(reader: ReaderID, year: Int) throws -> YearView? {
        try decode(txn.get(tables.years, reader.bytes + ViewKeys.be32(UInt32(clamping: year))), ViewRecordCodec.decodeYearView)
    }
    mutating func putYearView(reader: ReaderID, _ view: YearView) throws {
        let key = reader.bytes + ViewKeys.be32(UInt32(clamping: view.year))
        if view.isEmpty { try writer.delete(tables.years, key) } else { try writer.put(tables.years, key, ViewRecordCodec.encode(view)) }
    }
    func yearViews(reader: ReaderID) throws -> [YearView] {
        var result: [YearView] = []
        try txn.forEach(tables.years, prefix: reader.bytes) { _, value in
            result.append(try decode(value, ViewRecordCodec.decodeYearView)!)
            return true
        }
        return result
    }

    func readerView(reader: ReaderID) throws -> ReaderView? {
        try decode(txn.get(tables.readers, reader.bytes), ViewRecordCodec.decodeReaderView)
    }
    mutating func putReaderView(reader: ReaderID, _ view: ReaderView) throws {
        try writer.put(tables.readers, reader.bytes, ViewRecordCodec.encode(view))
    }
    func readers() throws -> [ReaderID] {
        var result: [ReaderID] = []
        try txn.forEach(tables.readers) { key, _ in
            if let id = ReaderID(bytes: key) { result.append(id) }
            return true
        }
        return result
    }
}
