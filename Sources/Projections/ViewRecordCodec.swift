import Foundation
import ReadingEvents

/// A record that could not be read back: names what was being read and where.
///
/// `Sendable`: strings and an integer.
public struct ViewDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was being decoded ("BookView.entries").
    public var field: String
    /// The byte offset where it failed.
    public var offset: Int
    /// What was wrong.
    public var problem: String
    /// What failed, where, and why.
    package init(field: String, offset: Int, problem: String) {
        self.field = field
        self.offset = offset
        self.problem = problem
    }
    /// `"<field> at byte <offset>: <problem>"`.
    public var description: String { "\(field) at byte \(offset): \(problem)" }
}

/// The compact binary form of the persisted view records: little-endian fixed-width integers,
/// length-prefixed strings and arrays, a leading format byte per record. Deterministic (the same
/// view always encodes to the same bytes), so stored views can be compared by digest.
///
/// Formats: 6 (written by this build) adds to reader records their longest streak run (so the
/// streaks query is two lookups, not a walk over every run); 5 adds to reader records the reader's last event in canonical
/// order (its instant, zone and origin); 4 is not used by whole records (it marks a book-view
/// summary, ``summaryFormat``). Format 3 adds the origins of replication: a book view's last folded
/// origin and folded-event count, the origins of a reader's home order and profile and of a
/// year's challenge, and page entries ordered by their ordinal in the book's canonical order (the
/// field that held the log position). Format 2 adds to book views the zone of each session interval and of
/// the running interval, written only where it differs from the session's zone, and to reader
/// records the reader's latest moment. Format 1 records, written by earlier builds, still decode:
/// their intervals are in their session's zone and their reader has no latest moment (a
/// `replay rebuild` rewrites them with the rules of this build).
public enum ViewRecordCodec {
    /// The record format this build writes.
    public static let format: UInt8 = 6
    /// The oldest record format this build reads.
    public static let oldestReadableFormat: UInt8 = 1

    // MARK: Book views

    /// Encodes a book view.
    public static func encode(_ v: BookView) -> [UInt8] { encodeBook(v, details: true) }

    /// A whole book view (`details`: record format ``format``) or its summary (``summaryFormat``):
    /// one layout, the summary without the four detail arrays.
    private static func encodeBook(_ v: BookView, details: Bool) -> [UInt8] {
        var w = ByteWriter()
        w.u8(details ? format : summaryFormat)
        w.id(v.reader); w.id(v.book)
        w.metadata(v.metadata)
        w.u8(v.status.code); w.bool(v.inLibrary)
        w.i64(v.addedAt.microseconds); w.i64(v.lastActivity.microseconds)
        w.optional(v.goal) { w, g in w.goal(g) }
        w.optional(v.goalOutcome) { w, o in w.goal(o.goal); w.date(o.finishedOn) }
        w.int(v.readThrough)
        if details { w.array(v.entries) { w, e in w.entry(e) } }
        w.array(v.finishes) { w, d in w.date(d) }
        w.bool(v.isFinished)
        if details {
            w.array(v.sentences) { w, n in w.note(n) }
            w.array(v.memos) { w, n in w.note(n) }
            w.array(v.sessions) { w, s in w.session(s) }
        }
        w.optional(v.rating) { w, r in w.u8(UInt8(r.quarters)) }
        w.bool(v.liked)
        w.optional(v.likedAt) { w, t in w.i64(t.microseconds) }
        w.optional(v.lastOrigin) { w, o in w.origin(o) }
        w.u64(v.foldedEvents)
        return w.bytes
    }

    /// Decodes a book view; a typed error for anything malformed.
    ///
    /// The view's decision state (``BookView/decision``) is a record of its own (see
    /// `encode(_: BookState)`, ``decodeBookState(_:)``): pass it as `decision`.
    public static func decodeBookView(_ bytes: some Collection<UInt8>, decision: BookState = BookState()) throws(ViewDecodingError) -> BookView {
        try ByteReader.read(bytes, record: "BookView") { (r: inout ByteReader) throws(ViewDecodingError) -> BookView in
            return try r.book(version: try r.expectFormat(), decision: decision)
        }
    }

    // MARK: Book views split for storage

