import ReadingEvents

/// One table's records in memory, in slots: a record taken out and put back is emptied and filled
/// in place, where a dictionary of records would delete and insert an entry (hashing its
/// neighbours again, issue 37). A removed record leaves an empty slot, so a key written again
/// finds its slot. A table the fold scans (``ViewRecordTable/isScannedByTheFold``) also keeps its
/// slots in key order as they are written; any other table is sorted when it is scanned.
///
/// The write-back cache also marks slots dirty and notes each record as it was read from the store
/// underneath (for a table written in parts); the stores in memory never do.
///
/// `Sendable` when its keys and records are.
@usableFromInline
struct RecordSlots<Key: Hashable & Comparable, Record: Hashable> {
    /// One slot: its key, its record (`nil`: empty) and whether the cache must write it.
    @usableFromInline
    struct Entry {
        @usableFromInline var key: Key
        @usableFromInline var record: Record?
        @usableFromInline var isDirty = false
        init(key: Key) { self.key = key }
    }
    @usableFromInline private(set) var index: [Key: Int] = [:]
    /// The slots, in the order their keys were first written (one array: a new key is one append).
    @usableFromInline private(set) var entries: [Entry] = []
    /// Slot numbers in key order, kept only for a table that keeps its order.
    @usableFromInline private(set) var ordered: [Int]?
    /// The slot of the last ``take(_:)`` that found a record: the put that follows finds it
    /// without hashing the key again.
    private(set) var taken: Int?
    /// The slot last found or made for a key: a table's next access is often to the same key (the
    /// reader's record at every event, a book's view or a day's total for a reader's events of one
    /// book or one day), found by comparing the key instead of hashing it.
    private(set) var recent: Int?
    /// Whether a slot was marked dirty since the last ``removeAll()``.
    private(set) var hasDirty = false
    /// Records as read from the store underneath, by slot (the write-back cache's, for a table
    /// written in parts).
    var loaded: [Int: Record] = [:]

    init(keepsOrder: Bool) { ordered = keepsOrder ? [] : nil }

    /// The slot of `key`, if it has one (empty or not).
    @inline(__always) func slot(of key: Key) -> Int? {
        if let recent, entries[recent].key == key { return recent }
        return index[key]
    }
    /// The record in `slot`.
    @inline(__always) subscript(slot: Int) -> Record? { entries[slot].record }
    /// The key of `slot`.
    @inline(__always) func key(of slot: Int) -> Key { entries[slot].key }
    /// The record under `key`.
    @inline(__always) func record(_ key: Key) -> Record? {
        guard let slot = slot(of: key) else { return nil }
        return entries[slot].record
    }

    /// The slot of `key`, made empty if it had none. One look-up of the key either way: the
    /// index's defaulting accessor finds the slot or enters the next one (a look-up and then an
    /// insertion hashed a new key twice, and `set` had hashed it once before).
    mutating func makeSlot(_ key: Key) -> Int {
        if let recent, entries[recent].key == key { return recent }
        let next = entries.count
        let slot = Self.value(&index[key, default: next])
        recent = slot
        guard slot == next else { return slot }
        entries.append(Entry(key: key))
        if ordered != nil {
            // Almost always written in order (the latest run): appended; else inserted in place.
            var low = 0, high = ordered!.count
            if let last = ordered!.last, entries[last].key < key { low = high }
            while low < high {
                let mid = (low + high) / 2
                if entries[ordered![mid]].key < key { low = mid + 1 } else { high = mid }
            }
            ordered!.insert(slot, at: low)
        }
        return slot
    }

    /// The value of an in-place access: `&index[key, default: next]` is one hashed access that
    /// leaves `next` entered when the key was missing.
    @inline(__always) private static func value(_ slot: inout Int) -> Int { slot }

