import ReadingEvents

// A book view's details (page entries, sessions, sentences, memos) are stored in chunks: up to
// `detailsPerChunk` consecutive details of one kind a record, keyed (reader, book, chunk number),
// every chunk but a book's last one full. Appending a detail rewrites only the book's last chunk.
// Inside a chunk integers are LEB128 varints (signed ones zigzag-encoded), and the fields that
// grow from detail to detail (instants, days, orders, pages) are written as the difference from
// the detail before in the same chunk, so each chunk decodes on its own.

extension ViewRecordCodec {
    /// How many details of one kind a chunk record holds at most; every chunk of a book but its
    /// last holds exactly this many.
    public static let detailsPerChunk = 32
    /// The format byte of a detail chunk (format 1 was one record per detail, before views version 7).
    public static let chunkFormat: UInt8 = 2

    /// `items` cut into chunks: each chunk's number and its details (empty for no details).
    /// Inlinable: the LMDB store calls it with its detail types from another module, where an
    /// unspecialized call cost about 27,000 instructions an appended event (P2 path, callgrind).
    @inlinable
    public static func chunked<T>(_ items: [T]) -> [(number: UInt32, details: ArraySlice<T>)] {
        stride(from: 0, to: items.count, by: detailsPerChunk).map {
            (UInt32($0 / detailsPerChunk), items[$0..<min(items.count, $0 + detailsPerChunk)])
        }
    }

    /// The chunk's format byte, its count, then each detail written by `body`.
    private static func encodeChunk<T>(_ details: ArraySlice<T>, _ body: (inout ByteWriter, T) -> Void) -> [UInt8] {
        precondition((1...detailsPerChunk).contains(details.count), "a chunk holds 1 ... \(detailsPerChunk) details")
        var w = ByteWriter()
        w.u8(chunkFormat)
        w.uvarint(UInt64(details.count))
        for detail in details { body(&w, detail) }
        return w.bytes
    }

    private static func decodeChunk<T>(_ bytes: some Collection<UInt8>, record: String,
                                       _ body: (inout ByteReader) throws(ViewDecodingError) -> T) throws(ViewDecodingError) -> [T] {
        try ByteReader.read(bytes, record: record) { (r: inout ByteReader) throws(ViewDecodingError) -> [T] in
            let format = try r.u8("format")
            guard format == chunkFormat else { throw r.error("format", "detail chunk format \(format), this build reads \(chunkFormat)") }
            let count = try r.uvarint("count")
            guard (1...UInt64(detailsPerChunk)).contains(count) else {
                throw r.error("count", "a chunk holds \(count) details, not 1 ... \(detailsPerChunk)")
            }
            var result: [T] = []
            result.reserveCapacity(Int(count))
            for _ in 0..<count { result.append(try body(&r)) }
            try r.expectEnd()
            return result
        }
    }

    /// Encodes a chunk of 1 ... ``detailsPerChunk`` page entries (the `bookEntries` record).
    public static func encodeEntryChunk(_ entries: ArraySlice<PageEntry>) -> [UInt8] {
        var previous = EntryBase()
        return encodeChunk(entries) { w, e in
            w.svarint(Int64(bitPattern: e.order &- previous.order))
            w.svarint(e.occurredAt.microseconds &- previous.occurredAt)
            w.svarint(Int64(e.day.dayNumber &- previous.day))
            w.u8(UInt8(e.bucket.rawValue) << 1 | e.kind.rawValue)
            w.svarint(Int64(e.readThrough &- previous.readThrough))
            w.svarint(Int64(e.position &- previous.position))
            w.svarint(Int64(e.effective)); w.svarint(Int64(e.credited))
            previous = EntryBase(e)
        }
    }
    /// Decodes a chunk of page entries; a typed error for anything malformed.
    public static func decodeEntryChunk(_ bytes: some Collection<UInt8>) throws(ViewDecodingError) -> [PageEntry] {
        var previous = EntryBase()
        return try decodeChunk(bytes, record: "PageEntryChunk") { r throws(ViewDecodingError) in
            let order = previous.order &+ UInt64(bitPattern: try r.svarint("entry.order"))
            let occurredAt = previous.occurredAt &+ (try r.svarint("entry.occurredAt"))
            let day = try r.day(previous.day &+ Int(truncatingIfNeeded: try r.svarint("entry.day")), "entry.day")
            let kinds = try r.u8("entry.kind")
            guard let bucket = TimeOfDay(rawValue: Int(kinds >> 1)) else { throw r.error("entry.bucket", "unknown bucket \(kinds >> 1)") }
            guard let kind = PageEntry.Kind(rawValue: kinds & 1) else { throw r.error("entry.kind", "unknown kind \(kinds & 1)") }
            let readThrough = previous.readThrough &+ Int(truncatingIfNeeded: try r.svarint("entry.readThrough"))
            let position = previous.position &+ Int(truncatingIfNeeded: try r.svarint("entry.position"))
            let entry = PageEntry(order: order, occurredAt: Timestamp(microseconds: occurredAt), day: day, bucket: bucket,
                                  readThrough: readThrough, position: position, kind: kind,
                                  effective: Int(truncatingIfNeeded: try r.svarint("entry.effective")),
                                  credited: Int(truncatingIfNeeded: try r.svarint("entry.credited")))
            previous = EntryBase(entry)
            return entry
        }
    }
    /// The fields of the entry before (zero before a chunk's first) that the next one is written against.
    private struct EntryBase {
        var order: UInt64 = 0, occurredAt: Int64 = 0, day = 0, readThrough = 0, position = 0
        init() {}
        init(_ e: PageEntry) {
            order = e.order; occurredAt = e.occurredAt.microseconds; day = e.day.dayNumber
            readThrough = e.readThrough; position = e.position
        }
    }

