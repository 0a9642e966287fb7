import Foundation
import PropertyBased
import Testing
@_spi(Benchmarks) @testable import ReadingEvents

/// The binary decoder's fast path (a hand-written wire reader) against the swift-protobuf path it
/// falls back to: on every input both give the same envelope or the same error, and the records
/// the encoder writes do take the fast path.
@Suite struct CodecFastPathTests {
    static let stream = StreamID.book(reader: WireSamples.reader, book: WireSamples.book)

    static func viaFastPath(_ bytes: [UInt8], stream: StreamID, position: UInt64 = 1,
                            eventID: EventID = WireSamples.eventID, streamVersion: UInt64 = 1) -> EventEnvelope? {
        bytes.withUnsafeBytes {
            BinaryEventCodec.fastDecode($0, position: position, eventID: eventID, stream: stream, streamVersion: streamVersion)
        }
    }

    static func viaSwiftProtobuf(_ bytes: [UInt8], stream: StreamID, position: UInt64 = 1,
                                 eventID: EventID = WireSamples.eventID,
                                 streamVersion: UInt64 = 1) -> Result<EventEnvelope, EventDecodingError> {
        bytes.withUnsafeBytes { raw in
            Result { () throws(EventDecodingError) in
                try BinaryEventCodec.decodeWithSwiftProtobuf(raw, position: position, eventID: eventID, stream: stream,
                                                             streamVersion: streamVersion)
            }
        }
    }

    /// Both paths agree on `bytes`; returns whether the fast path read it.
    @discardableResult
    static func pathsAgree(_ bytes: [UInt8], stream: StreamID = stream, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let reference = viaSwiftProtobuf(bytes, stream: stream)
        let decoded = Result { () throws(EventDecodingError) in
            try BinaryEventCodec.decode(bytes, position: 1, eventID: WireSamples.eventID, stream: stream, streamVersion: 1)
        }
        #expect(decoded == reference, sourceLocation: sourceLocation)
        guard let fast = viaFastPath(bytes, stream: stream) else { return false }
        // Whatever the fast path accepts, swift-protobuf accepts as the same envelope.
        #expect(reference == .success(fast), sourceLocation: sourceLocation)
        return true
    }

    @Test func everyKindTheEncoderWritesTakesTheFastPath() {
        var rng = Xoshiro(seed: (71, 72, 73, 74))
        for kind in CodecSamples.Kind.allCases {
            for _ in 0..<40 {
                var envelope = CodecSamples.envelope(with: CodecSamples.event(kind, &rng), &rng)
                envelope.stream = envelope.event.stream(for: envelope.reader)
                let bytes = BinaryEventCodec.encode(envelope)
                let fast = Self.viaFastPath(bytes, stream: envelope.stream, position: envelope.position,
                                            eventID: envelope.eventID, streamVersion: envelope.streamVersion)
                let reference = Self.viaSwiftProtobuf(bytes, stream: envelope.stream, position: envelope.position,
                                                      eventID: envelope.eventID, streamVersion: envelope.streamVersion)
                #expect(reference == .success(envelope))
                if kind == .homeOrderSet {
                    #expect(fast == nil)  // a repeated field: left to swift-protobuf
                } else {
                    #expect(fast == envelope, "\(kind)")
                }
            }
        }
    }

    @Test func mutatedRecordsGiveTheSameResultOnBothPaths() {
        var rng = Xoshiro(seed: (75, 76, 77, 78))
        var fastAccepted = 0
        for _ in 0..<6_000 {
            var envelope = CodecSamples.envelope(&rng)
            envelope.stream = envelope.event.stream(for: envelope.reader)
            let mutated = CodecFuzzTests.mutate(BinaryEventCodec.encode(envelope), &rng)
            if Self.pathsAgree(mutated, stream: envelope.stream) { fastAccepted += 1 }
        }
        #expect(fastAccepted > 100)
    }

