import Crypto
import Projections
import ReadingEvents

/// A SHA-256 digest of the persisted views: each table's records as the store writes them (keys
/// and values encoded by the table's codecs, ``ViewDatabases``), in table order (``ViewTable``)
/// and key order within a table. Views folded in memory are hashed as the records they would be
/// written as (the same encoder), so the persisted views and a fresh fold give the same digest
/// exactly when they hold the same records, and the digest compares a store's views with a fresh
/// fold without writing anything. A rebuild hashes the bytes it appends, as it appends them.
///
/// Precisely: for each table, in ``ViewTable`` order, the table's name (UTF-8) followed by the
/// SHA-256 of its records in key order, each as its key's length (4 bytes, big-endian), the key,
/// its value's length and the value; the digest is the SHA-256 of that sequence.
///
/// The origins the views keep for replication (a book's last folded origin, the origins of the
/// reader's registers and last event, and of a year's challenge) are hashed as cleared: they name
/// replicas, not what a reader sees, so two stores that imported the same history on their own
/// give the same digest.
///
/// `Sendable`: a namespace.
public enum ViewDigest {
    /// The whole calendar the views can hold (for range reads of every record).
    static let allDays = LocalDate(dayNumber: -719_162)...LocalDate(dayNumber: 2_932_896)
    static let allMonths = YearMonth(year: 1, month: 1)...YearMonth(year: 9999, month: 12)

    /// The hex digest of `views`: every reader's views, read through the ``ViewStore`` protocol
    /// and encoded as the store writes them.
    public static func of(_ views: some ViewStore) throws -> String {
        var digest = Accumulator()
        for reader in try views.readers() { digest.add(ViewDatabases.records(of: try copy(of: reader, in: views))) }
        return digest.finalize()
    }

    /// The views of `reader` in `views`, copied through the protocol into one reader's store:
    /// every table's records, in key order (``ViewRecordKind/visit(_:)``).
    static func copy<Views: ViewStore>(of reader: ReaderID, in views: Views) throws -> SingleReaderViewStore {
        var copy = Copy(reader: reader, views: views, copy: SingleReaderViewStore(reader: reader))
        for kind in ViewRecordKind.allCases { try kind.visit(&copy) }
        return copy.copy
    }

    /// Copies one table at a time.
    private struct Copy<Views: ViewStore>: ViewRecordTableVisitor {
        let reader: ReaderID
        let views: Views
        var copy: SingleReaderViewStore
        mutating func visit<T: ViewRecordTable>(_ table: T.Type) throws {
            for (key, record) in try views.records(table, reader: reader) {
                try copy.putRecord(table, reader: reader, key, record, replacing: nil)
            }
        }
    }

    /// The digest built reader by reader, in reader-ID order (so each table's records arrive in key
    /// order): adding every reader's records in that order gives ``of(_:)``. A rebuild adds the
    /// records it appends.
    ///
    /// Not `Sendable`: it holds swift-crypto's SHA-256 states, which are not `Sendable` on Linux.
    struct Accumulator {
        /// One hash per table, in ``ViewTable`` order.
        private var tables = ViewTable.allCases.map { _ in SHA256() }
        /// A reader's records of one table, framed, hashed with one call.
        private var buffer: [UInt8] = []

        /// An empty digest.
        init() {}

        /// Adds one reader's records (after every reader with a lower ID).
        mutating func add(_ records: ReaderRecords) {
            for index in records.tables.indices where !records.tables[index].isEmpty {
                let entries = records.tables[index], cleared = records.originFree[index]
                buffer.removeAll(keepingCapacity: true)
                for position in entries.indices {
                    let (key, value) = entries[position]
                    Self.frame(key, into: &buffer)
                    Self.frame(cleared?[position] ?? value, into: &buffer)
                }
                buffer.withUnsafeBytes { tables[index].update(bufferPointer: $0) }
            }
        }

        /// Appends `bytes`' length (4 bytes, big-endian) and `bytes`.
        private static func frame(_ bytes: [UInt8], into buffer: inout [UInt8]) {
            let count = UInt32(bytes.count)
            buffer.append(UInt8(count >> 24)); buffer.append(UInt8(count >> 16 & 0xff))
            buffer.append(UInt8(count >> 8 & 0xff)); buffer.append(UInt8(count & 0xff))
            buffer.append(contentsOf: bytes)
        }

        /// The hex digest of everything added.
        func finalize() -> String {
            var whole = SHA256()
            for (table, hash) in zip(ViewTable.allCases, tables) {
                whole.update(data: Array(table.rawValue.utf8))
                whole.update(data: Array(hash.finalize()))
            }
            let hex = Array("0123456789abcdef")
            return whole.finalize().map { byte in String([hex[Int(byte >> 4)], hex[Int(byte & 15)]]) }.joined()
        }
    }
}
