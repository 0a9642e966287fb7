import Foundation
import LMDB
import Projections
import ReadingEvents

/// The persisted views of one generation: one LMDB database (`views.g0`, `views.g1`) that holds
/// every view table, each table a range of its keys (``ViewKeyLayout``: the reader, the table's
/// group, for a book view's tables the book and the table's part, then the rest of the table's
/// key). Two generations exist so that a rebuild can fill the inactive one in chunks and then
/// switch to it in one commit: a crash in the middle leaves the active views untouched.
///
/// `Sendable`: database handles are plain values, valid for the environment's lifetime.
struct ViewDatabases: Sendable {
    /// A view table: the generation's database typed with the table's key codec (``ViewKey``
    /// over the table's own key codec) and its value codec (``ViewValueCodec``,
    /// ``ViewRecordCodec``), named `views.gN.TABLE` in errors.
    typealias Table<Key: LMDBKeyCodec, Value: LMDBValueCodec> = LMDBDatabase<Key, Value>
    let generation: Int
    /// The generation's one database, untyped: what is cleared, appended to and scanned whole.
    let database: LMDBDatabase<RawBytes, RawBytes>
    /// Book-view summaries (``ViewRecordCodec/encodeSummary(_:)``): everything but the details.
    let books: Table<ViewKey<ReaderBookKey, BooksTable>, BookSummaryValue>
    /// A book view's details in chunks of ``ViewRecordCodec/detailsPerChunk`` (every chunk but
    /// the book's last one full), each under its chunk number: a chunk is written only when one
    /// of its details changes, so appending a detail rewrites the book's last chunk, not its history.
    let bookEntries: Table<ViewKey<ReaderBookIndexKey, BookEntriesTable>, PageEntryChunkValue>
    let bookSessions: Table<ViewKey<ReaderBookIndexKey, BookSessionsTable>, SessionChunkValue>
    let bookSentences: Table<ViewKey<ReaderBookIndexKey, BookSentencesTable>, TextNoteChunkValue>
    let bookMemos: Table<ViewKey<ReaderBookIndexKey, BookMemosTable>, TextNoteChunkValue>
    /// Each book's decision state (``BookView/decision``), beside its view: what a command reads.
    let decisions: Table<ViewKey<ReaderBookKey, DecisionsTable>, BookStateValue>
    let days: Table<ViewKey<ReaderDayKey, DaysTable>, DayTotalValue>
    let bookDays: Table<ViewKey<ReaderBookDayKey, BookDaysTable>, DayTotalValue>
    let months: Table<ViewKey<ReaderMonthKey, MonthsTable>, MonthTotalValue>
    let buckets: Table<ViewKey<ReaderIDKey, BucketsTable>, BucketTotalsValue>
    let runs: Table<ViewKey<ReaderDayKey, RunsTable>, StreakRunValue>
    let readers: Table<ViewKey<ReaderIDKey, ReadersTable>, ReaderViewValue>
    /// Keys only (a book with an active goal); the values are empty.
    let goals: Table<ViewKey<ReaderBookKey, GoalsTable>, NoValue>
    let years: Table<ViewKey<ReaderYearKey, YearsTable>, YearViewValue>

    /// The name of `generation`'s database.
    static func name(generation: Int) -> String { "views.g\(generation)" }

    /// The name `table` has in errors (and had as a database of its own before views version 8).
    static func name(_ table: ViewTable, generation: Int) -> String { "views.g\(generation).\(table.rawValue)" }

    /// The databases of `generation`: its one database.
    static func names(generation: Int) -> [String] { [name(generation: generation)] }

    /// The databases of the view tables before views version 8, one a table and generation: an
    /// upgrade deletes them (``ReadingStore`` at open).
    static let formerNames: [String] = [0, 1].flatMap { generation in ViewTable.allCases.map { name($0, generation: generation) } }

    /// The tables of `generation` in `databases`, which the store opened together (see
    /// ``ReadingStore/databaseNames``): the generation's database must be among them.
    init(_ databases: LMDBDatabaseSet, generation: Int) {
        self.generation = generation
        let database: LMDBDatabase<RawBytes, RawBytes> = databases.database(Self.name(generation: generation))
        self.database = database
        func open<Key: LMDBKeyCodec, Value: LMDBValueCodec>(_ table: ViewTable) -> Table<Key, Value> {
            database.table(named: Self.name(table, generation: generation))
        }
        books = open(.books); decisions = open(.decisions); days = open(.days); bookDays = open(.bookDays)
        months = open(.months); buckets = open(.buckets); runs = open(.runs); readers = open(.readers)
        goals = open(.goals); years = open(.years)
        bookEntries = open(.bookEntries); bookSessions = open(.bookSessions)
        bookSentences = open(.bookSentences); bookMemos = open(.bookMemos)
    }

