import Foundation
import LMDB
@testable import Projections
import ReadingEvents
import TestSupport
import Testing
@_spi(RawLog) @testable import EventStoreLMDB

/// A book view's details stored in chunks of 32, varint-encoded (views version 7): chunk
/// boundaries, the chunks a write rewrites, damage, arbitrary bytes, and the migration of a store
/// whose details are one record each (views version 6).
@Suite struct DetailChunkTests {
    typealias F = Facade
    static let size = ViewRecordCodec.detailsPerChunk

    // MARK: Details

    static func entry(_ i: Int) -> PageEntry {
        PageEntry(order: UInt64(i * 3 + 1), occurredAt: Timestamp(microseconds: 1_740_000_000_000_000 + Int64(i) * 61_000_017),
                  day: LocalDate(dayNumber: 20_000 + i / 5), bucket: TimeOfDay.allCases[i % TimeOfDay.allCases.count],
                  readThrough: 1 + i / 10, position: 10 + (i * 37) % 300, kind: i % 7 == 3 ? .correction : .read,
                  effective: (i * 13) % 50 - 7, credited: i % 3 - 1)
    }
    static func session(_ i: Int) -> SessionRecord {
        let start = Timestamp(microseconds: 1_740_000_000_000_000 + Int64(i) * 3_600_000_000)
        let seoul = ZoneID(unchecked: "Asia/Seoul"), paris = ZoneID(unchecked: "Europe/Paris")
        let intervals = (0..<(i % 3)).map { k in
            SessionRecord.ClosedInterval(start: Timestamp(microseconds: start.microseconds + Int64(k) * 600_000_000),
                                         end: Timestamp(microseconds: start.microseconds + Int64(k) * 600_000_000 + 300_000_123),
                                         timeZone: k == 1 ? paris : seoul)
        }
        return SessionRecord(session: SessionID(bytes: [UInt8](repeating: UInt8(i % 256), count: 16))!, startedAt: start, timeZone: seoul,
                             intervals: intervals, runningSince: i % 4 == 1 ? Timestamp(microseconds: start.microseconds + 2_000_000_000) : nil,
                             runningZone: i % 4 == 1 ? (i % 8 == 1 ? paris : seoul) : nil, isFinished: i % 4 != 1,
                             reportedSeconds: i % 5 == 0 ? i * 60 : nil, endPosition: i % 6 == 0 ? i + 1 : nil)
    }
    static func note(_ i: Int) -> TextNote {
        TextNote(id: UUIDBox(bytes: [UInt8](repeating: UInt8((i * 7) % 256), count: 16)), text: "문장 \(i) — a note",
                 page: i % 2 == 0 ? i : nil, createdAt: Timestamp(microseconds: 1_740_000_000_000_000 + Int64(i) * 1_000_001),
                 editedAt: Timestamp(microseconds: 1_740_000_000_000_000 + Int64(i) * 1_000_001 + Int64(i % 3) * 77))
    }

    /// A store holding one book, and its view as the store reads it.
    static func storeWithBook(_ dir: TempDirectory) throws -> (ReadingStore, BookView) {
        let store = try ReadingStore.open(at: dir.child("store"))
        let reader = ReaderID(), book = BookID()
        try store.execute(.addBook(BookMetadata(title: "T", pageCount: 400), status: .reading), book: book,
                          context: F.context(reader, "2025-03-01T09:00:00+09:00"))
        let view = try #require(try store.withViews { try $0.bookView(reader: reader, book: book) })
        return (store, view)
    }

    static func with(_ view: BookView, details n: Int) -> BookView {
        var view = view
        view.entries = (0..<n).map(entry); view.sessions = (0..<n).map(session)
        view.sentences = (0..<n).map(note); view.memos = (0..<n).map { note($0 + 1_000) }
        return view
    }

    /// The stored chunks of the view's book in `table`: chunk number and the raw record.
    static func chunks(_ store: ReadingStore, _ table: ViewTable, _ view: BookView) throws -> [(UInt32, [UInt8])] {
        try store.log.environment.read { txn in
            let database = store.generations[try store.activeGeneration(txn)][table]
            var result: [(UInt32, [UInt8])] = []
            let prefix = ReaderBookKey.encode((view.reader, view.book))
            try database.forEach(txn, prefix: prefix) { key, value in
                #expect(key.count == 36)
                result.append((UInt32(key[32]) << 24 | UInt32(key[33]) << 16 | UInt32(key[34]) << 8 | UInt32(key[35]), value))
                return true
            }
            return result
        }
    }

