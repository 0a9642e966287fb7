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
    /// A view table: typed keys, typed view records (``ViewValueCodec``, ``ViewRecordCodec``) as values.
    typealias Table<Key: LMDBKeyCodec, Value: LMDBValueCodec> = LMDBDatabase<Key, Value>
    let generation: Int
    /// Book-view summaries (``ViewRecordCodec/encodeSummary(_:)``): everything but the details.
    let books: Table<ReaderBookKey, BookSummaryValue>
    /// A book view's details, one record each under its index in the view's array: written only
    /// when it changes, so an event rewrites the records it touches, not the book's history.
    let bookEntries: Table<ReaderBookIndexKey, PageEntryValue>
    let bookSessions: Table<ReaderBookIndexKey, SessionRecordValue>
    let bookSentences: Table<ReaderBookIndexKey, TextNoteValue>
    let bookMemos: Table<ReaderBookIndexKey, TextNoteValue>
    /// Each book's decision state (``BookView/decision``), beside its view: what a command reads.
    let decisions: Table<ReaderBookKey, BookStateValue>
    let days: Table<ReaderDayKey, DayTotalValue>
    let bookDays: Table<ReaderBookDayKey, DayTotalValue>
    let months: Table<ReaderMonthKey, MonthTotalValue>
    let buckets: Table<ReaderIDKey, BucketTotalsValue>
    let runs: Table<ReaderDayKey, StreakRunValue>
    let readers: Table<ReaderIDKey, ReaderViewValue>
    /// Keys only (a book with an active goal); the values are empty.
    let goals: Table<ReaderBookKey, NoValue>
    let years: Table<ReaderYearKey, YearViewValue>

    /// Every table of the generation, in ``ViewTable`` order (for digests, drops and rebuilding one
    /// view), as raw bytes: the same databases without their key and value types.
    var all: [(table: ViewTable, database: LMDBDatabase<RawBytes, RawBytes>)] {
        ViewTable.allCases.map { ($0, self[$0]) }
    }

    /// The database of `table`, untyped.
    subscript(table: ViewTable) -> LMDBDatabase<RawBytes, RawBytes> {
        switch table {
        case .books: books.untyped
        case .bookEntries: bookEntries.untyped
        case .bookSessions: bookSessions.untyped
        case .bookSentences: bookSentences.untyped
        case .bookMemos: bookMemos.untyped
        case .decisions: decisions.untyped
        case .days: days.untyped
        case .bookDays: bookDays.untyped
        case .months: months.untyped
        case .buckets: buckets.untyped
        case .runs: runs.untyped
        case .readers: readers.untyped
        case .goals: goals.untyped
        case .years: years.untyped
        }
    }

    static func name(_ table: ViewTable, generation: Int) -> String { "views.g\(generation).\(table.rawValue)" }

    /// The names of every table of `generation`, in ``ViewTable`` order.
    static func names(generation: Int) -> [String] { ViewTable.allCases.map { name($0, generation: generation) } }

    /// The tables of `generation` from `databases`, which the store opened together (see
    /// ``ReadingStore/databaseNames``): each table's name must be among them.
    init(_ databases: LMDBDatabaseSet, generation: Int) {
        self.generation = generation
        func open<Key: LMDBKeyCodec, Value: LMDBValueCodec>(_ table: ViewTable) -> Table<Key, Value> {
            databases.database(Self.name(table, generation: generation))
        }
        books = open(.books); decisions = open(.decisions); days = open(.days); bookDays = open(.bookDays)
        months = open(.months); buckets = open(.buckets); runs = open(.runs); readers = open(.readers)
        goals = open(.goals); years = open(.years)
        bookEntries = open(.bookEntries); bookSessions = open(.bookSessions)
        bookSentences = open(.bookSentences); bookMemos = open(.bookMemos)
    }
}

