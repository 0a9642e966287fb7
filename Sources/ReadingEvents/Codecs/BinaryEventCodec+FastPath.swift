import Foundation

// The fast path of the binary decoder: reads the protobuf wire format of a `StoredEvent` straight
// from the borrowed buffer, without swift-protobuf, for the canonical records the current encoder
// writes. It allocates nothing but the strings the model keeps (a zone name longer than 15 bytes,
// a text): identifiers are read from the buffer in place, the type tag is compared, not copied.
//
// It is an optimisation only, never a second definition of the format. It accepts a strict subset
// of what swift-protobuf parses — each envelope field at most once, no unknown or repeated fields,
// each payload field at most once with its declared wire type, every value valid — and for that
// subset gives exactly the envelope the swift-protobuf path gives. Anything else (an error of any
// kind, an unknown or a v1 payload, a raw payload, a repeated field, `HomeOrderSet`) makes it give
// up, and the swift-protobuf path decodes the record and produces the result or the error. So
// results and error messages are those of the swift-protobuf path by construction;
// `CodecFastPathTests` checks both paths against each other on valid and damaged records.

extension BinaryEventCodec {
    /// The envelope, or `nil` when the record is not one the fast path reads (the caller then uses
    /// the swift-protobuf path, which decodes it or throws the right error).
    @inline(__always)
    static func fastDecode(_ bytes: UnsafeRawBufferPointer, position: UInt64, eventID: EventID,
                           stream: StreamID, streamVersion: UInt64) -> EventEnvelope? {
        do throws(EventDecodingError) {
            return try FastStoredEvent.decode(bytes, position: position, eventID: eventID, stream: stream,
                                              streamVersion: streamVersion)
        } catch {
            return nil
        }
    }
}

/// Thrown inside the fast path to give up; never leaves it.
private let giveUp = EventDecodingError(field: "bytes", problem: .malformed, detail: "not on the fast path")

/// A cursor over protobuf wire format in a borrowed buffer.
private struct WireCursor {
    let base: UnsafePointer<UInt8>
    var index: Int
    let end: Int

    init(_ base: UnsafePointer<UInt8>, _ start: Int, _ end: Int) {
        self.base = base; self.index = start; self.end = end
    }

    var atEnd: Bool { @inline(__always) get { index >= end } }