    static func write(_ store: ReadingStore, _ body: (inout LMDBViewStore, ViewDatabases, WriteTransaction) throws -> Void) throws {
        try store.log.environment.write { txn in
            let tables = store.generations[try store.activeGeneration(txn)]
            var views = LMDBViewStore(txn: txn, tables: tables)
            try body(&views, tables, txn)
        }
    }

    static func read(_ store: ReadingStore, _ view: BookView) throws -> BookView? {
        try store.log.environment.read { txn in
            try LMDBViewStore(txn: txn, tables: store.generations[try store.activeGeneration(txn)]).bookView(reader: view.reader, book: view.book)
        }
    }

    // MARK: Tests

    @Test(arguments: [0, 1, 31, 32, 33, 64, 65])
    func detailsReadBackAcrossChunkBoundaries(_ n: Int) throws {
        try withTempDirectory { dir in
            let (store, base) = try Self.storeWithBook(dir)
            let view = Self.with(base, details: n)
            try Self.write(store) { views, _, _ in try views.putBookView(view) }
            #expect(try Self.read(store, view) == view)
            let expected = (n + Self.size - 1) / Self.size
            for table in [ViewTable.bookEntries, .bookSessions, .bookSentences, .bookMemos] {
                let chunks = try Self.chunks(store, table, view)
                #expect(chunks.map(\.0) == (0..<UInt32(expected)).map { $0 }, "\(table) of \(n) details")
                #expect(chunks.allSatisfy { $0.1.first == ViewRecordCodec.chunkFormat })
            }
            let counts = try Self.chunks(store, .bookEntries, view).map { try ViewRecordCodec.decodeEntryChunk($0.1).count }
            #expect(counts == ViewRecordCodec.chunked(view.entries).map(\.details.count))
            #expect(counts.dropLast().allSatisfy { $0 == Self.size })
            // The stored records are the bytes of the table's one encoder (what ViewDigest hashes).
            #expect(try Self.chunks(store, .bookSessions, view).map(\.1) == ViewRecordCodec.chunked(view.sessions).map { SessionChunkValue.encode($0.details) })
            #expect(try Self.chunks(store, .bookMemos, view).map(\.1) == ViewRecordCodec.chunked(view.memos).map { TextNoteChunkValue.encode($0.details) })
        }
    }

    /// Marks a stored chunk with other (valid) bytes, so a test sees whether a write rewrote it.
    static func marker(_ count: Int) -> [PageEntry] { (0..<count).map { Self.entry(5_000 + $0) } }
    static func mark(_ store: ReadingStore, _ view: BookView, chunk: UInt32, count: Int = size) throws -> [UInt8] {
        let marker = ViewRecordCodec.encodeEntryChunk(Self.marker(count)[...])
        try Self.write(store) { _, tables, txn in
            try tables[.bookEntries].put(ReaderBookIndexKey.encode(((view.reader, view.book), chunk)), marker, txn)
        }
        return marker
    }

    @Test(arguments: [31, 32, 33, 64, 65])
    func appendingADetailRewritesOnlyTheLastChunk(_ n: Int) throws {
        try withTempDirectory { dir in
            let (store, base) = try Self.storeWithBook(dir)
            let view = Self.with(base, details: n)
            try Self.write(store) { views, _, _ in try views.putBookView(view) }
            // Chunk 0 marked: a write told the previous view must leave it alone unless it is the last.
            let marker = try Self.mark(store, view, chunk: 0)
            var longer = view
            longer.entries.append(Self.entry(n))
            try Self.write(store) { views, _, _ in try views.putBookView(longer, replacing: view) }
            let chunks = try Self.chunks(store, .bookEntries, view)
            #expect(chunks.count == n / Self.size + 1)
            if n >= Self.size {
                #expect(chunks[0].1 == marker, "chunk 0 of \(n + 1) entries was rewritten")
                var expected = longer
                expected.entries.replaceSubrange(0..<Self.size, with: Self.marker(Self.size))
                #expect(try Self.read(store, view)?.entries == expected.entries)
            } else {
                #expect(try Self.read(store, view) == longer)
            }
        }
    }