    @Test func randomBytesGiveTheSameResultOnBothPaths() {
        var rng = Xoshiro(seed: (79, 80, 81, 82))
        for _ in 0..<3_000 {
            let bytes = (0..<Int.random(in: 0...160, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            Self.pathsAgree(bytes)
        }
    }

    /// Legal protobuf the encoder never writes: the fast path gives up and swift-protobuf decides.
    @Test func unusualButLegalRecordsAreLeftToSwiftProtobuf() {
        func pages(_ build: (inout Wire) -> Void) -> [UInt8] {
            var w = WireSamples.envelope(type: "PagesRead", version: 1)
            build(&w)
            return w.bytes
        }
        let plain = pages { w in w.message(23) { $0.bytes(1, WireSamples.book.bytes); $0.int(2, 42) } }
        #expect(Self.pathsAgree(plain))

        // A field given twice (the last wins), a payload member given twice (they merge).
        #expect(!Self.pathsAgree(pages { w in w.string(3, "Asia/Tokyo"); w.message(23) { $0.bytes(1, WireSamples.book.bytes) } }))
        #expect(!Self.pathsAgree(pages { w in
            w.message(23) { $0.bytes(1, WireSamples.book.bytes) }
            w.message(23) { $0.int(2, 7) }
        }))
        // Unknown fields in the envelope and in the payload.
        #expect(!Self.pathsAgree(pages { w in w.int(12, 1); w.message(23) { $0.bytes(1, WireSamples.book.bytes) } }))
        #expect(!Self.pathsAgree(pages { w in w.message(23) { $0.bytes(1, WireSamples.book.bytes); $0.int(9, 1) } }))
        // A raw payload beside a payload member, an empty raw payload.
        #expect(!Self.pathsAgree(pages { w in w.bytes(15, [1]); w.message(23) { $0.bytes(1, WireSamples.book.bytes) } }))
        #expect(!Self.pathsAgree(pages { w in w.bytes(15, []); w.message(23) { $0.bytes(1, WireSamples.book.bytes) } }))
        // A wrong wire type.
        #expect(!Self.pathsAgree(pages { w in w.message(23) { $0.bytes(1, WireSamples.book.bytes); $0.bytes(2, [1]) } }))

        // Fields in another order and a non-canonical varint still read the same on both paths.
        var reordered = Wire()
        reordered.message(23) { $0.int(2, 42); $0.bytes(1, WireSamples.book.bytes) }
        reordered.bytes += WireSamples.envelope(type: "PagesRead", version: 1).bytes
        #expect(Self.pathsAgree(reordered.bytes))
        var padded = WireSamples.envelope(type: "PagesRead", version: 1)
        padded.tag(23, 2); padded.varint(22); padded.bytes(1, WireSamples.book.bytes)
        padded.tag(2, 0); padded.bytes += [0xAA, 0x80, 0x00]  // 42 in three bytes
        #expect(Self.pathsAgree(padded.bytes))
        #expect(Self.viaFastPath(padded.bytes, stream: Self.stream)?.event
                == .pagesRead(PagesRead(book: WireSamples.book, position: 42)))

        // A key in two bytes (field 1, length-delimited, padded): both paths agree, whichever reads it.
        var paddedKey = Wire()
        paddedKey.bytes += [0x8A, 0x00]; paddedKey.varint(16); paddedKey.bytes += WireSamples.reader.bytes
        var rest = WireSamples.envelope(type: "PagesRead", version: 1)
        rest.bytes.removeFirst(18)  // the reader field, written again above
        rest.message(23) { $0.bytes(1, WireSamples.book.bytes); $0.int(2, 42) }
        paddedKey.bytes += rest.bytes
        Self.pathsAgree(paddedKey.bytes)
        #expect((try? WireSamples.decode(paddedKey.bytes))?.event == .pagesRead(PagesRead(book: WireSamples.book, position: 42)))

        // Absent proto3 scalars read as zero on both paths.
        #expect(Self.pathsAgree(pages { w in w.message(23) { $0.bytes(1, WireSamples.book.bytes) } }))
        // RatingSet v1 is the upcaster's business.
        #expect(!Self.pathsAgree(CodecUpcastTests.v1Record(rating: 4)))
    }

    @Test func errorsComeFromTheSwiftProtobufPath() {
        var w = WireSamples.envelope(type: "PagesRead", version: 1)
        w.message(23) { $0.bytes(1, WireSamples.book.bytes); $0.int(2, 100_001) }
        #expect(!Self.pathsAgree(w.bytes))
        do {
            _ = try WireSamples.decode(w.bytes)
            Issue.record("decoded")
        } catch {
            #expect(error.field == "data.position")
            #expect(error.rule == .outOfRange)
        }
    }
}
