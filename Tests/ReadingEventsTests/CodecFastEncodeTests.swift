import Foundation
import PropertyBased
import Testing
@_spi(Benchmarks) @testable import ReadingEvents

/// The binary encoder's hand-written wire writer against swift-protobuf's serializer, the format's
/// reference: byte-identical records for every kind, with random values and at the edges where
/// proto3 leaves a field out (zeros, empty strings, absent optionals) or widens a length.
@Suite struct CodecFastEncodeTests {
    /// `envelope` with an origin of the `choice`-th shape: none, provisional, zero counters, large.
    static func withOrigin(_ envelope: EventEnvelope, _ choice: Int, _ rng: inout some RandomNumberGenerator) -> EventEnvelope {
        var envelope = envelope
        switch choice % 4 {
        case 0: envelope.origin = nil
        case 1: envelope.origin = EventOrigin(stamp: 7, replica: .provisional, sequence: 3)
        case 2: envelope.origin = EventOrigin(stamp: 0, replica: CodecSamples.id(&rng), sequence: 0)
        default:
            envelope.origin = EventOrigin(stamp: UInt64.random(in: 1...UInt64.max, using: &rng),
                                          replica: CodecSamples.id(&rng), sequence: UInt64.random(in: 1...UInt64.max, using: &rng))
        }
        return envelope
    }

    static func expectSameBytes(_ envelope: EventEnvelope, sourceLocation: SourceLocation = #_sourceLocation) {
        let fast = BinaryEventCodec.encode(envelope)
        let reference = BinaryEventCodec.encodeWithSwiftProtobuf(envelope)
        #expect(fast == reference, "\(envelope.event.type.tag)", sourceLocation: sourceLocation)
    }

    @Test func everyKindWritesSwiftProtobufsBytes() {
        var rng = Xoshiro(seed: (81, 82, 83, 84))
        for kind in CodecSamples.Kind.allCases {
            for round in 0..<60 {
                let envelope = CodecSamples.envelope(with: CodecSamples.event(kind, &rng), &rng)
                Self.expectSameBytes(Self.withOrigin(envelope, round, &rng))
                // The writer is used: a known event never goes to swift-protobuf.
                #expect(BinaryEventCodec.fastEncode(envelope) != nil)
            }
        }
    }

    @Test func edgeValuesWriteSwiftProtobufsBytes() throws {
        var rng = Xoshiro(seed: (91, 92, 93, 94))
        let book: BookID = CodecSamples.id(&rng), item: SessionID = CodecSamples.id(&rng)
        let bare = BookMetadata(title: "", subtitle: nil, authors: "", publisher: nil, publicationDate: nil, isbn13: nil,
                                pageCount: nil, categoryPath: nil, coverURL: nil, productLink: nil, thicknessMillimetres: nil)
        let full = BookMetadata(title: String(repeating: "가", count: 100), subtitle: "", authors: "a", publisher: "",
                                publicationDate: LocalDate(dayNumber: -719_162), isbn13: CodecSamples.isbn(&rng),
                                pageCount: 1, categoryPath: "", coverURL: "", productLink: "", thicknessMillimetres: -0.0)
        let long = String(repeating: "한강 ", count: Limits.memoLength / 3)  // a length of three varint bytes
        let events: [ReadingEvent] = [
            .bookAdded(BookAdded(book: book, metadata: bare, status: .wantToRead)),
            .bookAdded(BookAdded(book: book, metadata: full, status: .didNotFinish)),
            .metadataCorrected(MetadataCorrected(book: book, metadata: full)),
            .pagesRead(PagesRead(book: book, position: 0)),
            .progressCorrected(ProgressCorrected(book: book, position: 127)),
            .progressCorrected(ProgressCorrected(book: book, position: 128)),
            .sessionFinished(SessionFinished(session: item, book: book, endPosition: 0, durationSeconds: 0)),
            .sessionFinished(SessionFinished(session: item, book: book, endPosition: nil, durationSeconds: Limits.sessionSeconds)),
            .goalSet(GoalSet(book: book, startDate: LocalDate(dayNumber: 0), targetDate: LocalDate(dayNumber: 0), theme: nil)),
            .goalSet(GoalSet(book: book, startDate: LocalDate(dayNumber: -1), targetDate: LocalDate(dayNumber: 2_932_896), theme: "")),
            .goalChanged(GoalChanged(book: book, targetDate: LocalDate(dayNumber: -719_162), theme: nil)),
            .bookFinished(BookFinished(book: book, finishedOn: LocalDate(dayNumber: 0))),
            .memoWritten(MemoWritten(memo: CodecSamples.id(&rng), book: book, text: long, page: 0)),
            .sentenceCollected(SentenceCollected(sentence: CodecSamples.id(&rng), book: book,
                                                 text: String(repeating: "e\u{301}", count: 50), page: nil)),
            .homeOrderSet(HomeOrderSet(books: [])),
            .homeOrderSet(HomeOrderSet(books: (0..<40).map { _ in CodecSamples.id(&rng) })),
            .profileUpdated(ProfileUpdated(nickname: "", imageFileName: "", theme: nil)),
            .ratingSet(RatingSet(book: book, rating: try Rating(quarters: 20))),
        ]
        for (index, event) in events.enumerated() {
            var envelope = CodecSamples.envelope(with: event, &rng)
            if index % 3 == 0 { envelope.occurredAt = Timestamp(microseconds: 0); envelope.recordedAt = Timestamp(microseconds: -1) }
            Self.expectSameBytes(Self.withOrigin(envelope, index, &rng))
        }
    }

    @Test func unknownEventsAreLeftToSwiftProtobuf() {
        var rng = Xoshiro(seed: (95, 96, 97, 98))
        for round in 0..<100 {
            let envelope = Self.withOrigin(CodecSamples.unknownEnvelope(&rng), round, &rng)
            #expect(BinaryEventCodec.fastEncode(envelope) == nil)
            Self.expectSameBytes(envelope)
        }
    }
}