    /// The format byte of a book-view summary record: the view without its entries, sessions,
    /// sentences and memos, which are records of their own (in chunks: ``detailsPerChunk``, ``chunkFormat``). A record
    /// with a lower format byte is a whole view written by an earlier build (``decodeBookView(_:decision:)``).
    public static let summaryFormat: UInt8 = 4
    /// Encodes a book view's summary: every field but its entries, sessions, sentences and memos
    /// (and its decision state, a record of its own).
    public static func encodeSummary(_ v: BookView) -> [UInt8] { encodeBook(v, details: false) }

    /// Decodes a stored book-view record: a summary (``summaryFormat``; its details empty, to be
    /// read from their own records: `isSummary` true), or a whole view of an earlier format.
    public static func decodeBookSummary(_ bytes: some Collection<UInt8>, decision: BookState = BookState()) throws(ViewDecodingError) -> (view: BookView, isSummary: Bool) {
        guard bytes.first == summaryFormat else { return (try decodeBookView(bytes, decision: decision), false) }
        return try ByteReader.read(bytes, record: "BookSummary") { (r: inout ByteReader) throws(ViewDecodingError) -> (view: BookView, isSummary: Bool) in
            return (try r.book(version: try r.u8("format"), decision: decision), true)
        }
    }

    // MARK: Decision states

    /// The format of decision-state records (their own numbering: they were introduced with
    /// view-record format 3).
    public static let decisionFormat: UInt8 = 1

    /// Encodes a book's decision state: the small record a command is decided on. Sets are
    /// written in identifier order, so the same state always encodes to the same bytes.
    public static func encode(_ s: BookState) -> [UInt8] {
        var w = ByteWriter()
        w.u8(decisionFormat)
        w.optional(s.book) { w, b in w.id(b) }
        w.bool(s.isInLibrary); w.bool(s.isRemoved)
        w.optional(s.metadata) { w, m in w.metadata(m) }
        w.u8(s.status.code)
        w.optional(s.goal) { w, g in w.goal(g) }
        w.optional(s.goalEndedByFinish) { w, g in w.goal(g) }
        w.u64(s.eventCount); w.int(s.readThrough); w.bool(s.isFinished)
        w.array(s.timeline.marks) { w, m in
            w.i64(m.occurredAt.microseconds); w.u64(m.sequence); w.int(m.position); w.bool(m.isCorrection)
        }
        let sentences = s.sentences.map(BookState.UUIDKey.init).sorted()
        let memos = s.memos.map(BookState.UUIDKey.init).sorted()
        let open = s.openSessions.sorted { BookState.UUIDKey($0.key) < BookState.UUIDKey($1.key) }
        // The used IDs are written once: live sentences, memos and open sessions are among them.
        let live = Set(sentences).union(memos).union(open.map { BookState.UUIDKey($0.key) })
        let retired = s.usedIDs.subtracting(live).sorted()
        w.array(sentences) { w, k in w.uuid(k.uuid) }
        w.array(memos) { w, k in w.uuid(k.uuid) }
        w.array(open) { w, entry in w.uuid(entry.key.uuid); w.bool(entry.value == .paused) }
        w.array(retired) { w, k in w.uuid(k.uuid) }
        w.optional(s.rating) { w, r in w.u8(UInt8(r.quarters)) }
        w.bool(s.isLiked)
        return w.bytes
    }