    /// Empties the slot of `key` and hands its record over.
    mutating func take(_ key: Key) -> Record? {
        guard let slot = slot(of: key) else { return nil }
        recent = slot
        return take(slot: slot)
    }
    /// Empties `slot` and hands its record over.
    mutating func take(slot: Int) -> Record? {
        guard let record = entries[slot].record.take() else { return nil }
        taken = slot
        return record
    }
    /// Whether a taken record was not given back yet.
    var isTaken: Bool { taken != nil }

    /// Stores `record` under `key` (`nil` empties its slot) and returns the slot (`nil`: `key`
    /// had no slot and `record` is `nil`).
    @discardableResult
    mutating func set(_ key: Key, _ record: consuming Record?) -> Int? {
        let slot: Int
        if let last = taken, entries[last].key == key {
            // The put after a take: no look-up.
            slot = last
            taken = nil
        } else if record == nil {
            guard let found = self.slot(of: key) else { return nil }
            slot = found
        } else {
            // Found or made with one look-up. (A slot found here is not the taken one: its key
            // differs.)
            slot = makeSlot(key)
        }
        entries[slot].record = record
        return slot
    }
    /// Stores `record` in `slot`.
    mutating func set(slot: Int, _ record: consuming Record?) {
        entries[slot].record = record
    }

    /// Marks `slot` dirty.
    mutating func markDirty(_ slot: Int) {
        entries[slot].isDirty = true
        hasDirty = true
    }
    /// The dirty slots, in key order.
    func dirtySlots() -> [Int] {
        guard hasDirty else { return [] }
        return entries.indices.filter { entries[$0].isDirty }.sorted { entries[$0].key < entries[$1].key }
    }
    /// Empties the table, keeping its storage for the next records.
    mutating func removeAll() {
        index.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        if ordered != nil { ordered!.removeAll(keepingCapacity: true) }
        loaded.removeAll(keepingCapacity: true)
        taken = nil
        recent = nil
        hasDirty = false
    }

    /// The number of non-empty slots (counted: only equality and hashing ask).
    var count: Int { entries.reduce(0) { $1.record == nil ? $0 : $0 + 1 } }