extension ViewDatabases {
    /// Writes one reader's views, folded in memory, into these tables with sorted bulk appends
    /// (`MDB_APPEND`): every table's key starts with the reader's 16 ID bytes (``ReaderIDKey``,
    /// ``ReaderBookKey``, ``ReaderBookIndexKey``, ``ReaderDayKey``, ``ReaderBookDayKey``, ``ReaderMonthKey``,
    /// ``ReaderYearKey``), so when readers are written in ID order into tables that hold only
    /// earlier readers, each reader's records sorted by their encoded keys come after every stored
    /// key. A reader written out of that order fails with ``LMDBError/Kind/appendOutOfOrder``
    /// (nothing of the table's batch is written), never with misplaced records.
    ///
    /// Months and years are clamped when encoded (``MonthKey``, ``YearKey``): should two of a
    /// reader's records ever share a key, that table falls back to plain puts for the reader.
    func append(_ views: SingleReaderViewStore, _ txn: WriteTransaction) throws {
        try write(views, txn, append: true)
    }

    /// Replaces one reader's records in these tables (which may hold other readers) with its views
    /// folded in memory: every record whose key starts with the reader's ID is removed, then the
    /// views are written with plain puts.
    func replace(reader: ReaderID, with views: SingleReaderViewStore, _ txn: WriteTransaction) throws {
        precondition(views.reader == reader, "the views are of another reader")
        let prefix = ReaderIDKey.encode(reader)
        for (_, database) in all {
            var keys: [[UInt8]] = []
            try txn.forEach(database, from: prefix, prefix: prefix) { key, _ in
                keys.append(key)
                return true
            }
            for key in keys { try txn.delete(database, key) }
        }
        try write(views, txn, append: false)
    }

    private func write(_ views: SingleReaderViewStore, _ txn: WriteTransaction, append: Bool) throws {
        let reader = views.reader
        func write<Key: LMDBKeyCodec, Value: LMDBValueCodec>(_ table: Table<Key, Value>, _ entries: [(Key.Item, Value.Item)], _ txn: WriteTransaction) throws {
            if append {
                try Self.write(table, entries, txn)
            } else {
                for (key, value) in entries { try txn.put(table, key, value) }
            }
        }
        if let record = views.readerRecord { try write(readers, [(reader, record)], txn) }
        // A book view is a summary, a decision record and one record per detail (as putBookView
        // writes it); detail keys are (reader, book, index), so each book's run is in index order.
        try write(books, views.books.map { ((reader, $0.key), ($0.value, true)) }, txn)
        try write(decisions, views.books.map { ((reader, $0.key), $0.value.decision) }, txn)
        func details<T>(_ part: (BookView) -> [T]) -> [(ReaderBookIndexKey.Item, T)] {
            views.books.flatMap { book, view in part(view).enumerated().map { (((reader, book), UInt32($0.offset)), $0.element) } }
        }
        try write(bookEntries, details(\.entries), txn)
        try write(bookSessions, details(\.sessions), txn)
        try write(bookSentences, details(\.sentences), txn)
        try write(bookMemos, details(\.memos), txn)
        try write(days, views.days.map { ((reader, $0.key), $0.value) }, txn)
        try write(bookDays, views.bookDays.map { (((reader, $0.key.book), $0.key.day), $0.value) }, txn)
        try write(months, views.months.map { ((reader, $0.key), $0.value) }, txn)
        if let totals = views.buckets { try write(buckets, [(reader, totals)], txn) }
        try write(runs, views.runs.map { ((reader, $0.start), $0) }, txn)
        try write(goals, views.goals.map { ((reader, $0), ()) }, txn)
        try write(years, views.years.map { ((reader, $0.key), $0.value) }, txn)
    }