    /// Decodes a book's decision state; a typed error for anything malformed.
    public static func decodeBookState(_ bytes: some Collection<UInt8>) throws(ViewDecodingError) -> BookState {
        try ByteReader.read(bytes, record: "BookState") { (r: inout ByteReader) throws(ViewDecodingError) -> BookState in
            let format = try r.u8("format")
            guard format == decisionFormat else { throw r.error("format", "decision record format \(format), this build reads \(decisionFormat)") }
            let book = try r.optional("book") { r throws(ViewDecodingError) in try r.id("book") as BookID }
            let isInLibrary = try r.bool("isInLibrary"), isRemoved = try r.bool("isRemoved")
            let metadata = try r.optional("metadata") { r throws(ViewDecodingError) in try r.metadata() }
            let status = try r.status()
            let goal = try r.optional("goal") { r throws(ViewDecodingError) in try r.goal() }
            let ended = try r.optional("goalEndedByFinish") { r throws(ViewDecodingError) in try r.goal() }
            let eventCount = try r.u64("eventCount"), readThrough = try r.int("readThrough"), isFinished = try r.bool("isFinished")
            var timeline = PageTimeline()
            for mark in try r.array("marks", { r throws(ViewDecodingError) in
                PageTimeline.Mark(occurredAt: Timestamp(microseconds: try r.i64("mark.occurredAt")), sequence: try r.u64("mark.sequence"),
                                  position: try r.int("mark.position"), isCorrection: try r.bool("mark.isCorrection"))
            }) { timeline.insert(mark) }
            let sentences = try r.array("sentences") { r throws(ViewDecodingError) in SentenceID(try r.uuid("sentence")) }
            let memos = try r.array("memos") { r throws(ViewDecodingError) in MemoID(try r.uuid("memo")) }
            let open = try r.array("openSessions") { r throws(ViewDecodingError) in
                (SessionID(try r.uuid("session")), try r.bool("session.paused") ? BookState.SessionPhase.paused : .running)
            }
            let retired = try r.array("retiredIDs") { r throws(ViewDecodingError) in BookState.UUIDKey(uuid: try r.uuid("retiredID")) }
            let rating = try r.optional("rating") { r throws(ViewDecodingError) in try r.rating() }
            let isLiked = try r.bool("isLiked")
            try r.expectEnd()
            var used = Set(retired)
            used.formUnion(sentences.map(BookState.UUIDKey.init)); used.formUnion(memos.map(BookState.UUIDKey.init))
            used.formUnion(open.map { BookState.UUIDKey($0.0) })
            return BookState(restoring: book, isInLibrary: isInLibrary, isRemoved: isRemoved, metadata: metadata, status: status,
                             goal: goal, goalEndedByFinish: ended, timeline: timeline, eventCount: eventCount, readThrough: readThrough,
                             isFinished: isFinished, sentences: Set(sentences), memos: Set(memos), usedIDs: used,
                             openSessions: Dictionary(open, uniquingKeysWith: { a, _ in a }), rating: rating, isLiked: isLiked)
        }
    }

    // MARK: Small records

    /// Encodes a reader record.
    public static func encode(_ v: ReaderView) -> [UInt8] {
        var w = ByteWriter(); w.u8(format)
        w.optional(v.nickname) { w, s in w.string(s) }
        w.optional(v.imageFileName) { w, s in w.string(s) }
        w.optional(v.theme) { w, t in w.string(t.rawValue) }
        w.array(v.homeOrder, elementSize: 16) { w, b in w.id(b) }
        w.int(v.unknownEvents); w.int(v.eventCount)
        w.optional(v.latestMoment) { w, t in w.i64(t.microseconds) }
        w.optional(v.homeOrderOrigin) { w, o in w.origin(o) }
        w.optional(v.profileOrigin) { w, o in w.origin(o) }
        w.optional(v.lastEvent) { w, e in
            w.i64(e.occurredAt.microseconds); w.string(e.timeZone.identifier); w.optional(e.origin) { w, o in w.origin(o) }
        }
        w.optional(v.longestRun) { w, run in w.date(run.start); w.date(run.end) }
        return w.bytes
    }
    /// Decodes a reader record.
    public static func decodeReaderView(_ bytes: some Collection<UInt8>) throws(ViewDecodingError) -> ReaderView {
        try ByteReader.read(bytes, record: "ReaderView") { (r: inout ByteReader) throws(ViewDecodingError) -> ReaderView in
            let version = try r.expectFormat()
            var v = ReaderView()
            v.nickname = try r.optional("nickname") { r throws(ViewDecodingError) in try r.string("nickname") }
            v.imageFileName = try r.optional("imageFileName") { r throws(ViewDecodingError) in try r.string("imageFileName") }
            v.theme = try r.optional("theme") { r throws(ViewDecodingError) in Theme(rawValue: try r.string("theme")) }
            v.homeOrder = try r.array("homeOrder") { r throws(ViewDecodingError) in try r.id("homeOrder") }
            v.unknownEvents = try r.int("unknownEvents"); v.eventCount = try r.int("eventCount")
            if version >= 2 {
                v.latestMoment = try r.optional("latestMoment") { r throws(ViewDecodingError) in Timestamp(microseconds: try r.i64("latestMoment")) }
            }
            if version >= 3 {
                v.homeOrderOrigin = try r.optional("homeOrderOrigin") { r throws(ViewDecodingError) in try r.origin("homeOrderOrigin") }
                v.profileOrigin = try r.optional("profileOrigin") { r throws(ViewDecodingError) in try r.origin("profileOrigin") }
            }
            if version >= 5 {
                v.lastEvent = try r.optional("lastEvent") { r throws(ViewDecodingError) in
                    LastEvent(occurredAt: Timestamp(microseconds: try r.i64("lastEvent.occurredAt")),
                              timeZone: ZoneID(unchecked: try r.string("lastEvent.timeZone")),
                              origin: try r.optional("lastEvent.origin") { r throws(ViewDecodingError) in try r.origin("lastEvent.origin") })
                }
            }
            if version >= 6 {
                v.longestRun = try r.optional("longestRun") { r throws(ViewDecodingError) in
                    StreakRun(start: try r.date("longestRun.start"), end: try r.date("longestRun.end"))
                }
            }
            try r.expectEnd(); return v
        }
    }
}

