import Testing
@testable import EventStoreLMDB
@Test func storePlaceholder() { #expect(Bool(true)) }