    /// LMDB's default key order (`memcmp` of the common length, then the shorter first).
    private static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        let length = min(a.count, b.count)
        let common = length == 0 ? 0 : a.withUnsafeBytes { a in b.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, length) } }
        return common != 0 ? Int(common) : a.count - b.count
    }

    /// Sorts `entries` by their encoded keys and appends them; plain puts if two share a key.
    private static func write<Key: LMDBKeyCodec, Value: LMDBValueCodec>(_ table: Table<Key, Value>, _ entries: [(Key.Item, Value.Item)], _ txn: WriteTransaction) throws {
        guard !entries.isEmpty else { return }
        var encoded = entries.map { (Key.encode($0.0), Value.encode($0.1)) }
        encoded.sort { Self.compare($0.0, $1.0) < 0 }
        let increasing = encoded.indices.dropFirst().allSatisfy { Self.compare(encoded[$0 - 1].0, encoded[$0].0) < 0 }
        if increasing {
            try txn.append(table, encoded: encoded)
        } else {
            for (key, value) in encoded { try txn.putRaw(table, key, value, flags: []) }
        }
    }
}

/// The ``ViewStore`` of the persisted views, inside one LMDB transaction: reads through any
/// transaction, writes through a write transaction (the one that appends the events it folds).
///
/// Not `Sendable`: it is bound to a transaction, which is bound to its closure.
struct LMDBViewStore: ViewStore {
    let txn: ReadTransaction
    let tables: ViewDatabases
    /// The write transaction's session of the store's ``ViewMemo``: book and reader views are
    /// served from it when it knows them, and noted in it when read or written (`nil`: records only).
    var memo: ViewMemo.Session?

    init(txn: ReadTransaction, tables: ViewDatabases, memo: ViewMemo.Session? = nil) {
        self.txn = txn
        self.tables = tables
        self.memo = memo
    }

    private var writer: WriteTransaction {
        get throws {
            guard let w = txn as? WriteTransaction else { throw EventStoreError.readOnlyViews }
            return w
        }
    }

    /// Runs a read of `table`: a key or a value that does not decode is a damaged view
    /// (``EventStoreError/corruptView(detail:)`` naming the table, the record and the rule).
    private func reading<T, Key, Value>(_ table: ViewDatabases.Table<Key, Value>, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as LMDBError where error.kind == .badValueSize && error.operation.hasPrefix("decode(") {
            throw EventStoreError.corruptView(detail: "\(table.name): \(error.operation.dropFirst(7).dropLast()): \(error.message)")
        }
    }
    /// The record under `key` in `table`, decoded (``reading(_:_:)``).
    private func get<Key, Value>(_ table: ViewDatabases.Table<Key, Value>, _ key: Key.Item) throws -> Value.Item? {
        try reading(table) { try txn.get(table, key) }
    }
    /// ``ReadTransaction/forEach(_:from:direction:prefix:_:)`` with keys and values that do not
    /// decode reported as a damaged view.
    private func forEach<Key, Value>(
        _ table: ViewDatabases.Table<Key, Value>, from: Key.Item? = nil, direction: LMDBDirection = .forward, prefix: [UInt8]? = nil,
        _ body: (Key.Item, Value.Item) throws -> Bool
    ) throws {
        try reading(table) { try txn.forEach(table, from: from, direction: direction, prefix: prefix, body) }
    }
    /// The records of one reader in `range` of a table keyed by (reader, `Item`), in order.
    private func records<Key, Value, Item: Comparable>(
        _ table: ViewDatabases.Table<Key, Value>, from start: Key.Item, prefix: [UInt8], upTo last: Item, _ item: (Key.Item) -> Item
    ) throws -> [(Item, Value.Item)] {
        var result: [(Item, Value.Item)] = []
        try forEach(table, from: start, prefix: prefix) { key, value in
            guard item(key) <= last else { return false }
            result.append((item(key), value))
            return true
        }
        return result
    }

