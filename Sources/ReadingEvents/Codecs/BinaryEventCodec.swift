import Foundation
import SwiftProtobuf

/// The storage codec: one ``EventEnvelope`` as a compact, versioned protobuf message
/// (`readinghistory.v1.StoredEvent` of `Schema/reading_events.proto`, the schema of record).
///
/// A stored value leaves out the position, event ID, stream and stream version: the log keeps
/// them in its own keys and passes them back to ``decode(_:position:eventID:stream:streamVersion:)-(UnsafeRawBufferPointer,_,_,_,_)``.
/// ``encodeRecord(_:)`` and ``decodeRecord(_:)-(UnsafeRawBufferPointer)`` carry them too, for a
/// self-contained value.
///
/// Decoding is one protobuf pass plus value checks (identifiers of 16 bytes, instants in
/// 1900 ..< 2200, a plausible zone identifier, ratings, ISBN check digits, dates, ranges and
/// lengths), then ``EventUpcaster/upcast(type:schemaVersion:payload:)``. Known events are written
/// by a hand-written wire writer with swift-protobuf's exact bytes; records in the shape the
/// encoder writes are read by an allocation-free fast path; everything else, and every error, by
/// swift-protobuf, with the same results (see the Codecs article). Anything wrong throws an
/// ``EventDecodingError``; bad bytes never trap and never decode into wrong data. The zone is not
/// looked up in the tz database (it was checked on append, and a lookup per event is slow).
///
/// An event of a type this build does not know (an unknown tag or version, or a payload member
/// this build lacks) decodes to ``ReadingEvent/unknown(_:)`` whose payload holds the exact stored
/// payload bytes, and encoding that unknown event gives the same record back, byte for byte.
///
/// `Sendable`: an uninhabited namespace.
public enum BinaryEventCodec {
    // MARK: Stored values (the event log's format)

    /// The stored value of an envelope: everything but its position, event ID, stream and stream
    /// version.
    ///
    /// An unknown event's schema version is stored as a `uint32`, so it must lie in
    /// 1 ... `UInt32.max` to read back (every version a decoder produces does).
    ///
    /// - Precondition: the event serializes to less than 2 GiB (the payload limits keep every
    ///   valid event far below).
    public static func encode(_ envelope: EventEnvelope) -> [UInt8] {
        // Every known event takes the hand-written writer, which writes exactly swift-protobuf's
        // bytes; an unknown event (its payload kept as unknown fields or raw bytes) swift-protobuf.
        fastEncode(envelope) ?? encodeWithSwiftProtobuf(envelope)
    }

    /// The reference encoder: swift-protobuf's serialization of the generated `StoredEvent`.
    /// ``encode(_:)`` gives the same bytes for every event. Exposed to the benchmark (and the tests)
    /// only, to measure and check the fast path against it.
    @_spi(Benchmarks)
    public static func encodeWithSwiftProtobuf(_ envelope: EventEnvelope) -> [UInt8] {
        serialize(storedEvent(envelope))
    }

    /// Decodes a stored value read straight from a borrowed buffer (an LMDB memory map), with the
    /// fields the log keeps in its keys. The buffer is not retained.
    ///
    /// Throws ``EventDecodingError`` for bytes that do not parse, a value that breaks a rule, a
    /// type tag that contradicts the payload, or a `stream` of another reader.
    public static func decode(_ bytes: UnsafeRawBufferPointer, position: UInt64, eventID: EventID,
                              stream: StreamID, streamVersion: UInt64) throws(EventDecodingError) -> EventEnvelope {
        // The canonical records the encoder writes take the allocation-free fast path; anything
        // else (and every error) goes through swift-protobuf, which has the last word.
        if let envelope = fastDecode(bytes, position: position, eventID: eventID, stream: stream,
                                     streamVersion: streamVersion) {
            return envelope
        }
        return try decodeWithSwiftProtobuf(bytes, position: position, eventID: eventID, stream: stream,
                                           streamVersion: streamVersion)
    }

