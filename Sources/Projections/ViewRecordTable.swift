import ReadingEvents

/// Every table of view records: the one list of them, which drives the fold's dispatch to each
/// table's own step, the persisted tables (EventStoreLMDB's `ViewTable`), the view digest,
/// `replay rebuild --view` and the DocC table check. Each table type (``ViewRecords``) is declared
/// in its own file with its record, codecs, typed accessors, fold step and queries.
///
/// The order is the order a store flushes the tables and the fold runs their steps (days before
/// streak runs: the runs' step folds the reading days the days' step found). A raw value is the
/// table's group byte in a store's keys, kept on disk: a new table goes at the end, and no raw
/// value ever changes.
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
    /// ``ViewRecords/Readers``.
    case readers
    /// ``ViewRecords/Goals``.
    case goals
    /// ``ViewRecords/Years``.
    case years

    /// The one line on what the table holds that its table type declares
    /// (``ViewRecordTable/summary``).
    public var summary: String {
        var visitor = SummaryVisitor()
        try! visit(&visitor)  // SummaryVisitor.visit does not throw
        return visitor.summary
    }
}

/// Reads a table type's ``ViewRecordTable/summary``.
private struct SummaryVisitor: ViewRecordTableVisitor {
    var summary = ""
    mutating func visit<T: ViewRecordTable>(_ table: T.Type) { summary = T.summary }
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
        case .readers: try visitor.visit(ViewRecords.Readers.self)
        case .goals: try visitor.visit(ViewRecords.Goals.self)
        case .years: try visitor.visit(ViewRecords.Years.self)
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

    /// One line on what the table holds (`replay rebuild --help`, the docs' table of tables).
    static var summary: String { get }
    /// Folds one fold step's netted changes of the reader's totals into this table
    /// (``ViewDeltas``), after the tables before it in ``ViewRecordKind`` order. The default does
    /// nothing: the book views, the reader's record and the goal list are the projector's own.
    static func fold<S: ViewStore>(_ deltas: inout ViewDeltas, into store: inout S) throws

    // How a store keeps the table as bytes (EventStoreLMDB writes every table through these; a
    // table declares them here, beside its key and record, and needs no code in the store).

    /// The record's name in errors ("DayTotal": `DayTotal.pages at byte 9: ...`).
    static var recordName: String { get }
    /// Appends the bytes of `key`: the table's key after the reader's ID. Byte order (`memcmp`,
    /// then the shorter first) is key order, so the store's ordered scans are key order.
    static func encodeKey(_ key: Key, into bytes: inout [UInt8])
    /// The key in exactly `bytes` (what ``encodeKey(_:into:)`` wrote), with a typed error naming
    /// the key field and the rule otherwise.
    static func decodeKey(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> Key
    /// The bytes a store keeps for `record` (``ViewRecordCodec``'s format).
    static func encodeRecord(_ record: Record) -> [UInt8]
    /// The record in `bytes`, with a typed error naming the field and the rule otherwise.
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> Record
    /// `record` with the origins it keeps for replication cleared (they name replicas, not what a
    /// reader sees, and the store's view digest hashes records without them), or `nil` when it
    /// names none.
    static func withoutOrigins(_ record: Record) -> Record?
    /// Whether a copy of the views written at once (a rebuild) keeps `record`: `false` for a
    /// record that reads as its absence.
    static func isKept(_ record: Record) -> Bool

    /// Decodes the records a store's raw scan visits and calls `body` with those whose keys lie in
    /// `from ... through` (an absent bound: unbounded), until it returns `false`. `scan` walks
    /// the stored records of one reader's range of the table in key order (`reverse`: backwards),
    /// calling its argument with each key's and value's bytes until that returns `false`; a key's
    /// own bytes start at `keyOffset`. A key or a record that does not decode throws a
    /// ``ViewDecodingError`` (a key's field starts with `key`).
    ///
    /// Not meant to be implemented: the default runs specialized for each table type, so a store
    /// that calls it from code generic over the table (through `AnyViewStore`) decodes and
    /// compares with the table's own types, not through run-time generics.
    static func scanRecords(keyOffset: Int, from: Key?, through: Key?, reverse: Bool,
                            _ scan: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Void,
                            _ body: (Key, Record) throws -> Bool) throws
    /// The records of ``scanRecords(keyOffset:from:through:reverse:_:_:)`` collected in key order
    /// (the same default: specialized for each table type).
    static func collectRecords(keyOffset: Int, from: Key?, through: Key?,
                               _ scan: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Void)
        throws -> [(key: Key, record: Record)]
}

extension ViewRecordTable {
    /// The default: cached.
    public static var isCached: Bool { true }
    /// The default: written whole.
    public static var isWrittenInParts: Bool { false }
    /// The default: not scanned by the fold.
    public static var isScannedByTheFold: Bool { false }
    /// The default: the record names no origins.
    public static func withoutOrigins(_ record: Record) -> Record? { nil }
    /// The default: every record is kept.
    public static func isKept(_ record: Record) -> Bool { true }
    /// The default: the table is not one of totals.
    public static func fold<S: ViewStore>(_ deltas: inout ViewDeltas, into store: inout S) throws {}