    func bookView(reader: ReaderID, book: BookID) throws -> BookView? {
        if let known = memo?.bookView(reader: reader, book: book) { return known }
        guard let summary = try get(tables.books, (reader, book)) else { return nil }
        let (view, isSummary) = try assemble(reader: reader, book: book, summary: summary)
        if isSummary { memo?.note(view) }
        return view
    }
    /// A book view's summary alone (its metadata, status, goal, ...): the detail arrays and the
    /// decision state are left empty, nothing but the one summary record is read.
    func bookSummary(reader: ReaderID, book: BookID) throws -> BookView? {
        if var known = memo?.bookView(reader: reader, book: book) {
            known.entries = []; known.sessions = []; known.sentences = []; known.memos = []; known.decision = BookState()
            return known
        }
        return try get(tables.books, (reader, book))?.view
    }
    /// A book view from its summary record, its decision record and its detail records, and
    /// whether the summary was one (false: a whole view of an earlier build).
    private func assemble(reader: ReaderID, book: BookID, summary: BookSummaryValue.Item) throws -> (view: BookView, isSummary: Bool) {
        var (view, isSummary) = summary
        view.decision = try decisionState(reader: reader, book: book) ?? BookState()
        // A whole view written by an earlier build holds its details itself.
        guard isSummary else { return (view, false) }
        view.entries = try details(tables.bookEntries, reader, book)
        view.sessions = try details(tables.bookSessions, reader, book)
        view.sentences = try details(tables.bookSentences, reader, book)
        view.memos = try details(tables.bookMemos, reader, book)
        return (view, true)
    }
    /// The detail records of one book in one table, in index order; a gap in the indices is damage.
    private func details<Value: ViewValueCodec>(_ table: ViewDatabases.Table<ReaderBookIndexKey, Value>, _ reader: ReaderID, _ book: BookID) throws -> [Value.Item] {
        var result: [Value.Item] = []
        // Raw cursor steps: the key's reader and book are the prefix, so only its index is read
        // (no identifiers built per record), and the value is decoded straight from the map.
        try reading(table) {
            try txn.forEachRaw(table, from: nil, direction: .forward, prefix: ReaderBookKey.encode((reader, book))) { key, value in
                guard key.count == 36 else {
                    throw EventStoreError.corruptView(detail: "\(table.name): book \(book) has a detail key of \(key.count) bytes, not 36")
                }
                let index = UInt32(key[32]) << 24 | UInt32(key[33]) << 16 | UInt32(key[34]) << 8 | UInt32(key[35])
                guard index == UInt32(result.count) else {
                    throw EventStoreError.corruptView(detail: "\(table.name): book \(book) has detail \(index) where \(result.count) was expected")
                }
                result.append(try Value.decode(value))
                return true
            }
        }
        return result
    }
    /// The book's persisted decision state alone (`nil` before the book has a view): one small
    /// record, what ``ReadingStore/execute(_:book:context:)`` decides on.
    func decisionState(reader: ReaderID, book: BookID) throws -> BookState? {
        if let known = memo?.bookView(reader: reader, book: book) { return known.decision }
        return try get(tables.decisions, (reader, book))
    }
    /// Writes the view's summary and decision records, and of its detail records only those that
    /// differ from what is stored (compared byte for byte): a page record appended to a book adds
    /// one entry record, whatever the length of the book's history.
    mutating func putBookView(_ view: BookView) throws {
        let w = try writer
        try w.put(tables.books, (view.reader, view.book), (view, true))
        try w.put(tables.decisions, (view.reader, view.book), view.decision)
        try putDetails(w, tables.bookEntries, view, view.entries)
        try putDetails(w, tables.bookSessions, view, view.sessions)
        try putDetails(w, tables.bookSentences, view, view.sentences)
        try putDetails(w, tables.bookMemos, view, view.memos)
        memo?.note(view)
    }
    /// Writes a view read as `previous` in this transaction: the summary, the decision record if
    /// it changed, and only the detail records whose values differ from `previous` (none is
    /// encoded or read back otherwise). Falls back to ``putBookView(_:)`` when there is no
    /// `previous`, or when the stored record is not a summary (a whole view of an earlier build,
    /// whose details are not records of their own yet).
    mutating func putBookView(_ view: BookView, replacing previous: BookView?) throws {
        let key = (view.reader, view.book)
        // A view the memo knows is stored as a summary already (read as one, or written by this
        // build), so its format byte need not be read.
        guard let previous, previous.reader == view.reader, previous.book == view.book,
              try memo?.knowsBook(reader: view.reader, book: view.book) == true
                || txn.rawValue(tables.books, ReaderBookKey.encode(key))?.first == ViewRecordCodec.summaryFormat else {
            return try putBookView(view)
        }
        let w = try writer
        try w.put(tables.books, key, (view, true))
        if view.decision != previous.decision { try w.put(tables.decisions, key, view.decision) }
        try putChanged(w, tables.bookEntries, view, view.entries, previous.entries)
        try putChanged(w, tables.bookSessions, view, view.sessions, previous.sessions)
        try putChanged(w, tables.bookSentences, view, view.sentences, previous.sentences)
        try putChanged(w, tables.bookMemos, view, view.memos, previous.memos)
        memo?.note(view)
    }
    private func putChanged<Value: ViewValueCodec>(_ w: WriteTransaction, _ table: ViewDatabases.Table<ReaderBookIndexKey, Value>, _ view: BookView,
                                                   _ new: [Value.Item], _ old: [Value.Item]) throws where Value.Item: Equatable {
        for index in new.indices where index >= old.count || new[index] != old[index] {
            try w.put(table, ((view.reader, view.book), UInt32(index)), new[index])
        }
        for index in new.count..<max(new.count, old.count) {
            try w.delete(table, ((view.reader, view.book), UInt32(index)))
        }
    }
    private func putDetails<Value: ViewValueCodec>(_ w: WriteTransaction, _ table: ViewDatabases.Table<ReaderBookIndexKey, Value>, _ view: BookView,
                                                   _ items: [Value.Item]) throws {
        let records = items.map(Value.encode)
        var same = [Bool](repeating: false, count: records.count)
        var stale: [UInt32] = []
        try w.forEachRaw(table, from: nil, direction: .forward, prefix: ReaderBookKey.encode((view.reader, view.book))) { key, value in
            let index = Int(try BigEndianUInt32.decode(UnsafeRawBufferPointer(rebasing: key[32...])))
            if index < records.count { same[index] = records[index].elementsEqual(value) } else { stale.append(UInt32(index)) }
            return true
        }
        for (index, record) in records.enumerated() where !same[index] {
            try w.putRaw(table, ReaderBookIndexKey.encode(((view.reader, view.book), UInt32(index))), record, flags: [])
        }
        for index in stale { try w.delete(table, ((view.reader, view.book), index)) }
    }
    func bookViews(reader: ReaderID) throws -> [BookView] {
        var result: [BookView] = []
        try forEach(tables.books, prefix: ReaderIDKey.encode(reader)) { key, summary in
            result.append(try assemble(reader: key.0, book: key.1, summary: summary).view)
            return true
        }
        return result
    }

