import Foundation
import NIOCore
import ReadingEvents
import SyncWire

/// What the routes need of the server's data: devices and tokens, the events of each reader,
/// partnerships, invites and share settings. ``PostgresSyncStore`` keeps them in PostgreSQL; the
/// route tests use one in memory. Every method names the reader it acts for.
///
/// `Sendable`: a store is shared by every request.
public protocol SyncStore: Sendable {
    /// Devices recently authenticated by this process.
    var tokens: TokenCache { get }
    /// Answers when the store does.
    func ping() async throws
    /// `/health`: `status` and each database's state (`primary`, and `replica` when there is
    /// one: `ok`, `lagging` or `unavailable`); throws 503 when the primary does not answer.
    func health() async throws -> [String: String]
    /// Registers the first device of a reader the store does not know; 409 `reader_exists` when it does.
    func registerFirstDevice(reader: UUID, name: String) async throws -> Registration
    /// Registers another device of `device`'s reader; 409 `device_limit` past `limit` devices not revoked.
    func registerDevice(for device: SyncDevice, name: String, limit: Int) async throws -> Registration
    /// The device a bearer token names, if it is well formed, known and not revoked.
    func authenticate(token: String) async throws -> SyncDevice?
    /// The reader's devices.
    func devices(of reader: UUID) async throws -> [DeviceInfo]
    /// Revokes a device of `reader`; false when the reader has no such device.
    func revoke(device: UUID, of reader: UUID) async throws -> Bool
    /// Stores the events of `reader` it does not hold yet, all or nothing (see ``PostgresSyncStore/push(reader:events:)``).
    func push(reader: UUID, events: [IncomingEvent]) async throws -> PushResult
    /// The readers whose events `reader`'s devices receive: itself (`nil`: every group) and its
    /// partners with the groups each shares, partners sorted by ID.
    func sources(of reader: UUID) async throws -> [(reader: UUID, groups: [String]?)]
    /// What `reader`'s device lacks after `cursor`, up to `limit` events.
    func pull(reader: UUID, after cursor: PullCursor, limit: Int) async throws -> PullPage
    /// Creates a single-use invite of `reader` valid for `seconds`; 409 `invite_limit` when the
    /// reader has `liveLimit` invites neither used nor expired.
    func createInvite(reader: UUID, seconds: Int, liveLimit: Int) async throws -> Invite
    /// Accepts an invite for `reader`; returns the inviter. 404/410/400 naming `code` when it
    /// cannot; 409 `partner_limit` when either reader has `partnerLimit` partners already.
    func acceptInvite(code: String, reader: UUID, partnerLimit: Int) async throws -> UUID
    /// The reader's partners.
    func partners(of reader: UUID) async throws -> [Partner]
    /// Ends a partnership (both directions); false when the two are not partners.
    func endPartnership(reader: UUID, partner: UUID) async throws -> Bool
    /// The reader's share settings (the defaults when never set).
    func shareSettings(of reader: UUID) async throws -> ShareSettings
    /// Replaces the reader's share settings.
    func setShareSettings(_ settings: ShareSettings, of reader: UUID) async throws
}

extension SyncStore {
    /// A store of one database: `ping`, then `{"status": "ok", "primary": "ok"}`.
    public func health() async throws -> [String: String] {
        try await ping()
        return ["status": "ok", "primary": "ok"]
    }

    /// The device of a token this process verified in the last few seconds (no store look-up).
    public func cachedDevice(token: String) -> SyncDevice? {
        guard let (reader, hash) = Tokens.parse(token) else { return nil }
        return tokens.device(reader: reader, hash: hash)
    }
}

/// An authenticated device.
///
/// `Sendable`: a value type of UUIDs.
public struct SyncDevice: Sendable, Hashable {
    /// The reader the token belongs to: every request is scoped to it.
    public let reader: UUID
    /// The device.
    public let device: UUID
    /// Creates a device.
    public init(reader: UUID, device: UUID) { self.reader = reader; self.device = device }
}

/// A pushed event, decoded and checked.
///
/// `Sendable`: a value type.
public struct IncomingEvent: Sendable {
    /// Its position in the pushed batch (for error fields).
    public var index: Int
    /// The event ID.
    public var eventID: UUID
    /// The replica that created it (nil for a record without an origin).
    public var replica: UUID?
    /// Its sequence number in that replica (0 without an origin).
    public var sequence: Int64
    /// Its hybrid-logical-clock creation stamp (0 without an origin).
    public var stamp: Int64
    /// The instant of the action.
    public var occurredAt: Date
    /// The type tag.
    public var type: String
    /// The share group.
    public var group: ShareGroup
    /// The record bytes as pushed.
    public var record: ByteBuffer
    /// ``factDigest(of:)`` of the record: equal for two copies of one event.
    public var fact: ByteBuffer
}

extension APIError {
    /// The refusal of an event whose ID this reader already holds (or an earlier event of the
    /// batch has) with another fact: every receiver would quarantine it.
    public static func otherFact(_ event: IncomingEvent) -> APIError {
        APIError(.conflict, "event_id_taken", field: "events[\(event.index)].record.eventID",
                 rule: ValidationRule.inconsistent.rawValue,
                 "event ID \(event.eventID.lowercased) is already held with another fact; an event ID names one fact wherever it was recorded")
    }

    /// The refusal of an event whose (replica, sequence) already names another event of the
    /// pusher (a copied store's record), or whose replica belongs to another reader (the reader
    /// whose push first used it: a partner's record, or a partner numbering its own events as
    /// another reader's).
    public static func originTaken(_ event: IncomingEvent) -> APIError {
        APIError(.conflict, "origin_taken", field: "events[\(event.index)].record.origin.sequence",
                 rule: ValidationRule.duplicateID.rawValue,
                 "replica \(event.replica?.lowercased ?? "-")'s sequence \(event.sequence) already names another event of this reader, or the replica belongs to another reader; a replica numbers each of its events once, and its events are its reader's")
    }
}
