import Foundation

/// Marker for replica identifiers.
public enum ReplicaTag: IdentifierTag { public static let name = "replica" }

/// Identifies a replica: one store (a phone's, a tablet's, a server's copy), fixed when the store
/// is created. Every event records the replica that created it.
public typealias ReplicaID = TaggedID<ReplicaTag>

extension TaggedID where Tag == ReplicaTag {
    /// The reserved replica `00000000-0000-0000-0000-000000000000` of provisional origins: a store
    /// reads an event appended through its raw log without an origin as (its `recordedAt`, this
    /// replica, its position), so it takes a place in the canonical order. Provisional origins are
    /// never written (the codecs leave them out), never sent to peers, and refused by merges.
    public static let provisional = ReplicaID(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
}

/// Where and when an event was created: the creating replica, that replica's own sequence number
/// of the event, and the replica's hybrid logical clock at creation.
///
/// The canonical order of events is the order of their origins: by ``stamp``, then ``replica``,
/// then ``sequence``. Every replica that holds the same set of events sorts them the same way, so
/// every view (a fold in this order) is a function of the set, not of arrival order.
///
/// A replica stamps a new event later than every event it holds (its own and those merged from
/// peers): `stamp = max(recordedAt, latest stamp held + 1)`. So an event made after another was
/// seen (an undo after the finish it undoes) always sorts after it, and one replica's events sort
/// in its own sequence order.
///
/// `Sendable`: plain values.
public struct EventOrigin: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The creating replica's hybrid logical clock: microseconds since the Unix epoch, close to
    /// the creating device's clock and later than every event it held. 0 for events migrated
    /// from store format 1 (they sort first, in their old log order).
    public var stamp: UInt64
    /// The replica that created the event.
    public var replica: ReplicaID
    /// The creating replica's sequence number of the event: 1, 2, 3, ... without gaps.
    public var sequence: UInt64

    /// An origin.
    public init(stamp: UInt64, replica: ReplicaID, sequence: UInt64) {
        self.stamp = stamp
        self.replica = replica
        self.sequence = sequence
    }

    /// The canonical order: stamp, then replica (by its bytes), then sequence.
    public static func < (l: EventOrigin, r: EventOrigin) -> Bool {
        if l.stamp != r.stamp { return l.stamp < r.stamp }
        if l.replica != r.replica { return l.replica < r.replica }
        return l.sequence < r.sequence
    }

    /// "replica#sequence@stamp".
    public var description: String { "\(replica)#\(sequence)@\(stamp)" }
}

extension EventOrigin {
    /// How far a stamp may run ahead of its event's `recordedAt`: one day, in microseconds.
    ///
    /// A replica stamps `max(recordedAt, latest stamp held + 1)`: ahead of `recordedAt` only as
    /// far as the latest stamp it held, which (by this rule) was itself at most a day ahead of its
    /// own `recordedAt`. A day covers devices whose clocks disagree by hours; a stamp further
    /// ahead (a broken clock, a hand-made line, a hostile peer) would drag every later stamp of
    /// every replica that takes it towards the bound of 2200-01-01, so it is refused at the door.
    public static let maxStampLead: UInt64 = 86_400_000_000

    /// The first stamp no decoder accepts: 2200-01-01T00:00:00Z in microseconds.
    public static let stampBound = UInt64(Timestamp.latestAllowed.microseconds)

    /// The first stamp refused on an event made elsewhere: a day before ``stampBound``
    /// (2199-12-31T00:00:00Z), so that a replica's own clock, which moves one microsecond past the
    /// latest stamp it holds, always keeps 86 billion stamps of room before the bound.
    public static let latestAcceptedStamp = stampBound - maxStampLead

    /// Checks the stamp of an event of another replica against its `recordedAt` (the rule every
    /// receiver applies, in ``EventEnvelope/validateReplicated(pageCount:)``, so an import line
    /// with an origin, a merged batch, a pushed and a pulled record all keep it):
    ///
    /// - 0 is the stamp of events migrated from store format 1 (they sort first, in their old
    ///   log order): accepted on any event;
    /// - otherwise the stamp lies in `max(recordedAt, 0)` ... `max(recordedAt, 0)` +
    ///   ``maxStampLead`` (`origin.stamp`, `outOfRange`: "before its recordedAt", "ahead of its
    ///   recordedAt by more than a day"), and before ``latestAcceptedStamp`` (`outOfRange`).
    public func checkStamp(recordedAt: Timestamp) throws(ValidationError) {
        guard stamp != 0 else { return }
        let base = UInt64(max(0, recordedAt.microseconds))
        guard stamp >= base else {
            throw ValidationError(field: "origin.stamp", rule: .outOfRange,
                                  detail: "stamp \(stamp) (\(Self.instant(stamp))) is before the event's recordedAt \(recordedAt): a replica never stamps an event before it records it")
        }
        guard stamp - base <= Self.maxStampLead else {
            throw ValidationError(field: "origin.stamp", rule: .outOfRange,
                                  detail: "stamp \(stamp) (\(Self.instant(stamp))) is ahead of the event's recordedAt \(recordedAt) by more than a day (86400000000 microseconds), the most a replica's clock may run ahead")
        }
        guard stamp < Self.latestAcceptedStamp else {
            throw ValidationError(field: "origin.stamp", rule: .outOfRange,
                                  detail: "stamp \(stamp) (\(Self.instant(stamp))) is not before 2199-12-31T00:00:00Z, the latest stamp a store takes from elsewhere (its own clock keeps a day of room before 2200-01-01, which no decoder accepts)")
        }
    }

