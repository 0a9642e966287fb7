import LMDB
import Projections
import ReadingEvents

// Where each view table's records lie in its generation's one LMDB database (views version 8,
// issue 37). Every table's key starts with the reader's 16 ID bytes; in the database the next
// byte is the table's group: 0 for the six tables of a book view, which then have the book's 16
// ID bytes and the table's part, so a book's summary, decision record and detail chunks are
// neighbours; one byte of its own for every other table. A single-event commit then writes one
// B-tree with the reader's records side by side instead of a B-tree path in each of fourteen
// databases (`Scripts/commit-pages.sh`: 24 pages a commit, 38.75 with a database a table).
//
//   book view tables:  reader (16) | 0 | book (16) | part (1) | the rest (a detail's chunk: 4)
//   other tables:      reader (16) | group (1) | the rest of the table's key
//
// Inside one table the order of keys is the order of the table's own keys (fixed bytes are
// inserted at fixed places), so ranges and prefixes of a table are ranges and prefixes here.

/// The keys of the view database: a table's own key (its codec's bytes) with the table's group
/// (and, for a book view's tables, its part) inserted, and back.
///
/// `Sendable`: a namespace.
enum ViewKeyLayout {
    /// The tables in the order of their (group, part): what a key's bytes name.
    private static let tablesByGroup: [UInt8: ViewTable] = Dictionary(
        uniqueKeysWithValues: ViewTable.allCases.filter { $0.part == nil }.map { ($0.group, $0) })
    private static let bookTablesByPart: [UInt8: ViewTable] = Dictionary(
        uniqueKeysWithValues: ViewTable.allCases.compactMap { table in table.part.map { ($0, table) } })

    /// Turns `table`'s own key (or a prefix of it: the reader's 16 bytes, or for a book view's
    /// table the reader's and the book's 32) into the database's key, in place: the one place the
    /// layout is written.
    static func insertGroup(of table: ViewTable, into key: inout [UInt8]) {
        key.insert(table.group, at: min(16, key.count))
        if let part = table.part, key.count > 17 { key.insert(part, at: min(33, key.count)) }
    }

    /// The database's key for `table`'s own key `logical` (see ``insertGroup(of:into:)``).
    static func key(_ table: ViewTable, logical: some Collection<UInt8>) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(logical.count + 2)
        key.append(contentsOf: logical)
        insertGroup(of: table, into: &key)
        return key
    }

    /// The table whose record a database key is; `nil` for a key of no table (too short, or a
    /// group or part no table has).
    static func table(of key: UnsafeRawBufferPointer) -> ViewTable? {
        guard key.count >= 17 else { return nil }
        guard key[16] == 0 else { return tablesByGroup[key[16]] }
        return key.count >= 34 ? bookTablesByPart[key[33]] : nil
    }

    /// `table`'s own key of the database key `key`, or `nil` when `key` is not a key of `table`.
    static func logical(_ key: UnsafeRawBufferPointer, of table: ViewTable) -> [UInt8]? {
        guard Self.table(of: key) == table else { return nil }
        var logical: [UInt8] = []
        logical.reserveCapacity(key.count)
        logical.append(contentsOf: key[0..<16])
        if table.part != nil {
            logical.append(contentsOf: key[17..<33])
            logical.append(contentsOf: key[34...])
        } else {
            logical.append(contentsOf: key[17...])
        }
        return logical
    }

    /// The prefix of every record of `table` for `reader` (for a book view's table, of every
    /// book view table's record of the reader: see ``prefix(_:reader:book:)``).
    static func prefix(_ table: ViewTable, reader: ReaderID) -> [UInt8] { key(table, logical: reader.bytes) }

    /// The prefix of the records of a book view's `table` for one book.
    static func prefix(_ table: ViewTable, reader: ReaderID, book: BookID) -> [UInt8] {
        key(table, logical: reader.bytes + book.bytes)
    }
}

/// Names a view table in a key codec's type (``ViewKey``).
protocol ViewTableTag: Sendable {
    /// The table.
    static var table: ViewTable { get }
}

