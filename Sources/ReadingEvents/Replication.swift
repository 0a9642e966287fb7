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

    /// Parses the text form of ``description`` (whitespace around pairs is allowed).
    ///
    /// - Throws: ``ValidationError`` naming the `vector` field: a pair that is not
    ///   `UUID:number` (`malformed`), a sequence of 0 or beyond `UInt64` (`outOfRange`), or a
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
            guard let sequence = UInt64(pieces[1]), sequence > 0 else {
                throw ValidationError(field: "vector", rule: .outOfRange,
                                      detail: "the sequence of replica \(replica) must be a number in 1 ... \(UInt64.max), not \"\(pieces[1])\"")
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
