import ReadingEvents

/// The views held in memory: for tests of the folds, and for folding a log in memory (the fresh
/// fold of `verify`). Each reader's records are a ``SingleReaderViewStore``, so a reader's or a
/// book's records are found without walking every record.
///
/// Its methods never fail; they are declared `throws` like the protocol's so that code written
/// against ``ViewStore`` reads the same with either store. Two stores are equal when they hold
/// the same records, whatever the order they were written in.
///
/// `Sendable`: a value type of Sendable values.
public struct InMemoryViewStore: ViewStore, Sendable, Hashable {
    private var byReader: [ReaderID: SingleReaderViewStore] = [:]

    /// An empty store.
    public init() {}

    public func record<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        try byReader[reader]?.record(table, reader: reader, key)
    }
    /// Removes the record while the caller changes it (see ``ViewStore/takeRecord(_:reader:_:)``).
    public mutating func takeRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        try byReader[reader]?.takeRecord(table, reader: reader, key)
    }
    /// Puts a taken record back.
    public mutating func restoreRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record) throws {
        try putRecord(table, reader: reader, key, record, replacing: nil)
    }
    public mutating func putRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record?,
                                                       replacing previous: T.Record?) throws {
        if byReader[reader] == nil {
            guard record != nil else { return }
            byReader[reader] = SingleReaderViewStore(reader: reader)
        }
        try byReader[reader]!.putRecord(table, reader: reader, key, record, replacing: previous)
    }
    public func forEachRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?, reverse: Bool,
                                                  _ body: (T.Key, T.Record) throws -> Bool) throws {
        try byReader[reader]?.forEachRecord(table, reader: reader, from: from, through: through, reverse: reverse, body)
    }
    /// The reader's ``SingleReaderViewStore/records(_:reader:from:through:)``.
    public func records<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?) throws
        -> [(key: T.Key, record: T.Record)] {
        try byReader[reader]?.records(table, reader: reader, from: from, through: through) ?? []
    }
    public func readers() throws -> [ReaderID] {
        try byReader.filter { try $0.value.readerView(reader: $0.key) != nil }.keys.sorted()
    }

    /// The readers' stores that hold a record.
    private var nonEmpty: [ReaderID: SingleReaderViewStore] { byReader.filter { !$0.value.isEmpty } }
    public static func == (lhs: InMemoryViewStore, rhs: InMemoryViewStore) -> Bool { lhs.nonEmpty == rhs.nonEmpty }
    public func hash(into hasher: inout Hasher) { hasher.combine(nonEmpty) }
}