    func dayTotal(reader: ReaderID, day: LocalDate) throws -> DayTotal {
        try get(tables.days, (reader, day)) ?? DayTotal()
    }
    mutating func putDayTotal(reader: ReaderID, day: LocalDate, _ total: DayTotal) throws {
        if total.isZero { try writer.delete(tables.days, (reader, day)) } else { try writer.put(tables.days, (reader, day), total) }
    }
    func dayTotals(reader: ReaderID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        try records(tables.days, from: (reader, range.lowerBound), prefix: ReaderIDKey.encode(reader), upTo: range.upperBound) { $0.1 }
    }

    func bookDayTotal(reader: ReaderID, book: BookID, day: LocalDate) throws -> DayTotal {
        try get(tables.bookDays, ((reader, book), day)) ?? DayTotal()
    }
    mutating func putBookDayTotal(reader: ReaderID, book: BookID, day: LocalDate, _ total: DayTotal) throws {
        let key = ((reader, book), day)
        if total.isZero { try writer.delete(tables.bookDays, key) } else { try writer.put(tables.bookDays, key, total) }
    }
    func bookDayTotals(reader: ReaderID, book: BookID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        try records(tables.bookDays, from: ((reader, book), range.lowerBound), prefix: ReaderBookKey.encode((reader, book)),
                    upTo: range.upperBound) { $0.1 }
    }

