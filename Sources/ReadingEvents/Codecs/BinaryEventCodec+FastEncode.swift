import Foundation

// The fast path of the binary encoder: writes the protobuf wire format of a `StoredEvent` straight
// into one byte array, without building swift-protobuf messages (each payload, the metadata as a
// `Data`, the identifiers as `Data`, the message storage), which took about 10,000 instructions an
// appended event (issue 37).
//
// It is an optimisation only, never a second definition of the format: for every event it writes
// exactly the bytes swift-protobuf's serializer writes for the message `storedEvent(_:)` builds
// (fields in field-number order; a proto3 scalar, string or bytes field left out when it holds its
// default, a proto3 `optional` field and a `oneof` member written whenever set). An unknown event,
// whose payload may be unknown fields or a raw payload, is left to swift-protobuf.
// `CodecFastEncodeTests` compares both on every kind, with edge values.

extension BinaryEventCodec {
    /// The stored value of `envelope`, as ``encode(_:)`` returns it; `nil` for an unknown event
    /// (the caller then serializes with swift-protobuf).
    static func fastEncode(_ envelope: EventEnvelope) -> [UInt8]? {
        if case .unknown = envelope.event { return nil }
        var out = WireWriter()
        out.bytes.reserveCapacity(160)
        out.id(1, envelope.reader)
        out.sint64(2, envelope.occurredAt.microseconds)
        out.string(3, envelope.timeZone.identifier)
        out.sint64(4, envelope.recordedAt.microseconds)
        let type = envelope.event.type
        out.string(5, type.tag)
        out.uint64(6, UInt64(UInt32(truncatingIfNeeded: type.schemaVersion)))
        if let id = envelope.correlationID { out.id(7, id) }
        if let id = envelope.causationID { out.id(8, id) }
        if let origin = envelope.origin, origin.replica != .provisional {
            out.id(9, origin.replica)
            out.uint64(10, origin.sequence)
            out.uint64(11, origin.stamp)
        }
        out.payload(envelope.event)
        return out.bytes
    }
}

/// Protobuf wire format appended to one array.
private struct WireWriter {
    var bytes: [UInt8] = []

    @inline(__always)
    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    @inline(__always)
    mutating func key(_ field: Int, _ wireType: Int) { varint(UInt64(field << 3 | wireType)) }

    // Proto3 fields without presence: left out when they hold their default.

    /// A `uint32` or `uint64` field.
    mutating func uint64(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        key(field, 0); varint(value)
    }

    /// An `int64` (or non-negative enum) field.
    mutating func int64(_ field: Int, _ value: Int64) { uint64(field, UInt64(bitPattern: value)) }