    @Test func anEditInTheFirstOfThreeChunksRewritesThatChunkOnly() throws {
        try withTempDirectory { dir in
            let (store, base) = try Self.storeWithBook(dir)
            let view = Self.with(base, details: 65)
            try Self.write(store) { views, _, _ in try views.putBookView(view) }
            let marker = try Self.mark(store, view, chunk: 2, count: 1)
            var edited = view
            edited.entries[3].credited += 5
            edited.memos[1].text = "edited"
            try Self.write(store) { views, _, _ in try views.putBookView(edited, replacing: view) }
            let chunks = try Self.chunks(store, .bookEntries, view)
            #expect(chunks.count == 3)
            #expect(chunks[2].1 == marker, "the last chunk was rewritten for an edit in the first")
            #expect(try ViewRecordCodec.decodeEntryChunk(chunks[0].1) == Array(edited.entries[0..<32]))
            #expect(try ViewRecordCodec.decodeNoteChunk(try Self.chunks(store, .bookMemos, view)[0].1) == Array(edited.memos[0..<32]))
            // Written again without the previous view: every chunk compared with its stored bytes.
            try Self.write(store) { views, _, _ in try views.putBookView(edited) }
            #expect(try Self.read(store, view) == edited)
        }
    }

    @Test func deletingADetailShiftsTheLaterChunksAndDropsTheEmptyOne() throws {
        try withTempDirectory { dir in
            let (store, base) = try Self.storeWithBook(dir)
            let view = Self.with(base, details: 65)
            try Self.write(store) { views, _, _ in try views.putBookView(view) }
            var shorter = view
            shorter.entries.remove(at: 40)
            shorter.sentences.remove(at: 0)
            try Self.write(store) { views, _, _ in try views.putBookView(shorter, replacing: view) }
            #expect(try Self.read(store, view) == shorter)
            #expect(try Self.chunks(store, .bookEntries, view).map(\.0) == [0, 1])
            #expect(try Self.chunks(store, .bookSentences, view).map(\.0) == [0, 1])
            // And back to 65 without the previous view, then down to 31 the same way.
            try Self.write(store) { views, _, _ in try views.putBookView(view) }
            #expect(try Self.read(store, view) == view)
            let short = Self.with(base, details: 31)
            try Self.write(store) { views, _, _ in try views.putBookView(short) }
            #expect(try Self.read(store, view) == short)
            #expect(try Self.chunks(store, .bookSessions, view).map(\.0) == [0])
        }
    }