    /// The records of `table` by the table's own keys (``RawViewTable``).
    subscript(table: ViewTable) -> RawViewTable { RawViewTable(table: table, database: database) }

    /// Removes from `database` every key under `prefix` (every key: `nil`) that `matches`.
    static func deleteKeys(in database: LMDBDatabase<RawBytes, RawBytes>, prefix: [UInt8]?, _ txn: WriteTransaction,
                           where matches: (UnsafeRawBufferPointer) -> Bool = { _ in true }) throws {
        var keys: [[UInt8]] = []
        try txn.forEachRaw(database, from: prefix, direction: .forward, prefix: prefix) { key, _ in
            if matches(key) { keys.append(Array(key)) }
            return true
        }
        for key in keys { _ = try txn.deleteRaw(database, key) }
    }

    /// Removes every record of every table.
    func removeAll(_ txn: WriteTransaction) throws { try txn.removeAll(database) }

    /// The readers with a record of their own (the `readers` table), in ID order: one seek a
    /// reader with any view record (keys start with the reader's ID) and one look-up, never a
    /// scan of the other tables' records.
    func readersWithRecord(_ txn: ReadTransaction) throws -> [ReaderID] {
        var result: [ReaderID] = []
        var from: [UInt8]? = nil
        while true {
            var next: [UInt8]?
            try txn.forEachRaw(database, from: from, direction: .forward, prefix: nil) { key, _ in
                next = Array(key.prefix(16))
                return false
            }
            guard let reader = next, let id = ReaderID(bytes: reader) else { return result }
            if try txn.rawValue(database, ViewKeyLayout.prefix(.readers, reader: id)) != nil { result.append(id) }
            // The next reader: the 16 ID bytes plus one, as a 128-bit big-endian number.
            var successor = reader
            var index = 15
            while index >= 0 {
                if successor[index] == 0xFF { successor[index] = 0; index -= 1 } else { successor[index] += 1; break }
            }
            if index < 0 { return result }
            from = successor
        }
    }
}

/// One view table's records by the table's own keys, as raw bytes (its codec's key bytes, without
/// the group and part the database's keys carry: ``ViewKeyLayout``): for work that is not about
/// one record type (tests that write damaged records, copies of a table).
///
/// `Sendable`: a table name and a database handle.
struct RawViewTable: Sendable {
    /// The table.
    let table: ViewTable
    /// The generation's database.
    let database: LMDBDatabase<RawBytes, RawBytes>

    /// Stores `value` under the table's key `key`.
    func put(_ key: [UInt8], _ value: [UInt8], _ txn: WriteTransaction) throws {
        try txn.putRaw(database, ViewKeyLayout.key(table, logical: key), value, flags: [])
    }

    /// Removes the record under the table's key `key`; returns false when there was none.
    @discardableResult
    func delete(_ key: [UInt8], _ txn: WriteTransaction) throws -> Bool {
        try txn.deleteRaw(database, ViewKeyLayout.key(table, logical: key))
    }

    /// Calls `body` with the table's records (the table's key, the value) in key order, those
    /// whose key starts with `prefix` (at least a reader's 16 ID bytes) when it is given, until
    /// it returns false.
    func forEach(_ txn: ReadTransaction, prefix: [UInt8]? = nil, _ body: ([UInt8], [UInt8]) throws -> Bool) throws {
        let start = prefix.map { ViewKeyLayout.key(table, logical: $0) }
        try txn.forEachRaw(database, from: start, direction: .forward, prefix: start) { key, value in
            guard let logical = ViewKeyLayout.logical(key, of: table) else { return true }
            return try body(logical, Array(value))
        }
    }

    /// Calls `body` with every record of the table as the database keeps it (the key with the
    /// table's group and part), in key order, until it returns false. Scans the whole database:
    /// for the rarer work on one table (``ReadingStore/rebuild(view:progress:)``, tests).
    func forEachStored(_ txn: ReadTransaction, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        try txn.forEachRaw(database, from: nil, direction: .forward, prefix: nil) { key, value in
            ViewKeyLayout.table(of: key) == table ? try body(key, value) : true
        }
    }

    /// The number of the table's records (a scan of the database).
    func count(_ txn: ReadTransaction) throws -> Int {
        var count = 0
        try forEachStored(txn) { _, _ in count += 1; return true }
        return count
    }

    /// Removes every record of the table (a scan of the database).
    func removeAll(_ txn: WriteTransaction) throws {
        try ViewDatabases.deleteKeys(in: database, prefix: nil, txn) { ViewKeyLayout.table(of: $0) == table }
    }
}