    /// The reference decoder: swift-protobuf's parse of the generated `StoredEvent`, then the
    /// checks. ``decode(_:position:eventID:stream:streamVersion:)-(UnsafeRawBufferPointer,_,_,_,_)``
    /// falls back to it for every record its fast path does not read. Exposed to the benchmark
    /// (and the tests) only, to measure and check the fast path against it.
    @_spi(Benchmarks)
    public static func decodeWithSwiftProtobuf(_ bytes: UnsafeRawBufferPointer, position: UInt64, eventID: EventID,
                                        stream: StreamID, streamVersion: UInt64) throws(EventDecodingError) -> EventEnvelope {
        let message: ProtoStoredEvent
        do {
            message = try ProtoStoredEvent(serializedBytes: bytes.bytes, partial: true)
        } catch {
            throw malformed(error, "StoredEvent")
        }
        return try envelope(from: message, position: position, eventID: eventID, stream: stream,
                            streamVersion: streamVersion)
    }

    /// Decodes a stored value held in an array; see
    /// ``decode(_:position:eventID:stream:streamVersion:)-(UnsafeRawBufferPointer,_,_,_,_)``.
    public static func decode(_ bytes: [UInt8], position: UInt64, eventID: EventID,
                              stream: StreamID, streamVersion: UInt64) throws(EventDecodingError) -> EventEnvelope {
        let result: Result<EventEnvelope, EventDecodingError> = bytes.withUnsafeBytes { raw in
            Result { () throws(EventDecodingError) in
                try decode(raw, position: position, eventID: eventID, stream: stream, streamVersion: streamVersion)
            }
        }
        return try result.get()
    }

    // MARK: Self-contained values

    /// The whole envelope, position, event ID, stream and stream version included
    /// (`readinghistory.v1.EventRecord`), for tests and exchange between processes.
    ///
    /// - Precondition: as for ``encode(_:)``.
    public static func encodeRecord(_ envelope: EventEnvelope) -> [UInt8] {
        var record = Readinghistory_V1_EventRecord()
        record.position = envelope.position
        record.eventID = envelope.eventID.protoBytes
        record.stream = envelope.stream.description
        record.streamVersion = envelope.streamVersion
        record.event = storedEvent(envelope)
        return serialize(record)
    }

    /// Decodes a value written by ``encodeRecord(_:)`` from a borrowed buffer; throws
    /// ``EventDecodingError`` as ``decode(_:position:eventID:stream:streamVersion:)-(UnsafeRawBufferPointer,_,_,_,_)``
    /// does, and for a missing or malformed event ID or stream name.
    public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(EventDecodingError) -> EventEnvelope {
        let record: Readinghistory_V1_EventRecord
        do {
            record = try Readinghistory_V1_EventRecord(serializedBytes: bytes.bytes, partial: true)
        } catch {
            throw malformed(error, "EventRecord")
        }
        let eventID: EventID = try ProtoRead.id(record.eventID, "eventID")
        guard !record.stream.isEmpty else { throw .missing("stream") }
        guard let stream = StreamID(record.stream) else {
            throw .invalid("stream", .malformed, "\"\(record.stream)\" is not book:<reader>:<book> or reader:<reader>")
        }
        guard record.hasEvent else { throw .missing("event") }
        return try envelope(from: record.event, position: record.position, eventID: eventID, stream: stream,
                            streamVersion: record.streamVersion)
    }

    /// Decodes a value written by ``encodeRecord(_:)`` held in an array.
    public static func decodeRecord(_ bytes: [UInt8]) throws(EventDecodingError) -> EventEnvelope {
        let result: Result<EventEnvelope, EventDecodingError> = bytes.withUnsafeBytes { raw in
            Result { () throws(EventDecodingError) in try decodeRecord(raw) }
        }
        return try result.get()
    }

    // MARK: Internals

