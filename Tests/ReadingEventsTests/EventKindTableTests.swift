import PropertyBased
import Testing
@_spi(Benchmarks) @testable import ReadingEvents

/// `EventKind` is the one list of event types: tag, schema version and protobuf payload field of
/// each come from it, and the decoders' lookups are built from it. These tests check that the
/// mapping is one to one and that its field numbers are the generated protobuf code's.
@Suite struct EventKindTableTests {
    @Test func tagTypeAndFieldNumberAreABijection() {
        let kinds = EventKind.allCases
        #expect(Set(kinds.map(\.type.tag)).count == kinds.count, "two kinds share a tag")
        #expect(Set(kinds.map(\.payloadField)).count == kinds.count, "two kinds share a payload field number")
        for kind in kinds {
            #expect(EventKind(tag: kind.type.tag) == kind, "tag -> kind for \(kind)")
            #expect(EventKind(payloadField: kind.payloadField) == kind, "field -> kind for \(kind)")
            #expect(kind.type.schemaVersion >= 1, "\(kind) has schema version \(kind.type.schemaVersion)")
        }
        #expect(EventType.known == kinds.map(\.type))
    }

    @Test func noOtherTagOrFieldNumberHasAKind() {
        for field in -1...200 {
            if let kind = EventKind(payloadField: field) {
                #expect(kind.payloadField == field)
            } else {
                #expect(!EventKind.allCases.contains { $0.payloadField == field }, "field \(field) has no kind")
            }
        }
        // Envelope fields (1 ... 15, raw_payload included) and RatingSet v1 (39) are no type's payload.
        for field in [0, 1, 5, 15, 39, 47] { #expect(EventKind(payloadField: field) == nil, "field \(field)") }
        for tag in ["", "ShelfRenamed", "pagesRead", "PagesRead ", "RatingSetV1"] { #expect(EventKind(tag: tag) == nil) }
    }

    /// Every event's `kind` gives its `type`; an unknown event has none.
    @Test func everyEventHasTheTypeOfItsKind() {
        var rng = Xoshiro(seed: (31, 32, 33, 34))
        var seen = Set<EventKind>()
        for sample in CodecSamples.Kind.allCases {
            let event = CodecSamples.event(sample, &rng)
            guard let kind = event.kind else {
                Issue.record("\(sample) has no kind")
                continue
            }
            seen.insert(kind)
            #expect(event.type == kind.type)
        }
        #expect(seen == Set(EventKind.allCases))
        let unknown = ReadingEvent.unknown(UnknownEvent(type: "ShelfRenamed", schemaVersion: 1, payload: []))
        #expect(unknown.kind == nil)
        #expect(unknown.type == EventType(tag: "ShelfRenamed", schemaVersion: 1))
    }

    /// The field number the generated code writes an event's payload under (through the real
    /// encoder) is its kind's `payloadField`, and the generated parser reads that field back as
    /// the same kind.
    @Test func fieldNumbersAgreeWithTheGeneratedProtobufCode() throws {
        var rng = Xoshiro(seed: (35, 36, 37, 38))
        var seen = Set<EventKind>()
        for sample in CodecSamples.Kind.allCases {
            let envelope = CodecSamples.envelope(with: CodecSamples.event(sample, &rng), &rng)
            let kind = try #require(envelope.event.kind)
            seen.insert(kind)
            let bytes = BinaryEventCodec.encode(envelope)
            let payloadFields = try Self.topLevelFields(bytes).filter { $0 > 15 }
            #expect(payloadFields == [kind.payloadField], "\(kind): the encoder wrote payload fields \(payloadFields)")

            let decoded = bytes.withUnsafeBytes { raw in
                try? BinaryEventCodec.decodeWithSwiftProtobuf(raw, position: envelope.position, eventID: envelope.eventID,
                                                              stream: envelope.stream, streamVersion: envelope.streamVersion)
            }
            #expect(decoded?.event.kind == kind, "\(kind): the generated parser read \(String(describing: decoded?.event.kind))")
        }
        #expect(seen == Set(EventKind.allCases))
    }

    /// The top-level field numbers of protobuf wire bytes, in order (varint and length-delimited
    /// fields only: a StoredEvent has no others).
    static func topLevelFields(_ bytes: [UInt8]) throws -> [Int] {
        struct Malformed: Error {}
        var index = 0
        func varint() throws -> UInt64 {
            var result: UInt64 = 0, shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                result |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return result }
                shift += 7
            }
            throw Malformed()
        }
        var fields: [Int] = []
        while index < bytes.count {
            let key = try varint()
            fields.append(Int(key >> 3))
            switch key & 7 {
            case 0: _ = try varint()
            case 2:
                let length = try varint()
                guard length <= UInt64(bytes.count - index) else { throw Malformed() }
                index += Int(length)
            default: throw Malformed()
            }
        }
        return fields
    }
}
