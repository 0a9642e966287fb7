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
            var taken = map
            let sorted = taken.takeSortedElements()
            #expect(sorted.map(\.key) == reference.keys.sorted())
            #expect(sorted.map(\.value) == reference.keys.sorted().map { reference[$0]! })
            // Taking moves the pairs out: the map is empty, and usable again.
            #expect(taken.isEmpty && taken.elements.count == 0 && taken.find(sorted.map(\.key).first ?? 0) == nil)
            taken.update(7, default: 1) { $0 += 1 }
            #expect(taken.find(7).map { taken.elements[$0].value } == 2)
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

    /// The inline-first array behaves as an array under every operation the fold uses, with no
    /// element, one (held inline), and many.
    @Test("InlineFirstArray equals an array under random operations", arguments: [1, 2, 3] as [UInt64])
    func inlineFirstArrayEqualsAnArray(seed: UInt64) {
        var rng = SplitMix64(seed: 0x1F1A_0000 + seed)
        for _ in 0..<300 {
            var array: [Int] = []
            var inline = InlineFirstArray<Int>()
            for _ in 0..<Int(rng.next() % 6) {
                let value = Int(rng.next() % 10)
                array.append(value); inline.append(value)
            }
            #expect(Array(inline) == array && inline.count == array.count && inline.isEmpty == array.isEmpty)
            if !array.isEmpty {
                let index = Int(rng.next() % UInt64(array.count))
                array[index] += 100; inline[index] += 100
                #expect(inline[index] == array[index])
            }
            switch rng.next() % 3 {
            case 0:
                let cut = Int(rng.next() % 110)
                array.removeAll { $0 < cut }; inline.removeAll { $0 < cut }
            case 1:
                array.sort(by: >); inline.sort(by: >)
            default:
                break
            }
            #expect(Array(inline) == array && inline.count == array.count && inline.isEmpty == array.isEmpty)
        }
        #expect(Array(InlineFirstArray([3, 1, 2])) == [3, 1, 2])
        #expect(Array(InlineFirstArray<Int>([])).isEmpty)
    }
}
