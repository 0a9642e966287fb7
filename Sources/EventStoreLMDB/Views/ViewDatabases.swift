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
    /// The names in errors of the tables of view records (``ViewRecordKind`` order).
    private let recordTableNames: [String]

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
        books = open(.books); decisions = open(.decisions)
        recordTableNames = ViewRecordKind.allCases.map { Self.name(ViewTable.of($0), generation: generation) }
        bookEntries = open(.bookEntries); bookSessions = open(.bookSessions)
        bookSentences = open(.bookSentences); bookMemos = open(.bookMemos)
    }

    /// The generation's database as table `T` (raw bytes, named `views.gN.TABLE` in errors): every
    /// table of view records but a book view's is read and written through it, with the key and
    /// record bytes its table type declares (``ViewKeyLayout/key(_:reader:_:)``,
    /// ``ViewRecordTable/encodeRecord(_:)``).
    func database<T: ViewRecordTable>(of table: T.Type) -> LMDBDatabase<RawBytes, RawBytes> {
        database.table(named: recordTableNames[T.kind.rawValue])
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
            if let kind = table.recordKind {
                var encode = EncodeTable(views: views)
                try! kind.visit(&encode)  // EncodeTable.visit does not throw
                (records, cleared) = (encode.records, encode.cleared)
            } else if table == .decisions {
                records = books.map { (ReaderBookKey.encode((reader, $0.key)), BookStateValue.encode($0.record.decision)) }
            } else if table == .bookEntries {
                records = details(PageEntryChunkValue.self, \.entries)
            } else if table == .bookSessions {
                records = details(SessionChunkValue.self, \.sessions)
            } else if table == .bookSentences {
                records = details(TextNoteChunkValue.self, \.sentences)
            } else {
                precondition(table == .bookMemos, "\(table) is neither a table of view records nor a part of a book view")
                records = details(TextNoteChunkValue.self, \.memos)
            }
            Self.order(&records, &cleared)
            tables.append(records)
            originFree.append(cleared)
        }
        return ReaderRecords(reader: reader, tables: tables, originFree: originFree)
    }

    /// One table's records as the table stores them: the bytes its table type declares,
    /// the records that read as their absence left out, and the values with their origins cleared
    /// when one names any.
    private struct EncodeTable: ViewRecordTableVisitor {
        let views: SingleReaderViewStore
        var records: [ReaderRecords.Record] = []
        var cleared: [[UInt8]]?
        init(views: SingleReaderViewStore) { self.views = views }
        mutating func visit<T: ViewRecordTable>(_ table: T.Type) {
            let kept = views.records(T.self).filter { T.isKept($0.record) }
            records = kept.map { (ViewKeyLayout.logical(T.self, reader: views.reader, $0.key), T.encodeRecord($0.record)) }
            if kept.contains(where: { T.withoutOrigins($0.record) != nil }) {
                cleared = kept.map { T.encodeRecord(T.withoutOrigins($0.record) ?? $0.record) }
            }
        }
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

    func readerView(reader: ReaderID) throws -> ReaderView? {
        if let known = memo?.readerView(reader) { return known }
        let view = try stored(ViewRecords.Readers.self, reader, ReaderRecordKey())
        if let view { memo?.note(reader: reader, view) }
        return view
    }
    mutating func putReaderView(reader: ReaderID, _ view: ReaderView) throws {
        try store(ViewRecords.Readers.self, reader, ReaderRecordKey(), view)
        memo?.note(reader: reader, view)
    }

    // The store's generic requirements. Every table but a book view's is read and written as the
    // bytes its table type declares (``stored(_:_:_:)``, ``store(_:_:_:_:)``, ``scan(_:_:_:_:_:_:)``),
    // with no code of its own here. A book view is six tables (its summary,
    // its decision state, its details in chunks), and the write transaction's memo serves book
    // views and reader records: those two are the only tables named. A call through
    // `AnyViewStore` (the cache's misses and flush) runs these unspecialized. The casts are
    // identities (`_identityCast`: a check that the two types are one, no dynamic cast): `T` is
    // the table `T.kind` names.

    func record<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        if T.kind == .books { return _identityCast(try bookView(reader: reader, book: _identityCast(key, to: BookID.self)), to: T.Record?.self) }
        if T.kind == .readers { return _identityCast(try readerView(reader: reader), to: T.Record?.self) }
        return try stored(T.self, reader, key)
    }

    mutating func putRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record?,
                                                replacing previous: T.Record?) throws {
        let record = consume record
        if T.kind == .books {
            guard let view = _identityCast(record, to: BookView?.self) else { throw EventStoreError.invalidArgument(field: "record", detail: "a book view is never removed") }
            if let previous { try putBookView(view, replacing: (_identityCast(previous, to: BookView.self))) } else { try putBookView(view) }
        } else if T.kind == .readers {
            guard let view = _identityCast(record, to: ReaderView?.self) else { throw EventStoreError.invalidArgument(field: "record", detail: "a reader's record is never removed") }
            try putReaderView(reader: reader, view)
        } else {
            try store(T.self, reader, key, record)
        }
    }

    func forEachRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?, reverse: Bool,
                                           _ body: (T.Key, T.Record) throws -> Bool) throws {
        if T.kind == .books {
            var views = try bookViews(reader: reader, from: _identityCast(from, to: BookID?.self), through: _identityCast(through, to: BookID?.self))
            if reverse { views.reverse() }
            for view in views where try !body(_identityCast(view.book, to: T.Key.self), _identityCast(view, to: T.Record.self)) { return }
            return
        }
        try scan(T.self, reader, from, through, reverse, body)
    }
    /// The records in one pass of the table's own types (a query through `any ViewStore` runs this
    /// specialized scan instead of a generic call per record).
    func records<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?) throws
        -> [(key: T.Key, record: T.Record)] {
        if T.kind == .books {
            let views = try bookViews(reader: reader, from: _identityCast(from, to: BookID?.self), through: _identityCast(through, to: BookID?.self))
            return _identityCast(views.map { (key: $0.book, record: $0) }, to: [(key: T.Key, record: T.Record)].self)
        }
        let database = tables.database(of: T.self)
        do {
            return try T.collectRecords(keyOffset: ViewKeyLayout.ownKeyOffset, from: from, through: through, rawScan(database, T.self, reader, from, through, false))
        } catch let error as ViewDecodingError {
            throw Self.damaged(database, error)
        }
    }

    /// `T`'s record `key` of `reader`, or `nil`; a record that does not decode is a damaged view.
    /// Generic over the table type alone (no codec or tuple types): called unspecialized, it
    /// needs only the table type's witnesses.
    private func stored<T: ViewRecordTable>(_ table: T.Type, _ reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        let database = tables.database(of: T.self)
        guard let bytes = try txn.rawValue(database, ViewKeyLayout.key(T.self, reader: reader, key)) else { return nil }
        do throws(ViewDecodingError) { return try T.decodeRecord(bytes) } catch { throw Self.damaged(database, error) }
    }
    /// Writes `T`'s record `key` of `reader`, or deletes it when `record` is `nil`.
    private func store<T: ViewRecordTable>(_ table: T.Type, _ reader: ReaderID, _ key: T.Key, _ record: T.Record?) throws {
        let database = tables.database(of: T.self)
        let key = ViewKeyLayout.key(T.self, reader: reader, key)
        if let record { try writer.putRaw(database, key, T.encodeRecord(record), flags: []) } else { _ = try writer.deleteRaw(database, key) }
    }
    /// Calls `body` with `reader`'s records of `T` whose keys lie in `from ... through` (an absent
    /// bound: unbounded), in key order or reversed, until it returns `false`; a key or record that
    /// does not decode is a damaged view. The table type decodes
    /// (``ViewRecordTable/scanRecords(keyOffset:from:through:reverse:_:_:)``, specialized for it).
    private func scan<T: ViewRecordTable>(_ table: T.Type, _ reader: ReaderID, _ from: T.Key?, _ through: T.Key?, _ reverse: Bool,
                                          _ body: (T.Key, T.Record) throws -> Bool) throws {
        let database = tables.database(of: T.self)
        do {
            try T.scanRecords(keyOffset: ViewKeyLayout.ownKeyOffset, from: from, through: through, reverse: reverse, rawScan(database, T.self, reader, from, through, reverse), body)
        } catch let error as ViewDecodingError {
            throw Self.damaged(database, error)
        }
    }
    /// The cursor walk over `reader`'s keys of `T` from the bound a scan starts at, within the
    /// bytes the bounds share (every key between two keys starts with their common prefix).
    private func rawScan<T: ViewRecordTable>(_ database: LMDBDatabase<RawBytes, RawBytes>, _ table: T.Type, _ reader: ReaderID,
                                             _ from: T.Key?, _ through: T.Key?, _ reverse: Bool)
        -> ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Void {
        let start = (reverse ? through : from).map { ViewKeyLayout.key(T.self, reader: reader, $0) }
        let prefix = ViewKeyLayout.prefix(T.self, reader: reader, from: from, through: through)
        return { [txn] visit in try txn.forEachRaw(database, from: start, direction: reverse ? .backward : .forward, prefix: prefix, visit) }
    }
    /// A damaged view: the table, what did not decode (a record's field, or the key's) and the rule.
    private static func damaged(_ database: LMDBDatabase<RawBytes, RawBytes>, _ error: ViewDecodingError) -> EventStoreError {
        .corruptView(detail: "\(database.name): \(error)")
    }

    /// The reader's book views with books in `from ... through` (an absent bound: unbounded), in book order.
    private func bookViews(reader: ReaderID, from: BookID?, through: BookID?) throws -> [BookView] {
        let views = try bookViews(reader: reader)
        guard from != nil || through != nil else { return views }
        return views.filter { view in (from.map { $0 <= view.book } ?? true) && (through.map { view.book <= $0 } ?? true) }
    }
    func readers() throws -> [ReaderID] { try tables.readersWithRecord(txn) }
}
