import PropertyBased
import Testing
@testable import ReadingEvents

/// The generators cover every event type, so the round trips test every payload mapping.
@Suite struct CodecCoverageTests {
    @Test func generatorProducesEveryKnownType() {
        var rng = Xoshiro(seed: (21, 22, 23, 24))
        var seen = Set<EventType>()
        for _ in 0..<3_000 { seen.insert(CodecSamples.envelopes.run(using: &rng).type) }
        #expect(seen == Set(EventType.known))
    }

    @Test func everyGeneratorKindIsAKnownType() {
        var rng = Xoshiro(seed: (25, 26, 27, 28))
        let types = CodecSamples.Kind.allCases.map { CodecSamples.event($0, &rng).type }
        #expect(Set(types) == Set(EventType.known))
        #expect(types.count == EventType.known.count)
    }

    @Test func upcasterKnowsEveryCurrentType() {
        for type in EventType.known {
            #expect(EventUpcaster.form(ofType: type.tag, schemaVersion: type.schemaVersion) == .current(type))
            #expect(EventUpcaster.form(ofType: type.tag, schemaVersion: type.schemaVersion + 1) == .unknown)
        }
        #expect(EventUpcaster.form(ofType: "RatingSet", schemaVersion: 1) == .ratingSetV1)
        #expect(EventUpcaster.form(ofType: "ShelfRenamed", schemaVersion: 1) == .unknown)
    }
}