/// One reader's records of every view table, encoded as the tables store them (each table's key
/// and value codec) and in key order: what a rebuild appends, and what ``ViewDigest`` hashes.
/// ``ViewDatabases/records(of:)`` is the one place a reader's views become table records.
///
/// `Sendable`: byte arrays; a rebuild encodes them on a fold worker (or its writing thread) and
/// writes them on the writing thread.
struct ReaderRecords: Sendable {
    /// A record as a table stores it.
    typealias Record = (key: [UInt8], value: [UInt8])
    /// The reader (every key starts with its 16 ID bytes).
    let reader: ReaderID
    /// The records of each table, in ``ViewTable`` order, each table's in strictly increasing key
    /// order (LMDB's default order).
    var tables: [[Record]]
    /// For the tables whose records name replicas (a book's last origin, the reader's and a year's
    /// origins): the values with those origins cleared, one per record of `tables`, when one
    /// differs (nil: the stored values). ``ViewDigest`` hashes these instead.
    var originFree: [[[UInt8]]?]
    /// Events folded into the views (set by a rebuild; 0 otherwise).
    var events = 0
}

extension ViewDatabases {
    /// One reader's views, folded in memory, as the records of every table (see ``ReaderRecords``):
    /// a book view is a summary, a decision record and its details in chunks of
    /// ``ViewRecordCodec/detailsPerChunk`` (as `putBookView` writes them), keyed (reader, book,
    /// chunk number), each chunk encoded by its table's one encoder. A bucket-totals record of zero totals is
    /// left out (reading it or its absence gives the same totals). Months and years are clamped
    /// when encoded (``MonthKey``, ``YearKey``): of two records with one key the later is kept,
    /// as plain puts in that order would leave.
    static func records(of views: SingleReaderViewStore) -> ReaderRecords {
        let reader = views.reader
        let books = views.records(ViewRecords.Books.self)
        var tables: [[ReaderRecords.Record]] = []
        var originFree: [[[UInt8]]?] = []
        tables.reserveCapacity(ViewTable.allCases.count)
        originFree.reserveCapacity(ViewTable.allCases.count)
        func details<Value: DetailChunkValue>(_ codec: Value.Type, _ part: (BookView) -> [Value.Detail]) -> [ReaderRecords.Record] {
            var records: [ReaderRecords.Record] = []
            for (book, view) in books {
                for chunk in ViewRecordCodec.chunked(part(view)) {
                    records.append((ReaderBookIndexKey.encode(((reader, book), chunk.number)), Value.encode(chunk.details)))
                }
            }
            return records
        }
        for table in ViewTable.allCases {
            var records: [ReaderRecords.Record]
            var cleared: [[UInt8]]?
            switch table {
            case .books:
                records = books.map { (ReaderBookKey.encode((reader, $0.key)), BookSummaryValue.encode(($0.record, true))) }
                if books.contains(where: { $0.record.lastOrigin != nil }) {
                    cleared = books.map { var view = $0.record; view.lastOrigin = nil; return BookSummaryValue.encode((view, true)) }
                }
            case .bookEntries: records = details(PageEntryChunkValue.self, \.entries)
            case .bookSessions: records = details(SessionChunkValue.self, \.sessions)
            case .bookSentences: records = details(TextNoteChunkValue.self, \.sentences)
            case .bookMemos: records = details(TextNoteChunkValue.self, \.memos)
            case .decisions:
                records = books.map { (ReaderBookKey.encode((reader, $0.key)), BookStateValue.encode($0.record.decision)) }
            case .days:
                records = views.records(ViewRecords.Days.self).map { (ReaderDayKey.encode((reader, $0.key)), DayTotalValue.encode($0.record)) }
            case .bookDays:
                records = views.records(ViewRecords.BookDays.self).map {
                    (ReaderBookDayKey.encode(((reader, $0.key.book), $0.key.day)), DayTotalValue.encode($0.record))
                }
            case .months:
                records = views.records(ViewRecords.Months.self).map { (ReaderMonthKey.encode((reader, $0.key)), MonthTotalValue.encode($0.record)) }
            case .buckets:
                records = []
                if let totals = views.records(ViewRecords.Buckets.self).first?.record, totals != BucketTotals() { records = [(ReaderIDKey.encode(reader), BucketTotalsValue.encode(totals))] }
            case .runs:
                records = views.records(ViewRecords.Runs.self).map { (ReaderDayKey.encode((reader, $0.key)), StreakRunValue.encode($0.record)) }
            case .readers:
                records = []
                if let view = views.records(ViewRecords.Readers.self).first?.record {
                    records = [(ReaderIDKey.encode(reader), ReaderViewValue.encode(view))]
                    if view.homeOrderOrigin != nil || view.profileOrigin != nil || view.lastEvent?.origin != nil {
                        var shown = view
                        shown.homeOrderOrigin = nil; shown.profileOrigin = nil; shown.lastEvent?.origin = nil
                        cleared = [ReaderViewValue.encode(shown)]
                    }
                }
            case .goals:
                records = views.records(ViewRecords.Goals.self).map { (ReaderBookKey.encode((reader, $0.key)), NoValue.encode(())) }
            case .years:
                let years = views.records(ViewRecords.Years.self)
                records = years.map { (ReaderYearKey.encode((reader, $0.key)), YearViewValue.encode($0.record)) }
                if years.contains(where: { $0.record.challengeOrigin != nil }) {
                    cleared = years.map { var year = $0.record; year.challengeOrigin = nil; return YearViewValue.encode(year) }
                }
            }
            Self.order(&records, &cleared)
            tables.append(records)
            originFree.append(cleared)
        }
        return ReaderRecords(reader: reader, tables: tables, originFree: originFree)
    }