    /// A `sint64` field (zigzag).
    mutating func sint64(_ field: Int, _ value: Int64) {
        uint64(field, UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// A `sint32` field (zigzag, of the value's low 32 bits as swift-protobuf's `Int32` holds it).
    mutating func sint32(_ field: Int, _ value: Int32) {
        uint64(field, UInt64(UInt32(bitPattern: (value << 1) ^ (value >> 31))))
    }

    /// A `string` field.
    mutating func string(_ field: Int, _ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            guard !utf8.isEmpty else { return }
            key(field, 2); varint(UInt64(utf8.count)); bytes.append(contentsOf: utf8)
        }
    }

    /// A `bytes` field holding an identifier's 16 bytes (never empty, so always written).
    mutating func id<Tag>(_ field: Int, _ value: TaggedID<Tag>) {
        key(field, 2); varint(16)
        withUnsafeBytes(of: value.uuid.uuid) { bytes.append(contentsOf: $0) }
    }

    // Proto3 `optional` fields: written whenever present.

    mutating func optionalInt64(_ field: Int, _ value: Int64?) {
        guard let value else { return }
        key(field, 0); varint(UInt64(bitPattern: value))
    }

    mutating func optionalSint32(_ field: Int, _ value: Int32?) {
        guard let value else { return }
        key(field, 0); varint(UInt64(UInt32(bitPattern: (value << 1) ^ (value >> 31))))
    }

    mutating func optionalString(_ field: Int, _ value: String?) {
        guard var value else { return }
        value.withUTF8 { utf8 in key(field, 2); varint(UInt64(utf8.count)); bytes.append(contentsOf: utf8) }
    }

    mutating func optionalDouble(_ field: Int, _ value: Double?) {
        guard let value else { return }
        key(field, 1)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A length-delimited field whose body `body` writes: always written for a `oneof` member;
    /// left out when empty with `omitEmpty` (a proto3 `bytes` field, as the metadata is). The
    /// length is reserved as one byte and widened when the body is longer.
    mutating func nested(_ field: Int, omitEmpty: Bool = false, _ body: (inout WireWriter) -> Void) {
        let keyAt = bytes.count
        key(field, 2)
        let lengthAt = bytes.count
        bytes.append(0)
        body(&self)
        let length = bytes.count - lengthAt - 1
        if length == 0, omitEmpty {
            bytes.removeSubrange(keyAt...)
        } else if length < 0x80 {
            bytes[lengthAt] = UInt8(length)
        } else {
            var prefix = WireWriter()
            prefix.varint(UInt64(length))
            bytes.replaceSubrange(lengthAt...lengthAt, with: prefix.bytes)
        }
    }

    /// A `BookMetadata` message (as `Readinghistory_V1_BookMetadata(_:)` fills it).
    mutating func metadata(_ field: Int, _ m: BookMetadata) {
        nested(field, omitEmpty: true) { out in
            out.string(1, m.title)
            out.optionalString(2, m.subtitle)
            out.string(3, m.authors)
            out.optionalString(4, m.publisher)
            out.optionalSint32(5, m.publicationDate?.protoDay)
            out.optionalString(6, m.isbn13?.digits)
            out.optionalInt64(7, m.pageCount.map { Int64($0) })
            out.optionalString(8, m.categoryPath)
            out.optionalString(9, m.coverURL)
            out.optionalString(10, m.productLink)
            out.optionalDouble(11, m.thicknessMillimetres)
        }
    }

    /// The payload member of a known event (as `ProtoPayload(_:)` fills it).
    mutating func payload(_ event: ReadingEvent) {
        guard let kind = event.kind else { return }
        nested(kind.payloadField) { out in
            switch event {
            case .bookAdded(let e):
                out.id(1, e.book); out.metadata(2, e.metadata); out.int64(3, Int64(e.status.proto.rawValue))
            case .metadataCorrected(let e):
                out.id(1, e.book); out.metadata(2, e.metadata)
            case .bookRemoved(let e): out.id(1, e.book)
            case .statusChanged(let e):
                out.id(1, e.book); out.int64(2, Int64(e.status.proto.rawValue))
            case .goalSet(let e):
                out.id(1, e.book); out.sint32(2, e.startDate.protoDay); out.sint32(3, e.targetDate.protoDay)
                out.optionalString(4, e.theme?.rawValue)
            case .goalChanged(let e):
                out.id(1, e.book); out.sint32(2, e.targetDate.protoDay); out.optionalString(3, e.theme?.rawValue)
            case .goalDeleted(let e): out.id(1, e.book)
            case .pagesRead(let e): out.id(1, e.book); out.int64(2, Int64(e.position))
            case .progressCorrected(let e): out.id(1, e.book); out.int64(2, Int64(e.position))
            case .readThroughStarted(let e): out.id(1, e.book); out.int64(2, Int64(e.readThrough))
            case .sessionStarted(let e): out.id(1, e.session); out.id(2, e.book)
            case .sessionPaused(let e): out.id(1, e.session); out.id(2, e.book)
            case .sessionResumed(let e): out.id(1, e.session); out.id(2, e.book)
            case .sessionFinished(let e):
                out.id(1, e.session); out.id(2, e.book)
                out.optionalInt64(3, e.endPosition.map { Int64($0) }); out.int64(4, Int64(e.durationSeconds))
            case .sessionDiscarded(let e): out.id(1, e.session); out.id(2, e.book)
            case .bookFinished(let e): out.id(1, e.book); out.sint32(2, e.finishedOn.protoDay)
            case .finishUndone(let e): out.id(1, e.book)
            case .sentenceCollected(let e):
                out.id(1, e.sentence); out.id(2, e.book); out.string(3, e.text); out.optionalInt64(4, e.page.map { Int64($0) })
            case .sentenceEdited(let e):
                out.id(1, e.sentence); out.id(2, e.book); out.string(3, e.text); out.optionalInt64(4, e.page.map { Int64($0) })
            case .sentenceRemoved(let e): out.id(1, e.sentence); out.id(2, e.book)
            case .memoWritten(let e):
                out.id(1, e.memo); out.id(2, e.book); out.string(3, e.text); out.optionalInt64(4, e.page.map { Int64($0) })
            case .memoEdited(let e):
                out.id(1, e.memo); out.id(2, e.book); out.string(3, e.text); out.optionalInt64(4, e.page.map { Int64($0) })
            case .memoRemoved(let e): out.id(1, e.memo); out.id(2, e.book)
            case .ratingSet(let e): out.id(1, e.book); out.int64(2, Int64(e.rating.quarters))
            case .ratingCleared(let e): out.id(1, e.book)
            case .bookLiked(let e): out.id(1, e.book)
            case .bookUnliked(let e): out.id(1, e.book)
            case .homeOrderSet(let e): for book in e.books { out.id(1, book) }
            case .profileUpdated(let e):
                out.string(1, e.nickname); out.optionalString(2, e.imageFileName); out.optionalString(3, e.theme?.rawValue)
            case .challengeSet(let e):
                out.int64(1, Int64(e.year)); out.optionalInt64(2, e.books.map { Int64($0) }); out.optionalInt64(3, e.pages.map { Int64($0) })
            case .unknown:
                break  // never reached: fastEncode leaves unknown events to swift-protobuf
            }
        }
    }
}
