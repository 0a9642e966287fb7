import ReadingEvents

// The time-of-day view: a reader's pages and seconds per time-of-day bucket. Its record, table,
// codec, accessors, fold step and query.

/// Pages and seconds per time-of-day bucket.
///
/// `Sendable`: arrays of integers.
public struct BucketTotals: Hashable, Sendable {
    /// Pages per bucket, indexed by ``TimeOfDay/rawValue``.
    public var pages: [Int] = [0, 0, 0, 0]
    /// Seconds per bucket, indexed by ``TimeOfDay/rawValue``.
    public var seconds: [Int] = [0, 0, 0, 0]
    /// Empty totals.
    public init() {}
}

extension ViewRecords {
    /// The reader's time-of-day totals (one record).
    ///
    /// `Sendable`: a table type.
    public enum Buckets: ViewRecordTable {
        public typealias Key = ReaderRecordKey
        public typealias Record = BucketTotals
        public static var kind: ViewRecordKind { .buckets }
        public static var recordName: String { "BucketTotals" }
        public static var summary: String { "a reader's time-of-day totals" }
        public static func encodeRecord(_ record: BucketTotals) -> [UInt8] { ViewRecordCodec.encode(record) }
        public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> BucketTotals {
            try ViewRecordCodec.decodeBucketTotals(bytes)
        }
        /// Zero totals read the same as none: a rebuild leaves them out.
        public static func isKept(_ record: BucketTotals) -> Bool { record != BucketTotals() }

        /// Adds the netted pages and seconds of each bucket. The record is taken once and changed
        /// in place: reading it and writing it back after each change copied both arrays.
        public static func fold<S: ViewStore>(_ deltas: inout ViewDeltas, into store: inout S) throws {
            guard !deltas.sortedChanges.isEmpty else { return }
            var buckets = try store.takeBucketTotals(reader: deltas.reader) ?? BucketTotals()
            for (key, change) in deltas.sortedChanges {
                buckets.pages[key.bucket.rawValue] += change.pages
                buckets.seconds[key.bucket.rawValue] += change.seconds
            }
            try store.putBucketTotals(reader: deltas.reader, buckets)
        }
    }
}

extension ViewRecordCodec {
    /// Encodes bucket totals.
    public static func encode(_ t: BucketTotals) -> [UInt8] {
        var w = ByteWriter(); w.u8(format); for x in t.pages + t.seconds { w.int(x) }; return w.bytes
    }
    /// Decodes bucket totals.
    public static func decodeBucketTotals(_ bytes: some Collection<UInt8>) throws(ViewDecodingError) -> BucketTotals {
        try ByteReader.read(bytes, record: "BucketTotals") { (r: inout ByteReader) throws(ViewDecodingError) -> BucketTotals in
            _ = try r.expectFormat()
            var t = BucketTotals()
            for i in 0..<4 { t.pages[i] = try r.int("pages") }
            for i in 0..<4 { t.seconds[i] = try r.int("seconds") }
            try r.expectEnd(); return t
        }
    }
}

extension ViewStore {
    /// The reader's time-of-day totals.
    public func bucketTotals(reader: ReaderID) throws -> BucketTotals {
        try record(ViewRecords.Buckets.self, reader: reader, ReaderRecordKey()) ?? BucketTotals()
    }
    /// The reader's time-of-day totals, read to be changed and then put back with
    /// ``putBucketTotals(reader:_:)`` at once (`nil`: none stored).
    public mutating func takeBucketTotals(reader: ReaderID) throws -> BucketTotals? {
        try takeRecord(ViewRecords.Buckets.self, reader: reader, ReaderRecordKey())
    }
    /// Stores the reader's time-of-day totals.
    public mutating func putBucketTotals(reader: ReaderID, _ totals: BucketTotals) throws {
        try putRecord(ViewRecords.Buckets.self, reader: reader, ReaderRecordKey(), totals, replacing: nil)
    }
}

extension ViewStore {
    /// Pages and seconds per time-of-day bucket.
    public func timeOfDay(reader: ReaderID) throws -> BucketTotals { try bucketTotals(reader: reader) }
}
