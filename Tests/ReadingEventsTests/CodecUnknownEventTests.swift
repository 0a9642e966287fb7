import Foundation
import PropertyBased
import Testing
@testable import ReadingEvents

/// Events this build does not know are kept byte for byte, in both codecs, and survive a round trip.
@Suite struct CodecUnknownEventTests {
    /// A record as a newer build would write it: a payload member (field 60) this build lacks.
    static func newerBuildRecord(type: String = "ShelfRenamed", version: UInt64 = 1) -> (record: [UInt8], payload: [UInt8]) {
        var w = WireSamples.envelope(type: type, version: version)
        let envelopeEnd = w.bytes.count
        w.message(60) { shelf in
            shelf.bytes(1, WireSamples.book.bytes)
            shelf.string(2, "올해의 책")
        }
        return (w.bytes, Array(w.bytes[envelopeEnd...]))
    }

    @Test func newerPayloadMemberDecodesAsUnknownAndReencodesIdentically() throws {
        let (record, payload) = Self.newerBuildRecord()
        let envelope = try WireSamples.decode(record, stream: .reader(WireSamples.reader))
        #expect(envelope.event == .unknown(UnknownEvent(type: "ShelfRenamed", schemaVersion: 1, payload: payload)))
        #expect(BinaryEventCodec.encode(envelope) == record)
    }

    @Test func newerVersionOfAKnownTypeDecodesAsUnknown() throws {
        let (record, payload) = Self.newerBuildRecord(type: "PagesRead", version: 2)
        let envelope = try WireSamples.decode(record)
        #expect(envelope.event == .unknown(UnknownEvent(type: "PagesRead", schemaVersion: 2, payload: payload)))
        #expect(envelope.type == EventType(tag: "PagesRead", schemaVersion: 2))
        #expect(BinaryEventCodec.encode(envelope) == record)
    }

    @Test func knownTypeWithoutPayloadIsATypedError() {
        let record = WireSamples.envelope(type: "PagesRead", version: 1).bytes
        do {
            _ = try WireSamples.decode(record)
            Issue.record("decoded")
        } catch {
            #expect(error.field == "data")
            #expect(error.problem == .missing)
        }
    }

    @Test func unknownEventSurvivesStoreExportImportStore() throws {
        let (record, _) = Self.newerBuildRecord()
        let stored = try WireSamples.decode(record, stream: .reader(WireSamples.reader))
        let line = JSONEventCodec.encodeLine(stored)
        #expect(line.contains(#""data":null"#))
        #expect(line.contains(#""rawPayload":""#))
        #expect(line.contains(#""type":"ShelfRenamed""#))
        let imported = try JSONEventCodec.decode(line)
        #expect(imported == stored)
        #expect(BinaryEventCodec.encode(imported) == record)
    }

    @Test func arbitraryUnknownPayloadsRoundTripInBothCodecs() {
        seeded(CodecSamples.unknownEnvelopes, count: 2_000, seed: (31, 32, 33, 34)) { envelope in
            let bytes = BinaryEventCodec.encode(envelope)
            let decoded = try BinaryEventCodec.decode(bytes, position: envelope.position, eventID: envelope.eventID,
                                                      stream: envelope.stream, streamVersion: envelope.streamVersion)
            #expect(decoded == envelope)
            #expect(BinaryEventCodec.encode(decoded) == bytes)
            #expect(try BinaryEventCodec.decodeRecord(BinaryEventCodec.encodeRecord(envelope)) == envelope)
            let line = JSONEventCodec.encode(envelope)
            #expect(try JSONEventCodec.decode(line) == envelope)
        }
    }

    @Test func jsonUnknownTypeWithDataObjectIsATypedError() {
        let line = #"{"data":{"x":1},"eventID":"11111111-2222-4333-8444-555555555555","occurredAt":"2026-03-01T12:30:00Z","position":1,"reader":"0e4f1b2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b","recordedAt":"2026-03-01T12:30:00Z","schemaVersion":1,"stream":"reader:0e4f1b2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b","streamVersion":1,"timeZone":"UTC","type":"ShelfRenamed"}"#
        #expect(throws: EventDecodingError.self) { try JSONEventCodec.decode(line) }
    }

    @Test func knownEventWithRawPayloadIsInconsistent() {
        var w = WireSamples.envelope(type: "BookLiked", version: 1)
        w.message(42) { $0.bytes(1, WireSamples.book.bytes) }
        w.bytes(15, [1, 2, 3])
        do {
            _ = try WireSamples.decode(w.bytes)
            Issue.record("decoded")
        } catch {
            #expect(error.field == "rawPayload")
            #expect(error.problem == .inconsistent)
        }
    }
}