    /// A chunk that does not decode, or one out of place, is a corruptView naming the table, the
    /// book and the chunk, and a command on the book appends nothing.
    @Test(arguments: ["garbage", "oldLayout", "gap", "short"])
    func aDamagedChunkIsACorruptViewNamingTableAndChunk(_ damage: String) throws {
        try withTempDirectory { dir in
            let (store, base) = try Self.storeWithBook(dir)
            let view = Self.with(base, details: 40)
            try Self.write(store) { views, _, _ in try views.putBookView(view) }
            let key = { (chunk: UInt32) in ReaderBookIndexKey.encode(((view.reader, view.book), chunk)) }
            try Self.write(store) { _, tables, txn in
                let entries = tables[.bookEntries]
                switch damage {
                case "garbage": try entries.put(key(1), [ViewRecordCodec.chunkFormat, 3, 0xFF], txn)
                case "oldLayout": try entries.put(key(1), { var w = ByteWriter(); w.u8(1); w.entry(Self.entry(1)); return w.bytes }(), txn)
                case "gap": try entries.delete(key(0), txn)
                default: try entries.put(key(0), ViewRecordCodec.encodeEntryChunk(view.entries[0..<5]), txn)
                }
            }
            let expected = switch damage {
            case "garbage": "PageEntryChunk"
            case "oldLayout": "detail chunk format 1"
            case "gap": "chunk 1 after 0 details"
            default: "chunk 1 after 5 details"
            }
            #expect {
                _ = try Self.read(store, view)
            } throws: { error in
                guard case EventStoreError.corruptView(let detail) = error else { return false }
                return detail.contains("bookEntries") && detail.contains("book \(view.book)") && detail.contains(expected)
            }
            let last = try store.log.lastPosition()
            #expect(throws: EventStoreError.self) {
                try store.execute(.recordPages(position: 10), book: view.book, context: F.context(view.reader, "2025-03-02T10:00:00+09:00"))
            }
            #expect(try store.log.lastPosition() == last, "nothing was appended")
        }
    }

    /// A year record whose challenge origin is cut short at every length names the missing part
    /// (stamp, replica or sequence) and where it starts, and a whole one round-trips.
    @Test func anOriginCutShortNamesTheMissingPartAndItsOffset() throws {
        var year = YearView(year: 2025, challenge: ChallengeSet(year: 2025, books: 12, pages: nil))
        year.challengeOrigin = EventOrigin(stamp: 0x0102_0304_0506_0708,
                                           replica: ReplicaID(UUID(uuidString: "A0000000-0000-4000-8000-0000000000A4")!), sequence: 9)
        let bytes = ViewRecordCodec.encode(year)
        #expect(try ViewRecordCodec.decodeYearView(bytes) == year)
        let start = bytes.count - 32
        for kept in 0..<32 {
            let part = kept < 8 ? "stamp" : kept < 24 ? "replica" : "sequence"
            let partStart = kept < 8 ? 0 : kept < 24 ? 8 : 24
            do {
                _ = try ViewRecordCodec.decodeYearView(bytes.prefix(start + kept))
                Issue.record("an origin of \(kept) bytes decoded")
            } catch {
                #expect(error.field == "YearView.challengeOrigin.\(part)", "\(error)")
                #expect(error.offset == start + partStart, "\(error)")
                #expect(error.problem == "needs \(part == "replica" ? 16 : 8) bytes, \(kept - partStart) left", "\(error)")
            }
        }
    }

    @Test func varintsRejectOverlongOverflowingAndCutShortBytes() throws {
        func decode(_ bytes: [UInt8]) -> String? {
            do throws(ViewDecodingError) {
                return try ByteReader.read(bytes, record: "Varint") { (r: inout ByteReader) throws(ViewDecodingError) -> String? in
                    _ = try r.uvarint("v"); return r.offset == bytes.count ? nil : "trailing"
                }
            } catch { return error.problem }
        }
        #expect(decode([0x00]) == nil && decode([0x7F]) == nil && decode([0x80, 0x01]) == nil)
        #expect(decode([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]) == nil)
        #expect(decode([0x80, 0x00])?.contains("shortest form") == true)
        #expect(decode([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02])?.contains("64 bits") == true)
        #expect(decode([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])?.contains("64 bits") == true)
        #expect(decode([0x80])?.contains("past the end") == true)
        #expect(decode([])?.contains("past the end") == true)
        // Every 64-bit value round-trips, signed ones through zigzag.
        var rng = SplitMix64(seed: 0xC4_28)
        for value in [Int64.min, Int64.max, -1, 0, 1, 63, -64, 64] + (0..<2_000).map({ _ in Int64.random(in: .min ... .max, using: &rng) >> Int64.random(in: 0...63, using: &rng) }) {
            var w = ByteWriter()
            w.svarint(value)
            let (decoded, offset) = try ByteReader.read(w.bytes, record: "Varint") { (r: inout ByteReader) throws(ViewDecodingError) -> (Int64, Int) in
                (try r.svarint("v"), r.offset)
            }
            #expect(decoded == value)
            #expect(offset == w.bytes.count && w.bytes.count <= 10)
        }
    }

    /// Arbitrary and mutated bytes through each chunk decoder: a typed error naming the field, or
    /// chunks that round-trip. (ReliabilityFuzzTests runs the same decoders on its larger corpus.)
    @Test func arbitraryBytesThroughEachChunkDecoderGiveTypedErrorsOnly() throws {
        var rng = SplitMix64(seed: 0xC4_29)
        let samples: [[UInt8]] = [
            ViewRecordCodec.encodeEntryChunk((0..<32).map(Self.entry)[...]),
            ViewRecordCodec.encodeSessionChunk((0..<32).map(Self.session)[...]),
            ViewRecordCodec.encodeNoteChunk((0..<32).map(Self.note)[...]),
        ]
        var accepted = 0
        for i in 0..<30_000 {
            let kind = i % 3
            let bytes: [UInt8] = i % 2 == 0
                ? [ViewRecordCodec.chunkFormat, UInt8.random(in: 0...40, using: &rng)] + ReliabilityFuzzTests.randomBytes(&rng, max: 150)
                : ReliabilityFuzzTests.mutate(samples[kind], &rng)
            do {
                switch kind {
                case 0: let v = try ViewRecordCodec.decodeEntryChunk(bytes); #expect(try ViewRecordCodec.decodeEntryChunk(ViewRecordCodec.encodeEntryChunk(v[...])) == v)
                case 1: let v = try ViewRecordCodec.decodeSessionChunk(bytes); #expect(try ViewRecordCodec.decodeSessionChunk(ViewRecordCodec.encodeSessionChunk(v[...])) == v)
                default: let v = try ViewRecordCodec.decodeNoteChunk(bytes); #expect(try ViewRecordCodec.decodeNoteChunk(ViewRecordCodec.encodeNoteChunk(v[...])) == v)
                }
                accepted += 1
            } catch {
                #expect(!error.field.isEmpty && !error.problem.isEmpty)
            }
        }
        #expect(accepted < 30_000)
        for (kind, sample) in samples.enumerated() {
            switch kind {
            case 0: #expect(try ViewRecordCodec.decodeEntryChunk(sample) == (0..<32).map(Self.entry))
            case 1: #expect(try ViewRecordCodec.decodeSessionChunk(sample) == (0..<32).map(Self.session))
            default: #expect(try ViewRecordCodec.decodeNoteChunk(sample) == (0..<32).map(Self.note))
            }
        }
    }

    // MARK: Migration

    /// The layout of views version 6: one record per detail under its index, format byte 1, the
    /// fields fixed-width (a minimal copy of the old encoder).
    static func oldDetailRecords<T>(_ details: [T], _ body: (inout ByteWriter, T) -> Void) -> [(UInt32, [UInt8])] {
        details.enumerated().map { index, detail in
            var w = ByteWriter()
            w.u8(1)
            body(&w, detail)
            return (UInt32(index), w.bytes)
        }
    }

    /// With `pending`, the last 20 events of the history were appended by another writer without
    /// folding them (after the views were written in the old layout): the open must not fold
    /// them into the old records (which do not decode as chunks) but rebuild every view.
    /// A read-only open of the old views is refused with a typed error, not misread.
    @Test(arguments: [false, true])
    func aStoreWithDetailsOneRecordEachIsRebuiltInChunksWhenOpened(pending: Bool) throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let history = F.history(readers: 2, days: 60, seed: 28)
            let unfolded = pending ? Array(history.suffix(20)) : []
            do {
                let store = try ReadingStore.open(at: url)
                _ = try F.appendInChunks(store, Array(history.dropLast(unfolded.count)))
                #expect(try store.viewDigest() == store.freshFoldDigest())
                // Rewrite the active details as views version 6 stored them.
                var details = 0
                try store.log.environment.write { txn in
                    let generation = try store.activeGeneration(txn)
                    let tables = store.generations[generation]
                    let views = LMDBViewStore(txn: txn, tables: tables)
                    var books: [BookView] = []
                    for reader in try views.readers() { books += try views.bookViews(reader: reader) }
                    for table in [ViewTable.bookEntries, .bookSessions, .bookSentences, .bookMemos] { try tables[table].removeAll(txn) }
                    for book in books {
                        func put(_ table: ViewTable, _ records: [(UInt32, [UInt8])]) throws {
                            for (index, record) in records {
                                try tables[table].put(ReaderBookIndexKey.encode(((book.reader, book.book), index)), record, txn)
                                details += 1
                            }
                        }
                        try put(.bookEntries, Self.oldDetailRecords(book.entries) { $0.entry($1) })
                        try put(.bookSessions, Self.oldDetailRecords(book.sessions) { $0.session($1) })
                        try put(.bookSentences, Self.oldDetailRecords(book.sentences) { $0.note($1) })
                        try put(.bookMemos, Self.oldDetailRecords(book.memos) { $0.note($1) })
                    }
                    try txn.put(store.viewMeta, "viewsVersion", [6])
                }
                #expect(details > 100)
                #expect(throws: EventStoreError.self, "the old layout does not read as chunks") { try store.viewDigest() }
            }
            if !unfolded.isEmpty {
                let log = try EventLog.open(at: url)
                for envelope in unfolded {
                    try log.append(NewEvent(eventID: envelope.eventID.uuid, payload: BinaryEventCodec.encode(envelope)), to: envelope.stream.description)
                }
            }
            #expect(throws: EventStoreError.viewsNeedUpgrade(found: 6, current: ReadingStore.viewsVersion)) {
                _ = try ReadingStore.open(at: url, options: LMDBEnvironmentOptions(readOnly: true))
            }
            let reopened = try ReadingStore.open(at: url)
            #expect(try reopened.log.lastPosition() == UInt64(history.count))
            #expect(try reopened.viewCheckpoint() == UInt64(history.count))
            #expect(try reopened.viewDigest() == reopened.freshFoldDigest())
            #expect(try reopened.log.environment.read { txn in try txn.get(reopened.viewMeta, "viewsVersion") } == [ReadingStore.viewsVersion])
            #expect(ReadingStore.viewsVersion == 8)
            // Every detail record is a chunk now.
            try reopened.log.environment.read { txn in
                let tables = reopened.generations[try reopened.activeGeneration(txn)]
                for table in [ViewTable.bookEntries, .bookSessions, .bookSentences, .bookMemos] {
                    try tables[table].forEach(txn) { _, value in
                        #expect(value.first == ViewRecordCodec.chunkFormat, "\(table)")
                        return true
                    }
                }
            }
        }
    }
}