    /// Encodes a chunk of 1 ... ``detailsPerChunk`` sessions (the `bookSessions` record): each
    /// instant as the difference from the one before (a session's start from the previous
    /// session's), a zone only where it is not the session's own.
    public static func encodeSessionChunk(_ sessions: ArraySlice<SessionRecord>) -> [UInt8] {
        var previousStart: Int64 = 0
        return encodeChunk(sessions) { w, s in
            w.bytes16(s.session.bytes)
            w.svarint(s.startedAt.microseconds &- previousStart)
            w.vstring(s.timeZone.identifier)
            func otherZone(_ zone: ZoneID?) -> ZoneID? { zone == s.timeZone ? nil : zone }
            var last = s.startedAt.microseconds
            w.uvarint(UInt64(s.intervals.count))
            for i in s.intervals {
                w.svarint(i.start.microseconds &- last); w.svarint(i.end.microseconds &- i.start.microseconds)
                w.optional(otherZone(i.timeZone)) { w, z in w.vstring(z.identifier) }
                last = i.end.microseconds
            }
            w.optional(s.runningSince) { w, t in
                w.svarint(t.microseconds &- last); w.optional(otherZone(s.runningZone)) { w, z in w.vstring(z.identifier) }
            }
            w.bool(s.isFinished)
            w.optional(s.reportedSeconds) { w, x in w.svarint(Int64(x)) }
            w.optional(s.endPosition) { w, x in w.svarint(Int64(x)) }
            previousStart = s.startedAt.microseconds
        }
    }
    /// Decodes a chunk of sessions; a typed error for anything malformed.
    public static func decodeSessionChunk(_ bytes: some Collection<UInt8>) throws(ViewDecodingError) -> [SessionRecord] {
        var previousStart: Int64 = 0
        return try decodeChunk(bytes, record: "SessionChunk") { r throws(ViewDecodingError) in
            let session = try r.id("session.id") as SessionID
            let startedAt = previousStart &+ (try r.svarint("session.startedAt"))
            let zone = ZoneID(unchecked: try r.vstring("session.timeZone"))
            func otherZone(_ r: inout ByteReader, _ field: String) throws(ViewDecodingError) -> ZoneID {
                try r.optional(field) { r throws(ViewDecodingError) in ZoneID(unchecked: try r.vstring(field)) } ?? zone
            }
            var last = startedAt
            let count = try r.uvarint("session.intervals")
            guard count <= UInt64(r.bytes.count - r.offset) else { throw r.error("session.intervals", "count \(count) exceeds the remaining bytes") }
            var intervals: [SessionRecord.ClosedInterval] = []
            intervals.reserveCapacity(Int(count))
            for _ in 0..<count {
                let start = last &+ (try r.svarint("interval.start"))
                let end = start &+ (try r.svarint("interval.end"))
                intervals.append(SessionRecord.ClosedInterval(start: Timestamp(microseconds: start), end: Timestamp(microseconds: end),
                                                              timeZone: try otherZone(&r, "interval.timeZone")))
                last = end
            }
            var runningZone: ZoneID?
            let runningSince = try r.optional("session.runningSince") { r throws(ViewDecodingError) in
                let since = Timestamp(microseconds: last &+ (try r.svarint("session.runningSince")))
                runningZone = try otherZone(&r, "session.runningZone")
                return since
            }
            previousStart = startedAt
            return SessionRecord(
                session: session, startedAt: Timestamp(microseconds: startedAt), timeZone: zone, intervals: intervals,
                runningSince: runningSince, runningZone: runningZone, isFinished: try r.bool("session.isFinished"),
                reportedSeconds: try r.optional("session.reportedSeconds") { r throws(ViewDecodingError) in
                    Int(truncatingIfNeeded: try r.svarint("session.reportedSeconds"))
                },
                endPosition: try r.optional("session.endPosition") { r throws(ViewDecodingError) in
                    Int(truncatingIfNeeded: try r.svarint("session.endPosition"))
                })
        }
    }