/// The codec of a view table's keys in the view database: the table's own key codec `Logical`,
/// with the table's group and part (``ViewKeyLayout``) inserted on the way in and checked and
/// removed on the way out. A key of another table does not decode (``LMDBError`` of kind
/// `badValueSize`, which the view store reports as a damaged view).
///
/// Declared without constraints and made a codec where they hold (as ``KeyPair`` and `IDKey`):
/// the metadata of a table's type then needs no conformance look-up at run time (with the
/// constraints on the declaration, the open's first use of the fourteen table types scanned the
/// process's conformance records, about 7M instructions, `Scripts/open-instructions.sh`).
///
/// `Sendable`: a caseless enum.
enum ViewKey<Logical, Tag>: Sendable {}

extension ViewKey: LMDBKeyCodec where Logical: LMDBKeyCodec, Tag: ViewTableTag {}

extension ViewKey: LMDBValueCodec where Logical: LMDBKeyCodec, Tag: ViewTableTag {
    typealias Item = Logical.Item

    /// The table's own key with the group and part inserted in place (one array).
    static func encode(_ item: Item) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(42)
        Logical.encode(item, into: &key)
        ViewKeyLayout.insertGroup(of: Tag.table, into: &key)
        return key
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item {
        guard let logical = ViewKeyLayout.logical(bytes, of: Tag.table) else {
            throw LMDBError.undecodable(codec: "ViewKey<\(Tag.table)>", "a key of \(bytes.count) bytes that is not a key of table \(Tag.table)")
        }
        let result: Result<Item, LMDBError> = logical.withUnsafeBytes { bytes in
            Result { () throws(LMDBError) in try Logical.decode(bytes) }
        }
        return try result.get()
    }
}

// The book view's tables, named in types.
enum BooksTable: ViewTableTag { static var table: ViewTable { .books } }
enum BookEntriesTable: ViewTableTag { static var table: ViewTable { .bookEntries } }
enum BookSessionsTable: ViewTableTag { static var table: ViewTable { .bookSessions } }
enum BookSentencesTable: ViewTableTag { static var table: ViewTable { .bookSentences } }
enum BookMemosTable: ViewTableTag { static var table: ViewTable { .bookMemos } }
enum DecisionsTable: ViewTableTag { static var table: ViewTable { .decisions } }

extension ViewKeyLayout {
    // The keys of a table of view records, written and read with the key bytes its table type
    // declares (``ViewRecordTable/encodeKey(_:into:)``). Functions generic over the table type
    // only, not codec types: called unspecialized (through `AnyViewStore` or `any ViewStore`) they
    // need no run-time metadata of a codec or tuple type, only the table type's own witnesses.

    /// Where a table's own key starts in a database key of a table of its own group (after the
    /// reader's 16 ID bytes and the group byte).
    static let ownKeyOffset = 17

    /// The database key of `T`'s record `key` of `reader` (``logical(_:reader:_:)`` with the
    /// group, and for a book view's summary its part, inserted: ``insertGroup(of:into:)``).
    static func key<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) -> [UInt8] {
        var bytes = logical(T.self, reader: reader, key)
        insertGroup(of: ViewTable.of(T.kind), into: &bytes)
        return bytes
    }

    /// `reader` and `key` as `T`'s own key, without the group (what ``ReaderRecords`` holds).
    static func logical<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(40)
        ViewKeyBytes.id(reader, into: &bytes)
        T.encodeKey(key, into: &bytes)
        return bytes
    }

    /// The prefix of every record of the table of view records `table` for `reader`.
    static func prefix<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(24)
        ViewKeyBytes.id(reader, into: &key)
        insertGroup(of: ViewTable.of(T.kind), into: &key)
        return key
    }

    /// The key prefix a scan of `T` between `from` and `through` seeks within: the reader's range
    /// of the table, narrowed to the bytes the two bounds' keys share (every key between two keys
    /// starts with their common prefix: one book's range of book-day totals, for example).
    static func prefix<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?) -> [UInt8] {
        var prefix = prefix(T.self, reader: reader)
        guard let from, let through else { return prefix }
        var lower: [UInt8] = [], upper: [UInt8] = []
        T.encodeKey(from, into: &lower)
        T.encodeKey(through, into: &upper)
        var index = 0
        while index < lower.count, index < upper.count, lower[index] == upper[index] { index += 1 }
        prefix.append(contentsOf: lower[..<index])
        return prefix
    }
}