    /// Puts `records` in strictly increasing key order (with `cleared` kept beside them): a
    /// stable sort by key, then of equal keys the last one.
    private static func order(_ records: inout [ReaderRecords.Record], _ cleared: inout [[UInt8]]?) {
        if records.indices.dropFirst().allSatisfy({ compare(records[$0 - 1].key, records[$0].key) < 0 }) { return }
        var indices = Array(records.indices)
        indices.sort { let order = compare(records[$0].key, records[$1].key); return order != 0 ? order < 0 : $0 < $1 }
        var kept: [Int] = []
        for index in indices {
            if let last = kept.last, compare(records[last].key, records[index].key) == 0 { kept[kept.count - 1] = index } else { kept.append(index) }
        }
        records = kept.map { records[$0] }
        cleared = cleared.map { values in kept.map { values[$0] } }
    }

    /// Appends one reader's records (``records(of:)``) to the generation's database with one
    /// sorted bulk append (`MDB_APPEND`, ``databaseRecords(_:)``): every key starts with the
    /// reader's 16 ID bytes, so when readers are written in ID order into a database that holds
    /// only earlier readers, each reader's records come after every stored key. A reader written
    /// out of that order fails with ``LMDBError/Kind/appendOutOfOrder`` (nothing of the batch is
    /// written), never with misplaced records.
    func append(_ records: ReaderRecords, _ txn: WriteTransaction) throws {
        try txn.append(database, encoded: Self.databaseRecords(records))
    }

    /// The book view's tables (their indices in ``ViewTable/allCases`` and the tables) in the
    /// order of their parts, and the other tables in the order of their groups.
    private static let bookTables = ViewTable.allCases.enumerated().filter { $0.element.part != nil }
        .sorted { $0.element.part! < $1.element.part! }
    private static let otherTables = ViewTable.allCases.enumerated().filter { $0.element.part == nil }
        .sorted { $0.element.group < $1.element.group }

    /// One reader's records (each table's in its own key order) with the database's keys
    /// (``ViewKeyLayout``), in the database's key order: the book view's six tables merged book by
    /// book (a book's summary, decision record and detail chunks, in that order), then every
    /// other table in the order of its group.
    static func databaseRecords(_ records: ReaderRecords) -> [ReaderRecords.Record] {
        var result: [ReaderRecords.Record] = []
        result.reserveCapacity(records.tables.reduce(0) { $0 + $1.count })
        var next = [Int](repeating: 0, count: bookTables.count)
        while true {
            // The next record of the lowest book; of one book, the table of the lowest part.
            var lowest: Int?
            for slot in bookTables.indices {
                let table = records.tables[bookTables[slot].offset]
                guard next[slot] < table.count else { continue }
                if let current = lowest {
                    let candidate = table[next[slot]].key[16..<32]
                    if candidate.lexicographicallyPrecedes(records.tables[bookTables[current].offset][next[current]].key[16..<32]) {
                        lowest = slot
                    }
                } else {
                    lowest = slot
                }
            }
            guard let slot = lowest else { break }
            let (index, table) = bookTables[slot]
            let record = records.tables[index][next[slot]]
            result.append((ViewKeyLayout.key(table, logical: record.key), record.value))
            next[slot] += 1
        }
        for (index, table) in otherTables {
            for record in records.tables[index] { result.append((ViewKeyLayout.key(table, logical: record.key), record.value)) }
        }
        return result
    }

    /// Replaces one reader's records (the database may hold other readers) with its views
    /// folded in memory: every record whose key starts with the reader's ID is removed, then the
    /// views are written with plain puts.
    func replace(reader: ReaderID, with views: SingleReaderViewStore, _ txn: WriteTransaction) throws {
        precondition(views.reader == reader, "the views are of another reader")
        try Self.deleteKeys(in: database, prefix: ReaderIDKey.encode(reader), txn)
        for (key, value) in Self.databaseRecords(Self.records(of: views)) { try txn.putRaw(database, key, value, flags: []) }
    }