    /// The default: keys and records decoded with the table's own codecs.
    public static func scanRecords(keyOffset: Int, from: Key?, through: Key?, reverse: Bool,
                                   _ scan: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Void,
                                   _ body: (Key, Record) throws -> Bool) throws {
        // Two non-escaping closures, one calling the other: neither outlives this call.
        try withoutActuallyEscaping(body) { body in
            try scan { keyBytes, value in
                let key = try storedKey(keyBytes, at: keyOffset)
                if reverse, let from, key < from { return false }
                if !reverse, let through, through < key { return false }
                return try body(key, try decodeRecord(value))
            }
        }
    }

    /// The default: ``scanRecords(keyOffset:from:through:reverse:_:_:)`` forward, appended.
    public static func collectRecords(keyOffset: Int, from: Key?, through: Key?,
                                      _ scan: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Void)
        throws -> [(key: Key, record: Record)] {
        var result: [(key: Key, record: Record)] = []
        try scanRecords(keyOffset: keyOffset, from: from, through: through, reverse: false, scan) { key, record in
            result.append((key, record))
            return true
        }
        return result
    }

    /// The key whose own bytes start at `offset` of a stored key, its errors named as a key's.
    private static func storedKey(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(ViewDecodingError) -> Key {
        guard bytes.count >= offset else {
            throw ViewDecodingError(field: "key", offset: 0, problem: "a key of \(bytes.count) bytes, shorter than its table's prefix of \(offset)")
        }
        do {
            return try decodeKey(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        } catch {
            throw ViewDecodingError(field: error.field == "key" ? "key" : "key.\(error.field)", offset: offset + error.offset, problem: error.problem)
        }
    }
}

extension ViewRecordTable where Key == BookID {
    /// The book's 16 ID bytes.
    public static func encodeKey(_ key: BookID, into bytes: inout [UInt8]) { ViewKeyBytes.id(key, into: &bytes) }
    /// The book in exactly 16 bytes.
    public static func decodeKey(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> BookID { try ViewKeyBytes.id(bytes, "book") }
}

extension ViewRecordTable where Key == LocalDate {
    /// The day's 4 bytes (``ViewKeyBytes/day(_:into:)``).
    public static func encodeKey(_ key: LocalDate, into bytes: inout [UInt8]) { ViewKeyBytes.day(key, into: &bytes) }
    /// The day in exactly 4 bytes.
    public static func decodeKey(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> LocalDate { try ViewKeyBytes.day(bytes) }
}

extension ViewRecordTable where Key == ReaderRecordKey {
    /// No bytes: the table has one record per reader.
    public static func encodeKey(_ key: ReaderRecordKey, into bytes: inout [UInt8]) {}
    /// The one key, from no bytes.
    public static func decodeKey(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> ReaderRecordKey {
        try ViewKeyBytes.none(bytes, "key")
        return ReaderRecordKey()
    }
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

/// Every table of view records (the one list of them: ``ViewRecordKind`` names each once). The
/// book views, the goal list and the reader's record are declared here; each table of totals in a
/// file of its own (`Views/`), with its record, codecs, accessors, fold step and queries.
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
        public static var recordName: String { "BookSummary" }
        public static var summary: String { "book-view summaries (metadata, status, goal, finishes, rating, like)" }
        /// The view's summary (``ViewRecordCodec/encodeSummary(_:)``): a store keeps its decision
        /// state and its details in records of their own.
        public static func encodeRecord(_ record: BookView) -> [UInt8] { ViewRecordCodec.encodeSummary(record) }
        /// The view of a summary, with no decision state and no details.
        public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> BookView {
            try ViewRecordCodec.decodeBookSummary(bytes).view
        }
        /// The view without its last folded origin.
        public static func withoutOrigins(_ record: BookView) -> BookView? {
            guard record.lastOrigin != nil else { return nil }
            var view = record
            view.lastOrigin = nil
            return view
        }
    }
    /// The books with an active goal (a set: not cached).
    ///
    /// `Sendable`: a table type.
    public enum Goals: ViewRecordTable {
        public typealias Key = BookID
        public typealias Record = PresenceRecord
        public static var kind: ViewRecordKind { .goals }
        public static var recordName: String { "Presence" }
        public static var summary: String { "the books with an active goal (the home list)" }
        /// No bytes: the key is the whole record.
        public static func encodeRecord(_ record: PresenceRecord) -> [UInt8] { [] }
        /// Any stored bytes read as present.
        public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> PresenceRecord { PresenceRecord() }
        public static var isCached: Bool { false }
    }
    /// The reader's own record (one record; a reader "exists" when it has one).
    ///
    /// `Sendable`: a table type.
    public enum Readers: ViewRecordTable {
        public typealias Key = ReaderRecordKey
        public typealias Record = ReaderView
        public static var kind: ViewRecordKind { .readers }
        public static var recordName: String { "ReaderView" }
        public static var summary: String { "a reader's own record (profile, home order, last event)" }
        public static func encodeRecord(_ record: ReaderView) -> [UInt8] { ViewRecordCodec.encode(record) }
        public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> ReaderView {
            try ViewRecordCodec.decodeReaderView(bytes)
        }
        /// The record without the origins of its home order, its profile and its last event.
        public static func withoutOrigins(_ record: ReaderView) -> ReaderView? {
            guard record.homeOrderOrigin != nil || record.profileOrigin != nil || record.lastEvent?.origin != nil else { return nil }
            var view = record
            view.homeOrderOrigin = nil
            view.profileOrigin = nil
            view.lastEvent?.origin = nil
            return view
        }
    }
}