/// Appends little-endian fields.
struct ByteWriter {
    var bytes: [UInt8] = []
    /// A writer whose buffer holds `capacity` bytes before it grows (a record's usual size: each
    /// growth copies what was written).
    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }
    /// Makes room for `count` more bytes at once, growing the buffer at least twofold (an array's
    /// `reserveCapacity` alone would grow it to exactly what is asked, again and again).
    mutating func reserve(_ count: Int) {
        let needed = bytes.count + count
        if needed > bytes.capacity { bytes.reserveCapacity(Swift.max(needed, 2 * bytes.capacity)) }
    }
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }
    /// Appends the bytes of a fixed-width value as typed bytes: `append(contentsOf:)` of a typed
    /// buffer copies in one step, where a raw buffer is a sequence walked byte by byte.
    private mutating func raw<T>(_ v: T) {
        withUnsafeBytes(of: v) { bytes.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }
    mutating func u64(_ v: UInt64) { raw(v.littleEndian) }
    mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    mutating func int(_ v: Int) { i64(Int64(v)) }
    mutating func origin(_ o: EventOrigin) { u64(o.stamp); id(o.replica); u64(o.sequence) }
    mutating func u32(_ v: UInt32) { raw(v.littleEndian) }
    mutating func bytes16(_ b: [UInt8]) { bytes.append(contentsOf: b) }
    mutating func uuid(_ u: UUID) { raw(u.uuid) }
    /// An identifier's 16 bytes (its UUID's, in order), without building an array of them.
    mutating func id<Tag>(_ id: TaggedID<Tag>) { uuid(id.uuid) }
    /// The UTF-8 length, then the UTF-8 bytes, copied from the string's own storage (no array of
    /// them built first; `vstring` writes its bytes the same way).
    mutating func string(_ s: String) { u32(UInt32(s.utf8.count)); bytes.append(contentsOf: s.utf8) }
    mutating func date(_ d: LocalDate) { i64(Int64(d.dayNumber)) }
    mutating func optional<T>(_ v: T?, _ body: (inout ByteWriter, T) -> Void) {
        if let v { u8(1); body(&self, v) } else { u8(0) }
    }
    /// The count, then each element; `elementSize` (the usual bytes of one) makes room for all at once.
    mutating func array<T>(_ a: [T], elementSize: Int = 0, _ body: (inout ByteWriter, T) -> Void) {
        reserve(4 + a.count * elementSize)
        u32(UInt32(a.count)); for x in a { body(&self, x) }
    }
    mutating func entry(_ e: PageEntry) {
        u64(e.order); i64(e.occurredAt.microseconds); date(e.day); u8(UInt8(e.bucket.rawValue))
        int(e.readThrough); int(e.position); u8(e.kind.rawValue); int(e.effective); int(e.credited)
    }
    mutating func session(_ s: SessionRecord) {
        id(s.session); i64(s.startedAt.microseconds); string(s.timeZone.identifier)
        // A zone is written only where it is not the session's own (a resume in another city).
        func otherZone(_ zone: ZoneID?) -> ZoneID? { zone == s.timeZone ? nil : zone }
        array(s.intervals) { w, i in
            w.i64(i.start.microseconds); w.i64(i.end.microseconds); w.optional(otherZone(i.timeZone)) { w, z in w.string(z.identifier) }
        }
        optional(s.runningSince) { w, t in
            w.i64(t.microseconds); w.optional(otherZone(s.runningZone)) { w, z in w.string(z.identifier) }
        }
        bool(s.isFinished)
        optional(s.reportedSeconds) { w, x in w.int(x) }
        optional(s.endPosition) { w, x in w.int(x) }
    }
    mutating func goal(_ g: BookState.Goal) { date(g.startDate); date(g.targetDate); optional(g.theme) { w, t in w.string(t.rawValue) } }
    mutating func note(_ n: TextNote) {
        bytes16(n.id.bytes); string(n.text); optional(n.page) { w, p in w.int(p) }
        i64(n.createdAt.microseconds); i64(n.editedAt.microseconds)
    }
    mutating func metadata(_ m: BookMetadata) {
        string(m.title); optional(m.subtitle) { $0.string($1) }; string(m.authors); optional(m.publisher) { $0.string($1) }
        optional(m.publicationDate) { $0.date($1) }; optional(m.isbn13) { $0.string($1.digits) }; optional(m.pageCount) { $0.int($1) }
        optional(m.categoryPath) { $0.string($1) }; optional(m.coverURL) { $0.string($1) }; optional(m.productLink) { $0.string($1) }
        optional(m.thicknessMillimetres) { $0.u64($1.bitPattern) }
    }
}

