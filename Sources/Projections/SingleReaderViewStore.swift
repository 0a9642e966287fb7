import ReadingEvents

/// The views of one reader, held in memory: what a rebuild folds one reader's events into before
/// it writes the reader's records to disk in key order.
///
/// It keeps exactly the records a persisted store would keep after the same writes (a zero day,
/// book-day or month total, an empty year and an inactive goal are removed; book views, bucket
/// totals and the reader's record are kept once written), so writing its contents gives the
/// same tables as folding the same events through the persisted store.
///
/// Reads for another reader find nothing; writes for another reader throw
/// ``SingleReaderViewStore/OtherReader`` (a fold of one reader's events never makes them).
///
/// `Sendable`: a value type whose tables are copied on write. Equal when the reader and the
/// records are (whatever the order they were written in).
public struct SingleReaderViewStore: ViewStore, Sendable, Hashable {
    /// A write for a reader other than the store's (nothing is written).
    ///
    /// `Sendable`: identifiers only.
    public struct OtherReader: Error, Sendable, CustomStringConvertible {
        /// The store's reader.
        public let expected: ReaderID
        /// The reader of the refused write.
        public let found: ReaderID
        /// Names the field and the rule.
        public var description: String {
            "reader: a store of reader \(expected) holds only that reader's views, and was given a write for reader \(found)"
        }
    }

    /// A book's total on one day, keyed as the persisted table is: book, then day.
    public typealias BookDay = BookDayKey

    /// The reader whose views these are.
    public let reader: ReaderID
    /// Every table's records, keyed by the table's own key (``RecordTables``).
    @usableFromInline var tables = RecordTables()

    /// An empty store for `reader`.
    public init(reader: ReaderID) { self.reader = reader }

    private func check(_ other: ReaderID) throws(OtherReader) {
        if other != reader { throw OtherReader(expected: reader, found: other) }
    }

    public func record<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        guard reader == self.reader else { return nil }
        return tables.slots(table, keyedBy: T.Key.self)?.slots.record(key)
    }
    /// Empties the record's slot while the caller changes it (see ``ViewStore/takeRecord(_:reader:_:)``).
    public mutating func takeRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        guard reader == self.reader else { return nil }
        return tables.box(table, keyedBy: T.Key.self).slots.take(key)
    }
    /// Puts a taken record back.
    public mutating func restoreRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record) throws {
        try putRecord(table, reader: reader, key, record, replacing: nil)
    }
    public mutating func putRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record?,
                                                       replacing previous: T.Record?) throws {
        try check(reader)
        tables.box(table, keyedBy: T.Key.self).slots.set(key, record)
    }
    @inlinable
    public func forEachRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?, reverse: Bool,
                                                  _ body: (T.Key, T.Record) throws -> Bool) throws {
        guard reader == self.reader, let box = tables.slots(table, keyedBy: T.Key.self) else { return }
        try box.slots.forEach(from: from, through: through, reverse: reverse, body)
    }
    /// Collected in code specialized for the table (``RecordTables/records(_:from:through:)``).
    public func records<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?) throws
        -> [(key: T.Key, record: T.Record)] {
        guard reader == self.reader else { return [] }
        return try tables.records(table, from: from, through: through)
    }
    public func readers() throws -> [ReaderID] { try readerView(reader: reader) == nil ? [] : [reader] }

    /// The records of `table`, in key order.
    @inlinable
    public func records<T: ViewRecordTable>(_ table: T.Type) -> [(key: T.Key, record: T.Record)] {
        (try? records(table, reader: reader)) ?? []
    }
    /// Whether no table holds a record.
    public var isEmpty: Bool { tables.count == 0 }

    public static func == (lhs: SingleReaderViewStore, rhs: SingleReaderViewStore) -> Bool {
        lhs.reader == rhs.reader && lhs.tables.hasContents(of: rhs.tables)
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(reader)
        tables.hashContents(into: &hasher)
    }

    /// Folds one event into these views with `projector` (``ReadingProjector/apply(_:to:)``).
    ///
    /// The same call as `projector.apply(envelope, to: &views)`, made inside this module so the
    /// projector's generic fold is specialized for this store: called from another module it
    /// would run unspecialized, through the protocol's witness table, at every record access.
    @discardableResult
    public mutating func apply(_ envelope: EventEnvelope, with projector: ReadingProjector) throws -> ReadingProjector.Outcome {
        try projector.apply(envelope, to: &self)
    }
}
