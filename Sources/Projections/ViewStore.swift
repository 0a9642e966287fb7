import ReadingEvents

/// Where the views live: keyed records that a fold reads and writes one at a time, so the cost of
/// folding one event depends on what the event touches, never on the length of the history.
///
/// A store holds the tables of ``ViewRecords`` for each reader and implements seven generic
/// requirements: a point read, a point write (`nil` removes), a take-and-restore pair for records
/// the fold changes in place, an ordered scan, the same scan collected, and the list of readers. What each view reads and
/// writes (``bookView(reader:book:)``, ``putDayTotal(reader:day:_:)``, ...) is written once, in
/// this protocol's extension, over those requirements: a zero total or an empty year is removed,
/// a missing total reads as zero, in every store alike.
///
/// ``InMemoryViewStore`` and ``SingleReaderViewStore`` implement it in memory; the LMDB store
/// implements it inside its write transaction, so views are written in the same transaction as the
/// events they fold. ``CachingViewStore`` and ``AnyViewStore`` wrap any store without code of
/// their own per table. Every method is scoped to one reader.
public protocol ViewStore {
    /// The record under `key` in `table`, if there is one.
    func record<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record?
    /// The record under `key`, read to be changed and then given back at once: with
    /// ``putRecord(_:reader:_:_:replacing:)`` after a change, or unchanged with
    /// ``restoreRecord(_:reader:_:_:)``; no other read of the record may come between. A store
    /// that keeps records in memory hands the record over without keeping a reference meanwhile,
    /// so changing it copies none of its arrays (the fold changes a book view once per event).
    mutating func takeRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record?
    /// Gives back, unchanged, a record taken with ``takeRecord(_:reader:_:)``: nothing is written.
    mutating func restoreRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record) throws
    /// Stores `record` under `key` (`nil` removes it). `previous`: the record as it was read from
    /// this store, for a table written in parts (``ViewRecordTable/isWrittenInParts``), so that a
    /// store that keeps the record in parts writes only the parts that differ (`nil`: unknown or
    /// absent).
    mutating func putRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record?,
                                                replacing previous: T.Record?) throws
    /// Calls `body` with the records of `table` whose keys lie in `from ... through` (an absent
    /// bound: unbounded), in key order, or in reverse key order with `reverse`, until `body`
    /// returns `false`.
    func forEachRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?, reverse: Bool,
                                           _ body: (T.Key, T.Record) throws -> Bool) throws
    /// The records of `table` whose keys lie in `from ... through` (an absent bound: unbounded),
    /// in key order: ``forEachRecord(_:reader:from:through:reverse:_:)`` collected, which a store
    /// may build in one pass of its own (the LMDB store does: a query through `any ViewStore` then
    /// runs its specialized scan, not a generic call per record).
    func records<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?) throws -> [(key: T.Key, record: T.Record)]
    /// Every reader with a ``ViewRecords/Readers`` record, in ID order.
    func readers() throws -> [ReaderID]
}

extension ViewStore {
    /// The default: ``record(_:reader:_:)`` (a store that keeps no records in memory has no
    /// reference to give up).
    public mutating func takeRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        try record(table, reader: reader, key)
    }
    /// The default: nothing (the record was never handed over).
    public mutating func restoreRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record) throws {}

    /// Every record of `table`, in key order.
    @inlinable
    public func records<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID) throws -> [(key: T.Key, record: T.Record)] {
        try records(table, reader: reader, from: nil, through: nil)
    }
    /// The default: ``forEachRecord(_:reader:from:through:reverse:_:)``, collected.
    @inlinable
    public func records<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?) throws
        -> [(key: T.Key, record: T.Record)] {
        var result: [(key: T.Key, record: T.Record)] = []
        try forEachRecord(table, reader: reader, from: from, through: through, reverse: false) { key, record in
            result.append((key, record))
            return true
        }
        return result
    }
}

// The views' rules, written once over the generic requirements.
extension ViewStore {
    /// The view of one book, if the reader ever added it.
    public func bookView(reader: ReaderID, book: BookID) throws -> BookView? { try record(ViewRecords.Books.self, reader: reader, book) }
    /// Stores the view of one book. `consuming`: a store that keeps views in memory keeps the
    /// caller's view itself, so the fold hands its view over without copying it.
    public mutating func putBookView(_ view: consuming BookView) throws {
        let reader = view.reader, book = view.book
        try putRecord(ViewRecords.Books.self, reader: reader, book, view, replacing: nil)
    }
    /// Every book view of the reader, in book-ID order.
    public func bookViews(reader: ReaderID) throws -> [BookView] { try records(ViewRecords.Books.self, reader: reader).map { $0.record } }
    /// The view of one book, read to be changed and then put back: with ``putBookView(_:)``
    /// after a change, or unchanged with ``restoreBookView(_:)`` (``takeRecord(_:reader:_:)``).
    public mutating func takeBookView(reader: ReaderID, book: BookID) throws -> BookView? {
        try takeRecord(ViewRecords.Books.self, reader: reader, book)
    }
    /// Gives back, unchanged, a view taken with ``takeBookView(reader:book:)``: nothing is written.
    public mutating func restoreBookView(_ view: BookView) throws {
        try restoreRecord(ViewRecords.Books.self, reader: view.reader, view.book, view)
    }
    /// Stores the view of one book that was `previous` when it was read from this store (`nil`:
    /// it was not there): a store that keeps a book in parts writes only the parts that differ.
    public mutating func putBookView(_ view: BookView, replacing previous: BookView?) throws {
        try putRecord(ViewRecords.Books.self, reader: view.reader, view.book, view, replacing: previous)
    }

    /// The books of the reader with an active goal (what the home list shows), in book-ID order.
    public func goalBooks(reader: ReaderID) throws -> [BookID] { try records(ViewRecords.Goals.self, reader: reader).map { $0.key } }
    /// Records whether a book has an active goal (in the library, not finished, with a goal).
    public mutating func setGoalBook(reader: ReaderID, book: BookID, active: Bool) throws {
        try putRecord(ViewRecords.Goals.self, reader: reader, book, active ? PresenceRecord() : nil, replacing: nil)
    }

    /// The reader's own record.
    public func readerView(reader: ReaderID) throws -> ReaderView? {
        try record(ViewRecords.Readers.self, reader: reader, ReaderRecordKey())
    }
    /// The reader's own record, read to be changed and then put back with
    /// ``putReaderView(reader:_:)`` at once (the fold changes it for every event).
    public mutating func takeReaderView(reader: ReaderID) throws -> ReaderView? {
        try takeRecord(ViewRecords.Readers.self, reader: reader, ReaderRecordKey())
    }
    /// Stores the reader's own record.
    public mutating func putReaderView(reader: ReaderID, _ view: consuming ReaderView) throws {
        try putRecord(ViewRecords.Readers.self, reader: reader, ReaderRecordKey(), view, replacing: nil)
    }
}