/// Reads what ``ByteWriter`` wrote, checking every bound.
struct ByteReader {
    /// The record's bytes, valid while the reader is (``read(_:record:_:)`` scopes both).
    let bytes: UnsafeRawBufferPointer
    let record: String
    var offset = 0
    private init(_ bytes: UnsafeRawBufferPointer, record: String) { self.bytes = bytes; self.record = record }

    /// Runs `body` with a reader of `bytes`: in place when they are contiguous (a value in LMDB's
    /// memory map, an array), else from a copy. Before, each decode copied the record into an
    /// array of its own first (an allocation, a copy and a release per record read).
    static func read<T>(_ bytes: some Collection<UInt8>, record: String,
                        _ body: (inout ByteReader) throws(ViewDecodingError) -> T) throws(ViewDecodingError) -> T {
        func run(_ buffer: UnsafeRawBufferPointer) -> Result<T, ViewDecodingError> {
            var reader = ByteReader(buffer, record: record)
            return Result { () throws(ViewDecodingError) in try body(&reader) }
        }
        if let result = bytes.withContiguousStorageIfAvailable({ run(UnsafeRawBufferPointer($0)) }) { return try result.get() }
        return try Array(bytes).withUnsafeBytes { run($0) }.get()
    }

    func error(_ field: String, _ problem: String) -> ViewDecodingError {
        ViewDecodingError(field: "\(record).\(field)", offset: offset, problem: problem)
    }
    mutating func take(_ n: Int, _ field: String) throws(ViewDecodingError) -> UnsafeRawBufferPointer {
        guard n >= 0, bytes.count - offset >= n else { throw error(field, "needs \(n) bytes, \(bytes.count - offset) left") }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + n])
    }
    /// Reads the format byte: one this build reads (``ViewRecordCodec/oldestReadableFormat`` ...
    /// ``ViewRecordCodec/format``), returned so a decoder can follow the older layout.
    mutating func expectFormat() throws(ViewDecodingError) -> UInt8 {
        let f = try u8("format")
        guard (ViewRecordCodec.oldestReadableFormat...ViewRecordCodec.format).contains(f) else {
            throw error("format", "record format \(f), this build reads \(ViewRecordCodec.oldestReadableFormat) ... \(ViewRecordCodec.format)")
        }
        return f
    }
    func expectEnd() throws(ViewDecodingError) {
        guard offset == bytes.count else { throw error("end", "\(bytes.count - offset) trailing bytes") }
    }
    mutating func u8(_ field: String) throws(ViewDecodingError) -> UInt8 { try take(1, field).first! }
    mutating func bool(_ field: String) throws(ViewDecodingError) -> Bool {
        switch try u8(field) { case 0: return false; case 1: return true; default: throw error(field, "not a boolean") }
    }
    mutating func u64(_ field: String) throws(ViewDecodingError) -> UInt64 {
        try fixed(UInt64.self, field).littleEndian
    }
    /// The next `MemoryLayout<T>.size` bytes as a `T` (as stored, unaligned), bounds checked by ``take(_:_:)``.
    private mutating func fixed<T: FixedWidthInteger>(_ type: T.Type, _ field: String) throws(ViewDecodingError) -> T {
        try take(MemoryLayout<T>.size, field).loadUnaligned(as: T.self)
    }
    mutating func i64(_ field: String) throws(ViewDecodingError) -> Int64 { Int64(bitPattern: try u64(field)) }
    mutating func int(_ field: String) throws(ViewDecodingError) -> Int { Int(try i64(field)) }
    mutating func u32(_ field: String) throws(ViewDecodingError) -> UInt32 {
        try fixed(UInt32.self, field).littleEndian
    }
    mutating func bytes16(_ field: String) throws(ViewDecodingError) -> [UInt8] { Array(try take(16, field)) }
    mutating func uuid(_ field: String) throws(ViewDecodingError) -> UUID { UUID(bytes: try take(16, field))! }
    /// An identifier of 16 bytes, read in place (no array of its bytes).
    mutating func id<Tag>(_ field: String) throws(ViewDecodingError) -> TaggedID<Tag> { TaggedID(try uuid(field)) }
    mutating func origin(_ field: String) throws(ViewDecodingError) -> EventOrigin {
        // The part names (`field.stamp`, ...) are joined only when the 32 bytes are cut short, for
        // the error of the part that is missing (joined for every origin read, they cost an
        // allocation each); one of these reads then throws.
        if bytes.count - offset < 32 {
            _ = try u64(field + ".stamp"); _ = try uuid(field + ".replica"); _ = try u64(field + ".sequence")
        }
        let stamp = try u64(field)
        let replica: ReplicaID = try id(field)
        return EventOrigin(stamp: stamp, replica: replica, sequence: try u64(field))
    }
    mutating func string(_ field: String) throws(ViewDecodingError) -> String {
        let n = Int(try u32(field))
        let slice = try take(n, field)
        guard let s = String(validating: slice, as: UTF8.self) else { throw error(field, "invalid UTF-8") }
        return s
    }
    mutating func date(_ field: String) throws(ViewDecodingError) -> LocalDate {
        let n = try i64(field)
        guard (-719_162...2_932_896).contains(n) else { throw error(field, "day number \(n) is outside years 1 ... 9999") }
        return LocalDate(dayNumber: Int(n))
    }
    mutating func optional<T>(_ field: String, _ body: (inout ByteReader) throws(ViewDecodingError) -> T) throws(ViewDecodingError) -> T? {
        switch try u8(field) {
        case 0: return nil
        case 1: return try body(&self)
        default: throw error(field, "bad optional marker")
        }
    }
    mutating func array<T>(_ field: String, _ body: (inout ByteReader) throws(ViewDecodingError) -> T) throws(ViewDecodingError) -> [T] {
        let n = Int(try u32(field))
        guard n <= bytes.count - offset else { throw error(field, "count \(n) exceeds the remaining bytes") }
        var result: [T] = []
        result.reserveCapacity(n)
        for _ in 0..<n { result.append(try body(&self)) }
        return result
    }
    mutating func status() throws(ViewDecodingError) -> ReadingStatus {
        let c = try u8("status")
        guard let s = ReadingStatus(code: c) else { throw error("status", "unknown status \(c)") }
        return s
    }
    mutating func bucket() throws(ViewDecodingError) -> TimeOfDay {
        let c = try u8("bucket")
        guard let b = TimeOfDay(rawValue: Int(c)) else { throw error("bucket", "unknown bucket \(c)") }
        return b
    }
    mutating func entryKind() throws(ViewDecodingError) -> PageEntry.Kind {
        let c = try u8("entry.kind")
        guard let k = PageEntry.Kind(rawValue: c) else { throw error("entry.kind", "unknown kind \(c)") }
        return k
    }
    mutating func rating() throws(ViewDecodingError) -> Rating {
        let q = try u8("rating")
        do { return try Rating(quarters: Int(q)) } catch { throw self.error("rating", error.detail) }
    }
    /// A book view of record format `version` (1 ... ``ViewRecordCodec/format``: a whole view),
    /// or a summary (``ViewRecordCodec/summaryFormat``: the same layout without the four detail
    /// arrays, which come back empty).
    mutating func book(version: UInt8, decision: BookState) throws(ViewDecodingError) -> BookView {
        let details = version != ViewRecordCodec.summaryFormat
        let reader: ReaderID = try id("reader")
        let book: BookID = try id("book")
        let metadata = try metadata()
        let status = try status()
        let inLibrary = try bool("inLibrary")
        let addedAt = Timestamp(microseconds: try i64("addedAt"))
        let lastActivity = Timestamp(microseconds: try i64("lastActivity"))
        let goal = try optional("goal") { r throws(ViewDecodingError) in try r.goal() }
        let outcome = try optional("goalOutcome") { r throws(ViewDecodingError) in
            GoalOutcome(goal: try r.goal(), finishedOn: try r.date("goalOutcome.finishedOn"))
        }
        let readThrough = try int("readThrough")
        let entries = details ? try array("entries") { r throws(ViewDecodingError) in try r.entry() } : []
        let finishes = try array("finishes") { r throws(ViewDecodingError) in try r.date("finish") }
        let isFinished = try bool("isFinished")
        var sentences: [TextNote] = [], memos: [TextNote] = [], sessions: [SessionRecord] = []
        if details {
            sentences = try array("sentences") { r throws(ViewDecodingError) in try r.note() }
            memos = try array("memos") { r throws(ViewDecodingError) in try r.note() }
            sessions = try array("sessions") { r throws(ViewDecodingError) in try r.session(version: version) }
        }
        let rating = try optional("rating") { r throws(ViewDecodingError) in try r.rating() }
        let liked = try bool("liked")
        let likedAt = try optional("likedAt") { r throws(ViewDecodingError) in Timestamp(microseconds: try r.i64("likedAt")) }
        var lastOrigin: EventOrigin?, foldedEvents: UInt64 = 0
        if version >= 3 {
            lastOrigin = try optional("lastOrigin") { r throws(ViewDecodingError) in try r.origin("lastOrigin") }
            foldedEvents = try u64("foldedEvents")
        }
        try expectEnd()
        return BookView(reader: reader, book: book, metadata: metadata, status: status, inLibrary: inLibrary, addedAt: addedAt,
                        lastActivity: lastActivity, goal: goal, goalOutcome: outcome, readThrough: readThrough, entries: entries,
                        finishes: finishes, isFinished: isFinished, sentences: sentences, memos: memos, sessions: sessions,
                        rating: rating, liked: liked, likedAt: likedAt, lastOrigin: lastOrigin, foldedEvents: foldedEvents,
                        decision: decision)
    }
    mutating func entry() throws(ViewDecodingError) -> PageEntry {
        PageEntry(order: try u64("entry.order"), occurredAt: Timestamp(microseconds: try i64("entry.occurredAt")),
                  day: try date("entry.day"), bucket: try bucket(), readThrough: try int("entry.readThrough"),
                  position: try int("entry.position"), kind: try entryKind(), effective: try int("entry.effective"),
                  credited: try int("entry.credited"))
    }
    /// A session as record format `version` wrote it (format 1 has no zones per interval: every
    /// interval ran in the session's zone).
    mutating func session(version: UInt8) throws(ViewDecodingError) -> SessionRecord {
        let session: SessionID = try id("session.id")
        let startedAt = Timestamp(microseconds: try i64("session.startedAt"))
        let sessionZone = ZoneID(unchecked: try string("session.timeZone"))
        func zone(_ r: inout ByteReader, _ field: String) throws(ViewDecodingError) -> ZoneID {
            guard version >= 2 else { return sessionZone }
            return try r.optional(field) { r throws(ViewDecodingError) in ZoneID(unchecked: try r.string(field)) } ?? sessionZone
        }
        let intervals = try array("session.intervals") { r throws(ViewDecodingError) in
            SessionRecord.ClosedInterval(start: Timestamp(microseconds: try r.i64("interval.start")),
                                         end: Timestamp(microseconds: try r.i64("interval.end")),
                                         timeZone: try zone(&r, "interval.timeZone"))
        }
        var runningZone: ZoneID?
        let runningSince = try optional("session.runningSince") { r throws(ViewDecodingError) in
            let since = Timestamp(microseconds: try r.i64("session.runningSince"))
            runningZone = try zone(&r, "session.runningZone")
            return since
        }
        return SessionRecord(
            session: session, startedAt: startedAt, timeZone: sessionZone, intervals: intervals,
            runningSince: runningSince, runningZone: runningZone,
            isFinished: try bool("session.isFinished"),
            reportedSeconds: try optional("session.reportedSeconds") { r throws(ViewDecodingError) in try r.int("session.reportedSeconds") },
            endPosition: try optional("session.endPosition") { r throws(ViewDecodingError) in try r.int("session.endPosition") })
    }
    mutating func goal() throws(ViewDecodingError) -> BookState.Goal {
        BookState.Goal(startDate: try date("goal.startDate"), targetDate: try date("goal.targetDate"),
                       theme: try optional("goal.theme") { r throws(ViewDecodingError) in Theme(rawValue: try r.string("goal.theme")) })
    }
    mutating func note() throws(ViewDecodingError) -> TextNote {
        TextNote(id: UUIDBox(bytes: try bytes16("note.id")), text: try string("note.text"),
                 page: try optional("note.page") { r throws(ViewDecodingError) in try r.int("note.page") },
                 createdAt: Timestamp(microseconds: try i64("note.createdAt")), editedAt: Timestamp(microseconds: try i64("note.editedAt")))
    }
    mutating func metadata() throws(ViewDecodingError) -> BookMetadata {
        let title = try string("metadata.title")
        let subtitle = try optional("metadata.subtitle") { r throws(ViewDecodingError) in try r.string("metadata.subtitle") }
        let authors = try string("metadata.authors")
        let publisher = try optional("metadata.publisher") { r throws(ViewDecodingError) in try r.string("metadata.publisher") }
        let published = try optional("metadata.publicationDate") { r throws(ViewDecodingError) in try r.date("metadata.publicationDate") }
        let isbn = try optional("metadata.isbn13") { r throws(ViewDecodingError) -> ISBN13 in
            let text = try r.string("metadata.isbn13")
            do throws(ValidationError) { return try ISBN13(text) } catch { throw r.error("metadata.isbn13", error.detail) }
        }
        let pages = try optional("metadata.pageCount") { r throws(ViewDecodingError) in try r.int("metadata.pageCount") }
        let category = try optional("metadata.categoryPath") { r throws(ViewDecodingError) in try r.string("metadata.categoryPath") }
        let cover = try optional("metadata.coverURL") { r throws(ViewDecodingError) in try r.string("metadata.coverURL") }
        let link = try optional("metadata.productLink") { r throws(ViewDecodingError) in try r.string("metadata.productLink") }
        let thickness = try optional("metadata.thickness") { r throws(ViewDecodingError) in Double(bitPattern: try r.u64("metadata.thickness")) }
        return BookMetadata(title: title, subtitle: subtitle, authors: authors, publisher: publisher, publicationDate: published,
                            isbn13: isbn, pageCount: pages, categoryPath: category, coverURL: cover, productLink: link,
                            thicknessMillimetres: thickness)
    }
}

extension ReadingStatus {
    var code: UInt8 {
        switch self { case .wantToRead: 0; case .reading: 1; case .finished: 2; case .didNotFinish: 3 }
    }
    init?(code: UInt8) {
        switch code { case 0: self = .wantToRead; case 1: self = .reading; case 2: self = .finished; case 3: self = .didNotFinish; default: return nil }
    }
}