    func monthTotal(reader: ReaderID, month: YearMonth) throws -> MonthTotal {
        try get(tables.months, (reader, month)) ?? MonthTotal()
    }
    mutating func putMonthTotal(reader: ReaderID, month: YearMonth, _ total: MonthTotal) throws {
        if total == MonthTotal() { try writer.delete(tables.months, (reader, month)) } else { try writer.put(tables.months, (reader, month), total) }
    }
    func monthTotals(reader: ReaderID, in range: ClosedRange<YearMonth>) throws -> [(YearMonth, MonthTotal)] {
        try records(tables.months, from: (reader, range.lowerBound), prefix: ReaderIDKey.encode(reader), upTo: range.upperBound) { $0.1 }
    }

    func bucketTotals(reader: ReaderID) throws -> BucketTotals {
        try get(tables.buckets, reader) ?? BucketTotals()
    }
    mutating func putBucketTotals(reader: ReaderID, _ totals: BucketTotals) throws {
        try writer.put(tables.buckets, reader, totals)
    }

    func streakRun(reader: ReaderID, startingOnOrBefore day: LocalDate) throws -> StreakRun? {
        var found: StreakRun?
        try forEach(tables.runs, from: (reader, day), direction: .backward, prefix: ReaderIDKey.encode(reader)) { _, run in
            found = run
            return false
        }
        return found
    }
    func streakRun(reader: ReaderID, startingOn day: LocalDate) throws -> StreakRun? {
        try get(tables.runs, (reader, day))
    }
    mutating func putStreakRun(reader: ReaderID, _ run: StreakRun) throws {
        try writer.put(tables.runs, (reader, run.start), run)
    }
    mutating func removeStreakRun(reader: ReaderID, start: LocalDate) throws {
        try writer.delete(tables.runs, (reader, start))
    }
    func streakRuns(reader: ReaderID) throws -> [StreakRun] {
        var result: [StreakRun] = []
        try forEach(tables.runs, prefix: ReaderIDKey.encode(reader)) { _, run in
            result.append(run)
            return true
        }
        return result
    }

    func goalBooks(reader: ReaderID) throws -> [BookID] {
        var result: [BookID] = []
        try forEach(tables.goals, prefix: ReaderIDKey.encode(reader)) { key, _ in
            result.append(key.1)
            return true
        }
        return result
    }
    mutating func setGoalBook(reader: ReaderID, book: BookID, active: Bool) throws {
        if active { try writer.put(tables.goals, (reader, book), ()) } else { try writer.delete(tables.goals, (reader, book)) }
    }

    func yearView(reader: ReaderID, year: Int) throws -> YearView? {
        try get(tables.years, (reader, year))
    }
    mutating func putYearView(reader: ReaderID, _ view: YearView) throws {
        let key = (reader, view.year)
        if view.isEmpty { try writer.delete(tables.years, key) } else { try writer.put(tables.years, key, view) }
    }
    func yearViews(reader: ReaderID) throws -> [YearView] {
        var result: [YearView] = []
        try forEach(tables.years, prefix: ReaderIDKey.encode(reader)) { _, view in
            result.append(view)
            return true
        }
        return result
    }

    func readerView(reader: ReaderID) throws -> ReaderView? {
        if let known = memo?.readerView(reader) { return known }
        let view = try get(tables.readers, reader)
        if let view { memo?.note(reader: reader, view) }
        return view
    }
    mutating func putReaderView(reader: ReaderID, _ view: ReaderView) throws {
        try writer.put(tables.readers, reader, view)
        memo?.note(reader: reader, view)
    }
    func readers() throws -> [ReaderID] {
        var result: [ReaderID] = []
        try forEach(tables.readers) { key, _ in
            result.append(key)
            return true
        }
        return result
    }
}
