import Testing
import ReadingEvents
@testable import Projections

/// The fold's scratch map nets changes exactly as a dictionary does, below and past the size at
/// which it builds its index, and lists its pairs in key order.
@Suite("SmallMap")
struct SmallMapTests {
    @Test("equals a dictionary under random updates", arguments: [1, 2, 3] as [UInt64])
    func equalsADictionary(seed: UInt64) {
        var rng = SplitMix64(seed: 0x5A11_0000 + seed)
        var map = SmallMap<Int, Int>()
        var reference: [Int: Int] = [:]
        // Key ranges below, at and past the index threshold.
        for keyRange in [4, SmallMap<Int, Int>.indexThreshold, 200] {
            for _ in 0..<1_000 {
                let key = Int(rng.next() % UInt64(keyRange))
                let change = Int(rng.next() % 7) - 3
                map.update(key, default: 0) { $0 += change }
                reference[key, default: 0] += change
                #expect(map.find(key).map { map.elements[$0].value } == reference[key])
            }
            #expect(map.elements.count == reference.count)
            #expect(map.sortedElements().map(\.key) == reference.keys.sorted())
            #expect(map.sortedElements().map(\.value) == reference.keys.sorted().map { reference[$0]! })
            #expect(map.find(keyRange + 1) == nil)
        }
    }

    @Test("keeps keys in the order they were first added")
    func insertionOrder() {
        var map = SmallMap<String, Int>()
        #expect(map.isEmpty)
        for key in ["c", "a", "b", "a"] { map.update(key, default: 10) { $0 += 1 } }
        #expect(map.elements.map(\.key) == ["c", "a", "b"])
        #expect(map.elements.map(\.value) == [11, 12, 11])
        #expect(!map.isEmpty)
    }
}