    /// The stamp a replica gives a new event of its own recorded at `recordedAt` when the latest
    /// stamp it holds (its hybrid logical clock) is `clock`: `max(recordedAt, clock + 1)`, with
    /// the `recordedAt` the event is then stored with: raised to a day before the stamp when the
    /// clock ran further ahead (a back-dated `recordedAt`, a peer's clock ahead of this one), so
    /// that every stamp this replica issues keeps ``checkStamp(recordedAt:)`` at every receiver.
    ///
    /// - Returns: `nil` when the stamp would reach ``stampBound`` (no decoder could read the
    ///   event back): the caller refuses to append.
    public static func nextStamp(after clock: UInt64, recordedAt: Timestamp) -> (stamp: UInt64, recordedAt: Timestamp)? {
        let base = UInt64(max(0, recordedAt.microseconds))
        let (next, overflow) = clock.addingReportingOverflow(1)
        guard !overflow else { return nil }
        let stamp = max(base, next)
        guard stamp < stampBound else { return nil }
        guard stamp - base > maxStampLead else { return (stamp, recordedAt) }
        return (stamp, Timestamp(microseconds: Int64(stamp - maxStampLead)))
    }

    /// A stamp as an instant, for messages.
    static func instant(_ stamp: UInt64) -> String {
        // 9999-12-31T23:59:59.999999Z, the last instant the ISO form writes with four digits.
        stamp < 253_402_300_800_000_000 ? Timestamp(microseconds: Int64(stamp)).description : "after the year 9999"
    }
}

/// A replica's sync state: for each replica it has heard of, the highest sequence number up to
/// which it holds every event of that replica (1 ... n, no gaps).
///
/// Events held beyond a gap (delivered out of order) do not move the vector until the gap is
/// filled, so a peer asked for `changes(since:)` resends them and nothing is ever skipped;
/// resending an event the receiver already holds is harmless (it is recognized by its ID).
///
/// Text form (``description``, ``init(parsing:)``): `replica:sequence` pairs separated by commas,
/// sorted by replica; the empty string for the empty vector. `Codable` as a JSON object from
/// replica UUID strings to sequences.
///
/// `Sendable`: a dictionary of values.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    /// The highest contiguous sequence held, per replica (absent = 0).
    public private(set) var heads: [ReplicaID: UInt64]

    /// A vector with the given heads (zero heads are dropped).
    public init(_ heads: [ReplicaID: UInt64] = [:]) {
        self.heads = heads.filter { $0.value > 0 }
    }

    /// The highest contiguous sequence held from `replica`; 0 when none.
    public subscript(replica: ReplicaID) -> UInt64 {
        get { heads[replica] ?? 0 }
        set { heads[replica] = newValue == 0 ? nil : newValue }
    }

    /// Whether an event of this origin is covered (its sequence is at or below the head).
    public func covers(_ origin: EventOrigin) -> Bool { origin.sequence <= self[origin.replica] }

    /// The pointwise maximum of two vectors.
    public func union(_ other: VersionVector) -> VersionVector {
        VersionVector(heads.merging(other.heads, uniquingKeysWith: max))
    }

    /// Whether this vector covers every event `other` covers.
    public func dominates(_ other: VersionVector) -> Bool {
        other.heads.allSatisfy { self[$0.key] >= $0.value }
    }

    /// `replica:sequence,replica:sequence`, sorted by replica; empty for the empty vector.
    public var description: String {
        heads.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
    }

    /// The largest sequence the text form takes: 2^63 - 1, the largest a signed 64-bit column
    /// (the sync server's) holds; no replica comes near it (a million events a second for
    /// 292,000 years), and a head there still has a next sequence.
    public static let maxSequence = UInt64(Int64.max)

    /// Parses the text form of ``description`` (whitespace around pairs is allowed).
    ///
    /// - Throws: ``ValidationError`` naming the `vector` field: a pair that is not
    ///   `UUID:number` (`malformed`), a sequence of 0 or beyond ``maxSequence`` (`outOfRange`), or a
    ///   replica named twice (`duplicateElement`).
    public init(parsing text: String) throws(ValidationError) {
        var heads: [ReplicaID: UInt64] = [:]
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { self.init(); return }
        for part in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            let pair = part.trimmingCharacters(in: .whitespaces)
            let pieces = pair.split(separator: ":", omittingEmptySubsequences: false)
            guard pieces.count == 2, let replica = ReplicaID(uuidString: String(pieces[0])) else {
                throw ValidationError(field: "vector", rule: .malformed,
                                      detail: "\"\(pair)\" is not replica:sequence (a UUID, a colon, a number)")
            }
            guard let sequence = UInt64(pieces[1]), (1...Self.maxSequence).contains(sequence) else {
                throw ValidationError(field: "vector", rule: .outOfRange,
                                      detail: "the sequence of replica \(replica) must be a number in 1 ... \(Self.maxSequence), not \"\(pieces[1])\"")
            }
            guard heads.updateValue(sequence, forKey: replica) == nil else {
                throw ValidationError(field: "vector", rule: .duplicateElement, detail: "replica \(replica) is named twice")
            }
        }
        self.init(heads)
    }
}

extension VersionVector: Codable {
    /// Decodes a JSON object from replica UUID strings to sequence numbers.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let object = try container.decode([String: UInt64].self)
        var heads: [ReplicaID: UInt64] = [:]
        for (key, value) in object {
            guard let replica = ReplicaID(uuidString: key) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "vector: \"\(key)\" is not a replica UUID")
            }
            heads[replica] = value
        }
        self.init(heads)
    }

    /// Encodes a JSON object from replica UUID strings to sequence numbers.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Dictionary(uniqueKeysWithValues: heads.map { ($0.key.description, $0.value) }))
    }
}