    /// The first position in `ordered` whose key is not below `key` (with `after`: is above it).
    @usableFromInline
    func position(in ordered: [Int], of key: Key, after: Bool) -> Int {
        var low = 0, high = ordered.count
        while low < high {
            let mid = (low + high) / 2
            let other = entries[ordered[mid]].key
            if other < key || (after && other == key) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Calls `body` with the records in `from ... through`, in key order (or reversed), until it
    /// returns `false`. A table kept in order is walked in place from its bounds (found by
    /// bisection): a backward step from a day reads what it returns, not the table.
    @inlinable
    func forEach(from: Key?, through: Key?, reverse: Bool, _ body: (Key, Record) throws -> Bool) rethrows {
        if let ordered {
            let low = from.map { position(in: ordered, of: $0, after: false) } ?? 0
            let high = through.map { position(in: ordered, of: $0, after: true) } ?? ordered.count
            guard low < high else { return }
            if reverse {
                for index in (low..<high).reversed() {
                    let entry = entries[ordered[index]]
                    if let record = entry.record, try !body(entry.key, record) { return }
                }
            } else {
                for index in low..<high {
                    let entry = entries[ordered[index]]
                    if let record = entry.record, try !body(entry.key, record) { return }
                }
            }
            return
        }
        var order: [Int] = []
        order.reserveCapacity(entries.count)
        for slot in entries.indices where entries[slot].record != nil {
            if let from, entries[slot].key < from { continue }
            if let through, through < entries[slot].key { continue }
            order.append(slot)
        }
        order.sort { entries[$0].key < entries[$1].key }
        if reverse { order.reverse() }
        for slot in order where try !body(entries[slot].key, entries[slot].record!) { return }
    }

    /// The non-empty records by key.
    var contents: [Key: Record] {
        var result = [Key: Record](minimumCapacity: entries.count)
        for entry in entries { if let record = entry.record { result[entry.key] = record } }
        return result
    }
}

/// A table's ``RecordSlots`` behind a reference, so that one array holds the tables of every type.
///
/// `@unchecked Sendable`: its contents are changed only through ``RecordTables``, which copies a
/// box before changing it unless the box's storage is referenced by one ``RecordTables`` alone
/// (copy on write), so a box reachable from two threads is only read.
@usableFromInline
class AnyRecordSlots: @unchecked Sendable {
    /// A copy with its own contents.
    func copy() -> AnyRecordSlots { fatalError("abstract") }
    /// Whether `other` holds the same non-empty records.
    func hasContents(of other: AnyRecordSlots) -> Bool { fatalError("abstract") }
    /// Hashes the non-empty records, whatever their slots' order.
    func hashContents(into hasher: inout Hasher) { fatalError("abstract") }
    /// The number of non-empty records.
    var count: Int { fatalError("abstract") }
}

/// A ``RecordSlots`` in a box.
///
/// `@unchecked Sendable`: see ``AnyRecordSlots``.
@usableFromInline
final class RecordSlotsBox<Key: Hashable & Comparable, Record: Hashable>: AnyRecordSlots, @unchecked Sendable {
    /// Unchecked exclusivity: the stores reach it only through ``RecordTables``, whose accesses
    /// never overlap (each is one call on a box from ``RecordTables/box(_:keyedBy:)``), so the run-time check at every record access would find nothing.
    @usableFromInline @exclusivity(unchecked) var slots: RecordSlots<Key, Record>
    init(_ slots: RecordSlots<Key, Record>) { self.slots = slots }
    override func copy() -> AnyRecordSlots { RecordSlotsBox(slots) }
    override func hasContents(of other: AnyRecordSlots) -> Bool {
        guard let other = other as? RecordSlotsBox<Key, Record> else { return false }
        return slots.count == other.slots.count && slots.contents == other.slots.contents
    }
    override func hashContents(into hasher: inout Hasher) {
        // Order-independent: the sum of each record's own hash.
        var sum = 0
        for entry in slots.entries {
            guard let record = entry.record else { continue }
            var one = Hasher()
            one.combine(entry.key)
            one.combine(record)
            sum &+= one.finalize()
        }
        hasher.combine(slots.count)
        hasher.combine(sum)
    }
    override var count: Int { slots.count }
}

/// The tables of ``ViewRecords`` in memory, one ``RecordSlots`` each, keyed by `Key` for a table of
/// key `T.Key` (the table's own key, or the table's key with its reader): the one storage under
/// ``SingleReaderViewStore``, ``InMemoryViewStore`` and ``CachingViewStore``, with no code of its
/// own per table. A value: copied on write.
///
/// `Sendable`: see ``AnyRecordSlots``.
@usableFromInline
struct RecordTables: Sendable {
    /// The boxes, by ``ViewRecordKind/rawValue``.
    ///
    /// `@unchecked Sendable`: copied on write (``RecordTables/unique()``).
    @usableFromInline
    final class Storage: @unchecked Sendable {
        /// Unchecked exclusivity, as ``RecordSlotsBox/slots``: every access is one call.
        @usableFromInline @exclusivity(unchecked) var boxes: [AnyRecordSlots?]
        init(boxes: [AnyRecordSlots?]) { self.boxes = boxes }
    }
    @usableFromInline var storage = Storage(boxes: Array(repeating: nil, count: ViewRecordKind.allCases.count))

    /// An empty set of tables.
    @usableFromInline init() {}

    private mutating func unique() {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(boxes: storage.boxes.map { $0?.copy() }) }
    }

    /// The slots of `table`, to read (`nil`: nothing was ever written to it).
    @inlinable
    func slots<T: ViewRecordTable, Key>(_ table: T.Type, keyedBy: Key.Type) -> RecordSlotsBox<Key, T.Record>? {
        guard let box = storage.boxes[T.kind.rawValue] else { return nil }
        return unsafeDowncast(box, to: RecordSlotsBox<Key, T.Record>.self)
    }

    /// The box of `table`'s slots, to change them in place (`box.slots.set(...)`: a record passed
    /// in is moved into its slot, never copied), made unique first and created when missing.
    @inline(__always)
    mutating func box<T: ViewRecordTable, Key>(_ table: T.Type, keyedBy: Key.Type) -> RecordSlotsBox<Key, T.Record> {
        unique()
        if let existing = storage.boxes[T.kind.rawValue] { return unsafeDowncast(existing, to: RecordSlotsBox<Key, T.Record>.self) }
        let box = RecordSlotsBox<Key, T.Record>(RecordSlots(keepsOrder: T.isScannedByTheFold))
        storage.boxes[T.kind.rawValue] = box
        return box
    }

    /// The number of non-empty records of every table.
    var count: Int { storage.boxes.reduce(0) { $0 + ($1?.count ?? 0) } }

    /// Whether both hold the same non-empty records.
    func hasContents(of other: RecordTables) -> Bool {
        for (mine, theirs) in zip(storage.boxes, other.storage.boxes) {
            switch (mine, theirs) {
            case (nil, nil): continue
            case (let one?, nil), (nil, let one?): if one.count != 0 { return false }
            case (let one?, let two?): if !one.hasContents(of: two) { return false }
            }
        }
        return true
    }
    /// Hashes the non-empty records.
    func hashContents(into hasher: inout Hasher) {
        for box in storage.boxes { if let box, box.count > 0 { box.hashContents(into: &hasher) } else { hasher.combine(0) } }
    }
}

extension RecordTables {
    /// The records of `table` whose keys lie in `from ... through` (an absent bound: unbounded), in
    /// key order, for tables keyed by the table's own key (``SingleReaderViewStore``'s).
    ///
    /// Collected in code specialized for the table's types, whatever the caller: a query through
    /// `any ViewStore` reaches a store's generic requirements unspecialized, where every record of
    /// the walk would cost run-time metadata and value-witness calls (a calendar month of ten years
    /// in memory: 1.39 million instructions, `Scripts/query-instructions.sh`). ``ViewRecordKind/visit(_:)``
    /// calls ``RangeCollector`` with the concrete table type, so only the bounds and the result
    /// cross the generic boundary, once per call.
    @usableFromInline
    func records<T: ViewRecordTable>(_ table: T.Type, from: T.Key?, through: T.Key?) throws -> [(key: T.Key, record: T.Record)] {
        guard let box = storage.boxes[T.kind.rawValue] else { return [] }
        var collector = RangeCollector(box: box, from: from.map { $0 as Any }, through: through.map { $0 as Any })
        try T.kind.visit(&collector)
        return collector.result as! [(key: T.Key, record: T.Record)]
    }
}

/// ``RecordTables/records(_:from:through:)``'s walk, run by ``ViewRecordKind/visit(_:)`` with the
/// concrete table type: a type of no generic parameters, so the walk is specialized for each table.
struct RangeCollector: ViewRecordTableVisitor {
    /// The table's slots (keyed by the table's own key).
    let box: AnyRecordSlots
    /// The bounds, each a `Key` of the table (`nil`: unbounded).
    let from: Any?, through: Any?
    /// The records, an array of `(key: Key, record: Record)` of the table.
    var result: Any = ()

    mutating func visit<U: ViewRecordTable>(_ table: U.Type) {
        let slots = (box as! RecordSlotsBox<U.Key, U.Record>).slots
        var records: [(key: U.Key, record: U.Record)] = []
        slots.forEach(from: from.map { $0 as! U.Key }, through: through.map { $0 as! U.Key }, reverse: false) { key, record in
            records.append((key, record))
            return true
        }
        result = records
    }
}

/// A key of a table with many readers' records: the reader, then the table's key.
///
/// `Sendable`: plain values.
struct ReaderScopedKey<Key: Hashable & Comparable & Sendable>: Hashable, Comparable, Sendable {
    var reader: ReaderID
    var key: Key
    static func < (lhs: Self, rhs: Self) -> Bool { (lhs.reader, lhs.key) < (rhs.reader, rhs.key) }
}
