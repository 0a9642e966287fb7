import Testing
@testable import ReadingEvents
@Test func placeholder() { #expect(Bool(true)) }