    /// LMDB's default key order (`memcmp` of the common length, then the shorter first).
    private static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        let length = min(a.count, b.count)
        let common = length == 0 ? 0 : a.withUnsafeBytes { a in b.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, length) } }
        return common != 0 ? Int(common) : a.count - b.count
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
    /// A book view from its summary record, its decision record and its detail chunks, and
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
    /// The details of one book in one table, chunk by chunk in order; a chunk out of place (a gap
    /// in the chunk numbers, or one after a chunk that is not full) or that does not decode is damage.
    private func details<Tag, Value: DetailChunkValue>(_ table: ViewDatabases.Table<ViewKey<ReaderBookIndexKey, Tag>, Value>,
                                                       _ reader: ReaderID, _ book: BookID) throws -> [Value.Detail] {
        var result: [Value.Detail] = []
        let size = ViewRecordCodec.detailsPerChunk
        // Raw cursor steps: the key's reader and book are the prefix, so only its chunk number is
        // read (no identifiers built per record), and the value is decoded straight from the map.
        try txn.forEachRaw(table, from: nil, direction: .forward, prefix: ViewKeyLayout.prefix(Tag.table, reader: reader, book: book)) { key, value in
            guard key.count == 38 else {
                throw EventStoreError.corruptView(detail: "\(table.name): book \(book) has a detail key of \(key.count) bytes, not 38")
            }
            let chunk = UInt32(key[34]) << 24 | UInt32(key[35]) << 16 | UInt32(key[36]) << 8 | UInt32(key[37])
            guard result.count % size == 0, chunk == UInt32(result.count / size) else {
                throw EventStoreError.corruptView(
                    detail: "\(table.name): book \(book) has chunk \(chunk) after \(result.count) details (chunks of \(size), every one but the last full)")
            }
            do {
                result.append(contentsOf: try Value.decodeRecord(value))
            } catch {
                throw EventStoreError.corruptView(detail: "\(table.name): book \(book) chunk \(chunk): \(Value.record): \(error)")
            }
            return true
        }
        return result
    }
    /// The book's persisted decision state alone (`nil` before the book has a view): one small
    /// record, what ``ReadingStore/execute(_:book:context:)`` decides on.
    func decisionState(reader: ReaderID, book: BookID) throws -> BookState? {
        if let known = memo?.bookView(reader: reader, book: book) { return known.decision }
        return try get(tables.decisions, (reader, book))
    }
    /// Writes the view's summary and decision records, and of its detail chunks only those that
    /// differ from what is stored (compared byte for byte): a page record appended to a book
    /// rewrites its last entry chunk, whatever the length of the book's history.
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
    /// it changed, and only the detail chunks that hold a detail that differs from `previous` (none
    /// is encoded or read back otherwise). Falls back to ``putBookView(_:)`` when there is no
    /// `previous`, or when the stored record is not a summary (a whole view of an earlier build,
    /// whose details are not records of their own yet).
    mutating func putBookView(_ view: BookView, replacing previous: BookView?) throws {
        let key = (view.reader, view.book)
        // A view the memo knows is stored as a summary already (read as one, or written by this
        // build), so its format byte need not be read.
        guard let previous, previous.reader == view.reader, previous.book == view.book,
              try memo?.knowsBook(reader: view.reader, book: view.book) == true
                || txn.rawValue(tables.books, ViewKey<ReaderBookKey, BooksTable>.encode(key))?.first == ViewRecordCodec.summaryFormat else {
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
    /// Writes the chunks of `new` that differ from the same chunks of `old` and deletes the chunks
    /// past the new end.
    private func putChanged<Tag, Value: DetailChunkValue>(_ w: WriteTransaction, _ table: ViewDatabases.Table<ViewKey<ReaderBookIndexKey, Tag>, Value>,
                                                     _ view: BookView, _ new: [Value.Detail], _ old: [Value.Detail]) throws {
        let size = ViewRecordCodec.detailsPerChunk
        let chunks = ViewRecordCodec.chunked(new)
        for (number, details) in chunks {
            let start = Int(number) * size
            if details != old[min(old.count, start)..<min(old.count, start + size)] {
                try w.put(table, ((view.reader, view.book), number), details)
            }
        }
        for number in chunks.count..<max(chunks.count, (old.count + size - 1) / size) {
            try w.delete(table, ((view.reader, view.book), UInt32(number)))
        }
    }
    private func putDetails<Tag, Value: DetailChunkValue>(_ w: WriteTransaction, _ table: ViewDatabases.Table<ViewKey<ReaderBookIndexKey, Tag>, Value>,
                                                     _ view: BookView, _ items: [Value.Detail]) throws {
        let records = ViewRecordCodec.chunked(items).map { Value.encode($0.details) }
        var same = [Bool](repeating: false, count: records.count)
        var stale: [UInt32] = []
        try w.forEachRaw(table, from: nil, direction: .forward, prefix: ViewKeyLayout.prefix(Tag.table, reader: view.reader, book: view.book)) { key, value in
            let number = Int(try BigEndianUInt32.decode(UnsafeRawBufferPointer(rebasing: key[34...])))
            if number < records.count { same[number] = records[number].elementsEqual(value) } else { stale.append(UInt32(number)) }
            return true
        }
        for (number, record) in records.enumerated() where !same[number] {
            try w.putRaw(table, ViewKey<ReaderBookIndexKey, Tag>.encode(((view.reader, view.book), UInt32(number))), record, flags: [])
        }
        for number in stale { try w.delete(table, ((view.reader, view.book), number)) }
    }
    func bookViews(reader: ReaderID) throws -> [BookView] {
        var result: [BookView] = []
        // The reader's book records of every part: the summaries are the keys of part 0.
        try reading(tables.books) {
            try txn.forEachRaw(tables.books, from: nil, direction: .forward, prefix: ViewKeyLayout.prefix(.books, reader: reader)) { key, value in
                guard ViewKeyLayout.table(of: key) == .books else { return true }
                let (reader, book) = try ViewKey<ReaderBookKey, BooksTable>.decode(key)
                result.append(try assemble(reader: reader, book: book, summary: try BookSummaryValue.decode(value)).view)
                return true
            }
        }
        return result
    }

    func dayTotal(reader: ReaderID, day: LocalDate) throws -> DayTotal {
        try get(tables.days, (reader, day)) ?? DayTotal()
    }
    mutating func putDayTotal(reader: ReaderID, day: LocalDate, _ total: DayTotal) throws {
        if total.isZero { try writer.delete(tables.days, (reader, day)) } else { try writer.put(tables.days, (reader, day), total) }
    }

    func bookDayTotal(reader: ReaderID, book: BookID, day: LocalDate) throws -> DayTotal {
        try get(tables.bookDays, ((reader, book), day)) ?? DayTotal()
    }
    mutating func putBookDayTotal(reader: ReaderID, book: BookID, day: LocalDate, _ total: DayTotal) throws {
        let key = ((reader, book), day)
        if total.isZero { try writer.delete(tables.bookDays, key) } else { try writer.put(tables.bookDays, key, total) }
    }

    func monthTotal(reader: ReaderID, month: YearMonth) throws -> MonthTotal {
        try get(tables.months, (reader, month)) ?? MonthTotal()
    }
    mutating func putMonthTotal(reader: ReaderID, month: YearMonth, _ total: MonthTotal) throws {
        if total == MonthTotal() { try writer.delete(tables.months, (reader, month)) } else { try writer.put(tables.months, (reader, month), total) }
    }

    func bucketTotals(reader: ReaderID) throws -> BucketTotals {
        try get(tables.buckets, reader) ?? BucketTotals()
    }
    mutating func putBucketTotals(reader: ReaderID, _ totals: BucketTotals) throws {
        try writer.put(tables.buckets, reader, totals)
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

    // The store's generic requirements: each table's records through its typed table. A call
    // through `AnyViewStore` (the cache's misses and flush) runs these unspecialized, which costs
    // run-time metadata look-ups (Optional and tuple types) at each call. The casts
    // are identities (`_identityCast`: a check that the two types are one, no dynamic cast): `T`
    // is the table `T.kind` names, and a table type that names another's kind stops at the check.

    func record<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        switch T.kind {
        case .books: return _identityCast(try bookView(reader: reader, book: _identityCast(key, to: BookID.self)), to: T.Record?.self)
        case .days: return _identityCast(try get(tables.days, (reader, _identityCast(key, to: LocalDate.self))), to: T.Record?.self)
        case .bookDays:
            let key = _identityCast(key, to: BookDayKey.self)
            return _identityCast(try get(tables.bookDays, ((reader, key.book), key.day)), to: T.Record?.self)
        case .months: return _identityCast(try get(tables.months, (reader, _identityCast(key, to: YearMonth.self))), to: T.Record?.self)
        case .buckets: return _identityCast(try get(tables.buckets, reader), to: T.Record?.self)
        case .runs: return _identityCast(try get(tables.runs, (reader, _identityCast(key, to: LocalDate.self))), to: T.Record?.self)
        case .goals: return _identityCast(try get(tables.goals, (reader, _identityCast(key, to: BookID.self))).map { PresenceRecord() }, to: T.Record?.self)
        case .years: return _identityCast(try get(tables.years, (reader, _identityCast(key, to: Int.self))), to: T.Record?.self)
        case .readers: return _identityCast(try readerView(reader: reader), to: T.Record?.self)
        }
    }

    mutating func putRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record?,
                                                replacing previous: T.Record?) throws {
        let record = consume record
        switch T.kind {
        case .books:
            guard let view = _identityCast(record, to: BookView?.self) else { throw EventStoreError.invalidArgument(field: "record", detail: "a book view is never removed") }
            if let previous { try putBookView(view, replacing: (_identityCast(previous, to: BookView.self))) } else { try putBookView(view) }
        case .days: try put(tables.days, (reader, _identityCast(key, to: LocalDate.self)), _identityCast(record, to: DayTotal?.self))
        case .bookDays:
            let key = _identityCast(key, to: BookDayKey.self)
            try put(tables.bookDays, ((reader, key.book), key.day), _identityCast(record, to: DayTotal?.self))
        case .months: try put(tables.months, (reader, _identityCast(key, to: YearMonth.self)), _identityCast(record, to: MonthTotal?.self))
        case .buckets: try put(tables.buckets, reader, _identityCast(record, to: BucketTotals?.self))
        case .runs: try put(tables.runs, (reader, _identityCast(key, to: LocalDate.self)), _identityCast(record, to: StreakRun?.self))
        case .goals: try put(tables.goals, (reader, _identityCast(key, to: BookID.self)), record == nil ? nil : ())
        case .years: try put(tables.years, (reader, _identityCast(key, to: Int.self)), _identityCast(record, to: YearView?.self))
        case .readers:
            guard let view = _identityCast(record, to: ReaderView?.self) else { throw EventStoreError.invalidArgument(field: "record", detail: "a reader's record is never removed") }
            try putReaderView(reader: reader, view)
        }
    }
    /// Puts `value` under `key` in `table`, or deletes the key when it is `nil`.
    private func put<Key, Value>(_ table: ViewDatabases.Table<Key, Value>, _ key: Key.Item, _ value: Value.Item?) throws {
        if let value { try writer.put(table, key, value) } else { try writer.delete(table, key) }
    }

    func forEachRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?, reverse: Bool,
                                           _ body: (T.Key, T.Record) throws -> Bool) throws {
        /// `body` with the table's own key and record types.
        func each<Item, Record>(_ item: Item, _ record: Record) throws -> Bool {
            try body(_identityCast(item, to: T.Key.self), _identityCast(record, to: T.Record.self))
        }
        /// A bound as the table's own key type.
        func bound<Item>(_ key: T.Key?, _ type: Item.Type) -> Item? { _identityCast(key, to: Item?.self) }
        switch T.kind {
        case .books:
            var views = try bookViews(reader: reader, from: bound(from, BookID.self), through: bound(through, BookID.self))
            if reverse { views.reverse() }
            for view in views where try !each(view.book, view) { return }
        case .days:
            try scan(tables.days, .days, reader, bound(from, LocalDate.self), bound(through, LocalDate.self), reverse, { (reader, $0) }, { $0.1 }, each)
        case .bookDays:
            let lower = bound(from, BookDayKey.self), upper = bound(through, BookDayKey.self)
            try scan(tables.bookDays, prefix: bookDaysPrefix(reader, lower, upper), lower, upper, reverse, { ((reader, $0.book), $0.day) },
                     { BookDayKey(book: $0.0.1, day: $0.1) }, each)
        case .months:
            try scan(tables.months, .months, reader, bound(from, YearMonth.self), bound(through, YearMonth.self), reverse, { (reader, $0) }, { $0.1 }, each)
        case .buckets:
            if let totals = try get(tables.buckets, reader) { _ = try each(ReaderRecordKey(), totals) }
        case .runs:
            try scan(tables.runs, .runs, reader, bound(from, LocalDate.self), bound(through, LocalDate.self), reverse, { (reader, $0) }, { $0.1 }, each)
        case .goals:
            try scan(tables.goals, .goals, reader, bound(from, BookID.self), bound(through, BookID.self), reverse, { (reader, $0) }, { $0.1 }) { book, _ in
                try each(book, PresenceRecord())
            }
        case .years:
            try scan(tables.years, .years, reader, bound(from, Int.self), bound(through, Int.self), reverse, { (reader, $0) }, { $0.1 }, each)
        case .readers:
            if let view = try readerView(reader: reader) { _ = try each(ReaderRecordKey(), view) }
        }
    }
    /// The records in one pass of the table's own types, then one cast of the whole array (a query
    /// through `any ViewStore` runs this specialized scan instead of a generic call per record).
    func records<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?) throws
        -> [(key: T.Key, record: T.Record)] {
        /// The array as the table's own array type (the same type: `T` is the table of `T.kind`).
        func typed<Key, Record>(_ records: [(key: Key, record: Record)]) -> [(key: T.Key, record: T.Record)] {
            _identityCast(records, to: [(key: T.Key, record: T.Record)].self)
        }
        func bound<Item>(_ key: T.Key?, _ type: Item.Type) -> Item? { _identityCast(key, to: Item?.self) }
        func prefix(_ table: ViewTable) -> [UInt8] { ViewKeyLayout.prefix(table, reader: reader) }
        switch T.kind {
        case .days:
            return typed(try collect(tables.days, prefix: prefix(.days),
                                     bound(from, LocalDate.self), bound(through, LocalDate.self), { (reader, $0) }, { $0.1 }))
        case .bookDays:
            let lower = bound(from, BookDayKey.self), upper = bound(through, BookDayKey.self)
            return typed(try collect(tables.bookDays, prefix: bookDaysPrefix(reader, lower, upper), lower, upper,
                                     { ((reader, $0.book), $0.day) }, { BookDayKey(book: $0.0.1, day: $0.1) }))
        case .months:
            return typed(try collect(tables.months, prefix: prefix(.months),
                                     bound(from, YearMonth.self), bound(through, YearMonth.self), { (reader, $0) }, { $0.1 }))
        case .runs:
            return typed(try collect(tables.runs, prefix: prefix(.runs),
                                     bound(from, LocalDate.self), bound(through, LocalDate.self), { (reader, $0) }, { $0.1 }))
        case .years:
            return typed(try collect(tables.years, prefix: prefix(.years),
                                     bound(from, Int.self), bound(through, Int.self), { (reader, $0) }, { $0.1 }))
        case .books:
            return typed(try bookViews(reader: reader, from: bound(from, BookID.self), through: bound(through, BookID.self)).map { ($0.book, $0) })
        case .goals:
            return typed(try collect(tables.goals, prefix: prefix(.goals),
                                     bound(from, BookID.self), bound(through, BookID.self), { (reader, $0) }, { $0.1 })
                .map { (key: $0.key, record: PresenceRecord()) })
        case .buckets, .readers:
            var result: [(key: T.Key, record: T.Record)] = []
            try forEachRecord(table, reader: reader, from: from, through: through, reverse: false) { key, record in
                result.append((key, record))
                return true
            }
            return result
        }
    }

    /// Collects one scan of `table` under `prefix` (a reader's range, or one book's), in order. A
    /// method, not a function nested in ``records(_:reader:from:through:)``: nested there it would
    /// share the generic table parameter of its caller, and the optimizer specializes no call that still has one, so
    /// the scan and the codecs under it would run unspecialized (twice the instructions of a
    /// calendar month, `Scripts/query-instructions.sh`).
    private func collect<Key, Value, Item: Comparable>(
        _ table: ViewDatabases.Table<Key, Value>, prefix: [UInt8], _ lower: Item?, _ upper: Item?,
        _ seek: (Item) -> Key.Item, _ item: (Key.Item) -> Item
    ) throws -> [(key: Item, record: Value.Item)] {
        var result: [(key: Item, record: Value.Item)] = []
        try scan(table, prefix: prefix, lower, upper, false, seek, item) { key, record in
            result.append((key, record))
            return true
        }
        return result
    }
    /// The reader's book views with books in `from ... through` (an absent bound: unbounded), in book order.
    private func bookViews(reader: ReaderID, from: BookID?, through: BookID?) throws -> [BookView] {
        let views = try bookViews(reader: reader)
        guard from != nil || through != nil else { return views }
        return views.filter { view in (from.map { $0 <= view.book } ?? true) && (through.map { view.book <= $0 } ?? true) }
    }
    /// The key prefix a scan of book-day totals between `lower` and `upper` seeks within: one book's
    /// range when both bounds name the same book (the only scan the views ask for), else the reader's.
    private func bookDaysPrefix(_ reader: ReaderID, _ lower: BookDayKey?, _ upper: BookDayKey?) -> [UInt8] {
        if let book = lower?.book, book == upper?.book { return ViewKeyLayout.prefix(.bookDays, reader: reader, book: book) }
        return ViewKeyLayout.prefix(.bookDays, reader: reader)
    }
    /// ``scan(_:prefix:_:_:_:_:_:_:)`` over one reader's range of `viewTable`.
    private func scan<Key, Value, Item: Comparable>(
        _ table: ViewDatabases.Table<Key, Value>, _ viewTable: ViewTable, _ reader: ReaderID, _ from: Item?, _ through: Item?, _ reverse: Bool,
        _ seek: (Item) -> Key.Item, _ item: (Key.Item) -> Item, _ body: (Item, Value.Item) throws -> Bool
    ) throws {
        try scan(table, prefix: ViewKeyLayout.prefix(viewTable, reader: reader), from, through, reverse, seek, item, body)
    }
    /// Calls `body` with the records of `table` under `prefix` whose items lie in `from ... through`,
    /// in order or reversed, until it returns `false`.
    private func scan<Key, Value, Item: Comparable>(
        _ table: ViewDatabases.Table<Key, Value>, prefix: [UInt8], _ from: Item?, _ through: Item?, _ reverse: Bool,
        _ seek: (Item) -> Key.Item, _ item: (Key.Item) -> Item, _ body: (Item, Value.Item) throws -> Bool
    ) throws {
        if reverse {
            try forEach(table, from: through.map(seek), direction: .backward, prefix: prefix) { key, value in
                let item = item(key)
                if let from, item < from { return false }
                return try body(item, value)
            }
        } else {
            try forEach(table, from: from.map(seek), direction: .forward, prefix: prefix) { key, value in
                let item = item(key)
                if let through, through < item { return false }
                return try body(item, value)
            }
        }
    }

    func readers() throws -> [ReaderID] { try tables.readersWithRecord(txn) }
}