    static func storedEvent(_ envelope: EventEnvelope) -> ProtoStoredEvent {
        var message = ProtoStoredEvent()
        message.reader = envelope.reader.protoBytes
        message.occurredAtUs = envelope.occurredAt.microseconds
        message.timeZone = envelope.timeZone.identifier
        message.recordedAtUs = envelope.recordedAt.microseconds
        let type = envelope.event.type
        message.type = type.tag
        message.schemaVersion = UInt32(truncatingIfNeeded: type.schemaVersion)
        if let id = envelope.correlationID { message.correlationID = id.protoBytes }
        if let id = envelope.causationID { message.causationID = id.protoBytes }
        if let origin = envelope.origin, origin.replica != .provisional {
            message.replica = origin.replica.protoBytes
            message.sequence = origin.sequence
            message.stamp = origin.stamp
        }
        if let payload = ProtoPayload(envelope.event) {
            message.payload = payload
        } else if case .unknown(let unknown) = envelope.event {
            attachUnknownPayload(unknown.payload, to: &message)
        }
        return message
    }

    /// Puts an unknown event's payload back where it came from. Bytes that are protobuf fields
    /// this build does not know (a newer build's payload member, as ``decode(_:position:eventID:stream:streamVersion:)-(UnsafeRawBufferPointer,_,_,_,_)``
    /// returns them) become those fields again, so the record is the same, byte for byte; any
    /// other bytes (an unknown event imported from JSON, say) go to `raw_payload`.
    private static func attachUnknownPayload(_ payload: [UInt8], to message: inout ProtoStoredEvent) {
        guard !payload.isEmpty else { return }
        var probe = ProtoStoredEvent()
        // When every byte lands in `unknownFields`, no field of this build was among them.
        if (try? probe.merge(serializedBytes: payload, partial: true)) != nil,
           probe.unknownFields.data.elementsEqual(payload) {
            message.unknownFields = probe.unknownFields
        } else {
            message.rawPayload = Data(payload)
        }
    }

    static func envelope(from message: consuming ProtoStoredEvent, position: UInt64, eventID: EventID, stream: StreamID,
                         streamVersion: UInt64) throws(EventDecodingError) -> EventEnvelope {
        let reader: ReaderID = try ProtoRead.id(message.reader, "reader")
        let occurredAt = try DecodingChecks.instant(message.occurredAtUs, "occurredAt")
        let timeZone = try DecodingChecks.storedZone(message.timeZone, "timeZone")
        let recordedAt = try DecodingChecks.instant(message.recordedAtUs, "recordedAt")
        let tag = try DecodingChecks.typeTag(message.type, "type")
        let version = try DecodingChecks.schemaVersion(Int64(message.schemaVersion), "schemaVersion")
        let correlationID: EventID? = try ProtoRead.optionalID(message.correlationID, "correlationID")
        let causationID: EventID? = try ProtoRead.optionalID(message.causationID, "causationID")
        let origin = try DecodingChecks.origin(replica: try ProtoRead.optionalID(message.replica, "replica"),
                                               sequence: message.sequence, stamp: message.stamp)

        let stored: StoredPayload
        if let payload = message.payload.take() {  // moved out, not copied
            guard message.rawPayload.isEmpty else {
                throw .inconsistent("rawPayload", "a \(tag) event has a payload and a raw payload")
            }
            stored = try ProtoRead.payload(consume payload)
        } else {
            // A type this build does not know: keep its payload exactly as stored.
            let bytes = message.rawPayload.isEmpty ? [UInt8](message.unknownFields.data) : [UInt8](message.rawPayload)
            stored = .event(.unknown(UnknownEvent(type: tag, schemaVersion: version, payload: bytes)))
        }
        let event = try EventUpcaster.upcast(type: tag, schemaVersion: version, payload: stored)
        try DecodingChecks.stream(stream, reader: reader)
        return EventEnvelope(position: position, eventID: eventID, stream: stream, streamVersion: streamVersion,
                             reader: reader, occurredAt: occurredAt, timeZone: timeZone, recordedAt: recordedAt,
                             event: event, correlationID: correlationID, causationID: causationID, origin: origin)
    }

    private static func serialize(_ message: some SwiftProtobuf.Message) -> [UInt8] {
        do {
            return try message.serializedBytes()
        } catch {
            // Proto3 messages without `Any` fields fail to serialize only beyond 2 GiB.
            preconditionFailure("an event did not serialize: \(error)")
        }
    }

    private static func malformed(_ error: any Error, _ message: String) -> EventDecodingError {
        EventDecodingError(field: "bytes", problem: .malformed,
                           detail: "the bytes are not a valid \(message) protobuf message (\(error))")
    }
}
