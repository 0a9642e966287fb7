/// A few elements in order, the first held inline: one element (an event's one day, month or
/// year part, the usual case) allocates nothing, where an array allocates a buffer on its first
/// append and frees it after the step (issue 37: 37,649 fewer allocations and 287 fewer
/// instructions an event in `Scripts/rebuild-instructions.sh 20000`).
///
/// Not public: the projector's scratch space. `Sendable` where its elements are.
struct InlineFirstArray<Element>: Sequence {
    /// The first element, if any.
    private var head: Element?
    /// The elements after the first.
    private var tail: [Element] = []

    /// No elements.
    init() {}
    /// The elements of `array`, in order.
    init(_ array: [Element]) {
        guard let first = array.first else { return }
        head = first
        if array.count > 1 { tail = Array(array.dropFirst()) }
    }

    /// Whether there is no element.
    var isEmpty: Bool { head == nil }
    /// The number of elements.
    var count: Int { head == nil ? 0 : 1 + tail.count }

    /// The element at `index` (0 ..< ``count``), changed in place.
    subscript(index: Int) -> Element {
        get { index == 0 ? head! : tail[index - 1] }
        _modify {
            if index == 0 { yield &head! } else { yield &tail[index - 1] }
        }
    }

    /// Adds `element` at the end.
    mutating func append(_ element: Element) {
        if head == nil { head = element } else { tail.append(element) }
    }

    /// Removes the elements `shouldRemove` picks, keeping the order of the others.
    mutating func removeAll(where shouldRemove: (Element) throws -> Bool) rethrows {
        guard let first = head else { return }
        if try !shouldRemove(first) {
            if !tail.isEmpty { try tail.removeAll(where: shouldRemove) }
            return
        }
        var kept = tail
        try kept.removeAll(where: shouldRemove)
        self = InlineFirstArray(kept)
    }

    /// Puts the elements in the order `areInIncreasingOrder` gives (one element: nothing to do).
    mutating func sort(by areInIncreasingOrder: (Element, Element) throws -> Bool) rethrows {
        guard !tail.isEmpty else { return }
        var all = [head!]
        all.append(contentsOf: tail)
        try all.sort(by: areInIncreasingOrder)
        self = InlineFirstArray(all)
    }

    /// Walks the elements in order.
    struct Iterator: IteratorProtocol {
        fileprivate var head: Element?
        fileprivate var tail: IndexingIterator<[Element]>
        mutating func next() -> Element? {
            if let first = head { head = nil; return first }
            return tail.next()
        }
    }
    func makeIterator() -> Iterator { Iterator(head: head, tail: tail.makeIterator()) }
}

extension InlineFirstArray: Sendable where Element: Sendable {}

/// A map for the few keys that one fold step touches (a day, a month, a year and book): a linear
/// search while it is small, so netting an event's changes hashes nothing and allocates nothing
/// for one key (``InlineFirstArray``); once it holds ``indexThreshold`` keys (the retraction of a
/// book with a long history) a dictionary indexes it, so it never becomes quadratic.
///
/// Not public: the projector's scratch space. `Sendable` where its keys and values are.
struct SmallMap<Key: Hashable, Value> {
    /// The pairs, in the order their keys were first added.
    private(set) var elements = InlineFirstArray<(key: Key, value: Value)>()
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
        var i = elements.count
        while i > 0 {
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
    /// Every (key, value) pair in key order, moved out: the map is left empty, and no copy of the
    /// pairs is made.
    mutating func takeSortedElements() -> InlineFirstArray<(key: Key, value: Value)> {
        var pairs = InlineFirstArray<(key: Key, value: Value)>()
        swap(&pairs, &elements)
        index = nil
        pairs.sort { $0.key < $1.key }
        return pairs
    }
}

extension SmallMap: Sendable where Key: Sendable, Value: Sendable {}