    /// A varint of at most 10 bytes whose value fits 64 bits (as swift-protobuf reads it).
    @inline(__always)
    mutating func varint() throws(EventDecodingError) -> UInt64 {
        guard index < end else { throw giveUp }
        let first = base[index]
        index += 1
        if first < 0x80 { return UInt64(first) }
        var result = UInt64(first & 0x7F)
        var shift: UInt64 = 7
        while index < end {
            let byte = UInt64(base[index])
            index += 1
            if shift == 63, byte > 1 { throw giveUp }
            result |= (byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        throw giveUp
    }

    /// The next field's number and wire type (only small field numbers are of interest).
    @inline(__always)
    mutating func key() throws(EventDecodingError) -> (field: Int, wireType: Int) {
        let key = try varint()
        guard key < 1 << 16 else { throw giveUp }
        return (Int(truncatingIfNeeded: key >> 3), Int(truncatingIfNeeded: key & 7))
    }

    /// The body of a length-delimited field, as a start index and a count.
    @inline(__always)
    mutating func lengthDelimited() throws(EventDecodingError) -> Slice {
        let length = try varint()
        guard length <= UInt64(end - index) else { throw giveUp }
        let slice = Slice(start: index, count: Int(truncatingIfNeeded: length))
        index += slice.count
        return slice
    }
}

/// Where a length-delimited field's bytes are in the buffer.
private struct Slice {
    var start: Int
    var count: Int
}

@inline(__always)
private func zigZag64(_ n: UInt64) -> Int64 { Int64(bitPattern: (n >> 1) ^ (0 &- (n & 1))) }

/// A UUID from exactly 16 bytes.
@inline(__always)
private func identifier<Tag>(_ base: UnsafePointer<UInt8>, _ slice: Slice) throws(EventDecodingError) -> TaggedID<Tag> {
    guard slice.count == 16 else { throw giveUp }
    return TaggedID(UUID(uuid: UnsafeRawPointer(base + slice.start).loadUnaligned(as: uuid_t.self)))
}

/// UTF-8 text (swift-protobuf rejects invalid UTF-8, so the fast path gives up on it).
@inline(__always)
private func text(_ base: UnsafePointer<UInt8>, _ slice: Slice) throws(EventDecodingError) -> String {
    guard let value = String(validating: UnsafeBufferPointer(start: base + slice.start, count: slice.count),
                             as: UTF8.self) else { throw giveUp }
    return value
}

private enum FastStoredEvent {
    static func decode(_ bytes: UnsafeRawBufferPointer, position: UInt64, eventID: EventID, stream: StreamID,
                       streamVersion: UInt64) throws(EventDecodingError) -> EventEnvelope {
        guard let raw = bytes.baseAddress, !bytes.isEmpty else { throw giveUp }
        let base = raw.assumingMemoryBound(to: UInt8.self)
        var cursor = WireCursor(base, 0, bytes.count)

        var seen: UInt32 = 0
        var readerSlice = Slice(start: 0, count: 0), zoneSlice = readerSlice, typeSlice = readerSlice
        var correlationSlice = readerSlice, causationSlice = readerSlice, payloadSlice = readerSlice
        var occurredAt: Int64 = 0, recordedAt: Int64 = 0
        var version: UInt64 = 0
        var replicaSlice = readerSlice, sequence: UInt64 = 0, stamp: UInt64 = 0
        var payloadKind: EventKind?
        while !cursor.atEnd {
            let (field, wireType) = try cursor.key()
            if field < 16 {
                // Each envelope field once: swift-protobuf would let the last one win.
                let bit: UInt32 = 1 << UInt32(field)
                guard seen & bit == 0 else { throw giveUp }
                seen |= bit
            }
            switch (field, wireType) {
            case (1, 2): readerSlice = try cursor.lengthDelimited()
            case (2, 0): occurredAt = zigZag64(try cursor.varint())
            case (3, 2): zoneSlice = try cursor.lengthDelimited()
            case (4, 0): recordedAt = zigZag64(try cursor.varint())
            case (5, 2): typeSlice = try cursor.lengthDelimited()
            case (6, 0): version = try cursor.varint()
            case (7, 2): correlationSlice = try cursor.lengthDelimited()
            case (8, 2): causationSlice = try cursor.lengthDelimited()
            case (9, 2): replicaSlice = try cursor.lengthDelimited()
            case (10, 0): sequence = try cursor.varint()
            case (11, 0): stamp = try cursor.varint()
            case (_, 2):
                // One payload member, the current payload of a known type (a lookup in a table built
                // from `EventKind`): a second one (or the same again) merges or replaces; RatingSet
                // v1 is the upcaster's business; raw_payload and unknown fields are kept by the
                // swift-protobuf path.
                guard payloadKind == nil, let kind = EventKind(payloadField: field) else { throw giveUp }
                payloadKind = kind
                payloadSlice = try cursor.lengthDelimited()
            default:
                // A wrong wire type, field 0.
                throw giveUp
            }
        }

        let reader: ReaderID = try identifier(base, readerSlice)
        let occurred = try DecodingChecks.instant(occurredAt, "occurredAt")
        let recorded = try DecodingChecks.instant(recordedAt, "recordedAt")
        let zone = try Self.zone(base, zoneSlice)
        let correlationID: EventID? = correlationSlice.count == 0 ? nil : try identifier(base, correlationSlice)
        let causationID: EventID? = causationSlice.count == 0 ? nil : try identifier(base, causationSlice)
        let replica: ReplicaID? = replicaSlice.count == 0 ? nil : try identifier(base, replicaSlice)
        let origin: EventOrigin?
        do { origin = try DecodingChecks.origin(replica: replica, sequence: sequence, stamp: stamp) } catch { throw giveUp }
        guard let payloadKind else { throw giveUp }
        let payload = try FastPayload(base, payloadSlice)
        let event = try payload.event(payloadKind)
        let type = payloadKind.type
        // What the upcaster checks for a current payload: the tag and version agree with it.
        guard version == UInt64(type.schemaVersion), Self.tag(base, typeSlice, equals: type.tag) else { throw giveUp }
        guard stream.reader == reader else { throw giveUp }
        return EventEnvelope(position: position, eventID: eventID, stream: stream, streamVersion: streamVersion,
                             reader: reader, occurredAt: occurred, timeZone: zone, recordedAt: recorded,
                             event: event, correlationID: correlationID, causationID: causationID, origin: origin)
    }

    /// The rule of ``DecodingChecks/storedZone(_:_:)`` on the bytes: 1 ... 255 printable ASCII bytes.
    @inline(__always)
    static func zone(_ base: UnsafePointer<UInt8>, _ slice: Slice) throws(EventDecodingError) -> ZoneID {
        guard slice.count > 0, slice.count <= 255 else { throw giveUp }
        let bytes = UnsafeBufferPointer(start: base + slice.start, count: slice.count)
        var printable = true
        for byte in bytes { printable = printable && byte > 0x20 && byte < 0x7F }
        guard printable else { throw giveUp }
        return ZoneID(unchecked: String(decoding: bytes, as: UTF8.self))
    }

    @inline(__always)
    static func tag(_ base: UnsafePointer<UInt8>, _ slice: Slice, equals expected: String) -> Bool {
        var expected = expected
        return expected.withUTF8 { tag in
            tag.count == slice.count && memcmp(tag.baseAddress!, base + slice.start, tag.count) == 0
        }
    }
}

/// Fields 1 ... 4 of a payload message, each at most once, before they are given their types.
private struct FastPayload {
    /// What one field holds: nothing, a varint, or a length-delimited body.
    struct Field {
        var kind: UInt8 = 0  // 0 absent, 1 varint, 2 length-delimited
        var value: UInt64 = 0
        var slice = Slice(start: 0, count: 0)
    }

    let base: UnsafePointer<UInt8>
    var f1 = Field(), f2 = Field(), f3 = Field(), f4 = Field()

    init(_ base: UnsafePointer<UInt8>, _ body: Slice) throws(EventDecodingError) {
        self.base = base
        var cursor = WireCursor(base, body.start, body.start + body.count)
        while !cursor.atEnd {
            let (number, wireType) = try cursor.key()
            var field = Field()
            switch wireType {
            case 0: field.kind = 1; field.value = try cursor.varint()
            case 2: field.kind = 2; field.slice = try cursor.lengthDelimited()
            default: throw giveUp
            }
            switch number {
            case 1: guard f1.kind == 0 else { throw giveUp }; f1 = field
            case 2: guard f2.kind == 0 else { throw giveUp }; f2 = field
            case 3: guard f3.kind == 0 else { throw giveUp }; f3 = field
            case 4: guard f4.kind == 0 else { throw giveUp }; f4 = field
            default: throw giveUp  // a field this build does not know
            }
        }
    }

    // Typed readers, with proto3 defaults for absent fields.

    @inline(__always)
    func id<Tag>(_ field: Field) throws(EventDecodingError) -> TaggedID<Tag> {
        guard field.kind == 2 else { throw giveUp }
        return try identifier(base, field.slice)
    }

    @inline(__always)
    func int64(_ field: Field) throws(EventDecodingError) -> Int64 {
        guard field.kind != 2 else { throw giveUp }
        return Int64(bitPattern: field.value)
    }

    @inline(__always)
    func optionalInt64(_ field: Field) throws(EventDecodingError) -> Int64? {
        field.kind == 0 ? nil : try int64(field)
    }

    /// A `sint32` (as a day number).
    @inline(__always)
    func sint32(_ field: Field) throws(EventDecodingError) -> Int64 {
        guard field.kind != 2, field.value <= UInt64(UInt32.max) else { throw giveUp }
        let n = UInt32(truncatingIfNeeded: field.value)
        return Int64(Int32(bitPattern: (n >> 1) ^ (0 &- (n & 1))))
    }

    @inline(__always)
    func string(_ field: Field) throws(EventDecodingError) -> String {
        switch field.kind {
        case 0: return ""
        case 2: return try text(base, field.slice)
        default: throw giveUp
        }
    }

    @inline(__always)
    func optionalString(_ field: Field) throws(EventDecodingError) -> String? {
        field.kind == 0 ? nil : try string(field)
    }

    func status(_ field: Field) throws(EventDecodingError) -> ReadingStatus {
        guard field.kind == 1 else { throw giveUp }
        switch field.value {
        case 1: return .wantToRead
        case 2: return .reading
        case 3: return .finished
        case 4: return .didNotFinish
        default: throw giveUp
        }
    }

    func metadata(_ field: Field) throws(EventDecodingError) -> BookMetadata {
        guard field.kind == 2, field.slice.count > 0 else { throw giveUp }
        return try ProtoRead.metadata(UnsafeRawBufferPointer(start: base + field.slice.start, count: field.slice.count))
    }

    func page(_ field: Field, _ name: String) throws(EventDecodingError) -> Int? {
        guard let value = try optionalInt64(field) else { return nil }
        return try DecodingChecks.page(value, name)
    }

    func theme(_ field: Field) throws(EventDecodingError) -> Theme? {
        try DecodingChecks.theme(optionalString(field), "data.theme")
    }

    func date(_ field: Field, _ name: String) throws(EventDecodingError) -> LocalDate {
        try DecodingChecks.date(dayNumber: sint32(field), name)
    }

    /// The event of the payload member of `kind`.
    func event(_ kind: EventKind) throws(EventDecodingError) -> ReadingEvent {
        switch kind {
        case .bookAdded:
            return .bookAdded(BookAdded(book: try id(f1), metadata: try metadata(f2), status: try status(f3)))
        case .metadataCorrected:
            return .metadataCorrected(MetadataCorrected(book: try id(f1), metadata: try metadata(f2)))
        case .bookRemoved:
            return .bookRemoved(BookRemoved(book: try id(f1)))
        case .statusChanged:
            return .statusChanged(ReadingStatusChanged(book: try id(f1), status: try status(f2)))
        case .goalSet:
            let start = try date(f2, "data.startDate")
            let target = try date(f3, "data.targetDate")
            try DecodingChecks.goalDates(start: start, target: target)
            return .goalSet(GoalSet(book: try id(f1), startDate: start, targetDate: target, theme: try theme(f4)))
        case .goalChanged:
            return .goalChanged(GoalChanged(book: try id(f1), targetDate: try date(f2, "data.targetDate"),
                                            theme: try theme(f3)))
        case .goalDeleted:
            return .goalDeleted(GoalDeleted(book: try id(f1)))
        case .pagesRead:
            return .pagesRead(PagesRead(book: try id(f1), position: try DecodingChecks.page(try int64(f2), "data.position")))
        case .progressCorrected:
            return .progressCorrected(ProgressCorrected(
                book: try id(f1), position: try DecodingChecks.page(try int64(f2), "data.position")))
        case .readThroughStarted:
            return .readThroughStarted(ReadThroughStarted(
                book: try id(f1), readThrough: try DecodingChecks.readThrough(try int64(f2), "data.readThrough")))
        case .sessionStarted:
            return .sessionStarted(SessionStarted(session: try id(f1), book: try id(f2)))
        case .sessionPaused:
            return .sessionPaused(SessionPaused(session: try id(f1), book: try id(f2)))
        case .sessionResumed:
            return .sessionResumed(SessionResumed(session: try id(f1), book: try id(f2)))
        case .sessionFinished:
            return .sessionFinished(SessionFinished(
                session: try id(f1), book: try id(f2), endPosition: try page(f3, "data.endPosition"),
                durationSeconds: try DecodingChecks.duration(try int64(f4), "data.durationSeconds")))
        case .sessionDiscarded:
            return .sessionDiscarded(SessionDiscarded(session: try id(f1), book: try id(f2)))
        case .bookFinished:
            return .bookFinished(BookFinished(book: try id(f1), finishedOn: try date(f2, "data.finishedOn")))
        case .finishUndone:
            return .finishUndone(FinishUndone(book: try id(f1)))
        case .sentenceCollected:
            return .sentenceCollected(SentenceCollected(
                sentence: try id(f1), book: try id(f2),
                text: try DecodingChecks.text(try string(f3), limit: Limits.sentenceLength, "data.text"),
                page: try page(f4, "data.page")))
        case .sentenceEdited:
            return .sentenceEdited(SentenceEdited(
                sentence: try id(f1), book: try id(f2),
                text: try DecodingChecks.text(try string(f3), limit: Limits.sentenceLength, "data.text"),
                page: try page(f4, "data.page")))
        case .sentenceRemoved:
            return .sentenceRemoved(SentenceRemoved(sentence: try id(f1), book: try id(f2)))
        case .memoWritten:
            return .memoWritten(MemoWritten(
                memo: try id(f1), book: try id(f2),
                text: try DecodingChecks.text(try string(f3), limit: Limits.memoLength, "data.text"),
                page: try page(f4, "data.page")))
        case .memoEdited:
            return .memoEdited(MemoEdited(
                memo: try id(f1), book: try id(f2),
                text: try DecodingChecks.text(try string(f3), limit: Limits.memoLength, "data.text"),
                page: try page(f4, "data.page")))
        case .memoRemoved:
            return .memoRemoved(MemoRemoved(memo: try id(f1), book: try id(f2)))
        case .ratingSet:
            return .ratingSet(RatingSet(book: try id(f1),
                                        rating: try DecodingChecks.rating(quarters: try int64(f2), "data.rating")))
        case .ratingCleared:
            return .ratingCleared(RatingCleared(book: try id(f1)))
        case .bookLiked:
            return .bookLiked(BookLiked(book: try id(f1)))
        case .bookUnliked:
            return .bookUnliked(BookUnliked(book: try id(f1)))
        case .profileUpdated:
            return .profileUpdated(ProfileUpdated(
                nickname: try DecodingChecks.text(try string(f1), limit: Limits.nicknameLength, "data.nickname"),
                imageFileName: try DecodingChecks.limited(optionalString(f2), limit: Limits.imageFileNameLength, "data.imageFileName"), theme: try theme(f3)))
        case .challengeSet:
            guard f4.kind == 0 else { throw giveUp }
            return .challengeSet(try DecodingChecks.challenge(
                year: try int64(f1), books: try optionalInt64(f2), pages: try optionalInt64(f3)))
        case .homeOrderSet:
            // A repeated field: left to swift-protobuf.
            throw giveUp
        }
    }
}
