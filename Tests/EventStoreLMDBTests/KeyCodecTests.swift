import Foundation
import TestSupport
import Projections
import ReadingEvents
import Testing
@testable import EventStoreLMDB
import LMDB

/// The typed key codecs of the store's tables: exact bytes (the on-disk format is unchanged),
/// round trips, byte order = item order, and typed errors for bytes that are not a key.
@Suite struct KeyCodecTests {
    static func decode<C: LMDBKeyCodec>(_ codec: C.Type, _ bytes: [UInt8]) throws(LMDBError) -> C.Item {
        try bytes.withUnsafeBytes { buffer in Result { () throws(LMDBError) in try C.decode(buffer) } }.get()
    }

    /// The big-endian bytes as the store computed them by hand before the codecs.
    static func handBE64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * UInt64($0))) } }
    static func handBE32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    static func randomID(_ rng: inout SplitMix64) -> [UInt8] { (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) } }

    /// Every wrong length up to `width + 2` throws `badValueSize`.
    static func expectWrongLengthsThrow<C: LMDBFixedWidthKeyCodec>(_ codec: C.Type) {
        for length in 0...(C.byteCount + 2) where length != C.byteCount {
            let error = #expect(throws: LMDBError.self) { try decode(C.self, [UInt8](repeating: 1, count: length)) }
            #expect(error?.kind == .badValueSize, "\(C.self) with \(length) bytes")
        }
    }

    @Test func theBytesAreTheOnesWrittenBeforeTheCodecs() throws {
        var rng = SplitMix64(seed: 14)
        for _ in 0..<200 {
            let readerBytes = Self.randomID(&rng)
            let bookBytes = Self.randomID(&rng)
            let reader = try #require(ReaderID(bytes: readerBytes))
            let book = try #require(BookID(bytes: bookBytes))
            let position = UInt64.random(in: 0...UInt64.max, using: &rng)
            let dayNumber = Int.random(in: DayKey.dayNumbers, using: &rng)
            let month = YearMonth(year: Int.random(in: 1...9999, using: &rng), month: Int.random(in: 1...12, using: &rng))
            let year = Int.random(in: 0...9999, using: &rng)
            let dayBytes = Self.handBE32(UInt32(dayNumber + 1_000_000))
            #expect(ReaderPositionKey.encode((reader, position)) == readerBytes + Self.handBE64(position))
            #expect(ReaderBookKey.encode((reader, book)) == readerBytes + bookBytes)
            #expect(ReaderDayKey.encode((reader, LocalDate(dayNumber: dayNumber))) == readerBytes + dayBytes)
            #expect(ReaderBookDayKey.encode(((reader, book), LocalDate(dayNumber: dayNumber))) == readerBytes + bookBytes + dayBytes)
            #expect(ReaderMonthKey.encode((reader, month)) == readerBytes + Self.handBE32(UInt32(month.year * 12 + month.month - 1)))
            #expect(ReaderYearKey.encode((reader, year)) == readerBytes + Self.handBE32(UInt32(year)))
            // Log format 3: a stream's binary key (kind, reader, book or zeros), then the version.
            #expect(StreamIndexKey.encode((StreamKey(.book(reader: reader, book: book)), position))
                    == [2] + readerBytes + bookBytes + Self.handBE64(position))
            #expect(StreamIndexKey.encode((StreamKey(.reader(reader)), position))
                    == [1] + readerBytes + [UInt8](repeating: 0, count: 16) + Self.handBE64(position))
            #expect(StreamIndexKey.encode((StreamKey(name: "book-x"), position)) == [3, 0, 6] + Array("book-x".utf8) + Self.handBE64(position))
        }
        let uuid = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(UUIDKey.encode(uuid) == [0xE6, 0x21, 0xE1, 0xF8, 0xC3, 0x6C, 0x49, 0x5A, 0x93, 0xFC, 0x0C, 0x24, 0x7A, 0x3E, 0x6E, 0x5F])
        #expect(try Self.decode(UUIDKey.self, UUIDKey.encode(uuid)) == uuid)
        #expect(DayKey.encode(LocalDate(dayNumber: 0)) == [0x00, 0x0F, 0x42, 0x40])
        #expect(MonthKey.encode(YearMonth(year: 2026, month: 11)) == [0x00, 0x00, 0x5F, 0x02])
        #expect(YearKey.encode(2026) == [0x00, 0x00, 0x07, 0xEA])
    }

    /// `encode(_:into:)` appends exactly `encode(_:)`'s bytes after what the buffer holds, for
    /// every codec that writes in place (and the default, through a value codec that has none).
    @Test func encodingInPlaceAppendsTheSameBytes() throws {
        func check<C: LMDBValueCodec>(_ codec: C.Type, _ item: C.Item, after prefix: [UInt8],
                                      sourceLocation: SourceLocation = #_sourceLocation) {
            var bytes = prefix
            C.encode(item, into: &bytes)
            #expect(bytes == prefix + C.encode(item), "\(C.self)", sourceLocation: sourceLocation)
        }
        var rng = SplitMix64(seed: 77)
        for round in 0..<200 {
            let prefix = (0..<(round % 40)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let reader = try #require(ReaderID(bytes: Self.randomID(&rng)))
            let book = try #require(BookID(bytes: Self.randomID(&rng)))
            let replica = try #require(ReplicaID(bytes: Self.randomID(&rng)))
            let value = UInt64.random(in: 0...UInt64.max, using: &rng)
            let day = LocalDate(dayNumber: Int.random(in: DayKey.dayNumbers, using: &rng))
            let month = YearMonth(year: Int.random(in: 0...9999, using: &rng), month: Int.random(in: 1...12, using: &rng))
            let year = Int.random(in: -5...Int(UInt32.max) + 5, using: &rng)
            check(BigEndianUInt64.self, value, after: prefix)
            check(BigEndianUInt32.self, UInt32(truncatingIfNeeded: value), after: prefix)
            check(UUIDKey.self, reader.uuid, after: prefix)
            check(ReaderIDKey.self, reader, after: prefix)
            check(DayKey.self, day, after: prefix)
            check(MonthKey.self, month, after: prefix)
            check(YearKey.self, year, after: prefix)
            check(ReaderPositionKey.self, (reader, value), after: prefix)
            check(ReaderBookDayKey.self, ((reader, book), day), after: prefix)
            check(ReaderBookIndexKey.self, ((reader, book), UInt32(truncatingIfNeeded: value)), after: prefix)
            check(OriginKey.self, (replica, value), after: prefix)
            check(OriginEntryCodec.self, (value, value &* 31), after: prefix)
            check(StreamIndexKey.self, (StreamKey(.book(reader: reader, book: book)), value), after: prefix)
            check(StreamIndexKey.self, (StreamKey(name: "stream-\(round)"), value), after: prefix)
            check(UTF8String.self, "읽기 \(round)", after: prefix)
            check(KeyPair<ReaderIDKey, UTF8String>.self, (reader, String(repeating: "x", count: round)), after: prefix)
        }
        // The fixed fields of a record, written in place: the same bytes as the layout's table.
        let uuid = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        let record = EventRecord.encode(position: 7, streamVersion: 3, eventID: uuid, streamKey: [9, 9], payload: [1, 2, 3],
                                        prevHash: [UInt8](repeating: 0xAB, count: 16))
        #expect(record.count == EventRecord.fixedSize + 5)
        #expect(record[0] == EventRecord.format)
        #expect(Array(record[5..<21]) == [UInt8](repeating: 0xAB, count: 16))
        #expect(Array(record[21..<29]) == Self.handBE64(7))
        #expect(Array(record[29..<37]) == Self.handBE64(3))
        #expect(Array(record[37..<53]) == UUIDKey.encode(uuid))
        #expect(Array(record[53...]) == [9, 9, 1, 2, 3])
    }

    @Test func roundTripsAndByteOrderIsItemOrder() throws {
        var rng = SplitMix64(seed: 41)
        let readers = try (0..<3).map { _ in try #require(ReaderID(bytes: Self.randomID(&rng))) }
        let books = try (0..<3).map { _ in try #require(BookID(bytes: Self.randomID(&rng))) }

        var positionKeys: [(ReaderID, UInt64)] = []
        var dayKeys: [((ReaderID, BookID), LocalDate)] = []
        var monthKeys: [(ReaderID, YearMonth)] = []
        var yearKeys: [(ReaderID, Int)] = []
        var streamKeys: [(stream: StreamKey, version: UInt64)] = []
        let streams = ["a", "ab", "b", "book-1"].map { StreamKey(name: $0) }
            + readers.map { StreamKey(.reader($0)) } + readers.flatMap { r in books.map { StreamKey(.book(reader: r, book: $0)) } }
        for _ in 0..<300 {
            let reader = readers.randomElement(using: &rng)!
            positionKeys.append((reader, UInt64.random(in: 0...UInt64.max, using: &rng)))
            dayKeys.append(((reader, books.randomElement(using: &rng)!), LocalDate(dayNumber: Int.random(in: DayKey.dayNumbers, using: &rng))))
            monthKeys.append((reader, YearMonth(year: Int.random(in: 0...9999, using: &rng), month: Int.random(in: 1...12, using: &rng))))
            yearKeys.append((reader, Int.random(in: 0...Int(UInt32.max), using: &rng)))
            streamKeys.append((streams.randomElement(using: &rng)!, UInt64.random(in: 0...UInt64.max, using: &rng)))
        }
        positionKeys += readers.flatMap { r -> [(ReaderID, UInt64)] in [(r, 0), (r, 255), (r, 256), (r, .max)] }
        dayKeys += [((readers[0], books[0]), LocalDate(dayNumber: DayKey.dayNumbers.lowerBound)),
                    ((readers[0], books[0]), LocalDate(dayNumber: DayKey.dayNumbers.upperBound))]

        /// Encoding, then decoding, gives the item back; sorting by bytes sorts by `order`.
        func check<C: LMDBKeyCodec, O: Comparable>(_ codec: C.Type, _ items: [C.Item], _ order: (C.Item) -> O) throws {
            for item in items {
                #expect(order(try Self.decode(C.self, C.encode(item))) == order(item), "\(C.self) round trip")
            }
            let byBytes = items.sorted { C.encode($0).lexicographicallyPrecedes(C.encode($1)) }.map(order)
            #expect(byBytes == items.map(order).sorted(), "\(C.self) byte order")
        }
        func idOrder(_ bytes: [UInt8]) -> [Int] { bytes.map(Int.init) }
        struct Lex: Comparable {
            let parts: [Int]
            static func < (l: Lex, r: Lex) -> Bool { l.parts.lexicographicallyPrecedes(r.parts) }
        }
        try check(ReaderPositionKey.self, positionKeys) { Lex(parts: idOrder($0.0.bytes) + [Int(truncatingIfNeeded: $0.1 >> 1), Int($0.1 & 1)]) }
        try check(ReaderBookDayKey.self, dayKeys) { Lex(parts: idOrder($0.0.0.bytes) + idOrder($0.0.1.bytes) + [$0.1.dayNumber]) }
        try check(ReaderMonthKey.self, monthKeys) { Lex(parts: idOrder($0.0.bytes) + [$0.1.year, $0.1.month]) }
        try check(ReaderYearKey.self, yearKeys) { Lex(parts: idOrder($0.0.bytes) + [$0.1]) }
        // Stream keys are self-delimiting, so the keys of one stream sort together, by version.
        try check(StreamIndexKey.self, streamKeys) {
            Lex(parts: idOrder((try? $0.stream.encoded()) ?? []) + [-1, Int(truncatingIfNeeded: $0.version >> 1), Int($0.version & 1)])
        }
    }

    @Test func wrongLengthsAndBadBytesGiveTypedErrors() throws {
        Self.expectWrongLengthsThrow(ReaderIDKey.self)
        Self.expectWrongLengthsThrow(BookIDKey.self)
        Self.expectWrongLengthsThrow(UUIDKey.self)
        Self.expectWrongLengthsThrow(DayKey.self)
        Self.expectWrongLengthsThrow(MonthKey.self)
        Self.expectWrongLengthsThrow(YearKey.self)
        Self.expectWrongLengthsThrow(ReaderPositionKey.self)
        Self.expectWrongLengthsThrow(ReaderBookKey.self)
        Self.expectWrongLengthsThrow(ReaderDayKey.self)
        Self.expectWrongLengthsThrow(ReaderBookDayKey.self)
        Self.expectWrongLengthsThrow(ReaderMonthKey.self)
        Self.expectWrongLengthsThrow(ReaderYearKey.self)
        #expect(ReaderBookDayKey.byteCount == 36 && ReaderPositionKey.byteCount == 24)

        // A day outside years 1 ... 9999 (which LocalDate cannot hold) is refused, not trapped on.
        for bytes: [UInt8] in [[0, 0, 0, 0], [0xFF, 0xFF, 0xFF, 0xFF], Self.handBE32(UInt32(1_000_000 + DayKey.dayNumbers.upperBound + 1))] {
            let error = #expect(throws: LMDBError.self) { try Self.decode(DayKey.self, bytes) }
            #expect(error?.kind == .badValueSize)
            #expect(error?.operation == "decode(DayKey)")
        }
        // Stream index keys: empty, an unknown kind, a key too short for its kind, a reader key
        // with book bytes, a named key that is empty, holds a NUL or is a reading stream's text,
        // and a version of 7 or 9 bytes.
        let version = Self.handBE64(3)
        let id = [UInt8](repeating: 7, count: 16), zeros = [UInt8](repeating: 0, count: 16)
        let bookText = Array(StreamKey(.book(reader: ReaderID(bytes: id)!, book: BookID(bytes: id)!)).description.utf8)
        let bad: [[UInt8]] = [[], [0] + version, [4] + id + id + version, [1] + id + version, [1] + id + id + version,
                              [3, 0, 0] + version, [3, 0, 2, 0x61, 0] + version, [3, 0, 78] + bookText + version,
                              [2] + id + id + version.dropLast(), [2] + id + id + version + [0]]
        for bytes in bad {
            let error = #expect(throws: LMDBError.self) { try Self.decode(StreamIndexKey.self, bytes) }
            #expect(error?.kind == .badValueSize, "\(bytes)")
        }
        let decoded = try Self.decode(StreamIndexKey.self, [3, 0, 2] + Array("ab".utf8) + version)
        #expect(decoded.stream == StreamKey(name: "ab") && decoded.version == 3)
        let reader = try Self.decode(StreamIndexKey.self, [1] + id + zeros + version)
        #expect(reader.stream.streamID == .reader(ReaderID(bytes: id)!) && reader.version == 3)
    }

    /// The reader and `T`'s key of the database key `bytes` (the layout's group and part removed,
    /// then the table type's own decoder); a key of another table is an error.
    static func item<T: ViewRecordTable>(_ table: T.Type, _ bytes: [UInt8]) throws -> (reader: ReaderID, key: T.Key) {
        try bytes.withUnsafeBytes { bytes in
            guard let logical = ViewKeyLayout.logical(bytes, of: ViewTable.of(T.kind)) else {
                throw ViewDecodingError(field: "key", offset: 0, problem: "not a key of table \(ViewTable.of(T.kind))")
            }
            let reader = try #require(ReaderID(bytes: logical[..<16]))
            let key = try logical.withUnsafeBytes { logical in try T.decodeKey(UnsafeRawBufferPointer(rebasing: logical[16...])) }
            return (reader, key)
        }
    }

    /// The keys of every table of view records (``ViewKeyLayout/key(_:reader:_:)``, with the key
    /// bytes its table type declares) are the bytes of the views' layout as a codec of its own per
    /// table wrote them (the reader, the group, the table's key; a book summary's part after the
    /// book), read back, and a key of another table or of a wrong length is an error.
    @Test func everyTableOfViewRecordsWritesTheKeysOfTheLayout() throws {
        func item<T: ViewRecordTable>(_ table: T.Type, _ bytes: [UInt8]) throws -> (reader: ReaderID, key: T.Key) {
            try Self.item(T.self, bytes)
        }
        func check<T: ViewRecordTable>(_ table: T.Type, _ key: T.Key, _ reader: ReaderID, logical: [UInt8],
                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
            let stored = ViewKeyLayout.key(ViewTable.of(T.kind), logical: logical)
            #expect(ViewKeyLayout.key(T.self, reader: reader, key) == stored, "\(T.self)", sourceLocation: sourceLocation)
            #expect(ViewKeyLayout.logical(T.self, reader: reader, key) == logical, "\(T.self)", sourceLocation: sourceLocation)
            let decoded = try item(T.self, stored)
            #expect(decoded.reader == reader && decoded.key == key, "\(T.self)", sourceLocation: sourceLocation)
            for bad in [stored + [0], Array(stored.dropLast()), Array(stored.prefix(16)) + [99] + stored.dropFirst(17)] where bad != stored {
                #expect(throws: (any Error).self, "\(T.self) \(bad)", sourceLocation: sourceLocation) {
                    _ = try item(T.self, bad)
                }
            }
        }
        var rng = SplitMix64(seed: 37)
        for _ in 0..<100 {
            let reader = try #require(ReaderID(bytes: Self.randomID(&rng)))
            let book = try #require(BookID(bytes: Self.randomID(&rng)))
            let day = LocalDate(dayNumber: Int.random(in: DayKey.dayNumbers, using: &rng))
            let month = YearMonth(year: Int.random(in: 1...9999, using: &rng), month: Int.random(in: 1...12, using: &rng))
            let year = Int.random(in: 0...9999, using: &rng)
            try check(ViewRecords.Books.self, book, reader, logical: ReaderBookKey.encode((reader, book)))
            try check(ViewRecords.Days.self, day, reader, logical: ReaderDayKey.encode((reader, day)))
            try check(ViewRecords.BookDays.self, BookDayKey(book: book, day: day), reader, logical: ReaderBookDayKey.encode(((reader, book), day)))
            try check(ViewRecords.Months.self, month, reader, logical: ReaderMonthKey.encode((reader, month)))
            try check(ViewRecords.Buckets.self, ReaderRecordKey(), reader, logical: ReaderIDKey.encode(reader))
            try check(ViewRecords.Runs.self, day, reader, logical: ReaderDayKey.encode((reader, day)))
            try check(ViewRecords.Goals.self, book, reader, logical: ReaderBookKey.encode((reader, book)))
            try check(ViewRecords.Years.self, year, reader, logical: ReaderYearKey.encode((reader, year)))
            try check(ViewRecords.Readers.self, ReaderRecordKey(), reader, logical: ReaderIDKey.encode(reader))
        }
        // Each table of view records is the persisted table of its name, and only the book view's
        // parts other than its summary are of no kind.
        for kind in ViewRecordKind.allCases { #expect(ViewTable.of(kind).recordKind == kind) }
        #expect(ViewTable.allCases.filter { $0.recordKind == nil } == [.bookEntries, .bookSessions, .bookSentences, .bookMemos, .decisions])
    }

    @Test func arbitraryBytesNeverTrap() {
        var rng = SplitMix64(seed: 99)
        for _ in 0..<3000 {
            let length = Int.random(in: 0...40, using: &rng)
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...3, using: &rng) == 0 ? 0 : UInt8.random(in: 0...255, using: &rng) }
            _ = try? Self.decode(ReaderPositionKey.self, bytes)
            _ = try? Self.decode(ReaderBookDayKey.self, bytes)
            _ = try? Self.decode(ReaderMonthKey.self, bytes)
            _ = try? Self.decode(ReaderYearKey.self, bytes)
            _ = try? Self.decode(StreamIndexKey.self, bytes)
            _ = try? Self.item(ViewRecords.Books.self, bytes)
            _ = try? Self.item(ViewRecords.BookDays.self, bytes)
            _ = try? Self.item(ViewRecords.Readers.self, bytes)
            _ = try? Self.item(ViewRecords.Years.self, bytes)
        }
    }

    /// Keys written as raw bytes (the way the store wrote them before the codecs) read back through
    /// the typed tables of a real store; a key that does not decode is reported as a damaged view.
    @Test func rawKeysWrittenBeforeReadThroughTheTypedTables() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            var rng = SplitMix64(seed: 5)
            let readerBytes = Self.randomID(&rng)
            let reader = try #require(ReaderID(bytes: readerBytes))
            let tables = store.generations[0]
            let day = LocalDate(dayNumber: 20_000)
            try store.log.environment.write { txn in
                for position: UInt64 in [3, 300, 70_000] {
                    try txn.put(store.readerIndex.untyped, readerBytes + Self.handBE64(position), [])
                }
                try tables[.days].put(readerBytes + Self.handBE32(UInt32(day.dayNumber + 1_000_000)),
                                      ViewRecordCodec.encode(DayTotal(pages: 2, seconds: 60)), txn)
                try txn.put(store.viewMeta, "checkpoint.g1", Self.handBE64(0x0102_0304))
            }
            try store.log.environment.read { txn in
                var positions: [UInt64] = []
                try txn.forEach(store.readerIndex, prefix: ReaderIDKey.encode(reader)) { key, _ in
                    #expect(key.0 == reader)
                    positions.append(key.1)
                    return true
                }
                #expect(positions == [3, 300, 70_000])
                #expect(try store.checkpoint(txn, generation: 1) == 0x0102_0304)
                let views = LMDBViewStore(txn: txn, tables: tables)
                #expect(try views.dayTotals(reader: reader, in: day...day).map(\.0) == [day])
            }
            try store.log.environment.write { txn in
                // A key of 5 bytes inside the range read (after the day's 4): scans seek within
                // the bytes the range's bounds share, so a damaged key outside it is never read.
                try tables[.days].put(readerBytes + Self.handBE32(UInt32(day.dayNumber + 1_000_000)) + [0], [], txn)
            }
            let error = #expect(throws: EventStoreError.self) {
                try store.withViews { try $0.dayTotals(reader: reader, in: day...LocalDate(dayNumber: 2_000_000)) }
            }
            guard case .corruptView(let detail)? = error else {
                Issue.record("expected corruptView, got \(String(describing: error))")
                return
            }
            #expect(detail.contains("views.g0.days"))
        }
    }
}
