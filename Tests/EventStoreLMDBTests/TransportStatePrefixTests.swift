import EventStoreLMDB
import Foundation
import Testing
import TestSupport

/// A transport's list kept one entry per key (the sync client's refused records): listed by
/// prefix in key order, replaced as a whole in one transaction, other keys untouched.
@Suite struct TransportStatePrefixTests {
    @Test func entriesUnderAPrefixAreListedAndReplacedTogether() throws {
        let dir = try TempDirectory.created(prefix: "transport-prefix")
        defer { dir.remove() }
        let store = try ReadingStore.open(at: dir.child("store"))
        try store.setTransportState("server refused", Array("old list".utf8))
        try store.setTransportState("server refused-retried", Array("1".utf8))
        var entries: [String: [UInt8]] = [:]
        for n in 0..<300 { entries["server refused r \(1_000 + n)"] = Array("record \(n)".utf8) }
        try store.replaceTransportStates(withPrefix: "server refused ", by: entries)
        let listed = try store.transportStates(withPrefix: "server refused ")
        #expect(listed.count == 300)
        #expect(listed.map(\.key) == entries.keys.sorted())
        #expect(listed.allSatisfy { entries[$0.key] == $0.value })
        // Keys beside the prefix are not touched.
        #expect(try store.transportState("server refused") == Array("old list".utf8))
        #expect(try store.transportState("server refused-retried") == Array("1".utf8))
        // Replaced: the ones not named are removed, the others kept or changed.
        try store.replaceTransportStates(withPrefix: "server refused ", by: ["server refused r 1005": Array("changed".utf8)])
        let after = try store.transportStates(withPrefix: "server refused ")
        #expect(after.map(\.key) == ["server refused r 1005"] && after.first?.value == Array("changed".utf8))
        try store.replaceTransportStates(withPrefix: "server refused ", by: [:])
        #expect(try store.transportStates(withPrefix: "server refused ").isEmpty)
        // A key outside the prefix is refused and nothing is written.
        #expect(throws: EventStoreError.self) {
            try store.replaceTransportStates(withPrefix: "server refused ", by: ["server refused x": [1], "other": [2]])
        }
        #expect(try store.transportStates(withPrefix: "server refused ").isEmpty)
        #expect(try store.transportState("other") == nil)
    }
}
