/// A map for the few keys that one fold step touches (a day, a month, a year and book): a linear
/// search while it is small, so netting an event's changes hashes nothing and allocates one array
/// of pairs per kind of key; once it holds ``indexThreshold`` keys (the retraction of a book with a long
/// history) a dictionary indexes it, so it never becomes quadratic.
///
/// Not public: the projector's scratch space. `Sendable` where its keys and values are.
struct SmallMap<Key: Hashable, Value> {
    /// The pairs, in the order their keys were first added.
    private(set) var elements: [(key: Key, value: Value)] = []
    /// The index of each key, once there are ``indexThreshold`` of them.
    private var index: [Key: Int]?

    /// How many keys are searched linearly before the map builds its index.
    static var indexThreshold: Int { 16 }

    /// An empty map.
    init() {}

    /// Whether the map holds no key.
    var isEmpty: Bool { elements.isEmpty }

    /// The position of `key`, if it is there.
    func find(_ key: Key) -> Int? {
        if let index { return index[key] }
        // From the end: the key changed last is the likeliest to change again.
        var i = elements.endIndex
        while i > elements.startIndex {
            i -= 1
            if elements[i].key == key { return i }
        }
        return nil
    }

    /// Adds `key` with `value`; the key must not be there.
    mutating func insert(_ key: Key, _ value: Value) {
        elements.append((key, value))
        if index != nil {
            index![key] = elements.count - 1
        } else if elements.count >= Self.indexThreshold {
            var built = [Key: Int](minimumCapacity: elements.count * 2)
            for (i, element) in elements.enumerated() { built[element.key] = i }
            index = built
        }
    }

    /// Changes the value of `key` in place, starting from `initial` when the key is new.
    mutating func update(_ key: Key, default initial: @autoclosure () throws -> Value, _ change: (inout Value) -> Void) rethrows {
        if let i = find(key) {
            change(&elements[i].value)
        } else {
            var value = try initial()
            change(&value)
            insert(key, value)
        }
    }
}

extension SmallMap where Key: Comparable {
    /// Every (key, value) pair in key order.
    func sortedElements() -> [(key: Key, value: Value)] {
        var pairs = elements
        if pairs.count > 1 { pairs.sort { $0.key < $1.key } }
        return pairs
    }
}

extension SmallMap: Sendable where Key: Sendable, Value: Sendable {}