    /// Encodes a chunk of 1 ... ``detailsPerChunk`` sentences or memos (the `bookSentences` and
    /// `bookMemos` record): creation instants as the difference from the note before, the edit
    /// instant from the note's creation.
    public static func encodeNoteChunk(_ notes: ArraySlice<TextNote>) -> [UInt8] {
        var previousCreated: Int64 = 0
        return encodeChunk(notes) { w, n in
            w.bytes16(n.id.bytes); w.vstring(n.text)
            w.optional(n.page) { w, p in w.svarint(Int64(p)) }
            w.svarint(n.createdAt.microseconds &- previousCreated)
            w.svarint(n.editedAt.microseconds &- n.createdAt.microseconds)
            previousCreated = n.createdAt.microseconds
        }
    }
    /// Decodes a chunk of sentences or memos; a typed error for anything malformed.
    public static func decodeNoteChunk(_ bytes: some Collection<UInt8>) throws(ViewDecodingError) -> [TextNote] {
        var previousCreated: Int64 = 0
        return try decodeChunk(bytes, record: "TextNoteChunk") { r throws(ViewDecodingError) in
            let id = UUIDBox(bytes: try r.bytes16("note.id"))
            let text = try r.vstring("note.text")
            let page = try r.optional("note.page") { r throws(ViewDecodingError) in Int(truncatingIfNeeded: try r.svarint("note.page")) }
            let created = previousCreated &+ (try r.svarint("note.createdAt"))
            let edited = created &+ (try r.svarint("note.editedAt"))
            previousCreated = created
            return TextNote(id: id, text: text, page: page, createdAt: Timestamp(microseconds: created), editedAt: Timestamp(microseconds: edited))
        }
    }
}

extension ByteWriter {
    /// An unsigned LEB128 varint: 7 bits a byte, low bits first, the high bit set on every byte but the last.
    mutating func uvarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 { bytes.append(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
        bytes.append(UInt8(v))
    }
    /// A signed varint: zigzag (0, -1, 1, -2, ... as 0, 1, 2, 3, ...), then ``uvarint(_:)``.
    mutating func svarint(_ value: Int64) { uvarint(UInt64(bitPattern: (value << 1) ^ (value >> 63))) }
    /// A string as its varint UTF-8 length and its UTF-8 bytes.
    mutating func vstring(_ s: String) { uvarint(UInt64(s.utf8.count)); bytes.append(contentsOf: s.utf8) }
}

extension ByteReader {
    /// An unsigned LEB128 varint in its shortest form of at most 10 bytes (64 bits).
    mutating func uvarint(_ field: String) throws(ViewDecodingError) -> UInt64 {
        var value: UInt64 = 0, shift: UInt64 = 0
        while true {
            guard offset < bytes.count else { throw error(field, "a varint runs past the end") }
            let byte = bytes[offset]
            guard shift < 63 || byte <= 1 else { throw error(field, "a varint exceeds 64 bits") }
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 {
                guard byte != 0 || shift == 0 else { throw error(field, "a varint is not in its shortest form") }
                return value
            }
            shift += 7
        }
    }
    /// A zigzag varint (``ByteWriter/svarint(_:)``).
    mutating func svarint(_ field: String) throws(ViewDecodingError) -> Int64 {
        let u = try uvarint(field)
        return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }
    /// A string of ``ByteWriter/vstring(_:)``: valid UTF-8.
    mutating func vstring(_ field: String) throws(ViewDecodingError) -> String {
        let n = try uvarint(field)
        guard n <= UInt64(bytes.count - offset) else { throw error(field, "needs \(n) bytes, \(bytes.count - offset) left") }
        guard let s = String(validating: try take(Int(n), field), as: UTF8.self) else { throw error(field, "invalid UTF-8") }
        return s
    }
    /// The date of day number `n`: one of years 1 ... 9999.
    func day(_ n: Int, _ field: String) throws(ViewDecodingError) -> LocalDate {
        guard ViewKeyBytes.dayNumbers.contains(n) else { throw error(field, "day number \(n) is outside years 1 ... 9999") }
        return LocalDate(dayNumber: n)
    }
}

extension ViewRecordCodec {
    // The decoders EventStoreLMDB runs on LMDB's bytes, with the bytes' type named: a call from
    // another module to a generic decoder (`some Collection<UInt8>`) runs its unspecialized body
    // (every byte read through the collection's witnesses); these are specialized here, in the
    // module that holds the decoders.

    /// ``decodeBookSummary(_:decision:)`` of bytes in place.
    package static func decodeBookSummary(inPlace bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> (view: BookView, isSummary: Bool) {
        try decodeBookSummary(bytes)
    }
    /// ``decodeBookState(_:)`` of bytes in place.
    package static func decodeBookState(inPlace bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> BookState { try decodeBookState(bytes) }
    /// ``decodeEntryChunk(_:)`` of bytes in place.
    package static func decodeEntryChunk(inPlace bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> [PageEntry] { try decodeEntryChunk(bytes) }
    /// ``decodeSessionChunk(_:)`` of bytes in place.
    package static func decodeSessionChunk(inPlace bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> [SessionRecord] {
        try decodeSessionChunk(bytes)
    }
    /// ``decodeNoteChunk(_:)`` of bytes in place.
    package static func decodeNoteChunk(inPlace bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> [TextNote] { try decodeNoteChunk(bytes) }
}
